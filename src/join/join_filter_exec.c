/*
 * join_filter_exec.c
 *		The two nodes of a runtime join filter (join_filter_plan.c puts
 *		them into plans): "build" under a hash join's Hash node, "probe" on
 *		the probe side.
 *
 * Build.  Passes the Hash node every row of the build side and keeps the
 * hash of each row's key; when the build side ends it sizes a split block
 * Bloom filter (core/amq_split_block.h, 12 bits a key) for the keys it saw (all of them: the Hash node reads the whole
 * build side, every batch of a join that spills included) and adds them.
 * Past amqfilter.join_filter_max_keys keys it stops keeping them and the
 * filter is off.  The keys are hashed as they will be on the probe side:
 * with the 64-bit hash function of the join operator's hash family for
 * each side's type (equal values hash alike across its types), under the
 * join's collation; integers inline, the same way for every width.
 *
 * Probe.  Until the filter is built (the join may read one probe-side row
 * before building, to learn whether the probe side is empty) and when it is
 * off, every row passes.  Then a row whose key is NULL, or whose key the
 * filter rules out, is dropped: it has no match (the join's operators are
 * strict, and a key the filter never saw was not in the build side).  The
 * first JOIN_FILTER_WINDOW rows tested decide whether the filter pays: if
 * it drops fewer than amqfilter.join_filter_min_rejected of them, the node
 * stops testing and passes rows through.
 *
 * The build node finds a place for what it builds at executor start and
 * stores its address in the plan's PARAM_EXEC slot for the filter; the
 * probe nodes (started earlier: a join starts its probe side first) read it
 * at their first row.  Both run in the process that runs the join.
 */
#include "postgres.h"

#include "access/heapam.h"
#include "access/tableam.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/nodeCustom.h"
#include "miscadmin.h"
#include "nodes/nodeFuncs.h"
#include "nodes/execnodes.h"
#include "port/atomics.h"
#include "storage/spin.h"
#include "utils/dsa.h"
#include "utils/datum.h"
#include "utils/lsyscache.h"
#include "utils/guc.h"
#include "utils/memutils.h"
#include "utils/ruleutils.h"

#include "core/amq_split_block.h"
#include "glue/filter_glue.h"
#include "index/filter_index.h"
#include "join/join_filter.h"

/* bits of filter a key: a false-positive rate of about 0.55% */
#define JOIN_FILTER_BITS_PER_KEY	12.0
/* the seed keys are hashed with, on both sides */
#define JOIN_FILTER_SEED	UINT64CONST(0x616d716a6f696e66)
/*
 * The false-positive rate of the bloom value shipped to foreign scans: each
 * remote row the filter wrongly lets through crosses the network, so it is
 * lower than the local filter's
 */
#define JOIN_FILTER_REMOTE_FPR	0.001
/* probe-side rows tested before deciding whether the filter pays */
#define JOIN_FILTER_WINDOW	65536

/*
 * The most build-side keys kept as values, for probe nodes that ask a
 * table's amqfilter index whether it holds any of them: a skip asks the
 * index of each table for every key (a hash each, each index page once),
 * and index_skip.c asks only while that costs less than reading
 * the table; past this many keys it would for no table the size of a
 * partition worth skipping (16 keys a block: 65,536 keys against 4,096
 * blocks, 32 MB).
 */
#define JOIN_SKIP_MAX_KEYS	65536

typedef enum JoinFilterStatus
{
	JOIN_FILTER_COLLECTING,		/* the build side is being read */
	JOIN_FILTER_BUILDING,		/* shared: one process fills it */
	JOIN_FILTER_READY,			/* built: probes test it */
	JOIN_FILTER_OFF				/* too many keys: probes pass every row */
} JoinFilterStatus;

/*
 * A Parallel Hash join's build side is read by several processes, each a
 * part.  Each keeps its part's hashes and, when its part ends, hands them
 * over in the query's shared memory (a chunk of its DSA area).  The join
 * probes only once every process that read a part has finished it (its
 * build barrier), so the first probe, in whichever process, finds every
 * chunk: it builds the filter once, in shared memory, while probes in the
 * other processes pass their rows untested until it is ready.  Nobody waits
 * here: a process waiting at the end of its part could stall the join's own
 * build, which needs every process still hashing to help it grow.
 */
typedef struct JoinFilterShared
{
	slock_t		mutex;			/* guards the fields below but status */
	pg_atomic_uint32 status;	/* a JoinFilterStatus */
	dsa_pointer chunks;			/* the parts' hashes, a list of HashChunk */
	int64		total;
	bool		too_many;
	dsa_pointer words;			/* the filter, once ready */
	uint64		nblocks;
} JoinFilterShared;

typedef struct HashChunk
{
	dsa_pointer next;
	int64		n;
	uint64		hashes[FLEXIBLE_ARRAY_MEMBER];
} HashChunk;

/*
 * What the build node makes and the probe nodes read, in the process's
 * query memory; for a Parallel Hash join, a process's view of the shared
 * filter.
 */
typedef struct JoinFilter
{
	JoinFilterStatus status;	/* of this process's own filter */
	uint64	   *hashes;			/* while collecting */
	int64		nhashes;
	int64		maxhashes;
	bool		handed_over;	/* shared: this part's hashes are */
	int64		keys;			/* kept when built */
	amq_split_block bloom;		/* own, or the shared one mapped here */
	MemoryContext cxt;
	JoinFilterShared *shared;	/* a Parallel Hash join's, or NULL */
	dsa_area   *area;
	/* the keys themselves, for probes that may skip a table (one key) */
	bool		keep_values;
	Oid			value_type;
	bool		value_byval;
	int16		value_len;
	Datum	   *values;
	int			nvalues;
	int			maxvalues;
	bool		values_off;		/* more than JOIN_SKIP_MAX_KEYS */
	int64		builds;			/* builds begun: which one the keys are of */
	/* the bloom value for foreign scans (join_filter_remote.c), if shipped */
	ParamExecData *remote;		/* its slot, or NULL */
	AmqHasher	remote_hasher;	/* how a bloom value hashes the key */
	uint64	   *remote_hashes;	/* while collecting */
	int64		remote_n;
	int64		remote_max;
	const char *remote_off;		/* why none is sent, or NULL */
	int64		remote_bytes;	/* of the value sent */
} JoinFilter;

/* The keys of a node and how to hash them. */
typedef struct KeyHasher
{
	int			nkeys;
	AttrNumber *columns;		/* a key that is a column of the row, or 0 */
	ExprState **keys;			/* else its expression */
	bool		any_expression;
	bool		any_call;		/* a key hashed by a function call */
	FmgrInfo   *procs;			/* fn_oid InvalidOid: an integer, inline */
	Oid		   *collations;
	int16	   *int_widths;
} KeyHasher;

typedef struct JoinFilterState
{
	CustomScanState css;
	JoinFilterSpec spec;
	KeyHasher	hasher;
	PlanState  *child;
	JoinFilter *filter;			/* build: its own; probe: found at first row */
	/* probe only */
	bool		testing;		/* false once it stopped paying */
	int64		tested;
	int64		rejected;
	bool		skip_decided;	/* this scan's: whether its table is skipped */
	bool		skipped;
	int			skip_keys;		/* the keys the index ruled out, if skipped */
	int64		scans_skipped;	/* over every scan */
	int64		scans_asked;
	/* whether the table may hold a key, asked for the keys of this build */
	int64		may_hold_build;	/* 0: not asked */
	bool		may_hold;
	/* a scan limited to the ranges that may hold a key (probe_read_ranges) */
	AmqIndexRanges ranges;		/* n = 0: not limited */
	int			next_range;
	bool		range_scan_ours;	/* the child's scan was begun here */
	int64		passed_early;	/* rows passed before the filter was built */
	ItemPointerData early_tid;	/* the last of them, as the child scanned it */
	bool		skip_early_tid; /* a ranged scan will meet it again */
	int64		scans_ranged;
	int64		range_blocks;	/* blocks of those ranges, over every scan */
	int64		range_table_blocks;	/* and of the tables */
} JoinFilterState;

/*
 * ----------------------------------------------------------------
 * Keys
 * ----------------------------------------------------------------
 */

static void
hasher_init(KeyHasher *hasher, JoinFilterState *node, List *keys)
{
	int			i = 0;
	ListCell   *lc;

	hasher->nkeys = node->spec.nkeys;
	hasher->columns = palloc0(sizeof(AttrNumber) * hasher->nkeys);
	hasher->keys = palloc0(sizeof(ExprState *) * hasher->nkeys);
	hasher->procs = palloc0(sizeof(FmgrInfo) * hasher->nkeys);
	hasher->collations = node->spec.collations;
	hasher->int_widths = palloc0(sizeof(int16) * hasher->nkeys);
	foreach(lc, keys)
	{
		Var		   *var = lfirst(lc);

		if (IsA(var, Var) && var->varno == OUTER_VAR)
			hasher->columns[i] = var->varattno;
		else
		{
			hasher->keys[i] = ExecInitExpr(lfirst(lc), &node->css.ss.ps);
			hasher->any_expression = true;
		}
		if (OidIsValid(node->spec.hash_procs[i]))
		{
			fmgr_info(node->spec.hash_procs[i], &hasher->procs[i]);
			hasher->any_call = true;
		}
		else
			hasher->int_widths[i] = get_typlen(node->spec.types[i]);
		i++;
	}
}

/*
 * The hash of a row's key (its columns' hashes mixed), or false if a
 * column is NULL.
 */
static bool
hash_row(KeyHasher *hasher, ExprContext *econtext, TupleTableSlot *slot,
		 uint64 *hash)
{
	uint64		h = 0;
	int			i;

	/*
	 * Columns are read from the row; expressions and hash functions may
	 * allocate (a numeric's hash detoasts it into a copy it does not free):
	 * in the row's memory, emptied row by row, or a scan of many rows would
	 * hold all of it until the query ends.
	 */
	if (hasher->any_expression || hasher->any_call)
	{
		ResetExprContext(econtext);
		econtext->ecxt_outertuple = slot;
	}
	for (i = 0; i < hasher->nkeys; i++)
	{
		bool		isnull;
		Datum		value;
		uint64		k;

		if (hasher->columns[i] != 0)
			value = slot_getattr(slot, hasher->columns[i], &isnull);
		else
			value = ExecEvalExprSwitchContext(hasher->keys[i], econtext, &isnull);
		if (isnull)
			return false;
		if (hasher->int_widths[i] == 8)
			k = amq_hash_int(DatumGetInt64(value), JOIN_FILTER_SEED);
		else if (hasher->int_widths[i] == 4)
			k = amq_hash_int(DatumGetInt32(value), JOIN_FILTER_SEED);
		else if (hasher->int_widths[i] == 2)
			k = amq_hash_int(DatumGetInt16(value), JOIN_FILTER_SEED);
		else
		{
			MemoryContext old = MemoryContextSwitchTo(econtext->ecxt_per_tuple_memory);

			k = DatumGetUInt64(FunctionCall2Coll(&hasher->procs[i], hasher->collations[i],
												 value,
												 UInt64GetDatum(JOIN_FILTER_SEED)));
			MemoryContextSwitchTo(old);
		}
		/* order matters: (a, b) and (b, a) are different keys */
		h = i == 0 ? k : (h ^ (k + UINT64CONST(0x9e3779b97f4a7c15) + (h << 6) + (h >> 2)));
	}
	*hash = h;
	return true;
}

/*
 * ----------------------------------------------------------------
 * Both nodes
 * ----------------------------------------------------------------
 */

static Node *
create_state(CustomScan *cscan, const CustomExecMethods *methods)
{
	JoinFilterState *node = palloc0(sizeof(JoinFilterState));

	NodeSetTag(node, T_CustomScanState);
	node->css.methods = methods;
	amq_join_filter_spec_from_list(cscan->custom_private, &node->spec);
	return (Node *) node;
}

/*
 * Starts the child, and gives the node the child's kind of slot: rows are
 * the child's, returned as they are.
 */
static void
begin_common(JoinFilterState *node, EState *estate, int eflags)
{
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;
	PlanState  *ps = &node->css.ss.ps;

	node->child = ExecInitNode(outerPlan(cscan), estate, eflags);
	outerPlanState(node) = node->child;
	ps->outerops = ExecGetResultSlotOps(node->child, &ps->outeropsfixed);
	ps->outeropsset = true;
	ps->resultops = ps->outerops;
	ps->resultopsfixed = ps->outeropsfixed;
	ps->resultopsset = true;
	hasher_init(&node->hasher, node, cscan->custom_exprs);
}

static void
end_common(CustomScanState *css)
{
	ExecEndNode(((JoinFilterState *) css)->child);
}

/*
 * Rescans the child: ExecReScan passed on the parameters that changed, and
 * a child with changed parameters rescans itself when next read.
 */
static void
rescan_child(JoinFilterState *node)
{
	if (node->child->chgParam == NULL)
		ExecReScan(node->child);
}

/* "rfN (keys)", the keys as EXPLAIN writes expressions */
static void
explain_keys(JoinFilterState *node, List *ancestors, ExplainState *es)
{
	CustomScan *cscan = (CustomScan *) node->css.ss.ps.plan;
	List	   *context = set_deparse_context_plan(es->deparse_cxt,
												   node->css.ss.ps.plan, ancestors);
	StringInfoData buf;
	ListCell   *lc;

	initStringInfo(&buf);
	appendStringInfo(&buf, "rf%d (", node->spec.filter_no);
	foreach(lc, cscan->custom_exprs)
	{
		if (lc != list_head(cscan->custom_exprs))
			appendStringInfoString(&buf, ", ");
		appendStringInfoString(&buf, deparse_expression(lfirst(lc), context,
														list_length(es->rtable) > 1 ||
														es->verbose, false));
	}
	appendStringInfoChar(&buf, ')');
	ExplainPropertyText("Runtime Filter", buf.data, es);
}

/*
 * ----------------------------------------------------------------
 * Build
 * ----------------------------------------------------------------
 */

static Node *
build_create(CustomScan *cscan);
static void build_begin(CustomScanState *css, EState *estate, int eflags);
static TupleTableSlot *build_exec(CustomScanState *css);
static void build_rescan(CustomScanState *css);
static void build_explain(CustomScanState *css, List *ancestors, ExplainState *es);
static Size build_estimate_dsm(CustomScanState *css, ParallelContext *pcxt);
static void build_initialize_dsm(CustomScanState *css, ParallelContext *pcxt,
								 void *coordinate);
static void build_reinitialize_dsm(CustomScanState *css, ParallelContext *pcxt,
								   void *coordinate);
static void build_initialize_worker(CustomScanState *css, shm_toc *toc,
									void *coordinate);
static void build_shutdown(CustomScanState *css);

static const CustomExecMethods build_exec_methods = {
	.CustomName = "AmqRuntimeFilterBuild",
	.BeginCustomScan = build_begin,
	.ExecCustomScan = build_exec,
	.EndCustomScan = end_common,
	.ReScanCustomScan = build_rescan,
	.EstimateDSMCustomScan = build_estimate_dsm,
	.InitializeDSMCustomScan = build_initialize_dsm,
	.ReInitializeDSMCustomScan = build_reinitialize_dsm,
	.InitializeWorkerCustomScan = build_initialize_worker,
	.ShutdownCustomScan = build_shutdown,
	.ExplainCustomScan = build_explain,
};

const CustomScanMethods amq_join_filter_build_methods = {
	.CustomName = "AmqRuntimeFilterBuild",
	.CreateCustomScanState = build_create,
};

static Node *
build_create(CustomScan *cscan)
{
	return create_state(cscan, &build_exec_methods);
}

/* Empties the filter for a new build (the start, a rescan that rebuilds). */
static void
filter_reset(JoinFilter *filter)
{
	MemoryContextReset(filter->cxt);
	filter->status = JOIN_FILTER_COLLECTING;
	filter->builds++;
	filter->hashes = NULL;
	filter->nhashes = 0;
	filter->maxhashes = 0;
	filter->values = NULL;
	filter->nvalues = 0;
	filter->maxvalues = 0;
	filter->values_off = false;
	filter->keys = 0;
	filter->handed_over = false;
	filter->bloom.words = NULL;
	filter->bloom.nblocks = 0;
	filter->remote_hashes = NULL;
	filter->remote_n = 0;
	filter->remote_max = 0;
	filter->remote_off = NULL;
	filter->remote_bytes = 0;
	/* a foreign scan that opens its cursor now gets no filter: every row */
	if (filter->remote != NULL)
	{
		filter->remote->value = (Datum) 0;
		filter->remote->isnull = true;
	}
}

/* A node that says why its join has no filter: its child's rows, as they are. */
static TupleTableSlot *
build_pass(PlanState *ps)
{
	return ExecProcNode(outerPlanState(ps));
}

static void
build_begin(CustomScanState *css, EState *estate, int eflags)
{
	JoinFilterState *node = (JoinFilterState *) css;
	ParamExecData *param;

	begin_common(node, estate, eflags);
	if (node->spec.not_used != NULL)
	{
		/* ExecInitNode, when this returns, installs it behind its wrappers */
		css->ss.ps.ExecProcNode = build_pass;
		return;
	}
	param = &estate->es_param_exec_vals[node->spec.paramid];
	node->filter = MemoryContextAllocZero(estate->es_query_cxt, sizeof(JoinFilter));
	node->filter->cxt = AllocSetContextCreate(estate->es_query_cxt,
											  "runtime join filter",
											  ALLOCSET_DEFAULT_SIZES);
	filter_reset(node->filter);
	/* a plan run with the setting off now: the probes pass every row */
	if (!amq_join_filter)
		node->filter->status = JOIN_FILTER_OFF;
	if (node->spec.nkeys == 1)
	{
		node->filter->keep_values = true;
		node->filter->value_type = exprType(linitial(((CustomScan *) css->ss.ps.plan)->custom_exprs));
		get_typlenbyval(node->filter->value_type, &node->filter->value_len,
						&node->filter->value_byval);
	}
	param->value = PointerGetDatum(node->filter);
	param->isnull = false;
	if (node->spec.remote_paramid >= 0)
	{
		node->filter->remote = &estate->es_param_exec_vals[node->spec.remote_paramid];
		amq_hasher_init(&node->filter->remote_hasher, node->filter->value_type,
						node->spec.collations[0], estate->es_query_cxt);
		filter_reset(node->filter);
		if (!amq_join_filter)
		{
			node->filter->status = JOIN_FILTER_OFF;
			node->filter->remote_off = "amqfilter.join_filter is off";
		}
	}
}

/* The value of a build-side row's one key, for the keepers below. */
static Datum
build_key_value(JoinFilterState *node, TupleTableSlot *slot, bool *isnull)
{
	KeyHasher  *hasher = &node->hasher;
	ExprContext *econtext = node->css.ss.ps.ps_ExprContext;

	if (hasher->columns[0] != 0)
		return slot_getattr(slot, hasher->columns[0], isnull);
	econtext->ecxt_outertuple = slot;
	return ExecEvalExprSwitchContext(hasher->keys[0], econtext, isnull);
}

/* Keeps the value of a row's one key (not NULL), up to JOIN_SKIP_MAX_KEYS. */
static void
filter_keep_value(JoinFilter *filter, Datum value)
{
	MemoryContext old;

	if (filter->nvalues == JOIN_SKIP_MAX_KEYS)
	{
		filter->values_off = true;
		return;
	}
	old = MemoryContextSwitchTo(filter->cxt);
	/* detoasted once here, not at every table's probe */
	if (filter->value_len == -1)
		value = PointerGetDatum(PG_DETOAST_DATUM_PACKED(value));
	if (filter->nvalues == filter->maxvalues)
	{
		filter->maxvalues = Max(filter->maxvalues * 2, 256);
		filter->values = filter->values == NULL ?
			palloc(sizeof(Datum) * filter->maxvalues) :
			repalloc(filter->values, sizeof(Datum) * filter->maxvalues);
	}
	filter->values[filter->nvalues++] = datumCopy(value, filter->value_byval,
												  filter->value_len);
	MemoryContextSwitchTo(old);
}

/* Keeps one more key's hash, or turns the filter off past the limit. */
static void
filter_keep(JoinFilter *filter, uint64 hash)
{
	if (filter->nhashes == filter->maxhashes)
	{
		int64		grown = Max(filter->maxhashes * 2, 1024);

		if (filter->nhashes >= amq_join_filter_max_keys)
		{
			MemoryContextReset(filter->cxt);
			filter->hashes = NULL;
			filter->values = NULL;
			filter->nvalues = filter->maxvalues = 0;
			filter->values_off = true;
			filter->remote_hashes = NULL;
			filter->remote_n = filter->remote_max = 0;
			filter->remote_off = "more keys than amqfilter.join_filter_max_keys";
			filter->status = JOIN_FILTER_OFF;
			return;
		}
		grown = Min(grown, amq_join_filter_max_keys);
		filter->hashes = filter->hashes == NULL ?
			MemoryContextAllocHuge(filter->cxt, grown * sizeof(uint64)) :
			repalloc_huge(filter->hashes, grown * sizeof(uint64));
		filter->maxhashes = grown;
	}
	filter->hashes[filter->nhashes++] = hash;
}

/*
 * Keeps the bloom hash of a row's one key for the value shipped to foreign
 * scans, or gives that value up past amqfilter.join_filter_remote_max_kb
 * (each key takes at least a byte of it).
 */
static void
filter_keep_remote(JoinFilter *filter, Datum value)
{
	if (filter->remote_n == filter->remote_max)
	{
		int64		limit = (int64) amq_join_filter_remote_max_kb * 1024;

		if (filter->remote_n >= limit)
		{
			filter->remote_off = "more keys than amqfilter.join_filter_remote_max_kb holds";
			filter->remote_hashes = NULL;	/* in filter->cxt, reset with it */
			filter->remote_n = filter->remote_max = 0;
			return;
		}
		filter->remote_max = Min(Max(filter->remote_max * 2, 1024), limit);
		filter->remote_hashes = filter->remote_hashes == NULL ?
			MemoryContextAllocHuge(filter->cxt, filter->remote_max * sizeof(uint64)) :
			repalloc_huge(filter->remote_hashes, filter->remote_max * sizeof(uint64));
	}
	filter->remote_hashes[filter->remote_n++] =
		amq_hash_datum(&filter->remote_hasher, value, AMQ_BLOOM_DEFAULT_SEED,
					   filter->remote_hasher.family);
}

/*
 * The build side ended: the bloom value of its keys goes into the slot the
 * foreign scans read it from when they open their cursors.
 */
static void
filter_build_remote(JoinFilter *filter)
{
	amq_bloom_params params;
	amq_bloom_view view;
	struct varlena *value;
	uint64		n = Max(filter->remote_n, 1);
	MemoryContext old;

	if (filter->remote_off != NULL)
		return;
	if (amq_bloom_size(n, JOIN_FILTER_REMOTE_FPR, AMQ_BLOOM_LAYOUT_BLOCKED, &params) != AMQ_OK ||
		params.bytes > (uint64) amq_join_filter_remote_max_kb * 1024)
	{
		filter->remote_off = "larger than amqfilter.join_filter_remote_max_kb";
		return;
	}
	old = MemoryContextSwitchTo(filter->cxt);
	value = amq_varlena_alloc(params.bytes);
	MemoryContextSwitchTo(old);
	amq_bloom_init((uint8 *) VARDATA(value), &params, n, JOIN_FILTER_REMOTE_FPR,
				   AMQ_BLOOM_DEFAULT_SEED);
	if (amq_bloom_open((uint8 *) VARDATA(value), params.bytes, &view) != AMQ_OK)
		elog(ERROR, "runtime join filter: a new bloom value fails its check");
	if (filter->remote_n > 0 &&
		amq_bloom_add_many(&view, filter->remote_hashes, filter->remote_n,
						   filter->remote_hasher.family) != AMQ_OK)
		elog(ERROR, "runtime join filter: could not add to a bloom value");
	filter->remote_bytes = (int64) params.bytes;
	filter->remote->value = PointerGetDatum(value);
	filter->remote->isnull = false;
}

/* The build side ended: size the filter for what it saw and fill it. */
static void
filter_build(JoinFilter *filter)
{
	int64		i;
	Size		size;
	char	   *raw;

	if (filter->status != JOIN_FILTER_COLLECTING)
		return;
	filter->bloom.nblocks = amq_split_block_blocks(filter->nhashes,
												   JOIN_FILTER_BITS_PER_KEY);
	size = filter->bloom.nblocks * AMQ_SPLIT_BLOCK_BYTES;
	raw = MemoryContextAllocHuge(filter->cxt, size + AMQ_SPLIT_BLOCK_BYTES);
	filter->bloom.words = (uint32 *) TYPEALIGN(AMQ_SPLIT_BLOCK_BYTES, raw);
	memset(filter->bloom.words, 0, size);
	for (i = 0; i < filter->nhashes; i++)
	{
		if ((i & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
		amq_split_block_add(&filter->bloom, filter->hashes[i]);
	}
	filter->keys = filter->nhashes;
	if (filter->hashes)
		pfree(filter->hashes);
	filter->hashes = NULL;
	filter->status = JOIN_FILTER_READY;
	if (filter->remote != NULL)
		filter_build_remote(filter);
}

/*
 * A process's part of a Parallel Hash join's build side ended: its hashes
 * go to shared memory for whichever process builds the filter.
 */
static void
filter_hand_over(JoinFilter *filter)
{
	JoinFilterShared *shared = filter->shared;
	dsa_pointer chunk_dp = InvalidDsaPointer;

	if (filter->handed_over)
		return;
	filter->handed_over = true;
	if (filter->status == JOIN_FILTER_COLLECTING && filter->nhashes > 0)
	{
		HashChunk  *chunk;

		chunk_dp = dsa_allocate_extended(filter->area,
										 offsetof(HashChunk, hashes) +
										 filter->nhashes * sizeof(uint64),
										 DSA_ALLOC_HUGE);
		chunk = dsa_get_address(filter->area, chunk_dp);
		chunk->n = filter->nhashes;
		memcpy(chunk->hashes, filter->hashes, filter->nhashes * sizeof(uint64));
	}
	SpinLockAcquire(&shared->mutex);
	if (filter->status == JOIN_FILTER_OFF)
		shared->too_many = true;
	else if (DsaPointerIsValid(chunk_dp))
	{
		((HashChunk *) dsa_get_address(filter->area, chunk_dp))->next = shared->chunks;
		shared->chunks = chunk_dp;
		shared->total += filter->nhashes;
	}
	SpinLockRelease(&shared->mutex);
	MemoryContextReset(filter->cxt);
	filter->hashes = NULL;
	filter->nhashes = filter->maxhashes = 0;
}

/* Builds the shared filter from every part's hashes (one process does). */
static void
shared_build(JoinFilter *filter)
{
	JoinFilterShared *shared = filter->shared;
	dsa_pointer chunk_dp = shared->chunks;
	dsa_pointer words_dp;
	amq_split_block bloom;
	Size		size;

	if (shared->too_many || shared->total > amq_join_filter_max_keys)
	{
		pg_atomic_write_u32(&shared->status, JOIN_FILTER_OFF);
		return;
	}
	bloom.nblocks = amq_split_block_blocks(shared->total, JOIN_FILTER_BITS_PER_KEY);
	size = bloom.nblocks * AMQ_SPLIT_BLOCK_BYTES;
	words_dp = dsa_allocate_extended(filter->area, size + AMQ_SPLIT_BLOCK_BYTES,
									 DSA_ALLOC_HUGE | DSA_ALLOC_ZERO);
	bloom.words = (uint32 *) TYPEALIGN(AMQ_SPLIT_BLOCK_BYTES,
									   dsa_get_address(filter->area, words_dp));
	while (DsaPointerIsValid(chunk_dp))
	{
		HashChunk  *chunk = dsa_get_address(filter->area, chunk_dp);
		dsa_pointer next = chunk->next;
		int64		i;

		for (i = 0; i < chunk->n; i++)
		{
			if ((i & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
			amq_split_block_add(&bloom, chunk->hashes[i]);
		}
		dsa_free(filter->area, chunk_dp);
		chunk_dp = next;
	}
	shared->chunks = InvalidDsaPointer;
	shared->words = words_dp;
	shared->nblocks = bloom.nblocks;
	/* the words and their address before the status that publishes them */
	pg_write_barrier();
	pg_atomic_write_u32(&shared->status, JOIN_FILTER_READY);
}

/*
 * The filter a probe tests, or NULL when rows pass untested (not built
 * yet, or off).  A Parallel Hash join's filter is built by the first probe
 * that finds the build side done.
 */
static const amq_split_block *
filter_for_probe(JoinFilter *filter)
{
	JoinFilterShared *shared = filter->shared;
	uint32		status;

	if (shared == NULL)
		return filter->status == JOIN_FILTER_READY && filter->bloom.words ?
			&filter->bloom : NULL;
	if (filter->bloom.words != NULL)
		return &filter->bloom;
	status = pg_atomic_read_u32(&shared->status);
	if (status == JOIN_FILTER_COLLECTING)
	{
		bool		mine = false;

		SpinLockAcquire(&shared->mutex);
		if (pg_atomic_read_u32(&shared->status) == JOIN_FILTER_COLLECTING)
		{
			pg_atomic_write_u32(&shared->status, JOIN_FILTER_BUILDING);
			mine = true;
		}
		SpinLockRelease(&shared->mutex);
		if (mine)
			shared_build(filter);
		status = pg_atomic_read_u32(&shared->status);
	}
	if (status != JOIN_FILTER_READY)
		return NULL;
	pg_read_barrier();
	filter->bloom.nblocks = shared->nblocks;
	filter->bloom.words = (uint32 *) TYPEALIGN(AMQ_SPLIT_BLOCK_BYTES,
											   dsa_get_address(filter->area, shared->words));
	filter->keys = shared->total;
	filter->status = JOIN_FILTER_READY;
	return &filter->bloom;
}

static TupleTableSlot *
build_exec(CustomScanState *css)
{
	JoinFilterState *node = (JoinFilterState *) css;
	TupleTableSlot *slot = ExecProcNode(node->child);
	uint64		hash;

	if (TupIsNull(slot))
	{
		if (node->filter->shared)
			filter_hand_over(node->filter);
		else
			filter_build(node->filter);
		return slot;
	}
	/* a NULL key is not in the hash table: never asked for */
	if (node->filter->status == JOIN_FILTER_COLLECTING &&
		hash_row(&node->hasher, css->ss.ps.ps_ExprContext, slot, &hash))
	{
		JoinFilter *filter = node->filter;
		bool		keep_value;
		bool		keep_remote;

		filter_keep(filter, hash);
		/* after filter_keep, which turns both off past max_keys */
		keep_value = filter->keep_values && !filter->values_off &&
			filter->shared == NULL;
		keep_remote = filter->remote != NULL && filter->remote_off == NULL &&
			filter->status == JOIN_FILTER_COLLECTING;
		/* the key is read once for both (a NULL key was not hashed) */
		if (keep_value || keep_remote)
		{
			bool		isnull;
			Datum		value = build_key_value(node, slot, &isnull);

			if (!isnull && keep_value)
				filter_keep_value(filter, value);
			if (!isnull && keep_remote)
				filter_keep_remote(filter, value);
		}
	}
	return slot;
}

/* A rescan reads the build side again: the join rebuilds its hash table. */
static void
build_rescan(CustomScanState *css)
{
	JoinFilterState *node = (JoinFilterState *) css;

	if (node->filter == NULL)
	{
		rescan_child(node);
		return;
	}
	filter_reset(node->filter);
	if (!amq_join_filter)
	{
		node->filter->status = JOIN_FILTER_OFF;
		node->filter->remote_off = "amqfilter.join_filter is off";
	}
	rescan_child(node);
}

/*
 * A Parallel Hash join's build node (the only parallel-aware one): its
 * shared state in the parallel query's memory.
 */
static Size
build_estimate_dsm(CustomScanState *css, ParallelContext *pcxt)
{
	return sizeof(JoinFilterShared);
}

static void
shared_init(JoinFilterShared *shared)
{
	SpinLockInit(&shared->mutex);
	pg_atomic_init_u32(&shared->status, amq_join_filter ? JOIN_FILTER_COLLECTING :
					   JOIN_FILTER_OFF);
	shared->chunks = InvalidDsaPointer;
	shared->total = 0;
	shared->too_many = false;
	shared->words = InvalidDsaPointer;
	shared->nblocks = 0;
}

static void
build_initialize_dsm(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	JoinFilter *filter = ((JoinFilterState *) css)->filter;

	shared_init(coordinate);
	filter->shared = coordinate;
	filter->area = css->ss.ps.state->es_query_dsa;
}

/* A rescan of the parallel query: the shared filter starts over. */
static void
build_reinitialize_dsm(CustomScanState *css, ParallelContext *pcxt, void *coordinate)
{
	JoinFilter *filter = ((JoinFilterState *) css)->filter;
	JoinFilterShared *shared = coordinate;
	dsa_pointer chunk_dp = shared->chunks;

	while (DsaPointerIsValid(chunk_dp))
	{
		dsa_pointer next = ((HashChunk *) dsa_get_address(filter->area, chunk_dp))->next;

		dsa_free(filter->area, chunk_dp);
		chunk_dp = next;
	}
	if (DsaPointerIsValid(shared->words))
		dsa_free(filter->area, shared->words);
	shared_init(shared);
	filter->bloom.words = NULL;
}

static void
build_initialize_worker(CustomScanState *css, shm_toc *toc, void *coordinate)
{
	JoinFilter *filter = ((JoinFilterState *) css)->filter;

	filter->shared = coordinate;
	filter->area = css->ss.ps.state->es_query_dsa;
}

/*
 * The parallel query's memory goes after this: what EXPLAIN shows is copied
 * out, and the filter is no longer used.
 */
static void
build_shutdown(CustomScanState *css)
{
	JoinFilter *filter = ((JoinFilterState *) css)->filter;
	JoinFilterShared *shared = filter ? filter->shared : NULL;

	if (shared == NULL)
		return;
	filter->status = (JoinFilterStatus) pg_atomic_read_u32(&shared->status);
	if (filter->status == JOIN_FILTER_READY)
	{
		filter->keys = shared->total;
		filter->bloom.nblocks = shared->nblocks;
	}
	filter->bloom.words = NULL;
	filter->shared = NULL;
}

static void
build_explain(CustomScanState *css, List *ancestors, ExplainState *es)
{
	JoinFilterState *node = (JoinFilterState *) css;
	JoinFilter *filter = node->filter;

	if (node->spec.not_used != NULL)
	{
		ExplainPropertyText("Runtime Filter Not Used", node->spec.not_used, es);
		return;
	}
	explain_keys(node, ancestors, es);
	if (node->spec.remote_scans > 0)
		ExplainPropertyInteger("Runtime Filter Sent to Foreign Scans", NULL,
							   node->spec.remote_scans, es);
	if (node->spec.remote_refused != NIL)
	{
		List	   *why = NIL;
		ListCell   *lc;

		foreach(lc, node->spec.remote_refused)
			why = lappend(why, strVal(lfirst(lc)));
		ExplainPropertyList("Runtime Filter Not Sent", why, es);
	}
	if (!es->analyze || filter == NULL)
		return;
	if (filter->remote != NULL)
	{
		if (filter->remote_bytes > 0)
			ExplainPropertyInteger("Runtime Filter Sent", "bytes", filter->remote_bytes, es);
		else
			ExplainPropertyText("Runtime Filter Sent", filter->remote_off != NULL ?
								filter->remote_off : "no: the scans opened before the build side was read",
								es);
	}
	if (filter->status == JOIN_FILTER_READY)
	{
		ExplainPropertyInteger("Runtime Filter Keys", NULL, filter->keys, es);
		ExplainPropertyInteger("Runtime Filter Size", "kB",
							   (int64) ((filter->bloom.nblocks * AMQ_SPLIT_BLOCK_BYTES + 1023) / 1024),
							   es);
	}
	else if (filter->status == JOIN_FILTER_OFF)
		ExplainPropertyText("Runtime Filter Off", amq_join_filter ?
							"more keys than amqfilter.join_filter_max_keys" :
							"amqfilter.join_filter is off", es);
	else
		ExplainPropertyText("Runtime Filter Built", "no", es);
}

/*
 * ----------------------------------------------------------------
 * Probe
 * ----------------------------------------------------------------
 */

static Node *probe_create(CustomScan *cscan);
static void probe_begin(CustomScanState *css, EState *estate, int eflags);
static TupleTableSlot *probe_exec(CustomScanState *css);
static void probe_rescan(CustomScanState *css);
static void probe_explain(CustomScanState *css, List *ancestors, ExplainState *es);

static const CustomExecMethods probe_exec_methods = {
	.CustomName = "AmqRuntimeFilter",
	.BeginCustomScan = probe_begin,
	.ExecCustomScan = probe_exec,
	.EndCustomScan = end_common,
	.ReScanCustomScan = probe_rescan,
	.ExplainCustomScan = probe_explain,
};

const CustomScanMethods amq_join_filter_probe_methods = {
	.CustomName = "AmqRuntimeFilter",
	.CreateCustomScanState = probe_create,
};

static Node *
probe_create(CustomScan *cscan)
{
	return create_state(cscan, &probe_exec_methods);
}

static void
probe_begin(CustomScanState *css, EState *estate, int eflags)
{
	JoinFilterState *node = (JoinFilterState *) css;

	begin_common(node, estate, eflags);
	node->testing = true;
	ItemPointerSetInvalid(&node->early_tid);
}

/* A probe node that stopped testing: its child's rows, as they come. */
static TupleTableSlot *child_next(JoinFilterState *node);

static TupleTableSlot *
probe_pass(PlanState *ps)
{
	JoinFilterState *node = (JoinFilterState *) ps;
	TupleTableSlot *slot = child_next(node);

	if (!TupIsNull(slot))
		InstrCountFiltered2(node, 1);
	return slot;
}

/*
 * Stops testing if the first rows tested show the filter does not pay.
 * From then on the node's rows go through probe_pass, which costs a call
 * a row and no more: a join whose rows mostly match pays next to nothing
 * for its filter past the first JOIN_FILTER_WINDOW rows.
 */
static void
probe_decide(JoinFilterState *node)
{
	if (node->tested == JOIN_FILTER_WINDOW &&
		(double) node->rejected < amq_join_filter_min_rejected * (double) node->tested)
	{
		node->testing = false;
		ExecSetExecProcNode(&node->css.ss.ps, probe_pass);
	}
}

/*
 * True if the rest of the table under the node is skipped, its amqfilter
 * index ruling out every key of the build side.  Asked once a scan, at its
 * first row read once the build side has been (the join may read one
 * probe-side row before it builds: that row passes, and the rest of its
 * table may still be skipped), when the keys were kept.
 */
static void probe_read_ranges(JoinFilterState *node, AmqIndexRanges *ranges,
							  BlockNumber heap_blocks);
static void start_range(JoinFilterState *node);

static bool
probe_skips(JoinFilterState *node)
{
	JoinFilter *filter = node->filter;
	AmqIndexRanges ranges;
	BlockNumber heap_blocks;

	node->skipped = false;
	if (filter->shared == NULL && filter->status == JOIN_FILTER_COLLECTING)
		return false;			/* not built yet: asked again at the next row */
	node->skip_decided = true;
	if (!OidIsValid(node->spec.skip_index) || filter->status != JOIN_FILTER_READY ||
		filter->shared != NULL || !filter->keep_values || filter->values_off)
		return false;
	node->scans_asked++;

	/*
	 * Only a sequential scan reads the ranges; any other child (a nested
	 * loop's inner index scan, asked at each loop) asks whether a key may
	 * be there, which a value's first lane answers, and which is the same
	 * at every loop for the keys of one build: the scan sees no row its
	 * snapshot did not.
	 */
	if (!IsA(node->child, SeqScanState))
	{
		if (node->may_hold_build != filter->builds)
		{
			node->may_hold = !amq_index_ranges_of_values(node->spec.skip_index,
														 filter->value_type,
														 filter->values, filter->nvalues,
														 node->css.ss.ps.state->es_snapshot,
														 true, &ranges, &heap_blocks) ||
				ranges.everywhere || ranges.n > 0;
			node->may_hold_build = filter->builds;
		}
		if (node->may_hold)
			return false;
		node->skipped = true;
		node->skip_keys = filter->nvalues;
		node->scans_skipped++;
		return true;
	}
	if (!amq_index_ranges_of_values(node->spec.skip_index, filter->value_type,
									filter->values, filter->nvalues,
									node->css.ss.ps.state->es_snapshot,
									false, &ranges, &heap_blocks) ||
		ranges.everywhere)
		return false;
	if (ranges.n == 0)
	{
		node->skipped = true;
		node->skip_keys = filter->nvalues;
		node->scans_skipped++;
		return true;
	}
	probe_read_ranges(node, &ranges, heap_blocks);
	return false;
}

/*
 * Joins ranges (sorted, apart) fewer than RANGE_GAP blocks apart: a scan
 * starts again at each range, which costs more than reading a few blocks
 * (values with lanes return a range a block: on SSB Q2.2, 1,600 parts'
 * 5,000 blocks of a partition of 11,000 were 5,000 starts, 10 times the
 * scan of the partition).
 */
#define RANGE_GAP	32

static void
coalesce_ranges(AmqIndexRanges *ranges)
{
	int			m = 0;
	int			i;

	for (i = 0; i < ranges->n; i++)
	{
		if (m > 0 &&
			(uint64) ranges->first[i] < (uint64) ranges->first[m - 1] + ranges->len[m - 1] + RANGE_GAP)
		{
			ranges->len[m - 1] = ranges->first[i] + ranges->len[i] - ranges->first[m - 1];
			continue;
		}
		ranges->first[m] = ranges->first[i];
		ranges->len[m] = ranges->len[i];
		m++;
	}
	ranges->n = m;
	/* the scan reads whole blocks: the row classes no longer line up */
	ranges->classes = NULL;
	ranges->row_bits = 0;
}

/*
 * Reads only the block ranges that may hold a key, when the table under the
 * node is a heap read by a sequential scan that has not started, and the
 * ranges cover at most half of it: the scan is limited to one range, and
 * started again for the next when it ends (child_next).  A row outside
 * every range has no key of the build side (the index has an entry for
 * each value and range its rows are in).
 */
static void
probe_read_ranges(JoinFilterState *node, AmqIndexRanges *ranges,
				  BlockNumber heap_blocks)
{
	SeqScanState *seq = (SeqScanState *) node->child;
	Relation	rel;
	int64		blocks = 0;
	int			i;

	bool		restart = false;

	/*
	 * A scan begun elsewhere restarts limited to the ranges, when it passed
	 * one row (the join's look before building): that row, met again, is
	 * dropped then, as it was already returned.
	 */
	if (!IsA(node->child, SeqScanState) || seq->ss.ps.plan->parallel_aware)
		return;
	if (seq->ss.ss_currentScanDesc != NULL && !node->range_scan_ours)
	{
		if (node->passed_early != 1 || !ItemPointerIsValid(&node->early_tid))
			return;
		restart = true;
	}
	rel = seq->ss.ss_currentRelation;
	if (rel->rd_tableam != GetHeapamTableAmRoutine())
		return;
	coalesce_ranges(ranges);
	for (i = 0; i < ranges->n; i++)
		blocks += ranges->len[i];
	if (blocks * 2 > (int64) heap_blocks)
		return;
	node->ranges = *ranges;
	node->next_range = 0;
	node->range_blocks += blocks;
	node->range_table_blocks += heap_blocks;
	node->scans_ranged++;
	if (seq->ss.ss_currentScanDesc == NULL)
	{
		/* as the scan would begin it at its first row */
		seq->ss.ss_currentScanDesc = amq_table_beginscan(&seq->ss, rel,
														 seq->ss.ps.state->es_snapshot);
		node->range_scan_ours = true;
	}
	else
		ExecReScan(node->child);
	node->skip_early_tid = restart;
	start_range(node);
}

/* Limits the child's scan to the next range. */
static void
start_range(JoinFilterState *node)
{
	SeqScanState *seq = (SeqScanState *) node->child;
	int			i = node->next_range++;

	heap_setscanlimits(seq->ss.ss_currentScanDesc, node->ranges.first[i],
					   node->ranges.len[i]);
}

/* The child's next row, from the next range when one ends. */
static TupleTableSlot *
child_next(JoinFilterState *node)
{
	for (;;)
	{
		TupleTableSlot *slot = ExecProcNode(node->child);

		if (!TupIsNull(slot))
		{
			if (unlikely(node->skip_early_tid) &&
				ItemPointerEquals(&((SeqScanState *) node->child)->ss.ss_ScanTupleSlot->tts_tid,
								  &node->early_tid))
			{
				node->skip_early_tid = false;
				continue;
			}
			return slot;
		}
		if (node->next_range >= node->ranges.n)
			return slot;
		ExecReScan(node->child);
		start_range(node);
	}
}

static TupleTableSlot *
probe_exec(CustomScanState *css)
{
	JoinFilterState *node = (JoinFilterState *) css;
	PlanState  *ps = &css->ss.ps;
	JoinFilter *filter = node->filter;

	if (unlikely(filter == NULL))
	{
		ParamExecData *param = &ps->state->es_param_exec_vals[node->spec.paramid];

		/* the build node starts with the join, before any row is read */
		if (param->isnull || param->value == (Datum) 0)
			elog(ERROR, "runtime join filter %d has no build side", node->spec.filter_no);
		filter = node->filter = (JoinFilter *) DatumGetPointer(param->value);
	}
	if (unlikely(!node->skip_decided) && probe_skips(node))
		return NULL;
	if (node->skipped)
		return NULL;
	for (;;)
	{
		TupleTableSlot *slot = child_next(node);
		const amq_split_block *bloom;
		uint64		hash;

		if (TupIsNull(slot))
			return slot;
		if (!node->testing || (bloom = filter_for_probe(filter)) == NULL)
		{
			if (node->testing && filter->shared == NULL &&
				filter->status == JOIN_FILTER_COLLECTING)
			{
				node->passed_early++;
				if (IsA(node->child, SeqScanState))
					node->early_tid = ((SeqScanState *) node->child)->ss.ss_ScanTupleSlot->tts_tid;
			}
			InstrCountFiltered2(node, 1);
			return slot;
		}
		node->tested++;
		if (hash_row(&node->hasher, ps->ps_ExprContext, slot, &hash) &&
			amq_split_block_may_contain(bloom, hash))
		{
			probe_decide(node);
			return slot;
		}
		node->rejected++;
		InstrCountFiltered1(node, 1);
		probe_decide(node);
		CHECK_FOR_INTERRUPTS();
	}
}

static void
probe_rescan(CustomScanState *css)
{
	JoinFilterState *node = (JoinFilterState *) css;

	node->skip_decided = false;
	node->skipped = false;
	node->ranges.n = 0;
	node->next_range = 0;
	node->passed_early = 0;
	ItemPointerSetInvalid(&node->early_tid);
	node->skip_early_tid = false;
	rescan_child(node);
}

static void
probe_explain(CustomScanState *css, List *ancestors, ExplainState *es)
{
	JoinFilterState *node = (JoinFilterState *) css;
	NodeInstrumentation *instr = css->ss.ps.instrument;

	explain_keys(node, ancestors, es);
	if (!es->analyze || instr == NULL)
		return;
	/* per loop, as EXPLAIN shows rows, summed over parallel workers */
	if (instr->nloops > 0)
	{
		ExplainPropertyFloat("Rows Rejected by Runtime Filter", NULL,
							 instr->nfiltered1 / instr->nloops, 0, es);
		ExplainPropertyFloat("Rows Not Tested", NULL,
							 instr->nfiltered2 / instr->nloops, 0, es);
	}
	if (node->scans_skipped > 0)
		ExplainPropertyText("Skipped by Filter Index",
							psprintf(INT64_FORMAT " of " INT64_FORMAT " scans: %s holds none of the %d keys",
									 node->scans_skipped, (int64) instr->nloops,
									 get_rel_name(node->spec.skip_index), node->skip_keys), es);
	if (node->scans_ranged > 0)
		ExplainPropertyText("Blocks Read by Filter Index Ranges",
							psprintf(INT64_FORMAT " of " INT64_FORMAT " (" INT64_FORMAT " scans)",
									 node->range_blocks, node->range_table_blocks,
									 node->scans_ranged), es);
	if (!node->testing)
		ExplainPropertyText("Runtime Filter Stopped",
							psprintf("after " INT64_FORMAT " rows, " INT64_FORMAT " rejected",
									 node->tested, node->rejected), es);
}
