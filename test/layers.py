#!/usr/bin/env python3
"""test/layers.py: the source tree's dependencies run one way.

    python3 test/layers.py        after `make` (it reads the object files)

src/ is laid out by feature (src/README.md).  Each folder may use only the
folders below it:

    core    plain C, nothing of PostgreSQL or of the other folders
    glue    core
    types   core, glue
    index   core, glue
    join    core, glue, index
    module.c (src/, the entry point) anything

Within a folder, the files are in the order the folder's header lists them
(ORDER below, from glue/amqfilter.h, index/filter_index.h,
join/join_filter.h), from the bottom up, and a file calls only the files
before it.  The checks, each printing PASS or FAIL:

  1. includes: every #include "folder/file.h" of a file names its own folder
     or one it may use (a file of core/ includes only core's headers, by
     their bare names; "src/..." is refused: a folder is named from src/);
  2. calls: from the symbols each object file defines and uses (nm), no
     object calls into a folder it may not use, nor a file of its own
     folder listed after it, and every file of an ordered folder has its
     place in the order;
  3. no two objects call each other, directly or round a cycle.

Exits non-zero when a check failed.
"""
import collections
import os
import re
import subprocess
import sys

ROOT = os.path.normpath(os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
SRC = os.path.join(ROOT, "src")
MAY_USE = {
    "core": set(),
    "glue": {"core"},
    "types": {"core", "glue"},
    "index": {"core", "glue"},
    "join": {"core", "glue", "index"},
    "": {"core", "glue", "types", "index", "join"},  # src/module.c
}
# each folder's files from the bottom up: a file calls only those before it
ORDER = {
    "glue": ["amqfilter", "filter_cache", "filter_access", "hashing", "filter_io",
             "filter_agg", "filter_agg_sizeless", "filter_overfill",
             "filter_selectivity", "filter_compare"],
    "types": ["bloom_type", "bloom_ops", "bloom_agg", "cuckoo_type", "cuckoo_ops", "cuckoo_agg"],
    "index": ["index_meta", "index_build", "index_insert", "index_scan", "index_skip",
              "index_options", "index_handler", "index_sql"],
    "join": ["join_filter_spec", "join_filter_exec", "join_filter_remote",
             "join_filter_plan", "join_filter"],
}
failures = 0
checks = 0


def report(ok, what, details=()):
    global failures, checks
    checks += 1
    print(("PASS  " if ok else "FAIL  ") + what)
    for d in details:
        print("      " + d)
    if not ok:
        failures += 1


def folder_of(path):
    rel = os.path.relpath(path, SRC)
    return rel.split(os.sep)[0] if os.sep in rel else ""


def sources(exts):
    for dirpath, _, files in os.walk(SRC):
        for f in sorted(files):
            if f.endswith(exts):
                yield os.path.join(dirpath, f)


# 1. includes
bad = []
folders_seen = set()
for path in sources((".c", ".h")):
    folder = folder_of(path)
    if folder not in MAY_USE:
        bad.append(f"{os.path.relpath(path, ROOT)}: a folder with no layer ({folder})")
        continue
    folders_seen.add(folder)
    with open(path, encoding="utf-8") as fh:
        for lineno, line in enumerate(fh, 1):
            m = re.match(r'\s*#\s*include\s+"([^"]+)"', line)
            if not m:
                continue
            target = m.group(1)
            head = target.split("/")[0] if "/" in target else None
            if head == "src":
                bad.append(f"{os.path.relpath(path, ROOT)}:{lineno}: includes {target}: name the folder from src/")
                continue
            if folder == "core":
                # the core includes its own headers by bare name, nothing else local
                if head is not None and os.path.exists(os.path.join(SRC, target)):
                    bad.append(f"{os.path.relpath(path, ROOT)}:{lineno}: core includes {target}")
                continue
            if head is None or not os.path.isdir(os.path.join(SRC, head)):
                continue  # PostgreSQL's own headers ("postgres.h", "utils/rel.h")
            if head != folder and head not in MAY_USE[folder]:
                bad.append(f"{os.path.relpath(path, ROOT)}:{lineno}: {folder or 'src'} includes {target}")
report(not bad and {"core", "glue", "types", "index", "join", ""} <= folders_seen,
       "layers: every include names its own folder or one below it", bad)

# 2. calls, from the objects
objects = [p[:-2] + ".o" for p in sources((".c",)) if os.path.exists(p[:-2] + ".o")]
missing = [os.path.relpath(p, ROOT) for p in sources((".c",)) if not os.path.exists(p[:-2] + ".o")]
if missing:
    report(False, "layers: every source file is built (run make first)", missing)
    sys.exit(1)
defines, uses = {}, collections.defaultdict(set)
for obj in objects:
    out = subprocess.run(["nm", obj], capture_output=True, text=True, check=True).stdout
    for line in out.splitlines():
        parts = line.split()
        if len(parts) == 3 and parts[1] in "TDBRC":
            defines[parts[2]] = obj
        elif len(parts) == 2 and parts[0] == "U":
            uses[obj].add(parts[1])
edges = collections.defaultdict(set)
for obj, names in uses.items():
    for name in names:
        owner = defines.get(name)
        if owner is not None and owner != obj:
            edges[obj].add((owner, name))

short = lambda o: os.path.relpath(o, SRC)[:-2]
bad = []
for obj, targets in sorted(edges.items()):
    for owner, name in sorted(targets):
        f, g = folder_of(obj), folder_of(owner)
        if f != g and g not in MAY_USE[f]:
            bad.append(f"{short(obj)} calls {short(owner)} ({name})")
report(not bad, "layers: no object calls into a folder above its own", bad)

bad = []
for obj in objects:
    f = folder_of(obj)
    name = os.path.basename(obj)[:-2]
    if f in ORDER and name not in ORDER[f]:
        bad.append(f"{short(obj)} has no place in {f}/'s order (test/layers.py ORDER)")
for obj, targets in sorted(edges.items()):
    f = folder_of(obj)
    if f not in ORDER:
        continue
    order = ORDER[f]
    me = os.path.basename(obj)[:-2]
    for owner, name in sorted(targets):
        other = os.path.basename(owner)[:-2]
        if folder_of(owner) == f and me in order and other in order and order.index(other) > order.index(me):
            bad.append(f"{short(obj)} calls {short(owner)} ({name}), listed after it")
report(not bad, "layers: within a folder, every file calls only the files listed before it", bad)

# cycles (Tarjan's strongly connected components)
graph = {o: {t for t, _ in edges.get(o, ())} for o in objects}
index, low, stack, on_stack, cycles = {}, {}, [], set(), []
counter = [0]


def visit(v):
    index[v] = low[v] = counter[0]
    counter[0] += 1
    stack.append(v)
    on_stack.add(v)
    for w in graph.get(v, ()):
        if w not in index:
            visit(w)
            low[v] = min(low[v], low[w])
        elif w in on_stack:
            low[v] = min(low[v], index[w])
    if low[v] == index[v]:
        component = []
        while True:
            w = stack.pop()
            on_stack.discard(w)
            component.append(w)
            if w == v:
                break
        if len(component) > 1:
            cycles.append(" <-> ".join(sorted(short(c) for c in component)))


sys.setrecursionlimit(10000)
for o in objects:
    if o not in index:
        visit(o)
report(not cycles, f"layers: no cycle among the {len(objects)} objects' calls", cycles)

print(f"layers: {checks - failures} passed, {failures} failed")
sys.exit(1 if failures else 0)
