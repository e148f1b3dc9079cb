# amqfilter: PGXS build of the extension, plus the core's standalone tests.
#
#   make                 build the extension
#   make install         install it into $(PG_CONFIG)'s PostgreSQL
#   make unittest        build and run the core unit tests (no server), and
#                        check that the hot loops still prefetch
#   make installcheck    pg_regress against a running server
#   make micro-bench     the cores' cost per hash, without PostgreSQL
#   make dist            the PGXN release zip of the committed tree
#
# PG_CONFIG selects the PostgreSQL to build against.

EXTENSION = amqfilter
# The version this tree builds; amqfilter.control's default_version must
# match it.  Each released version has its full script, amqfilter--V.sql,
# frozen once released, and an upgrade script from the one before it.
EXTVERSION = 0.3
MODULE_big = amqfilter
DATA = $(wildcard amqfilter--*.sql)

CORE_SRCS = src/core/amq_status.c src/core/amq_base64.c src/core/amq_bloom.c \
	src/core/amq_bloom_size.c src/core/amq_bloom_counting.c \
	src/core/amq_bloom_dleft.c src/core/amq_cuckoo.c \
	src/core/amq_cuckoo_membership.c src/core/amq_cuckoo_delete.c \
	src/core/amq_cuckoo_counter.c src/core/amq_cuckoo_merge.c \
	src/core/amq_cuckoo_stats.c src/core/amq_range_table.c
# The PostgreSQL glue, by feature (src/README.md says what each folder holds
# and which folders it may use); src/module.c is the library's entry point.
GLUE_SRCS = $(wildcard src/glue/*.c)
TYPES_SRCS = $(wildcard src/types/*.c)
INDEX_SRCS = $(wildcard src/index/*.c)
JOIN_SRCS = $(wildcard src/join/*.c)
PG_SRCS = src/module.c $(GLUE_SRCS) $(TYPES_SRCS) $(INDEX_SRCS) $(JOIN_SRCS)
OBJS = $(CORE_SRCS:.c=.o) $(PG_SRCS:.c=.o)

REGRESS = bloom_basic bloom_hashing bloom_agg bloom_io bloom_malformed \
	bloom_parallel bloom_fpr \
	cuckoo_basic cuckoo_hashing cuckoo_agg cuckoo_io cuckoo_malformed \
	cuckoo_parallel cuckoo_fpr identity collation_identity cuckoo_limits merge_once filter_equality \
	slice_probe selectivity \
	bloom_counting \
	antijoin recipes filter_index index_trust index_ranges index_skip index_skip_rows index_costs index_lanes index_bounds first_query index_candidates index_options index_filter sizeless overfill join_filter join_filter_why safety probe_cache create_clash
REGRESS_OPTS = --load-extension=$(EXTENSION)
# Concurrent sessions (specs/*.spec, run by pg_isolation_regress after the
# suite above): what SERIALIZABLE promises still holds where the extension
# skips reading.
ISOLATION = serializable_skip
ISOLATION_OPTS = --load-extension=$(EXTENSION)

UNIT_TESTS = $(patsubst %.c,%,$(wildcard test/test_*.c))
EXTRA_CLEAN = $(UNIT_TESTS) $(UNIT_TESTS:=_asan) bench/micro

PG_CONFIG ?= pg_config
PGXS := $(shell $(PG_CONFIG) --pgxs)
include $(PGXS)

# Every file names what it includes by its folder ("glue/amqfilter.h",
# "core/amq_bloom.h"), from src/: the folder is the dependency.  After PGXS,
# so that a PG_CPPFLAGS given on the command line does not replace it.
override CPPFLAGS := -I$(srcdir:%/=%)/src $(CPPFLAGS)

# PGXS tracks no header dependencies: rebuild everything when a header changes.
$(OBJS): $(wildcard src/*/*.h)

# The core must stay free of PostgreSQL: it is also built without it below.
.PHONY: core-purity unittest unittest-asan
core-purity:
	@if grep -n -E '#include\s*[<"](postgres|fmgr|utils/|access/|catalog/)' src/core/*.c src/core/*.h; then \
		echo "src/core must not include PostgreSQL headers"; exit 1; fi

CORE_TEST_CFLAGS = -std=c99 -O2 -g -Wall -Wextra -Werror -Isrc/core
CORE_HEADERS = $(wildcard src/core/*.h)
# test/harness.h, the shared harness, and the fixtures built on it
TEST_HEADERS = $(wildcard test/*.h)

# One binary per test/test_*.c (UNIT_TESTS finds them): that file, the test
# headers and the core sources, nothing else.
test/test_%: test/test_%.c $(TEST_HEADERS) $(CORE_SRCS) $(CORE_HEADERS)
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $< $(CORE_SRCS) -lm

test/test_%_asan: test/test_%.c $(TEST_HEADERS) $(CORE_SRCS) $(CORE_HEADERS)
	$(CC) $(CORE_TEST_CFLAGS) -O1 -fsanitize=address,undefined \
		-fno-sanitize-recover=all -fno-omit-frame-pointer \
		-o $@ $< $(CORE_SRCS) -lm

unittest: core-purity prefetch-check $(UNIT_TESTS)
	@set -e; for t in $(UNIT_TESTS); do ./$$t; done

# The hot loops of the objects the extension is built from (and the aggregates'
# transition, which requests each row's line) still prefetch
# (test/prefetch_check.sh says why that can silently stop).
PREFETCH_OBJS = src/core/amq_bloom.o src/core/amq_bloom_counting.o \
	src/core/amq_bloom_dleft.o src/core/amq_cuckoo_membership.o src/glue/filter_agg.o
.PHONY: prefetch-check
prefetch-check: $(PREFETCH_OBJS)
	@bash test/prefetch_check.sh $(PREFETCH_OBJS)

unittest-asan: core-purity $(UNIT_TESTS:=_asan)
	@set -e; for t in $(UNIT_TESTS:=_asan); do ./$$t; done

# $libdir/plugins/amqfilter, a link to the library: PostgreSQL lets any role
# LOAD a library there and name it in local_preload_libraries (ALTER ROLE app
# SET local_preload_libraries = 'amqfilter'), so that a role that is not a
# superuser gets the planner hooks from its session's first query.  A link,
# so that the library loads once whichever of its names loads it.
.PHONY: install-plugin-link uninstall-plugin-link
install: install-plugin-link
install-plugin-link: installdirs
	$(MKDIR_P) '$(DESTDIR)$(pkglibdir)/plugins'
	ln -sf '../$(MODULE_big)$(DLSUFFIX)' '$(DESTDIR)$(pkglibdir)/plugins/$(MODULE_big)$(DLSUFFIX)'
uninstall: uninstall-plugin-link
uninstall-plugin-link:
	rm -f '$(DESTDIR)$(pkglibdir)/plugins/$(MODULE_big)$(DLSUFFIX)'

# micro-bench: the cores' cost per added and probed hash next to the
# machine's memory floor (bench/micro.c); MICRO_N and MICRO_P size it.
.PHONY: micro-bench
bench/micro: bench/micro.c $(CORE_SRCS) $(CORE_HEADERS)
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $< $(CORE_SRCS) -lm

micro-bench: core-purity bench/micro
	./bench/micro

# dist: the PGXN release, amqfilter-VERSION.zip (VERSION from META.json), made
# by git archive from the commit checked out (HEAD; DIST_REF chooses another),
# so that it holds exactly what is committed: the files .gitattributes marks
# export-ignore are left out.  DIST_DIR is where it goes.  test/meta.sh builds
# and checks it.
DIST_REF ?= HEAD
# the version META.json at DIST_REF gives (its first "version", the release's)
DIST_VERSION = $(shell git show $(DIST_REF):META.json 2>/dev/null | sed -n 's/^[[:space:]]*"version":[[:space:]]*"\([^"]*\)".*/\1/p' | head -n 1)
DIST_DIR ?= .
DIST_ZIP = $(DIST_DIR)/$(EXTENSION)-$(DIST_VERSION).zip
.PHONY: dist
dist:
	@test -n "$(DIST_VERSION)" || { echo "no version in META.json at $(DIST_REF)"; exit 1; }
	git archive --format=zip --prefix=$(EXTENSION)-$(DIST_VERSION)/ \
		-o $(DIST_ZIP) $(DIST_REF)
	@echo "$(DIST_ZIP)"
EXTRA_CLEAN += $(EXTENSION)-*.zip

# ---------------------------------------------------------------------------
# fuzz: libFuzzer harnesses of the core (test/fuzz/), built with clang from the
# plain-C core only, no PostgreSQL.  `make fuzz` builds them; test/fuzz/run.sh
# builds and runs them.  Everything below belongs to the fuzz harnesses.
# ---------------------------------------------------------------------------
FUZZ_CC ?= clang
# every test/fuzz/fuzz_*.c is a harness; test/fuzz/run.sh finds them the same way
FUZZ_HARNESSES = $(patsubst test/fuzz/%.c,%,$(wildcard test/fuzz/fuzz_*.c))
FUZZ_BINS = $(addprefix test/fuzz/,$(FUZZ_HARNESSES))
FUZZ_CFLAGS = -std=c99 -O1 -g -Wall -Wextra -Werror -Isrc/core \
	-fsanitize=fuzzer,address,undefined -fno-sanitize-recover=all \
	-fno-omit-frame-pointer
# The differential harnesses read operation codes, not formats: comparison
# tracing buys them nothing and makes the eviction walks ~4x slower.
FUZZ_DIFF_CFLAGS = -fno-sanitize-coverage=trace-cmp
EXTRA_CLEAN += $(FUZZ_BINS) test/fuzz/gen_seeds

.PHONY: fuzz fuzz-seeds
fuzz: $(FUZZ_BINS)

test/fuzz/fuzz_%: test/fuzz/fuzz_%.c $(wildcard test/fuzz/*.h) $(CORE_SRCS) $(CORE_HEADERS)
	$(FUZZ_CC) $(FUZZ_CFLAGS) $(if $(findstring _diff,$@),$(FUZZ_DIFF_CFLAGS)) \
		-o $@ $< $(CORE_SRCS) -lm

# regenerate the seed corpora (deterministic: the same files every time)
test/fuzz/gen_seeds: test/fuzz/gen_seeds.c $(CORE_SRCS) $(CORE_HEADERS)
	$(CC) $(CORE_TEST_CFLAGS) -o $@ $< $(CORE_SRCS) -lm

fuzz-seeds: test/fuzz/gen_seeds
	@for h in $(FUZZ_HARNESSES); do mkdir -p test/fuzz/corpus/$$h; done
	./test/fuzz/gen_seeds test/fuzz/corpus
# ------------------------------- end of fuzz -------------------------------
