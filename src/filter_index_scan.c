/*
 * filter_index_scan.c
 *		Probing an amqfilter index: bitmap scans, and the planner's cost
 *		estimate, which probes too when the value is known.
 *
 * A scan answers for the whole table at once.  Its keys are "column =
 * value" and "column = ANY (array)"; when every key says "maybe" for some
 * value, the bitmap gets every page of the table, lossy, and the heap scan
 * rechecks each row; when one says "no" for all its values, the bitmap
 * stays empty and the table is not read.  A probe reads the metapage and
 * one page per generation.
 *
 * Values of another type of the column's operator family (an int4 with an
 * int8 column) are hashed with their own type's support function: within
 * a family, equal values hash alike (the rule hash operator families obey).
 *
 * Cost.  What a scan costs depends on one thing the planner does not know:
 * whether the filter says "maybe".  With a constant value the estimate
 * probes the index (as btree's estimates read the index for the actual
 * range of a column), unless row security or a security barrier stands
 * between the role and the table (may_probe_clause): "no" costs the probe, "maybe" the probe and every
 * page of the table, so the planner then prefers a plain scan.  With a value
 * known only at run time (a parameter of a generic plan, the outer row of a
 * nested loop) the estimate is the chance that the table holds the value:
 * for a partition, the share of the partitioned table's distinct values
 * that it holds (from both tables' statistics), plus the index's rate of
 * false "maybe"s; for any other table, 1, as PostgreSQL's own equality
 * estimate assumes the value is there.
 */
#include "postgres.h"

#include "access/relscan.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/optimizer.h"
#include "parser/parse_coerce.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "optimizer/pathnode.h"
#include "parser/parsetree.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "amqfilter.h"
#include "filter_index.h"

/*
 * True if some generation of the index may hold the key ("maybe"), false
 * if none does.  meta is a copy of the metapage read after the caller's
 * snapshot was taken (see filter_index_build.c on why that is enough).
 */
bool
amq_index_may_contain(Relation index, const AmqIndexMeta *meta, uint64 hash)
{
	uint64		h2 = amq_fmix64(hash);
	uint32		i;

	for (i = 0; i < meta->ngens; i++)
	{
		const AmqIndexGen *g = &meta->gens[i];
		amq_paged_gen geometry;
		uint32		pg;
		uint32		block;
		Buffer		buf;
		Page		page;
		bool		found;

		amq_index_geometry(g, &geometry);
		amq_paged_locate(&geometry, hash, &pg, &block);
		buf = ReadBuffer(index, g->first + pg);
		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		amq_index_check_data_page(index, page, g->first + pg, i);
		found = amq_block_test(AmqIndexPageGetBlock(page, block), h2, g->hashes);
		UnlockReleaseBuffer(buf);
		if (found)
			return true;
	}
	return false;
}

/*
 * True if the index may hold some non-null element of the array, hashed
 * as its element type is.
 */
bool
amq_index_may_contain_any(Relation index, const AmqIndexMeta *meta,
						  const AmqIndexHasher *hasher, ArrayType *array)
{
	Oid			elemtype = ARR_ELEMTYPE(array);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	for (i = 0; i < n; i++)
		if (!nulls[i] &&
			amq_index_may_contain(index, meta, amq_index_hash(hasher, meta->seed, elems[i])))
			return true;
	return false;
}

/*
 * ----------------------------------------------------------------
 * Scans
 * ----------------------------------------------------------------
 */

/* How a scan hashes values, by their type: a scan has keys of few types. */
typedef struct ScanHasher
{
	Oid			type;
	AmqIndexHasher hasher;
} ScanHasher;

typedef struct ScanOpaque
{
	int			nhashers;
	ScanHasher	hashers[4];
	AmqIndexHasher spare;		/* a fifth type's, for the moment */
} ScanOpaque;

static const AmqIndexHasher *
scan_hasher(IndexScanDesc scan, Oid type)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;
	AmqIndexHasher *hasher;
	int			i;

	if (!OidIsValid(type))
		type = scan->indexRelation->rd_opcintype[0];
	for (i = 0; i < so->nhashers; i++)
		if (so->hashers[i].type == type)
			return &so->hashers[i].hasher;
	if (so->nhashers < (int) lengthof(so->hashers))
	{
		so->hashers[so->nhashers].type = type;
		hasher = &so->hashers[so->nhashers].hasher;
	}
	else
		hasher = &so->spare;
	if (!amq_index_hasher_init(hasher, scan->indexRelation, type, CurrentMemoryContext))
		elog(ERROR, "amqfilter index \"%s\" has no hash support function for type %s",
			 RelationGetRelationName(scan->indexRelation), format_type_be(type));
	if (hasher != &so->spare)
		so->nhashers++;
	return hasher;
}

IndexScanDesc
amq_index_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);

	scan->opaque = palloc0(sizeof(ScanOpaque));
	return scan;
}

void
amq_index_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
				 ScanKey orderbys, int norderbys)
{
	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
}

void
amq_index_endscan(IndexScanDesc scan)
{
	pfree(scan->opaque);
}

/* True if the key may hold for some row: some value of it says "maybe". */
static bool
key_may_match(IndexScanDesc scan, const AmqIndexMeta *meta, ScanKey key)
{
	Relation	index = scan->indexRelation;

	if (key->sk_flags & SK_ISNULL)
		return false;			/* "= NULL" holds for no row */
	if (key->sk_flags & SK_SEARCHARRAY)
	{
		ArrayType  *array = DatumGetArrayTypeP(key->sk_argument);

		return amq_index_may_contain_any(index, meta,
										 scan_hasher(scan, ARR_ELEMTYPE(array)), array);
	}
	return amq_index_may_contain(index, meta,
								 amq_index_hash(scan_hasher(scan, key->sk_subtype),
												meta->seed, key->sk_argument));
}

int64
amq_index_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	AmqIndexMeta meta;
	Relation	heap;
	BlockNumber nblocks;
	BlockNumber blk;
	int			i;

	/* this backend's own inserts first (filter_index_insert.c) */
	amq_index_flush(RelationGetRelid(scan->indexRelation));
	amq_index_read_meta(scan->indexRelation, &meta);
	for (i = 0; i < scan->numberOfKeys; i++)
		if (!key_may_match(scan, &meta, &scan->keyData[i]))
			return 0;

	/*
	 * "maybe": every page of the table, to be rechecked row by row.  A
	 * bitmap scan is not given the table: open it (the query locked it).
	 */
	heap = table_open(scan->indexRelation->rd_index->indrelid, AccessShareLock);
	nblocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, AccessShareLock);
	for (blk = 0; blk < nblocks; blk++)
	{
		if ((blk & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		tbm_add_page(tbm, blk);
	}
	/* as BRIN reports a lossy page: about ten rows each */
	return (int64) nblocks * 10;
}

/*
 * ----------------------------------------------------------------
 * Cost estimate
 * ----------------------------------------------------------------
 */

/* pg_class.reltuples of a relation (of a partitioned table too), or -1. */
static double
relation_tuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		tuples;

	if (!HeapTupleIsValid(tup))
		return -1.0;
	tuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return tuples;
}

/*
 * The chance that a value known only at run time is in the table: for a
 * partition, its distinct values' share of its parent's, when both have
 * statistics; else 1.
 */
static double
runtime_presence(PlannerInfo *root, IndexOptInfo *index, Node *indexkey)
{
	RelOptInfo *rel = index->rel;
	AppendRelInfo *appinfo;
	VariableStatData vardata;
	bool		isdefault;
	double		nd_rel;
	double		nd_parent;
	Var		   *var;
	Var		   *parent_var;
	int			i;

	if (!IsA(indexkey, Var) || root->append_rel_array == NULL ||
		(appinfo = root->append_rel_array[rel->relid]) == NULL)
		return 1.0;
	var = (Var *) indexkey;

	examine_variable(root, indexkey, 0, &vardata);
	nd_rel = get_variable_numdistinct(&vardata, &isdefault);
	ReleaseVariableStats(vardata);
	if (isdefault)
		return 1.0;

	/* the parent's column of this partition's column */
	parent_var = NULL;
	for (i = 0; i < list_length(appinfo->translated_vars); i++)
	{
		Var		   *tv = (Var *) list_nth(appinfo->translated_vars, i);

		if (tv != NULL && IsA(tv, Var) && tv->varattno == var->varattno)
		{
			parent_var = makeVar(appinfo->parent_relid, i + 1, var->vartype,
								 var->vartypmod, var->varcollid, 0);
			break;
		}
	}
	if (parent_var == NULL)
		return 1.0;
	/*
	 * The parent's distinct values from its own statistics, and as a
	 * fraction from its size in pg_class: its RelOptInfo counts the rows
	 * left after this query's restrictions, not its rows.
	 */
	examine_variable(root, (Node *) parent_var, 0, &vardata);
	nd_parent = -1.0;
	if (HeapTupleIsValid(vardata.statsTuple))
	{
		double		stadistinct = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stadistinct;

		if (stadistinct > 0.0)
			nd_parent = stadistinct;
		else if (stadistinct < 0.0)
			nd_parent = -stadistinct * relation_tuples(root->simple_rte_array[appinfo->parent_relid]->relid);
	}
	ReleaseVariableStats(vardata);
	if (nd_parent <= 0.0)
		return 1.0;
	return Min(1.0, nd_rel / nd_parent);
}

/*
 * Whether the estimate may probe the index with a clause's constant.  Not
 * where row security, or a security barrier view, stands between the
 * querying role and the table (the clause then comes from above the
 * barrier: its security_level is above 0): the index summarizes the rows
 * they hide too, and a plan that changed with its answer would tell a
 * hidden value from an absent one, with nothing executed.  The estimate
 * then is the one for a value known only at run time, the same whatever
 * the value.  (A role without SELECT on the columns the index reads never
 * sees a plan: its query, EXPLAIN too, fails the executor's privilege
 * check.)
 */
static bool
may_probe_clause(PlannerInfo *root, IndexOptInfo *index, Relation irel,
				 RestrictInfo *rinfo)
{
	RangeTblEntry *rte = planner_rt_fetch(index->rel->relid, root);
	Oid			userid = GetUserId();
	PlannerInfo *outer;

	if (rinfo->security_level > 0 || rte->securityQuals != NIL)
		return false;

	/*
	 * A security barrier view is planned as a subquery, the clauses pushed
	 * into it from above at the level of its own: any such subquery above
	 * this one may be the barrier.
	 */
	for (outer = root->parent_root; outer != NULL; outer = outer->parent_root)
	{
		ListCell   *lc;

		foreach(lc, outer->parse->rtable)
		{
			RangeTblEntry *orte = lfirst_node(RangeTblEntry, lc);

			if (orte->rtekind == RTE_SUBQUERY && orte->security_barrier)
				return false;
		}
	}
#if PG_VERSION_NUM < 160000
	if (OidIsValid(rte->checkAsUser))
		userid = rte->checkAsUser;
#endif
	return check_enable_rls(irel->rd_index->indrelid, userid, true) != RLS_ENABLED;
}

/*
 * The chance that one index clause says "maybe": probed when its value is
 * a constant and may_probe, estimated when not.
 */
static double
clause_maybe(PlannerInfo *root, IndexOptInfo *index, Relation irel,
			 const AmqIndexMeta *meta, Expr *clause, bool may_probe)
{
	Node	   *indexkey;
	Node	   *other;

	if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		indexkey = linitial(((OpExpr *) clause)->args);
		other = lsecond(((OpExpr *) clause)->args);
	}
	else if (IsA(clause, ScalarArrayOpExpr))
	{
		indexkey = linitial(((ScalarArrayOpExpr *) clause)->args);
		other = lsecond(((ScalarArrayOpExpr *) clause)->args);
	}
	else
		return 1.0;
	if (IsA(indexkey, RelabelType))
		indexkey = (Node *) ((RelabelType *) indexkey)->arg;

	other = estimate_expression_value(root, other);
	if (IsA(other, Const) && may_probe)
	{
		Const	   *c = (Const *) other;
		AmqIndexHasher hasher;

		if (c->constisnull)
			return 0.0;
		if (IsA(clause, ScalarArrayOpExpr))
		{
			ArrayType  *array = DatumGetArrayTypeP(c->constvalue);

			if (!amq_index_hasher_init(&hasher, irel, ARR_ELEMTYPE(array),
									   CurrentMemoryContext))
				return 1.0;
			return amq_index_may_contain_any(irel, meta, &hasher, array) ? 1.0 : 0.0;
		}
		if (!amq_index_hasher_init(&hasher, irel, c->consttype, CurrentMemoryContext))
			return 1.0;
		return amq_index_may_contain(irel, meta,
									 amq_index_hash(&hasher, meta->seed, c->constvalue))
			? 1.0 : 0.0;
	}
	return Min(1.0, runtime_presence(root, index, indexkey) + meta->p);
}

void
amq_index_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
					   Cost *indexStartupCost, Cost *indexTotalCost,
					   Selectivity *indexSelectivity, double *indexCorrelation,
					   double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	Relation	irel;
	AmqIndexMeta meta;
	double		maybe = 1.0;
	double		spc_random_page_cost;
	double		pages;
	int			nkeys = 0;
	ListCell   *lc;

	amq_index_flush(index->indexoid);
	irel = index_open(index->indexoid, AccessShareLock);
	amq_index_read_meta(irel, &meta);
	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);

			maybe = Min(maybe, clause_maybe(root, index, irel, &meta, rinfo->clause,
											may_probe_clause(root, index, irel, rinfo)));
			nkeys++;
		}
	}
	index_close(irel, AccessShareLock);

	/* the metapage and a page per generation, for each key */
	pages = 1 + meta.ngens;
	get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost, NULL);
	*indexStartupCost = pages * spc_random_page_cost +
		Max(nkeys, 1) * meta.ngens * cpu_operator_cost;
	*indexTotalCost = *indexStartupCost;
	/* the share of the table's rows a scan returns: all of them, or none */
	*indexSelectivity = maybe;
	*indexCorrelation = 1.0;
	*indexPages = pages;
}
