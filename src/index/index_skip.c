/*
 * index_skip.c
 *		Partitions whose amqfilter index rules a value out are not scanned,
 *		nor planned beyond a placeholder: decided when the plan starts for a
 *		constant or a generic plan's parameter, and at each rescan for the
 *		outer row of a nested loop.
 *
 * Planning.  With "key = constant" on a partitioned table (a literal, or a
 * custom plan's parameter), each partition with an amqfilter index on the
 * key gets one path, an "AmqFilter Scan", and its indexes are never costed
 * (get_relation_info_hook, build_simple_rel_hook on 19, and
 * set_rel_pathlist_hook).  The scan probes the
 * index when it starts and reads only the block ranges the probe returns
 * (TID range scans), none if the index rules the value out.  Why not probe
 * while planning and drop the partition, as partition pruning drops
 * partitions: pruning decides on partition bounds, which only DDL changes,
 * and DDL invalidates cached plans; an index changes with every insert,
 * and nothing would tell a cached plan (a PL/pgSQL statement with a
 * literal, say) that the value it ruled out was inserted since, nor a plan
 * made a moment before a concurrent insert commits and the executor's
 * snapshot is taken.  Probing when the plan starts sees every row its
 * snapshot may (index_insert.c), and costs what a plan-time probe
 * would.
 *
 * Starting a plan.  A finished plan's Append over partitions becomes an
 * "AmqFilter Append" (a planner hook on the finished plan) when some of its
 * children are AmqFilter Scans or bitmap scans of an amqfilter index whose
 * value is a constant or a parameter: at start-up it probes the indexes of
 * the children whose value is known then (constants, a generic plan's
 * parameters) and initializes only those the index does not rule out, as
 * run-time partition pruning initializes only the partitions it keeps
 * (EXPLAIN: "Partitions Removed"; the others are not listed).  A value from
 * a nested loop's outer row (an executor parameter) is known at each
 * rescan: those children are all initialized, and each scan runs only
 * those whose index may hold the current value (EXPLAIN ANALYZE:
 * "Partition Scans Skipped").  Left as they are: Appends PostgreSQL prunes
 * at run time itself (part_prune_info: its pruning would be lost), parallel
 * and asynchronous Appends, those of scrollable cursors, and any under a
 * Gather.  An AmqFilter Scan not under an AmqFilter Append (a MergeAppend,
 * the first query of a session that loads the library while planning) is
 * correct alone: it probes and reads what the probe returns.
 *
 * Who may learn what.  AmqFilter Scans are planned only where the planner
 * may probe for a cost estimate (amq_index_may_probe: no row security or
 * security barrier between the role and the table), and only for SELECT
 * without row locks.  A plan is rewritten only when no appended table has
 * row security for the role, and EXPLAIN without ANALYZE probes only for
 * AmqFilter Scans, never for a parameter.
 *
 * Cost.  An AmqFilter Scan costs its probe and, as if the value were in
 * one of the partitions, a share of reading the blocks of the rows the
 * statistics expect.  An AmqFilter Append costs each probed child's probe
 * plus the same share of the rest: a generic plan costs about what a
 * custom plan does, without the planning, and plan_cache_mode = auto
 * settles on it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/relation.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "catalog/pg_am.h"
#include "catalog/partition.h"
#include "catalog/pg_class.h"
#include "catalog/pg_index.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/extensible.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/appendinfo.h"
#include "optimizer/clauses.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "optimizer/paths.h"
#include "optimizer/plancat.h"
#include "optimizer/planner.h"
#include "optimizer/restrictinfo.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "storage/predicate.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/relcache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/syscache.h"

#include "index/filter_index.h"

bool		amq_index_skip = true;

static set_rel_pathlist_hook_type prev_set_rel_pathlist = NULL;
static planner_hook_type prev_planner = NULL;

/*
 * The partitions the planner gave an AmqFilter Scan, while it plans
 * (nested planning, for a function's query run while folding constants,
 * adds to the list).
 */
typedef struct ProbedRel
{
	RelOptInfo *rel;
	Oid			indexoid;
	Const	   *value;
	int			nparts;			/* its partitioned table's partitions */
} ProbedRel;

static List *probed_rels = NIL;
static int	planner_depth = 0;
static MemoryContext probed_cxt = NULL;	/* the list's, emptied per query */

/* Kinds of children of an AmqFilter Append (custom_private). */
#define SKIP_PLAIN		0		/* always scanned */
#define SKIP_PROBED		1		/* an AmqFilter Scan: probed at start-up */
#define SKIP_START		2		/* a scan whose value is known at start-up */
#define SKIP_RESCAN		3		/* probed at each scan */

static const CustomPathMethods probed_path_methods;
static const CustomScanMethods probed_scan_methods;
static const CustomExecMethods probed_exec_methods;
static const CustomScanMethods append_scan_methods;
static const CustomExecMethods append_exec_methods;

/*
 * ----------------------------------------------------------------
 * Probing
 * ----------------------------------------------------------------
 */

/*
 * False if the index rules the value out; true if it may hold it, or
 * cannot say (not usable, no hash support for the value's type).  index
 * is open.
 */
static bool
index_may_hold(Relation index, Oid type, Datum value, AmqIndexHasher *hasher,
			   bool *have_hasher)
{
	AmqIndexMeta meta;

	if (!amq_index_usable(index))
		return true;
	if (!*have_hasher)
	{
		if (!amq_index_hasher_init(hasher, index, type, CurrentMemoryContext))
			return true;
		*have_hasher = true;
	}
	amq_index_flush(RelationGetRelid(index));
	amq_index_read_meta(index, &meta);
	if (amq_index_out_of_bounds(&meta, hasher, value))
		return false;
	return amq_index_may_contain(index, &meta, amq_index_hash(hasher, meta.seed, value));
}

/*
 * ----------------------------------------------------------------
 * Planning: partitions a constant may rule out
 * ----------------------------------------------------------------
 */

/*
 * The constant of a clause "column = constant" of the partitioned table
 * (top) on the partition's column attno, compared with an equality operator
 * of the index's family, or NULL.  The clause is the partitioned table's,
 * its column translated to the partition's.
 */
static Const *
clause_value(PlannerInfo *root, RelOptInfo *rel, IndexOptInfo *index,
			 Index top, RestrictInfo *rinfo)
{
	OpExpr	   *op = (OpExpr *) rinfo->clause;
	Node	   *left;
	Node	   *right;
	Oid			opno;
	Var		   *var;
	Node	   *child;

	if (rinfo->security_level > 0 || rinfo->pseudoconstant ||
		!IsA(op, OpExpr) || list_length(op->args) != 2)
		return NULL;
	left = linitial(op->args);
	right = lsecond(op->args);
	opno = op->opno;
	if (IsA(left, Const))
	{
		Node	   *swap = left;

		left = right;
		right = swap;
		opno = get_commutator(opno);
	}
	if (IsA(left, RelabelType))
		left = (Node *) ((RelabelType *) left)->arg;
	if (!IsA(left, Var) || !IsA(right, Const) || ((Const *) right)->constisnull)
		return NULL;
	var = (Var *) left;
	if (var->varno != top || var->varlevelsup != 0 || !OidIsValid(opno) ||
		get_op_opfamily_strategy(opno, index->opfamily[0]) != AMQ_INDEX_EQUAL)
		return NULL;
	if (OidIsValid(index->indexcollations[0]) &&
		index->indexcollations[0] != op->inputcollid)
		return NULL;
	child = amq_adjust_appendrel_attrs_multilevel(root, (Node *) var,
												  rel, root->simple_rel_array[top]);
	if (!IsA(child, Var) || ((Var *) child)->varattno != index->indexkeys[0])
		return NULL;
	return (Const *) right;
}

/*
 * Finds, for a partition, an amqfilter index on a column its partitioned
 * table's clauses give a constant; records the pair, and leaves the
 * partition's indexes to no costing: its one path will be an AmqFilter
 * Scan.  Runs once the catalogs' information is in rel: from
 * get_relation_info_hook, or build_simple_rel_hook on 19, which has none.
 */
static void
skip_relation_info(PlannerInfo *root, bool inhparent, RelOptInfo *rel)
{
	int			top;
	RelOptInfo *parent;
	RangeTblEntry *prte;
	ListCell   *lc;
	bool		checked_access = false;

	if (!amq_index_skip || inhparent || rel->reloptkind != RELOPT_OTHER_MEMBER_REL ||
		root->parse->commandType != CMD_SELECT || root->parse->rowMarks != NIL ||
		rel->indexlist == NIL || !bms_get_singleton_member(rel->top_parent_relids, &top))
		return;
	parent = root->simple_rel_array[top];
	prte = root->simple_rte_array[top];
	if (parent == NULL || parent->baserestrictinfo == NIL || prte->rtekind != RTE_RELATION)
		return;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		ListCell   *lc2;

		if ((void *) index->amcostestimate != (void *) amq_index_costestimate ||
			index->indpred != NIL || index->nkeycolumns != 1 || index->indexkeys[0] <= 0)
			continue;
		foreach(lc2, parent->baserestrictinfo)
		{
			Const	   *value = clause_value(root, rel, index, top, lfirst(lc2));
			ProbedRel  *probed;

			if (value == NULL)
				continue;
			if (!checked_access)
			{
				if (!amq_index_may_probe(root, prte, prte->relid))
					return;
				checked_access = true;
			}
			if (probed_cxt == NULL)
				probed_cxt = AllocSetContextCreate(TopMemoryContext, "amqfilter skip",
												   ALLOCSET_SMALL_SIZES);
			probed = MemoryContextAlloc(probed_cxt, sizeof(ProbedRel));
			probed->rel = rel;
			probed->indexoid = index->indexoid;
			probed->value = value;
			probed->nparts = Max(parent->nparts, 1);
			{
				MemoryContext old = MemoryContextSwitchTo(probed_cxt);

				probed_rels = lappend(probed_rels, probed);
				MemoryContextSwitchTo(old);
			}
			rel->indexlist = NIL;
			return;
		}
	}
}

/*
 * The hook that runs amq_index_plain_scans and skip_relation_info:
 * build_simple_rel_hook on 19, which
 * replaced get_relation_info_hook (the one place here that differs between
 * majors other than through glue/pg_compat.h: a hook is installed by name).
 */
#if PG_VERSION_NUM >= 190000
static build_simple_rel_hook_type prev_build_simple_rel = NULL;

static void
skip_build_simple_rel(PlannerInfo *root, RelOptInfo *rel, RangeTblEntry *rte)
{
	if (prev_build_simple_rel)
		prev_build_simple_rel(root, rel, rte);
	if (rte->rtekind == RTE_RELATION)
	{
		amq_index_plain_scans(rel);
		skip_relation_info(root, rte->inh, rel);
	}
}

static void
install_relation_info_hook(void)
{
	prev_build_simple_rel = build_simple_rel_hook;
	build_simple_rel_hook = skip_build_simple_rel;
}
#else
static get_relation_info_hook_type prev_get_relation_info = NULL;

static void
skip_get_relation_info(PlannerInfo *root, Oid relationObjectId, bool inhparent,
					   RelOptInfo *rel)
{
	if (prev_get_relation_info)
		prev_get_relation_info(root, relationObjectId, inhparent, rel);
	amq_index_plain_scans(rel);
	skip_relation_info(root, inhparent, rel);
}

static void
install_relation_info_hook(void)
{
	prev_get_relation_info = get_relation_info_hook;
	get_relation_info_hook = skip_get_relation_info;
}
#endif

/*
 * The partition's entry, or NULL.  Partitions get their paths in the order
 * they were opened: the search starts after the last one found, so that
 * thousands of partitions cost a step each.
 */
static ProbedRel *
find_probed(RelOptInfo *rel)
{
	static int	next = 0;
	int			n = list_length(probed_rels);
	int			i;

	for (i = 0; i < n; i++)
	{
		int			at = (next + i) % n;
		ProbedRel  *probed = list_nth(probed_rels, at);

		if (probed->rel == rel)
		{
			next = at + 1;
			return probed;
		}
	}
	return NULL;
}

/*
 * A probed partition's only path: the AmqFilter Scan.  It costs its probe
 * (the metapage and a page of the newest generation) and, as if the value
 * were in one of the partitions, a share of reading the blocks of the rows
 * the statistics expect for it.
 */
static void
skip_set_rel_pathlist(PlannerInfo *root, RelOptInfo *rel, Index rti,
					  RangeTblEntry *rte)
{
	ProbedRel  *probed;
	CustomPath *path;
	double		blocks;

	if (prev_set_rel_pathlist)
		prev_set_rel_pathlist(root, rel, rti, rte);
	if (probed_rels == NIL || rel->reloptkind != RELOPT_OTHER_MEMBER_REL ||
		(probed = find_probed(rel)) == NULL || IS_DUMMY_REL(rel))
		return;

	path = makeNode(CustomPath);
	path->path.pathtype = T_CustomScan;
	path->path.parent = rel;
	path->path.pathtarget = rel->reltarget;
	path->path.param_info = NULL;
	path->path.parallel_aware = false;

	/*
	 * Not parallel safe: a parallel append of partitions the index rules
	 * out would cost less than their probes and read nothing more.
	 */
	path->path.parallel_safe = false;
	path->path.parallel_workers = 0;
	path->path.rows = rel->rows;
	blocks = Min(Max(rel->pages, 1), rel->rows);
	path->path.startup_cost = 2 * random_page_cost;
	path->path.total_cost = path->path.startup_cost +
		(blocks * random_page_cost + rel->tuples / Max(rel->pages, 1) * blocks * cpu_tuple_cost) /
		probed->nparts;
	path->path.pathkeys = NIL;
	/* it computes any target list itself (ExecScan projects) */
	path->flags = CUSTOMPATH_SUPPORT_PROJECTION;
	path->custom_paths = NIL;
	path->custom_private = list_make2(makeConst(OIDOID, -1, InvalidOid, sizeof(Oid),
												ObjectIdGetDatum(probed->indexoid),
												false, true),
									  probed->value);
	path->methods = &probed_path_methods;

	rel->pathlist = NIL;
	rel->partial_pathlist = NIL;
	add_path(rel, &path->path);
}

static Plan *
plan_probed(PlannerInfo *root, RelOptInfo *rel, CustomPath *best_path,
			List *tlist, List *clauses, List *custom_plans)
{
	CustomScan *cscan = makeNode(CustomScan);

	cscan->scan.plan.targetlist = tlist;
	cscan->scan.plan.qual = extract_actual_clauses(clauses, false);
	cscan->scan.scanrelid = rel->relid;
	cscan->flags = best_path->flags;
	cscan->custom_private = best_path->custom_private;
	cscan->methods = &probed_scan_methods;
	return &cscan->scan.plan;
}

static const CustomPathMethods probed_path_methods = {
	.CustomName = "AmqFilter Scan",
	.PlanCustomPath = plan_probed,
};

/*
 * ----------------------------------------------------------------
 * The AmqFilter Scan: probe, then read the ranges that may hold the value
 * ----------------------------------------------------------------
 */

typedef struct ProbedScanState
{
	CustomScanState css;
	bool		probed;
	AmqIndexRanges ranges;		/* where the value may be */
	int			next_range;
	TableScanDesc scan;
	TupleTableSlot *slot;
	bool		tidrange;		/* the table can scan a range of blocks */
	bool		serializable;	/* rows read take predicate locks */
	int64		blocks;			/* blocks the probe returned */
} ProbedScanState;

static Node *
create_probed_state(CustomScan *cscan)
{
	ProbedScanState *st = palloc0(sizeof(ProbedScanState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &probed_exec_methods;
	return (Node *) st;
}

static Oid
private_index(List *custom_private)
{
	return DatumGetObjectId(linitial_node(Const, custom_private)->constvalue);
}

/* The block ranges of the partition that may hold the value. */
static void
probe_ranges(ProbedScanState *st)
{
	CustomScan *cscan = (CustomScan *) st->css.ss.ps.plan;
	Const	   *value = lsecond_node(Const, cscan->custom_private);
	Relation	index = index_open(private_index(cscan->custom_private), AccessShareLock);
	AmqIndexHasher hasher;
	AmqIndexMeta meta;

	/*
	 * The probe stands for a scan of the index: under SERIALIZABLE it takes
	 * the lock that index_beginscan takes for an access method without
	 * predicate locks of its own, so that a later insert of the value
	 * (anywhere in the table: every insert goes through the index)
	 * conflicts with this read, as it would with the plain plan's.
	 */
	PredicateLockRelation(index, st->css.ss.ps.state->es_snapshot);
	memset(&st->ranges, 0, sizeof(st->ranges));
	if (!amq_index_usable(index) ||
		!amq_index_hasher_init(&hasher, index, value->consttype, CurrentMemoryContext))
		st->ranges.everywhere = true;
	else
	{
		amq_index_flush(RelationGetRelid(index));
		amq_index_read_meta(index, &meta);
		if (!amq_index_out_of_bounds(&meta, &hasher, value->constvalue))
			amq_index_probe(index, &meta, amq_index_hash(&hasher, meta.seed, value->constvalue),
							&st->ranges);
		/*
		 * Each block once, in order, and none past the table's end: a row
		 * the snapshot may see is in a block that exists by now.
		 */
		amq_index_ranges_merge(&st->ranges,
							   RelationGetNumberOfBlocks(st->css.ss.ss_currentRelation));
	}
	index_close(index, NoLock);
	st->probed = true;
}

static void
begin_probed(CustomScanState *node, EState *estate, int eflags)
{
	ProbedScanState *st = (ProbedScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	Relation	rel = node->ss.ss_currentRelation;

	/*
	 * The scan slot is the table's own kind, and the filter and projection
	 * are compiled again for it: compiled for the virtual slot a custom scan
	 * gets, they would read columns a table's slot has not yet deformed.
	 */
	amq_init_table_scan_slot(estate, &node->ss, rel);
	node->ss.ps.qual = ExecInitQual(cscan->scan.plan.qual, &node->ss.ps);
	ExecAssignScanProjectionInfoWithVarno(&node->ss, cscan->scan.scanrelid);
	st->slot = node->ss.ss_ScanTupleSlot;
	st->tidrange = rel->rd_tableam->scan_set_tidrange != NULL;
	st->serializable = IsolationIsSerializable();
	if (!(eflags & EXEC_FLAG_EXPLAIN_ONLY))
		probe_ranges(st);
}

/* Starts the scan of the next range, or returns false. */
static bool
next_range(ProbedScanState *st)
{
	Relation	rel = st->css.ss.ss_currentRelation;
	Snapshot	snapshot = st->css.ss.ps.state->es_snapshot;
	ItemPointerData mintid;
	ItemPointerData maxtid;

	if (st->ranges.everywhere || !st->tidrange)
	{
		/* one scan of the whole table */
		if (st->next_range > 0)
			return false;
		st->next_range = 1;
		st->scan = amq_table_beginscan(&st->css.ss, rel, snapshot);
		return true;
	}
	if (st->next_range >= st->ranges.n)
		return false;
	ItemPointerSet(&mintid, st->ranges.first[st->next_range], 1);
	ItemPointerSet(&maxtid, st->ranges.first[st->next_range] + st->ranges.len[st->next_range] - 1,
				   MaxOffsetNumber);
	st->blocks += st->ranges.len[st->next_range];
	st->next_range++;
	if (st->scan == NULL)
		st->scan = amq_table_beginscan_tidrange(&st->css.ss, rel, snapshot, &mintid, &maxtid);
	else
		table_rescan_tidrange(st->scan, &mintid, &maxtid);
	return true;
}

static TupleTableSlot *
probed_next(ScanState *ss)
{
	ProbedScanState *st = (ProbedScanState *) ss;

	for (;;)
	{
		if (st->scan != NULL)
		{
			bool		found;

			if (st->ranges.everywhere || !st->tidrange)
				found = table_scan_getnextslot(st->scan, ForwardScanDirection, st->slot);
			else
			{
				found = table_scan_getnextslot_tidrange(st->scan, ForwardScanDirection,
														st->slot);

				/*
				 * A scan of block ranges locks no relation, as a sequential
				 * scan does: lock each row read, as a bitmap heap scan
				 * does, for an update of it to conflict.
				 */
				if (found && st->serializable)
					PredicateLockTID(ss->ss_currentRelation, &st->slot->tts_tid,
									 ss->ps.state->es_snapshot, InvalidTransactionId);
			}
			if (found)
				return st->slot;
		}
		if (!next_range(st))
			return ExecClearTuple(st->slot);
	}
}

static bool
probed_recheck(ScanState *ss, TupleTableSlot *slot)
{
	return true;
}

static TupleTableSlot *
exec_probed(CustomScanState *node)
{
	ProbedScanState *st = (ProbedScanState *) node;

	if (!st->probed)
		probe_ranges(st);
	return ExecScan(&node->ss, probed_next, probed_recheck);
}

static void
end_probed(CustomScanState *node)
{
	ProbedScanState *st = (ProbedScanState *) node;

	if (st->scan)
		table_endscan(st->scan);
}

static void
rescan_probed(CustomScanState *node)
{
	ProbedScanState *st = (ProbedScanState *) node;

	/* the value is a constant: the same ranges */
	if (st->scan)
		table_endscan(st->scan);
	st->scan = NULL;
	st->next_range = 0;
}

static void
explain_probed(CustomScanState *node, List *ancestors, ExplainState *es)
{
	ProbedScanState *st = (ProbedScanState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	char	   *name = get_rel_name(private_index(cscan->custom_private));

	ExplainPropertyText("Filter Index", name ? name : "?", es);
	if (es->analyze && st->probed)
	{
		if (st->ranges.everywhere)
			ExplainPropertyText("Ranges", "everywhere", es);
		else
			ExplainPropertyInteger("Blocks Read", NULL, st->blocks, es);
	}
}

static const CustomScanMethods probed_scan_methods = {
	.CustomName = "AmqFilter Scan",
	.CreateCustomScanState = create_probed_state,
};

static const CustomExecMethods probed_exec_methods = {
	.CustomName = "AmqFilter Scan",
	.BeginCustomScan = begin_probed,
	.ExecCustomScan = exec_probed,
	.EndCustomScan = end_probed,
	.ReScanCustomScan = rescan_probed,
	.ExplainCustomScan = explain_probed,
};

/*
 * ----------------------------------------------------------------
 * Finished plans: Appends that skip
 * ----------------------------------------------------------------
 */

typedef struct Rewrite
{
	PlannedStmt *stmt;
	Oid			amoid;			/* amqfilter's access method */
} Rewrite;

static bool
contains_exec_param_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param) && ((Param *) node)->paramkind == PARAM_EXEC)
		return true;
	return expression_tree_walker(node, contains_exec_param_walker, context);
}

static bool
is_amq_index(Rewrite *rw, Oid indexoid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	bool		result;

	if (!HeapTupleIsValid(tup))
		return false;
	result = ((Form_pg_class) GETSTRUCT(tup))->relam == rw->amoid;
	ReleaseSysCache(tup);
	return result;
}

/*
 * How a child of an Append can be skipped: its kind, and for a probed one
 * the index and the expression of the value (a constant or a parameter).
 */
static int
child_kind(Rewrite *rw, Plan *child, Oid *indexoid, Node **value)
{
	BitmapIndexScan *bis;
	ListCell   *lc;

	if (IsA(child, CustomScan) && ((CustomScan *) child)->methods == &probed_scan_methods)
	{
		List	   *priv = ((CustomScan *) child)->custom_private;

		*indexoid = private_index(priv);
		*value = (Node *) lsecond(priv);
		return SKIP_PROBED;
	}
	if (!IsA(child, BitmapHeapScan) || child->lefttree == NULL ||
		!IsA(child->lefttree, BitmapIndexScan))
		return SKIP_PLAIN;
	bis = (BitmapIndexScan *) child->lefttree;
	if (!is_amq_index(rw, bis->indexid))
		return SKIP_PLAIN;
	foreach(lc, bis->indexqualorig)
	{
		OpExpr	   *op = (OpExpr *) lfirst(lc);
		Node	   *arg;

		if (!IsA(op, OpExpr) || list_length(op->args) != 2)
			continue;
		/* a value the scan computes once: no column, nothing volatile */
		arg = lsecond(op->args);
		if (contain_var_clause(arg) || contain_volatile_functions(arg) ||
			contain_subplans(arg))
			continue;
		if (IsA(arg, Const) && ((Const *) arg)->constisnull)
			continue;
		*indexoid = bis->indexid;
		*value = arg;
		return contains_exec_param_walker(arg, NULL) ? SKIP_RESCAN : SKIP_START;
	}
	return SKIP_PLAIN;
}

static bool
special_var_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Var) && IS_SPECIAL_VARNO(((Var *) node)->varno))
		return true;
	return expression_tree_walker(node, special_var_walker, context);
}

/* True if a table of the Append has row security for the query's role. */
static bool
append_has_rls(Rewrite *rw, Append *append)
{
	int			rti = -1;

	while ((rti = bms_next_member(append->apprelids, rti)) >= 0)
	{
		RangeTblEntry *rte = rt_fetch(rti, rw->stmt->rtable);

		if (rte->rtekind != RTE_RELATION ||
			check_enable_rls(rte->relid, amq_rte_user(AMQ_PLAN_PERMINFOS(rw->stmt), rte),
							 true) == RLS_ENABLED)
			return true;
	}
	return false;
}

/*
 * An AmqFilter Append for an Append, or NULL to keep it.  *saved gets how
 * much less the plan costs.
 */
static Plan *
skipping_append(Rewrite *rw, Append *append, Cost *saved)
{
	int			n = list_length(append->appendplans);
	List	   *kinds = NIL;
	List	   *indexes = NIL;
	List	   *values = NIL;
	List	   *scan_tlist = NIL;
	bool		have_tlist = false;
	int			nprobed = 0;
	Cost		cost = 0.0;
	ListCell   *lc;
	CustomScan *cscan;
	int			i;

	if (n == 0 || append->plan.parallel_aware || amq_append_prunes_at_run_time(append) ||
		append->nasyncplans > 0 || append->first_partial_plan < n ||
		append_has_rls(rw, append))
		return NULL;
	foreach(lc, append->appendplans)
	{
		Plan	   *child = lfirst(lc);
		Oid			indexoid = InvalidOid;
		Node	   *value = NULL;
		int			kind = child_kind(rw, child, &indexoid, &value);

		if (child->parallel_aware)
			return NULL;
		if (kind != SKIP_PLAIN)
			nprobed++;
		kinds = lappend_int(kinds, kind);
		indexes = lappend_oid(indexes, indexoid);
		values = lappend(values, value ? value : (Node *) makeNullConst(INT4OID, -1, InvalidOid));
		if (!have_tlist && !special_var_walker((Node *) child->targetlist, NULL))
		{
			scan_tlist = child->targetlist;
			have_tlist = true;
		}
	}
	if (nprobed == 0 || !have_tlist ||
		list_length(scan_tlist) != list_length(append->plan.targetlist))
		return NULL;

	/* each probed child: its probe, and its share of the rest */
	i = 0;
	foreach(lc, append->appendplans)
	{
		Plan	   *child = lfirst(lc);
		int			kind = list_nth_int(kinds, i++);

		if (kind == SKIP_PLAIN || kind == SKIP_PROBED)
			cost += child->total_cost;
		else
		{
			Cost		probe = child->lefttree->total_cost;

			cost += probe + (child->total_cost - probe) / nprobed;
		}
	}

	cscan = makeNode(CustomScan);
	cscan->scan.plan = append->plan;	/* costs, rows, parameters, node id */
	cscan->scan.plan.type = T_CustomScan;
	cscan->scan.plan.lefttree = NULL;
	cscan->scan.plan.righttree = NULL;
	cscan->scan.plan.qual = NIL;
	cscan->scan.plan.total_cost = Min(cost, append->plan.total_cost);
	*saved = append->plan.total_cost - cscan->scan.plan.total_cost;
	cscan->scan.scanrelid = 0;
	/* the children's rows, as they come: columns in the children's order */
	cscan->custom_scan_tlist = copyObject(scan_tlist);
	/* the Append's columns (their names are the query's), as the children's */
	cscan->scan.plan.targetlist = NIL;
	foreach(lc, append->plan.targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Expr	   *expr = tle->expr;

		cscan->scan.plan.targetlist =
			lappend(cscan->scan.plan.targetlist,
					makeTargetEntry((Expr *) makeVar(INDEX_VAR, tle->resno, exprType((Node *) expr),
													 exprTypmod((Node *) expr),
													 exprCollation((Node *) expr), 0),
									tle->resno, tle->resname, tle->resjunk));
	}
	cscan->custom_plans = append->appendplans;
	cscan->custom_exprs = values;
	cscan->custom_private = list_make2(kinds, indexes);
	cscan->custom_relids = append->apprelids;
	cscan->flags = 0;
	cscan->methods = &append_scan_methods;
	return &cscan->scan.plan;
}

/*
 * Rewrites the Appends of a tree; returns how much less the tree costs
 * (subtracted from every node above: an approximation for the plan cache,
 * which compares a generic plan's total cost with custom plans').
 */
static Cost
rewrite_tree(Rewrite *rw, Plan **slot, bool under_gather)
{
	Plan	   *plan = *slot;
	Cost		saved = 0.0;
	ListCell   *lc;

	if (plan == NULL)
		return 0.0;
	if (IsA(plan, Gather) || IsA(plan, GatherMerge))
		under_gather = true;
	saved += rewrite_tree(rw, &plan->lefttree, under_gather);
	saved += rewrite_tree(rw, &plan->righttree, under_gather);
	if (IsA(plan, Append))
	{
		foreach(lc, ((Append *) plan)->appendplans)
			saved += rewrite_tree(rw, (Plan **) &lfirst(lc), under_gather);
		if (!under_gather)
		{
			Cost		own = 0.0;
			Plan	   *skipping = skipping_append(rw, (Append *) plan, &own);

			/* its cost is its children's, theirs already lowered */
			if (skipping)
			{
				*slot = skipping;
				return own;
			}
		}
	}
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			saved += rewrite_tree(rw, (Plan **) &lfirst(lc), under_gather);
	else if (IsA(plan, SubqueryScan))
		saved += rewrite_tree(rw, &((SubqueryScan *) plan)->subplan, under_gather);
	else if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			saved += rewrite_tree(rw, (Plan **) &lfirst(lc), under_gather);
	else if (IsA(plan, BitmapAnd) || IsA(plan, BitmapOr))
		return 0.0;
	plan->total_cost = Max(plan->total_cost - saved, plan->startup_cost);
	return saved;
}

static PlannedStmt *
skip_planner(AMQ_PLANNER_HOOK_PARAMS)
{
	PlannedStmt *stmt;
	int			nkept;

	/*
	 * The partitions of this planning are looked up by their RelOptInfo:
	 * those of a planning nested in it (a function run while folding
	 * constants) are forgotten when it ends, as its memory is.
	 */
	if (planner_depth == 0)
	{
		probed_rels = NIL;		/* also what a planning that failed left */
		if (probed_cxt)
			MemoryContextReset(probed_cxt);
	}
	nkept = list_length(probed_rels);
	planner_depth++;
	PG_TRY();
	{
		if (prev_planner)
			stmt = prev_planner(AMQ_PLANNER_HOOK_ARGS);
		else
			stmt = standard_planner(AMQ_PLANNER_HOOK_ARGS);
	}
	PG_FINALLY();
	{
		planner_depth--;
		probed_rels = list_truncate(probed_rels, nkept);
	}
	PG_END_TRY();

	amq_index_skip_rewrite(stmt, (cursorOptions & CURSOR_OPT_SCROLL) != 0);
	return stmt;
}

/*
 * Makes the Appends of a finished plan AmqFilter Appends where they may
 * skip partitions (from the planner hook; and when a plan made before the
 * library was loaded starts, join/join_filter.c).  Not for a plan that may
 * run backwards (a scrollable cursor).
 */
void
amq_index_skip_rewrite(PlannedStmt *stmt, bool backward)
{
	Rewrite		rw;
	ListCell   *lc;

	if (!amq_index_skip || stmt->commandType != CMD_SELECT || stmt->rowMarks != NIL ||
		backward)
		return;
	rw.stmt = stmt;
	rw.amoid = get_index_am_oid("amqfilter", true);
	if (!OidIsValid(rw.amoid))
		return;
	rewrite_tree(&rw, &stmt->planTree, false);
	foreach(lc, stmt->subplans)
		rewrite_tree(&rw, (Plan **) &lfirst(lc), false);
}

/*
 * ----------------------------------------------------------------
 * The AmqFilter Append
 * ----------------------------------------------------------------
 */

typedef struct SkipChild
{
	int			kind;
	Oid			indexoid;
	Plan	   *plan;
	ExprState  *value;
	Const	   *constant;		/* the value, if a constant */
	Oid			type;
	PlanState  *ps;				/* NULL: not initialized (removed) */
	Relation	index;			/* opened by the first probe */
	AmqIndexHasher hasher;
	bool		have_hasher;
	bool		active;			/* scanned in this scan */
	int64		probes;			/* its probes at scans, and of them */
	int64		ruled_out;		/* those that ruled the value out */
} SkipChild;

/*
 * A child that is a bitmap scan of its index probes the index itself at
 * each scan, and gets no rows for a value it rules out: a probe before it
 * pays only where it saves the scan's start, which a nested loop whose
 * values are nearly all there (a fact's part keys, in every partition)
 * never does.  Past SKIP_TRIAL probes that ruled out fewer than one in
 * SKIP_WORTH, such a child is no longer probed.
 */
#define SKIP_TRIAL		128
#define SKIP_WORTH		8

/* True if the child is a bitmap scan of the index it is probed with. */
static bool
scans_own_index(const SkipChild *child)
{
	Plan	   *inner;

	if (!IsA(child->plan, BitmapHeapScan))
		return false;
	inner = outerPlan(child->plan);
	return inner != NULL && IsA(inner, BitmapIndexScan) &&
		((BitmapIndexScan *) inner)->indexid == child->indexoid;
}

/* False once probing the child has not paid (above). */
static bool
worth_probing(const SkipChild *child)
{
	return !(child->probes >= SKIP_TRIAL && child->ruled_out * SKIP_WORTH < child->probes &&
			 scans_own_index(child));
}

typedef struct SkipAppendState
{
	CustomScanState css;
	int			nchildren;
	SkipChild  *children;
	int			current;
	bool		decided;		/* active set for this scan */
	bool		rescan_keys;	/* children probed at each scan */
	bool		probed_children;	/* AmqFilter Scans among them */
	int64		removed;		/* not initialized */
	int64		scans;			/* children probed at scans, over all scans */
	int64		skipped;		/* of those, ruled out */
} SkipAppendState;

static Node *
create_append_state(CustomScan *cscan)
{
	SkipAppendState *st = palloc0(sizeof(SkipAppendState));

	NodeSetTag(st, T_CustomScanState);
	st->css.methods = &append_exec_methods;
	return (Node *) st;
}

/* Probes a child's index with its value, evaluated now. */
static bool
child_may_hold(SkipAppendState *st, SkipChild *child)
{
	ExprContext *econtext = st->css.ss.ps.ps_ExprContext;
	bool		isnull;
	Datum		value;
	bool		result;

	if (child->constant)
	{
		value = child->constant->constvalue;
		isnull = child->constant->constisnull;
	}
	else
		value = ExecEvalExprSwitchContext(child->value, econtext, &isnull);
	if (isnull)
		return false;			/* "= NULL" holds for no row */
	if (child->index == NULL)
	{
		child->index = index_open(child->indexoid, AccessShareLock);
		/* under SERIALIZABLE, as a scan of the index would (probe_ranges) */
		PredicateLockRelation(child->index, st->css.ss.ps.state->es_snapshot);
	}
	result = index_may_hold(child->index, child->type, value, &child->hasher,
							&child->have_hasher);
	if (!child->constant)
		ResetExprContext(econtext);
	return result;
}

static void
begin_append(CustomScanState *node, EState *estate, int eflags)
{
	SkipAppendState *st = (SkipAppendState *) node;
	CustomScan *cscan = (CustomScan *) node->ss.ps.plan;
	List	   *kinds = linitial(cscan->custom_private);
	List	   *indexes = lsecond(cscan->custom_private);
	bool		explain_only = (eflags & EXEC_FLAG_EXPLAIN_ONLY) != 0;
	int			i;

	/*
	 * Rows go up in the slot of the child that returned them: a table's
	 * own kind from a scan, a virtual one from a join or a Result, and so
	 * on.  The nodes above must compile their expressions for any kind, as
	 * they do above an Append, not for the virtual slot a custom scan
	 * declares (they would read columns no one deformed).
	 */
	node->ss.ps.resultopsset = true;
	node->ss.ps.resultopsfixed = false;

	st->nchildren = list_length(cscan->custom_plans);
	st->children = palloc0(sizeof(SkipChild) * st->nchildren);
	for (i = 0; i < st->nchildren; i++)
	{
		SkipChild  *child = &st->children[i];
		Node	   *value = list_nth(cscan->custom_exprs, i);
		bool		init = true;

		CHECK_FOR_INTERRUPTS();

		child->kind = list_nth_int(kinds, i);
		child->indexoid = list_nth_oid(indexes, i);
		child->plan = list_nth(cscan->custom_plans, i);
		child->type = exprType(value);
		if (IsA(value, Const))
			child->constant = (Const *) value;
		else
			child->value = ExecInitExpr((Expr *) value, &node->ss.ps);
		switch (child->kind)
		{
			case SKIP_PROBED:
				st->probed_children = true;
				/* planned where the planner may probe: EXPLAIN may too */
				init = child_may_hold(st, child);
				break;
			case SKIP_START:
				init = explain_only || child_may_hold(st, child);
				break;
			case SKIP_RESCAN:
				st->rescan_keys = true;
				break;
			default:
				break;
		}
		if (init)
		{
			child->ps = ExecInitNode(child->plan, estate, eflags);
			node->custom_ps = lappend(node->custom_ps, child->ps);
		}
		else
			st->removed++;
	}
}

/* Which children this scan runs. */
static void
decide(SkipAppendState *st)
{
	int			i;

	for (i = 0; i < st->nchildren; i++)
	{
		SkipChild  *child = &st->children[i];

		child->active = child->ps != NULL;
		if (child->active && child->kind == SKIP_RESCAN && worth_probing(child))
		{
			st->scans++;
			child->probes++;
			if (!child_may_hold(st, child))
			{
				child->active = false;
				child->ruled_out++;
				st->skipped++;
			}
		}
	}
	st->current = 0;
	st->decided = true;
}

static TupleTableSlot *
exec_append(CustomScanState *node)
{
	SkipAppendState *st = (SkipAppendState *) node;

	if (!st->decided)
		decide(st);
	while (st->current < st->nchildren)
	{
		SkipChild  *child = &st->children[st->current];

		if (child->active)
		{
			TupleTableSlot *slot = ExecProcNode(child->ps);

			if (!TupIsNull(slot))
			{
				ProjectionInfo *proj = node->ss.ps.ps_ProjInfo;

				/* the targetlist names the children's columns in order */
				if (proj == NULL)
					return slot;
				proj->pi_exprContext->ecxt_scantuple = slot;
				return ExecProject(proj);
			}
		}
		st->current++;
	}
	return ExecClearTuple(node->ss.ps.ps_ResultTupleSlot);
}

static void
end_append(CustomScanState *node)
{
	SkipAppendState *st = (SkipAppendState *) node;
	int			i;

	for (i = 0; i < st->nchildren; i++)
	{
		if (st->children[i].ps)
			ExecEndNode(st->children[i].ps);
		if (st->children[i].index)
			index_close(st->children[i].index, NoLock);
	}
}

static void
rescan_append(CustomScanState *node)
{
	SkipAppendState *st = (SkipAppendState *) node;
	int			i;

	for (i = 0; i < st->nchildren; i++)
	{
		PlanState  *ps = st->children[i].ps;

		if (ps == NULL)
			continue;
		if (node->ss.ps.chgParam != NULL)
			UpdateChangedParamSet(ps, node->ss.ps.chgParam);
		if (ps->chgParam == NULL)
			ExecReScan(ps);
	}
	st->decided = false;
}

static void
explain_append(CustomScanState *node, List *ancestors, ExplainState *es)
{
	SkipAppendState *st = (SkipAppendState *) node;

	/* EXPLAIN probes only for AmqFilter Scans, planned where it may */
	if (es->analyze || st->removed > 0 || st->probed_children)
		ExplainPropertyInteger("Partitions Removed", NULL, st->removed, es);
	if (es->analyze && st->rescan_keys)
	{
		ExplainPropertyInteger("Partition Scans Probed", NULL, st->scans, es);
		ExplainPropertyInteger("Partition Scans Skipped", NULL, st->skipped, es);
	}
}

static const CustomScanMethods append_scan_methods = {
	.CustomName = "AmqFilter Append",
	.CreateCustomScanState = create_append_state,
};

static const CustomExecMethods append_exec_methods = {
	.CustomName = "AmqFilter Append",
	.BeginCustomScan = begin_append,
	.ExecCustomScan = exec_append,
	.EndCustomScan = end_append,
	.ReScanCustomScan = rescan_append,
	.ExplainCustomScan = explain_append,
};

/*
 * ----------------------------------------------------------------
 * For runtime join filters: a table whose index rules out every key
 * ----------------------------------------------------------------
 */

/*
 * The amqfilter index a probe of the table's column attno may ask (single
 * column, no predicate, valid, hashing under collation or deterministic),
 * or InvalidOid.  Not where row security of the table, or of a table it is
 * a partition of, applies to the user: the index summarizes every row.
 */
Oid
amq_index_for_column(Oid relid, AttrNumber attno, Oid collation)
{
	Relation	rel;
	List	   *indexes;
	ListCell   *lc;
	Oid			found = InvalidOid;
	Oid			amoid = get_index_am_oid("amqfilter", true);

	if (!amq_index_skip || !OidIsValid(amoid) ||
		check_enable_rls(relid, InvalidOid, true) == RLS_ENABLED)
		return InvalidOid;
	if (get_rel_relispartition(relid))
	{
		foreach(lc, get_partition_ancestors(relid))
			if (check_enable_rls(lfirst_oid(lc), InvalidOid, true) == RLS_ENABLED)
				return InvalidOid;
	}
	rel = table_open(relid, NoLock);	/* the query locked it */
	indexes = RelationGetIndexList(rel);
	foreach(lc, indexes)
	{
		Relation	index = index_open(lfirst_oid(lc), AccessShareLock);
		Oid			indcoll = index->rd_indcollation[0];

		if (index->rd_rel->relam == amoid && index->rd_index->indnatts == 1 &&
			index->rd_index->indkey.values[0] == attno &&
			heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL) &&
			index->rd_index->indisvalid &&
			(!OidIsValid(indcoll) || indcoll == collation ||
			 get_collation_isdeterministic(indcoll)))
			found = RelationGetRelid(index);
		index_close(index, NoLock);
		if (OidIsValid(found))
			break;
	}
	list_free(indexes);
	table_close(rel, NoLock);
	return found;
}

/*
 * The block ranges of the index's table that may hold any of n values of
 * type, sorted, merged and clipped to the table's *heap_blocks (none: the
 * index rules every value out; out->everywhere: it cannot narrow).  False
 * when it cannot say (not usable, no hash support for the type) or the
 * probes would cost more than reading the table: a probe of many keys reads
 * each index page they go to once (amq_index_probe_many) and hashes every
 * key, about what checking a few rows costs, so it is made only while keys
 * times generations (and lanes a key, with lanes) stay within
 * AMQ_SKIP_KEYS_PER_BLOCK times the table's blocks.  With presence, only
 * whether some value may be there (none:
 * out has no range), which costs a page a key and generation whatever the
 * ranges of the keys (amq_index_probe_many).
 */
#define AMQ_SKIP_KEYS_PER_BLOCK 16

bool
amq_index_ranges_of_values(Oid indexoid, Oid type, const Datum *values, int n,
						   Snapshot snapshot, bool presence, AmqIndexRanges *out,
						   BlockNumber *heap_blocks)
{
	Relation	index = index_open(indexoid, AccessShareLock);
	AmqIndexHasher hasher;
	AmqIndexMeta meta;
	uint64	   *hashes;
	double		lanes = 1.0;
	int			i;
	int			m;

	memset(out, 0, sizeof(AmqIndexRanges));
	if (!amq_index_usable(index) ||
		!amq_index_hasher_init(&hasher, index, type, CurrentMemoryContext))
	{
		index_close(index, NoLock);
		return false;
	}
	/* under SERIALIZABLE, as a scan of the index would (probe_ranges) */
	PredicateLockRelation(index, snapshot);
	amq_index_flush(indexoid);
	amq_index_read_meta(index, &meta);
	{
		Relation	heap = table_open(index->rd_index->indrelid, NoLock);

		*heap_blocks = RelationGetNumberOfBlocks(heap);
		table_close(heap, NoLock);
	}
	/* the values the bounds rule out need no page */
	hashes = palloc(sizeof(uint64) * Max(n, 1));
	for (i = 0, m = 0; i < n; i++)
		if (!amq_index_out_of_bounds(&meta, &hasher, values[i]))
			hashes[m++] = amq_index_hash(&hasher, meta.seed, values[i]);
	/* with lanes, a key's ranges cost a page a lane (its first only for presence) */
	if (!presence && meta.version == AMQ_INDEX_VERSION_LANES &&
		(meta.flags & AMQ_INDEX_KEYS_COUNTED) && meta.build_keys > meta.build_everywhere)
		lanes = 1.0 + (double) meta.build_reads /
			(meta.build_keys - meta.build_everywhere) / AMQ_INDEX_LANE_ENTRIES;
	if ((double) m * meta.ngens * lanes > (double) AMQ_SKIP_KEYS_PER_BLOCK * *heap_blocks)
	{
		pfree(hashes);
		index_close(index, NoLock);
		return false;
	}
	amq_index_probe_many(index, &meta, hashes, m, presence, out);
	pfree(hashes);
	index_close(index, NoLock);
	amq_index_ranges_merge(out, *heap_blocks);
	return true;
}

/* True if plan is an AmqFilter Append. */
bool
amq_index_skip_is_append(Plan *plan)
{
	return IsA(plan, CustomScan) && ((CustomScan *) plan)->methods == &append_scan_methods;
}

/* Installs the hooks and the setting (from _PG_init). */
void
amq_index_skip_init(void)
{
	DefineCustomBoolVariable("amqfilter.index_skip",
							 "Skips partitions whose amqfilter index rules the value out.",
							 "While planning (a constant), at executor start-up (a "
							 "parameter) and at each rescan (a nested loop's outer row).",
							 &amq_index_skip, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	RegisterCustomScanMethods(&probed_scan_methods);
	RegisterCustomScanMethods(&append_scan_methods);
	install_relation_info_hook();
	prev_set_rel_pathlist = set_rel_pathlist_hook;
	set_rel_pathlist_hook = skip_set_rel_pathlist;
	prev_planner = planner_hook;
	planner_hook = skip_planner;
}
