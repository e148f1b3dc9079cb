/*
 * index_sql.c
 *		The SQL functions around an amqfilter index: bloom_index_contains,
 *		amqfilter_index_info and amqfilter_index_candidates, which read it,
 *		with the checks that the caller may learn from the index what it
 *		summarizes; and amqfilter_index_filter, the bloom value of what it
 *		covers, built from its table.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/transam.h"
#include "access/table.h"
#include "catalog/index.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/spi.h"
#include "nodes/nodeFuncs.h"
#include "parser/parse_func.h"
#include "utils/plancache.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

PG_FUNCTION_INFO_V1(amqfilter_index_info);
PG_FUNCTION_INFO_V1(amqfilter_index_candidates);
PG_FUNCTION_INFO_V1(bloom_index_contains);

/* Opens an index, its table locked first, as a query of the table locks. */
static Relation
open_any_index(Oid indexoid)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);

	if (!OidIsValid(heapoid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid) ? get_rel_name(indexoid) : "?")));
	LockRelationOid(heapoid, AccessShareLock);
	return index_open(indexoid, AccessShareLock);
}

/*
 * Opens an amqfilter index for a SQL function (the checks that the caller
 * may learn from it what it summarizes, every value of the column, are
 * open_index_checked's).  Locked AccessShareLock.
 */
static Relation
open_index(Oid indexoid, const char *fname)
{
	Relation	index = open_any_index(indexoid);

	if (index->rd_rel->relkind == RELKIND_PARTITIONED_INDEX &&
		index->rd_rel->relam == get_index_am_oid("amqfilter", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is the amqfilter index of a partitioned table",
						RelationGetRelationName(index)),
				 errhint("%s takes the index of one partition; amqfilter_index_candidates names the partitions whose index may hold a value.",
						 fname)));
	if (!amq_index_is_amqfilter(index))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an amqfilter index", RelationGetRelationName(index)),
				 errhint("%s takes an index created USING amqfilter.", fname)));
	return index;
}

/*
 * The index of a partitioned table, created USING amqfilter, with its table
 * locked first, as open_index.
 */
static Relation
open_partitioned_index(Oid indexoid, const char *fname)
{
	Relation	index = open_any_index(indexoid);

	if (index->rd_rel->relkind != RELKIND_PARTITIONED_INDEX ||
		index->rd_rel->relam != get_index_am_oid("amqfilter", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an amqfilter index", RelationGetRelationName(index)),
				 errhint("%s takes an index created USING amqfilter.", fname)));
	return index;
}

/*
 * Errors unless the current user may learn from the index what it
 * summarizes: every value of the column of every row it covers, so SELECT
 * on every column it reads, and no row security hiding rows of the table.
 */
static void
check_may_read(Relation index, const char *fname)
{
	Oid			heapoid = index->rd_index->indrelid;

	if (!amq_index_columns_readable(index, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(heapoid)),
				 errdetail("%s tells which values the indexed column holds in the rows the index covers: it needs SELECT on every column the index reads (its key, expressions and predicate).",
						   fname)));
	if (check_enable_rls(heapoid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security hides rows of table %s from the current user",
						get_rel_name(heapoid)),
				 errdetail("The index summarizes every row, those the policies hide too.")));
}

/*
 * Errors unless the index holds every row the caller's snapshot sees, as
 * the planner requires of an index it uses: valid and ready (not one whose
 * build, or whose DROP INDEX CONCURRENTLY, did not finish: inserts may have
 * skipped it), and, if built over broken HOT chains (indcheckxmin), built
 * before every transaction this snapshot may not see.  An index that is not
 * may hold a row's new version only, where the caller sees the old one:
 * its "no" would be false.
 */
static void
check_usable(Relation index)
{
	Form_pg_index ix = index->rd_index;

	if (!ix->indisvalid || !ix->indisready || !ix->indislive)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" is not valid", RelationGetRelationName(index)),
				 errdetail("Its build, or a DROP INDEX CONCURRENTLY, did not finish: it may miss rows."),
				 errhint("REINDEX it, or drop it.")));
	if (ix->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
							   TransactionXmin))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" is too new for this transaction's snapshot",
						RelationGetRelationName(index)),
				 errdetail("It was built after this snapshot was taken, over rows whose older versions the snapshot may see and the index does not hold."),
				 errhint("Ask in a later transaction.")));
}

static Relation
open_index_checked(Oid indexoid, const char *fname)
{
	Relation	index = open_index(indexoid, fname);

	check_may_read(index, fname);
	return index;
}

/*
 * Errors unless a value of type under collation can be looked up in the
 * index.  The index hashes values under its column's collation.  That
 * answers for a value under any deterministic collation: values equal under
 * one are the same bytes, which are equal under every collation and hash
 * alike under the column's.  It cannot answer for one under a
 * nondeterministic collation other than the column's: values equal under
 * it ('apple' and 'APPLE' under a case-insensitive one) can hash apart
 * under the column's, and a "no" would then deny a value the probe's "="
 * finds.  That is an error, as for a filter (hashing.c), with the same
 * SQLSTATE.  (The planner never uses the index for a comparison under
 * another collation than the column's: a scan reads the table instead.)
 */
static void
check_value_collation(Relation index, Oid type, Oid collation)
{
	Oid			column_collation = index->rd_indcollation[0];

	if (!OidIsValid(collation) || collation == column_collation ||
		!type_is_collatable(type) || get_collation_isdeterministic(collation))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("a value under collation %s cannot be looked up in index \"%s\" of a column under collation %s",
					generate_collation_name(collation), RelationGetRelationName(index),
					OidIsValid(column_collation) ?
					generate_collation_name(column_collation) : "\"default\""),
			 errdetail("The index hashes values under its column's collation, where values equal "
					   "under collation %s can hash apart, so it cannot answer for all the values "
					   "equal to this one.",
					   generate_collation_name(collation)),
			 errhint("Write the value under the column's collation: value COLLATE %s.",
					 OidIsValid(column_collation) ?
					 generate_collation_name(column_collation) : "\"default\"")));
}

/*
 * How the index hashes a value of type under collation: an error for a type
 * its operator family has no hash function for, or a collation it cannot
 * answer under (check_value_collation).
 */
static void
value_hasher(AmqIndexHasher *hasher, Relation index, Oid type, Oid collation,
			 MemoryContext cxt)
{
	if (!amq_index_hasher_init(hasher, index, type, cxt))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a value of type %s cannot be looked up in index \"%s\" of type %s",
						format_type_be(type), RelationGetRelationName(index),
						format_type_be(TupleDescAttr(RelationGetDescr(index), 0)->atttypid)),
				 errhint("Cast the value to %s.",
						 format_type_be(TupleDescAttr(RelationGetDescr(index), 0)->atttypid))));
	check_value_collation(index, type, collation);
}

/*
 * bloom_index_contains(index regclass, value anyelement) -> boolean: false
 * if the index rules the value out of its column, true ("maybe") if not.
 * NULL for a NULL value.  The key guard of plain SQL: as cheap as a probe
 * of a stored filter, and kept current by PostgreSQL.
 */
/*
 * What bloom_index_contains looks up once per call site: how values of the
 * argument's type hash (and that the value's collation suits the index),
 * and that the user may read the index, which a query's own privileges are
 * checked once per query too.
 */
typedef struct ContainsCache
{
	Oid			indexoid;
	Oid			type;
	Oid			userid;			/* checked for this user, this index */
	bool		have_hasher;
	AmqIndexHasher hasher;
} ContainsCache;

Datum
bloom_index_contains(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	ContainsCache *cache = (ContainsCache *) fcinfo->flinfo->fn_extra;
	Relation	index;
	AmqIndexMeta meta;
	bool		maybe;

	index = open_index(indexoid, "bloom_index_contains");
	if (cache == NULL)
		cache = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ContainsCache));
	if (cache->indexoid != indexoid || cache->userid != GetUserId())
	{
		check_may_read(index, "bloom_index_contains");
		cache->have_hasher = false;
		cache->indexoid = indexoid;
		cache->userid = GetUserId();
	}
	/* the index's state can change between calls: checked on every one */
	check_usable(index);
	if (!cache->have_hasher || cache->type != type)
	{
		value_hasher(&cache->hasher, index, type, PG_GET_COLLATION(), fcinfo->flinfo->fn_mcxt);
		cache->type = type;
		cache->have_hasher = true;
	}
	amq_index_flush(indexoid);
	amq_index_read_meta(index, &meta);
	maybe = amq_index_may_contain(index, &meta,
								  amq_index_hash(&cache->hasher, meta.seed,
												 PG_GETARG_DATUM(1)));
	index_close(index, AccessShareLock);
	PG_RETURN_BOOL(maybe);
}

/*
 * amqfilter_index_info(index regclass) -> SETOF (bytes, generations,
 *   entries, everywhere, pages_per_range, ranges, false_positive_rate,
 *   target_false_positive_rate, build_entries, saturated, partition_index)
 *
 * An index's size, its generations, its entries (one per value and range
 * it was seen in), those that say "everywhere" (a value in too many
 * ranges), the newest generation's pages_per_range and the ranges of the
 * table at it, the rate of "maybe" for an absent value now (from every
 * page's load: one minus the product over generations of the chance a
 * probe of it misses), against the target, the entries the build made, and
 * whether the index filled up without growing (AMQ_INDEX_SATURATED, or a
 * page out of room).  Reads every page, and checks each whole.
 *
 * The index of a partitioned table: a row for each partition's index, and
 * a total (partition_index NULL): sums, the largest generations, and as
 * rates the mean of the partitions' -- the share of partitions a lookup of
 * an absent value reads.  Its privileges are the partitioned table's, as
 * for a query of it.
 */
#define INFO_COLUMNS 11

typedef struct InfoTotal
{
	int64		bytes;
	int32		generations;
	int64		entries;
	int64		everywhere;
	int64		ranges;
	double		rate;
	double		target;
	double		target_min;
	double		target_max;
	int64		build_entries;
	bool		saturated;
	int			n;
} InfoTotal;

static void
index_info_row(Relation index, Datum *out, bool *nulls, InfoTotal *total)
{
	AmqIndexMeta meta;
	amq_rt_geom geom;
	uint64		entries = 0;
	uint64		everywhere = 0;
	double		miss = 1.0;
	bool		saturated;
	Relation	heap;
	BlockNumber heap_blocks;
	const AmqIndexGen *newest;
	uint32		i;
	int64		ranges;

	memset(nulls, 0, sizeof(bool) * INFO_COLUMNS);
	amq_index_flush(RelationGetRelid(index));
	amq_index_read_meta(index, &meta);
	amq_index_geometry(&meta, &geom);
	saturated = (meta.flags & AMQ_INDEX_SATURATED) != 0;
	for (i = 0; i < meta.ngens; i++)
	{
		const AmqIndexGen *g = &meta.gens[i];
		double		gen_rate = 0.0;
		uint32		pg;

		for (pg = 0; pg < g->npages; pg++)
		{
			Buffer		buf;
			Page		page;
			AmqIndexPageHeader *hdr;

			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(index, g->first + pg);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			amq_index_check_data_page(index, page, g->first + pg, i);
			hdr = AmqIndexPageGetHeader(page);
			if (!amq_rt_check(&geom, &hdr->table, AmqIndexPageGetSlots(page)))
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("page %u of index \"%s\" is corrupted",
								g->first + pg, RelationGetRelationName(index)),
						 errdetail("Its counts disagree with its entries."),
						 errhint("REINDEX it.")));
			entries += hdr->table.nentries;
			everywhere += amq_rt_count_everywhere(&geom, &hdr->table,
												  AmqIndexPageGetSlots(page));
			gen_rate += amq_rt_false_match_rate(&geom, &hdr->table);
			saturated |= (hdr->table.flags & AMQ_RT_SATURATED) != 0;
			UnlockReleaseBuffer(buf);
		}
		miss *= 1.0 - gen_rate / g->npages;
	}
	newest = &meta.gens[meta.ngens - 1];
	heap = table_open(index->rd_index->indrelid, AccessShareLock);
	heap_blocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, AccessShareLock);
	ranges = (int64) ((heap_blocks + newest->pages_per_range - 1) / newest->pages_per_range);
	out[0] = Int64GetDatum((int64) RelationGetNumberOfBlocks(index) * BLCKSZ);
	out[1] = Int32GetDatum((int32) meta.ngens);
	out[2] = Int64GetDatum((int64) entries);
	out[3] = Int64GetDatum((int64) everywhere);
	out[4] = Int32GetDatum((int32) newest->pages_per_range);
	out[5] = Int64GetDatum(ranges);
	out[6] = Float8GetDatum(1.0 - miss);
	out[7] = Float8GetDatum(meta.p);
	out[8] = Int64GetDatum((int64) meta.build_entries);
	out[9] = BoolGetDatum(saturated);
	out[10] = ObjectIdGetDatum(RelationGetRelid(index));

	total->bytes += (int64) RelationGetNumberOfBlocks(index) * BLCKSZ;
	total->generations = Max(total->generations, (int32) meta.ngens);
	total->entries += (int64) entries;
	total->everywhere += (int64) everywhere;
	total->ranges += ranges;
	total->rate += 1.0 - miss;
	total->target += meta.p;
	total->target_min = total->n == 0 ? meta.p : Min(total->target_min, meta.p);
	total->target_max = total->n == 0 ? meta.p : Max(total->target_max, meta.p);
	total->build_entries += (int64) meta.build_entries;
	total->saturated |= saturated;
	total->n++;
}

Datum
amqfilter_index_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		out[INFO_COLUMNS];
	bool		nulls[INFO_COLUMNS];
	InfoTotal	total;
	Relation	index;

	InitMaterializedSRF(fcinfo, 0);
	memset(&total, 0, sizeof(total));
	if (get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
	{
		index = open_index_checked(indexoid, "amqfilter_index_info");
		index_info_row(index, out, nulls, &total);
		index_close(index, AccessShareLock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		PG_RETURN_NULL();
	}

	index = open_partitioned_index(indexoid, "amqfilter_index_info");
	check_may_read(index, "amqfilter_index_info");
	{
		List	   *children = find_all_inheritors(indexoid, NoLock, NULL);
		ListCell   *lc;

		foreach(lc, children)
		{
			Oid			child = lfirst_oid(lc);
			Relation	part;

			if (get_rel_relkind(child) != RELKIND_INDEX)
				continue;
			/* the partitioned table's privileges were checked */
			part = open_index(child, "amqfilter_index_info");
			index_info_row(part, out, nulls, &total);
			index_close(part, AccessShareLock);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		}
	}
	memset(nulls, 0, sizeof(nulls));
	out[0] = Int64GetDatum(total.bytes);
	out[1] = Int32GetDatum(total.generations);
	out[2] = Int64GetDatum(total.entries);
	out[3] = Int64GetDatum(total.everywhere);
	nulls[4] = true;
	out[5] = Int64GetDatum(total.ranges);
	out[6] = Float8GetDatum(total.n > 0 ? total.rate / total.n : 0.0);
	/* the partitions' target, or the mean of theirs if they differ */
	out[7] = Float8GetDatum(total.n == 0 ? amq_index_option_fpr(index) :
							total.target_min == total.target_max ? total.target_min :
							total.target / total.n);
	out[8] = Int64GetDatum(total.build_entries);
	out[9] = BoolGetDatum(total.saturated);
	nulls[10] = true;
	index_close(index, AccessShareLock);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
	PG_RETURN_NULL();
}

/*
 * amqfilter_index_candidates(index regclass, value anyelement) -> SETOF regclass
 *
 * The tables whose amqfilter index may hold value: for the index of a
 * partitioned table, each partition whose index does not rule it out, in
 * the order of their indexes' creation; for an index of one table, that
 * table or none.  A partition whose index cannot answer for the caller's
 * snapshot (invalid, not ready, too new) is named: a candidate is never
 * left out.  The privileges are bloom_index_contains', the partitioned
 * table's for a partitioned index.
 */
Datum
amqfilter_index_candidates(PG_FUNCTION_ARGS)
{
	const char *fname = "amqfilter_index_candidates";
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Datum		value = PG_GETARG_DATUM(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *indexes;
	Relation	top;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (get_rel_relkind(indexoid) == RELKIND_PARTITIONED_INDEX)
	{
		top = open_partitioned_index(indexoid, fname);
		check_may_read(top, fname);
		indexes = find_all_inheritors(indexoid, NoLock, NULL);
	}
	else
	{
		top = open_index_checked(indexoid, fname);
		indexes = list_make1_oid(indexoid);
	}
	foreach(lc, indexes)
	{
		Oid			child = lfirst_oid(lc);
		Relation	index;
		AmqIndexHasher hasher;
		bool		maybe = true;
		Datum		out;
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();
		if (get_rel_relkind(child) != RELKIND_INDEX)
			continue;
		index = child == indexoid ? top : open_index(child, fname);
		value_hasher(&hasher, index, type, PG_GET_COLLATION(), CurrentMemoryContext);
		if (amq_index_usable(index))
		{
			AmqIndexMeta meta;

			amq_index_flush(child);
			amq_index_read_meta(index, &meta);
			maybe = amq_index_may_contain(index, &meta,
										  amq_index_hash(&hasher, meta.seed, value));
		}
		out = ObjectIdGetDatum(index->rd_index->indrelid);
		if (index != top)
			index_close(index, AccessShareLock);
		if (maybe)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &isnull);
	}
	index_close(top, AccessShareLock);
	PG_RETURN_NULL();
}

/* True for a function that is not built into PostgreSQL. */
static bool
not_builtin(Oid func, void *context)
{
	return func >= FirstNormalObjectId;
}

static bool
calls_not_builtin(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (check_functions_in_node(node, not_builtin, context))
		return true;
	return expression_tree_walker(node, calls_not_builtin, context);
}

/*
 * Errors unless reading what the index covers runs only PostgreSQL's own
 * code, or the caller may act as the table's owner.  Its expression and
 * predicate are the owner's: a function of theirs, run by another role,
 * would run with that role's privileges (PostgreSQL itself runs index
 * expressions as the table's owner, in a security-restricted operation).
 */
static void
check_runs_no_owner_code(Relation index, const char *fname)
{
	List	   *exprs = RelationGetIndexExpressions(index);
	List	   *pred = RelationGetIndexPredicate(index);
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(index->rd_index->indrelid));
	Oid			owner;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", index->rd_index->indrelid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (has_privs_of_role(GetUserId(), owner))
		return;
	if (calls_not_builtin((Node *) exprs, NULL) || calls_not_builtin((Node *) pred, NULL))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s does not run the functions of index \"%s\" for a role other than its table's owner",
						fname, RelationGetRelationName(index)),
				 errdetail("Its expression or predicate calls a function that is not built into PostgreSQL; it would run with the current role's privileges."),
				 errhint("Run it as a role with the privileges of the table's owner, or build the filter with bloom_agg over the table.")));
}

/*
 * Errors unless the prepared query's aggregate is the extension's own
 * bloom_agg(anyelement, float8): in a schema others may write, a function
 * of the same name and closer argument types would be chosen instead.
 */
static void
check_calls_own_aggregate(SPIPlanPtr plan, const char *schema, const char *fname)
{
	Oid			argtypes[2] = {ANYELEMENTOID, FLOAT8OID};
	Oid			own = LookupFuncName(list_make2(makeString(pstrdup(schema)),
											   makeString("bloom_agg")),
									 2, argtypes, false);
	List	   *sources = SPI_plan_get_plan_sources(plan);
	CachedPlanSource *source;
	Query	   *query;
	TargetEntry *tle;

	if (list_length(sources) != 1)
		elog(ERROR, "%s: unexpected plan", fname);
	source = linitial(sources);
	query = list_length(source->query_list) == 1 ? linitial_node(Query, source->query_list) : NULL;
	tle = query != NULL && query->targetList != NIL ? linitial_node(TargetEntry, query->targetList) : NULL;
	if (tle == NULL || !IsA(tle->expr, Aggref) || ((Aggref *) tle->expr)->aggfnoid != own)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("another function named bloom_agg in schema \"%s\" would be called by %s",
						schema, fname),
				 errhint("Remove it, or install amqfilter in a schema only trusted roles can create objects in.")));
}

/*
 * amqfilter_index_filter(index regclass, p float8 DEFAULT NULL) -> bloom
 *
 * The bloom filter of what the index covers, as a value to store, merge or
 * ship: of its column (or expression, under its collation) over the rows of
 * its table (every partition's, for the index of a partitioned table) that
 * match its predicate, at rate p (NULL: the index's false_positive_rate).
 * It is bloom_agg(expression, p) over those rows, run as the caller: the
 * caller's privileges and row-level security policies apply as to that
 * query, so the filter holds exactly the values the caller may read.
 *
 * The index itself cannot give the filter: it keeps fingerprints under a
 * seed of its own, drawn at random so that where a key goes cannot be known
 * outside the server, where a bloom value must answer for values hashed as
 * every bloom value hashes them.  So the table is read, once.
 *
 * The query names everything it uses: the table and the deparsed
 * expression and predicate are qualified as the function's pinned
 * search_path (pg_catalog, pg_temp) requires, and bloom_agg is called in
 * the schema this function is in, the extension's, and checked to be its
 * own once the query is parsed.  The expression and predicate are the
 * table owner's code: a role that may not act as the owner may only run
 * them when they call PostgreSQL's own functions alone.
 */
PG_FUNCTION_INFO_V1(amqfilter_index_filter);

Datum
amqfilter_index_filter(PG_FUNCTION_ARGS)
{
	const char *fname = "amqfilter_index_filter";
	Oid			indexoid;
	Relation	index;
	Oid			heapoid;
	bool		partitioned;
	double		p;
	char	   *column;
	char	   *predicate = NULL;
	char	   *schema;
	StringInfoData sql;
	Oid			argtypes[1] = {FLOAT8OID};
	Datum		args[1];
	Datum		result;
	bool		isnull;
	int			rc;
	SPIPlanPtr	plan;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	indexoid = PG_GETARG_OID(0);
	partitioned = get_rel_relkind(indexoid) == RELKIND_PARTITIONED_INDEX;
	index = partitioned ? open_partitioned_index(indexoid, fname)
		: open_index(indexoid, fname);
	heapoid = index->rd_index->indrelid;
	if (PG_ARGISNULL(1))
		p = amq_index_option_fpr(index);
	else
	{
		p = PG_GETARG_FLOAT8(1);
		if (!(p > 0.0 && p < 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bloom filter false-positive rate p must be greater than 0 and less than 1")));
	}

	/* the indexed column or expression, under the index's collation */
	column = pg_get_indexdef_columns(indexoid, false);
	if (OidIsValid(index->rd_indcollation[0]))
		column = psprintf("(%s) COLLATE %s", column,
						  generate_collation_name(index->rd_indcollation[0]));
	if (!heap_attisnull(index->rd_indextuple, Anum_pg_index_indpred, NULL))
	{
		Datum		pred;
		bool		prednull;

		pred = SysCacheGetAttr(INDEXRELID, index->rd_indextuple,
							   Anum_pg_index_indpred, &prednull);
		if (!prednull)
			predicate = TextDatumGetCString(DirectFunctionCall2(pg_get_expr, pred,
																ObjectIdGetDatum(heapoid)));
	}
	check_runs_no_owner_code(index, fname);
	index_close(index, AccessShareLock);

	schema = get_namespace_name(get_func_namespace(fcinfo->flinfo->fn_oid));
	initStringInfo(&sql);
	appendStringInfo(&sql, "SELECT %s.bloom_agg(%s, $1) FROM %s%s",
					 quote_identifier(schema), column,
					 partitioned ? "" : "ONLY ",
					 quote_qualified_identifier(get_namespace_name(get_rel_namespace(heapoid)),
												get_rel_name(heapoid)));
	if (predicate != NULL)
		appendStringInfo(&sql, " WHERE %s", predicate);

	args[0] = Float8GetDatum(p);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(sql.data, 1, argtypes);
	if (plan == NULL)
		elog(ERROR, "%s: could not prepare \"%s\": %s", fname, sql.data,
			 SPI_result_code_string(SPI_result));
	check_calls_own_aggregate(plan, schema, fname);
	rc = SPI_execute_plan(plan, args, NULL, true, 1);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "%s: unexpected result of \"%s\"", fname, sql.data);
	result = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (!isnull)
		result = SPI_datumTransfer(result, false, -1);
	SPI_finish();
	if (isnull)
		PG_RETURN_NULL();
	PG_RETURN_DATUM(result);
}
