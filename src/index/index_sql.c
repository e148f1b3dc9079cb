/*
 * index_sql.c
 *		The SQL functions around an amqfilter index: bloom_index_contains,
 *		amqfilter_index_info and amqfilter_index_candidates, which read it,
 *		with the checks that the caller may learn from the index what it
 *		summarizes; and amqfilter_index_filter, the bloom value of what it
 *		covers, built from its table.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relation.h"
#include "access/transam.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/index.h"
#include "catalog/pg_constraint.h"
#include "catalog/pg_index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_range.h"
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
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/tuplestore.h"
#include "utils/typcache.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

PG_FUNCTION_INFO_V1(amqfilter_index_info);
PG_FUNCTION_INFO_V1(amqfilter_index_candidates);
PG_FUNCTION_INFO_V1(bloom_index_contains);

/*
 * Opens an index, its table locked first, as a query of the table locks,
 * and sets *heapoid to its table.  NULL for an index that is gone: an OID
 * that names no relation (*heapoid invalid), or an index dropped before its
 * lock was granted (*heapoid its table).  A statement that named an
 * index before a REINDEX CONCURRENTLY swapped it for its rebuilt copy still
 * holds the retired index's OID, and the REINDEX drops that index without
 * waiting for a statement that has not locked the table yet: each function
 * answers for a gone index as it can.  An OID of a relation that is not an
 * index is an error.
 */
static Relation
try_open_any_index(Oid indexoid, Oid *heapoid)
{
	Relation	index;

	*heapoid = IndexGetRelation(indexoid, true);
	if (!OidIsValid(*heapoid))
	{
		char	   *name = get_rel_name(indexoid);

		if (name != NULL)
			ereport(ERROR,
					(errcode(ERRCODE_WRONG_OBJECT_TYPE),
					 errmsg("\"%s\" is not an index", name)));
		return NULL;
	}
	LockRelationOid(*heapoid, AccessShareLock);
	index = try_relation_open(indexoid, AccessShareLock);
	if (index != NULL &&
		index->rd_rel->relkind != RELKIND_INDEX &&
		index->rd_rel->relkind != RELKIND_PARTITIONED_INDEX)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", RelationGetRelationName(index))));
	return index;
}

/* The error of a function that cannot answer for an index that is gone. */
static void
report_gone(Oid indexoid)
{
	ereport(ERROR,
			(errcode(ERRCODE_UNDEFINED_OBJECT),
			 errmsg("index with OID %u does not exist", indexoid),
			 errdetail("It was dropped, or replaced by REINDEX CONCURRENTLY, after the statement named it.")));
}

/*
 * Opens an amqfilter index for a SQL function (the checks that the caller
 * may learn from it what it summarizes, every value of the column, are
 * check_may_read's).  Locked AccessShareLock.  NULL for an index that is
 * gone, as try_open_any_index.
 */
static Relation
open_index(Oid indexoid, const char *fname, Oid *heapoid)
{
	Oid			heap;
	Relation	index = try_open_any_index(indexoid, heapoid ? heapoid : &heap);

	if (index == NULL)
		return NULL;
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
 * locked first, as open_index; NULL if it is gone.
 */
static Relation
open_partitioned_index(Oid indexoid, const char *fname)
{
	Oid			heapoid;
	Relation	index = try_open_any_index(indexoid, &heapoid);

	if (index == NULL)
		return NULL;
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
 * An index answers for the caller only if it holds every row the caller's
 * snapshot sees, as the planner requires of an index it uses
 * (amq_index_usable): valid, ready and live, and, if built over broken HOT
 * chains (indcheckxmin), built before every transaction the snapshot may
 * not see.  One that is not may miss rows (a build, or a DROP INDEX
 * CONCURRENTLY, that did not finish: inserts may have skipped it), or hold
 * a row's new version only where the caller sees the old one: its "no"
 * could be false.  So it answers "maybe", as a filter always may, and so
 * does an index that is gone (try_open_any_index): the one a REINDEX
 * CONCURRENTLY retires goes from valid to not valid, to not ready and
 * dead, to dropped, while statements that named it before the swap still
 * call with its OID; a query through a btree keeps running, and so does a
 * query through these functions.  What is not an amqfilter index at all (a
 * table, a btree) stays an error.
 */

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
 * if the index rules the value out of its column, true ("maybe") if not,
 * or if the index cannot answer for the caller or is gone (above).  NULL for
 * a NULL value.  The key guard of plain SQL: as cheap as a probe of a
 * stored filter, and kept current by PostgreSQL.
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

	index = open_index(indexoid, "bloom_index_contains", NULL);
	if (index == NULL)
		PG_RETURN_BOOL(true);	/* gone: nothing rules the value out */
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
	if (!cache->have_hasher || cache->type != type)
	{
		value_hasher(&cache->hasher, index, type, PG_GET_COLLATION(), fcinfo->flinfo->fn_mcxt);
		cache->type = type;
		cache->have_hasher = true;
	}
	/* the index's state can change between calls: asked on every one */
	maybe = true;
	if (amq_index_usable(index))
	{
		amq_index_flush(indexoid);
		amq_index_read_meta(index, &meta);
		maybe = !amq_index_out_of_bounds(&meta, &cache->hasher, PG_GETARG_DATUM(1)) &&
			amq_index_may_contain(index, &meta,
								  amq_index_hash(&cache->hasher, meta.seed,
												 PG_GETARG_DATUM(1)));
	}
	index_close(index, AccessShareLock);
	PG_RETURN_BOOL(maybe);
}

/*
 * Says so when most of an index's entries are "everywhere" in a table of
 * more than 16 ranges: lookups of their values read the whole table, and
 * another index serves the column better (index_build.c says the same at
 * build).  Once a statement: a partitioned index has an index a partition.
 */
static void
report_everywhere_entries(Relation index, uint64 entries, uint64 everywhere, int64 ranges)
{
	static TimestampTz said_in = 0;

	if (entries == 0 || everywhere * 2 <= entries || ranges <= 4 * AMQ_RT_MAX_RANGES ||
		said_in == GetCurrentStatementStartTimestamp())
		return;
	said_in = GetCurrentStatementStartTimestamp();
	ereport(NOTICE,
			(errmsg("%.0f%% of the entries of index \"%s\" are \"everywhere\": lookups of their values read the whole table",
					100.0 * everywhere / entries, RelationGetRelationName(index)),
			 errdetail("A value in more than %d of the table's " INT64_FORMAT " block ranges has one such entry when they spread over more than an eighth of the table (in an index built before 0.3, however they spread).",
					   AMQ_RT_MAX_RANGES, ranges),
			 errhint("A btree index serves a column whose values are scattered over the table; BRIN, or an amqfilter index with a larger pages_per_range, one whose rows are clustered.")));
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
 * An index that cannot answer for the caller (above) has a rate of 1:
 * every lookup is "maybe".  One that is not ready (its build has not
 * finished, or it is dead, being dropped) is not read: its pages may be
 * half written, or none; its row has its bytes, that rate and its target,
 * and NULL for what its pages would tell.  An index that is gone has no
 * row.
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
	double		rate;
	bool		saturated;
	Relation	heap;
	BlockNumber heap_blocks;
	const AmqIndexGen *newest;
	uint32		i;
	int64		ranges;
	int64		bytes = (int64) RelationGetNumberOfBlocks(index) * BLCKSZ;

	memset(nulls, 0, sizeof(bool) * INFO_COLUMNS);
	out[0] = Int64GetDatum(bytes);
	out[10] = ObjectIdGetDatum(RelationGetRelid(index));
	total->bytes += bytes;
	if (!index->rd_index->indisready)
	{
		double		p = amq_index_option_fpr(index);

		for (i = 1; i <= 9; i++)
			nulls[i] = true;
		nulls[6] = nulls[7] = false;
		out[6] = Float8GetDatum(1.0);
		out[7] = Float8GetDatum(p);
		total->rate += 1.0;
		total->target += p;
		total->target_min = total->n == 0 ? p : Min(total->target_min, p);
		total->target_max = total->n == 0 ? p : Max(total->target_max, p);
		total->n++;
		return;
	}
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
	/* an index that cannot answer for the caller says "maybe" to everything */
	rate = amq_index_usable(index) ? 1.0 - miss : 1.0;
	newest = &meta.gens[meta.ngens - 1];
	heap = table_open(index->rd_index->indrelid, AccessShareLock);
	heap_blocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, AccessShareLock);
	ranges = (int64) ((heap_blocks + newest->pages_per_range - 1) / newest->pages_per_range);
	report_everywhere_entries(index, entries, everywhere, ranges);
	out[1] = Int32GetDatum((int32) meta.ngens);
	out[2] = Int64GetDatum((int64) entries);
	out[3] = Int64GetDatum((int64) everywhere);
	out[4] = Int32GetDatum((int32) newest->pages_per_range);
	out[5] = Int64GetDatum(ranges);
	out[6] = Float8GetDatum(rate);
	out[7] = Float8GetDatum(meta.p);
	out[8] = Int64GetDatum((int64) meta.build_entries);
	out[9] = BoolGetDatum(saturated);

	total->generations = Max(total->generations, (int32) meta.ngens);
	total->entries += (int64) entries;
	total->everywhere += (int64) everywhere;
	total->ranges += ranges;
	total->rate += rate;
	total->target += meta.p;
	total->target_min = total->n == 0 ? meta.p : Min(total->target_min, meta.p);
	total->target_max = total->n == 0 ? meta.p : Max(total->target_max, meta.p);
	total->build_entries += (int64) meta.build_entries;
	total->saturated |= saturated;
	total->n++;
}

/*
 * Locks every partition of a partitioned table, as a query of it does,
 * before its index's partitions are listed: a REINDEX CONCURRENTLY then
 * waits for this transaction before it drops a partition's index listed.
 */
static void
lock_partitions(Relation partitioned_index)
{
	(void) find_all_inheritors(partitioned_index->rd_index->indrelid,
							   AccessShareLock, NULL);
}

Datum
amqfilter_index_info(PG_FUNCTION_ARGS)
{
	const char *fname = "amqfilter_index_info";
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		out[INFO_COLUMNS];
	bool		nulls[INFO_COLUMNS];
	InfoTotal	total;
	Relation	index;
	List	   *children;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, 0);
	memset(&total, 0, sizeof(total));
	if (get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
	{
		index = open_index(indexoid, fname, NULL);
		if (index == NULL)
			PG_RETURN_NULL();	/* gone: no row */
		check_may_read(index, fname);
		index_info_row(index, out, nulls, &total);
		index_close(index, AccessShareLock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		PG_RETURN_NULL();
	}

	index = open_partitioned_index(indexoid, fname);
	if (index == NULL)
		PG_RETURN_NULL();
	check_may_read(index, fname);
	lock_partitions(index);
	children = find_all_inheritors(indexoid, NoLock, NULL);
	foreach(lc, children)
	{
		Oid			child = lfirst_oid(lc);
		Relation	part;

		if (get_rel_relkind(child) != RELKIND_INDEX)
			continue;
		/* the partitioned table's privileges were checked */
		part = open_index(child, fname, NULL);
		if (part == NULL)
			continue;
		index_info_row(part, out, nulls, &total);
		index_close(part, AccessShareLock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
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
 * False if the index (of a table, or of one partition) rules the value out;
 * true if it may hold it, or cannot answer for the caller (above).  An
 * error for a value it cannot look up.  index is open.
 */
static bool
index_may_hold(Relation index, Oid type, Oid collation, Datum value)
{
	AmqIndexHasher hasher;
	AmqIndexMeta meta;

	value_hasher(&hasher, index, type, collation, CurrentMemoryContext);
	if (!amq_index_usable(index))
		return true;
	amq_index_flush(RelationGetRelid(index));
	amq_index_read_meta(index, &meta);
	if (amq_index_out_of_bounds(&meta, &hasher, value))
		return false;
	return amq_index_may_contain(index, &meta, amq_index_hash(&hasher, meta.seed, value));
}

/* A partition that has an index in the partitioned index, and that index. */
typedef struct CoveredPartition
{
	Oid			table;			/* the key */
	Oid			index;
} CoveredPartition;

/*
 * amqfilter_index_candidates(index regclass, value anyelement) -> SETOF regclass
 *
 * The tables whose rows may hold value, as far as the amqfilter index can
 * tell.  For the index of a partitioned table, every partition that holds
 * rows (not a partitioned one) and that its index does not rule out, in
 * the order PostgreSQL lists the partitions (level by level, oldest
 * first): one without an index in the partitioned index (a foreign table,
 * or one whose index is missing or not attached, where the index was made
 * ON ONLY the partitioned table) is named, and so is one whose index
 * cannot answer for the caller or is gone (above): a candidate is never
 * left out.  For an index of one table, that table or none; the table if
 * its index cannot answer or was dropped before the call could lock it.
 * An index that is gone before the call could find its table is an error:
 * there is no table to name.  The privileges are bloom_index_contains',
 * the partitioned table's for a partitioned index.
 */
Datum
amqfilter_index_candidates(PG_FUNCTION_ARGS)
{
	const char *fname = "amqfilter_index_candidates";
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Oid			collation = PG_GET_COLLATION();
	Datum		value = PG_GETARG_DATUM(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	bool		isnull = false;
	Datum		out;
	Relation	top;
	List	   *partitions;
	HASHCTL		ctl;
	HTAB	   *covered;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
	{
		Oid			heapoid;
		Relation	index = open_index(indexoid, fname, &heapoid);
		bool		maybe = true;

		if (index == NULL && !OidIsValid(heapoid))
			report_gone(indexoid);
		if (index != NULL)
		{
			check_may_read(index, fname);
			maybe = index_may_hold(index, type, collation, value);
			index_close(index, AccessShareLock);
		}
		out = ObjectIdGetDatum(heapoid);
		if (maybe)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &isnull);
		PG_RETURN_NULL();
	}

	top = open_partitioned_index(indexoid, fname);
	if (top == NULL)
		report_gone(indexoid);
	check_may_read(top, fname);
	partitions = find_all_inheritors(top->rd_index->indrelid, AccessShareLock, NULL);

	/* the partitions the index covers, with their indexes */
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid);
	ctl.entrysize = sizeof(CoveredPartition);
	ctl.hcxt = CurrentMemoryContext;
	covered = hash_create("amqfilter_index_candidates", Max(list_length(partitions), 16),
						  &ctl, HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	foreach(lc, find_all_inheritors(indexoid, NoLock, NULL))
	{
		Oid			child = lfirst_oid(lc);
		Oid			table;
		CoveredPartition *entry;

		if (get_rel_relkind(child) != RELKIND_INDEX)
			continue;
		table = IndexGetRelation(child, true);
		if (!OidIsValid(table))
			continue;			/* gone: its partition is named below */
		entry = hash_search(covered, &table, HASH_ENTER, NULL);
		entry->index = child;
	}

	foreach(lc, partitions)
	{
		Oid			part = lfirst_oid(lc);
		CoveredPartition *entry;
		bool		maybe = true;

		CHECK_FOR_INTERRUPTS();
		/* a partitioned table holds no rows of its own */
		if (get_rel_relkind(part) == RELKIND_PARTITIONED_TABLE)
			continue;
		entry = hash_search(covered, &part, HASH_FIND, NULL);
		if (entry != NULL)
		{
			/* the partitioned table's privileges were checked */
			Relation	index = open_index(entry->index, fname, NULL);

			if (index != NULL)
			{
				maybe = index_may_hold(index, type, collation, value);
				index_close(index, AccessShareLock);
			}
		}
		out = ObjectIdGetDatum(part);
		if (maybe)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &isnull);
	}
	hash_destroy(covered);
	index_close(top, AccessShareLock);
	PG_RETURN_NULL();
}

/*
 * What reading an index's expression and predicate may run that is not
 * built into PostgreSQL, walked: the functions a node calls (a function, an
 * operator's, a cast's, a type's input and output functions of a cast
 * through text: check_functions_in_node), and what runs besides:
 *
 *	- a domain's CHECK constraints, where a value is cast to it
 *	  (CoerceToDomain), and those of its base domains;
 *	- a type's input function and, inside it, those of the types it is made
 *	  of (an array's element, a composite's columns, a range's subtype, a
 *	  domain's base, and the domain's constraints, which its input checks),
 *	  where a cast through text reads a value in; likewise the output
 *	  functions where it writes one out;
 *	- the same input, for a constant: the query names it as a literal,
 *	  which is read in again ('(5)'::t runs the CHECK of a domain column of
 *	  t);
 *	- the comparison function GREATEST and LEAST call, and a type's
 *	  subscripting.
 *
 * The walk records the first function found and the outermost domain whose
 * constraint led to it, for the error.
 */
typedef struct OwnerCodeWalk
{
	bool		literals;		/* constants are read in again */
	List	   *domains;		/* domains whose constraints are being walked */
	Oid			func;			/* the function found */
	Oid			domain;			/* the domain whose constraint calls it */
} OwnerCodeWalk;

static bool runs_not_builtin(Node *node, void *context);

/* True for a function that is not built into PostgreSQL; recorded. */
static bool
not_builtin(Oid func, void *context)
{
	OwnerCodeWalk *walk = (OwnerCodeWalk *) context;

	if (func < FirstNormalObjectId)
		return false;
	if (!OidIsValid(walk->func))
		walk->func = func;
	return true;
}

/* True if a domain's own CHECK constraints run code not built in. */
static bool
domain_checks_not_builtin(Oid domain, OwnerCodeWalk *walk)
{
	Relation	conrel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	List	   *checks = NIL;
	ListCell   *lc;
	bool		found = false;
	bool		literals = walk->literals;

	/* a constraint that casts to its own domain is being walked already */
	if (list_member_oid(walk->domains, domain))
		return false;
	conrel = table_open(ConstraintRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_constraint_contypid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(domain));
	scan = systable_beginscan(conrel, ConstraintTypidIndexId, true, NULL, 1, &key);
	while (HeapTupleIsValid(tuple = systable_getnext(scan)))
	{
		bool		isnull;
		Datum		bin;

		if (((Form_pg_constraint) GETSTRUCT(tuple))->contype != CONSTRAINT_CHECK)
			continue;
		bin = SysCacheGetAttr(CONSTROID, tuple, Anum_pg_constraint_conbin, &isnull);
		if (!isnull)
			checks = lappend(checks, stringToNode(TextDatumGetCString(bin)));
	}
	systable_endscan(scan);
	table_close(conrel, AccessShareLock);

	/* a constraint's constants are values, not read in again */
	walk->literals = false;
	walk->domains = lappend_oid(walk->domains, domain);
	foreach(lc, checks)
		if (runs_not_builtin(lfirst(lc), walk))
		{
			found = true;
			break;
		}
	walk->domains = list_delete_last(walk->domains);
	walk->literals = literals;
	if (found)
		walk->domain = domain;	/* the outermost, once the walk returns */
	return found;
}

/* True if a cast to a domain runs code not built in: its constraints, its bases'. */
static bool
domain_runs_not_builtin(Oid type, OwnerCodeWalk *walk)
{
	while (get_typtype(type) == TYPTYPE_DOMAIN)
	{
		HeapTuple	tuple;

		if (domain_checks_not_builtin(type, walk))
			return true;
		tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
		if (!HeapTupleIsValid(tuple))
			elog(ERROR, "cache lookup failed for type %u", type);
		type = ((Form_pg_type) GETSTRUCT(tuple))->typbasetype;
		ReleaseSysCache(tuple);
	}
	return false;
}

/*
 * True if reading a value of type in (input) or writing one out runs code
 * not built in: the type's functions, and those of the types it is made
 * of; in, the CHECK constraints of the domains among them too.
 */
static bool
type_runs_not_builtin(Oid type, bool input, OwnerCodeWalk *walk)
{
	HeapTuple	tuple;
	Form_pg_type t;
	Oid			parts[2] = {InvalidOid, InvalidOid};
	bool		found = false;
	int			i;

	check_stack_depth();
	tuple = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for type %u", type);
	t = (Form_pg_type) GETSTRUCT(tuple);
	if (input ? not_builtin(t->typinput, walk) || not_builtin(t->typreceive, walk)
		: not_builtin(t->typoutput, walk) || not_builtin(t->typsend, walk))
		found = true;
	else if (t->typtype == TYPTYPE_DOMAIN)
	{
		found = input && domain_checks_not_builtin(type, walk);
		parts[0] = t->typbasetype;
	}
	else if (t->typtype == TYPTYPE_RANGE)
	{
		HeapTuple	range = SearchSysCache1(RANGETYPE, ObjectIdGetDatum(type));

		if (!HeapTupleIsValid(range))
			elog(ERROR, "cache lookup failed for range type %u", type);
		parts[0] = ((Form_pg_range) GETSTRUCT(range))->rngsubtype;
		found = input && not_builtin(((Form_pg_range) GETSTRUCT(range))->rngcanonical, walk);
		ReleaseSysCache(range);
	}
	else if (t->typtype == TYPTYPE_MULTIRANGE)
		parts[0] = get_multirange_range(type);
	else if (t->typtype != TYPTYPE_COMPOSITE)
		parts[0] = t->typelem;	/* an array's element (InvalidOid if none) */
	ReleaseSysCache(tuple);

	for (i = 0; !found && i < lengthof(parts) && OidIsValid(parts[i]); i++)
		found = type_runs_not_builtin(parts[i], input, walk);
	if (!found && get_typtype(type) == TYPTYPE_COMPOSITE)
	{
		TupleDesc	desc = lookup_rowtype_tupdesc(type, -1);

		for (i = 0; !found && i < desc->natts; i++)
			if (!TupleDescAttr(desc, i)->attisdropped)
				found = type_runs_not_builtin(TupleDescAttr(desc, i)->atttypid, input, walk);
		ReleaseTupleDesc(desc);
	}
	return found;
}

static bool
runs_not_builtin(Node *node, void *context)
{
	OwnerCodeWalk *walk = (OwnerCodeWalk *) context;

	if (node == NULL)
		return false;
	check_stack_depth();
	if (check_functions_in_node(node, not_builtin, walk))
		return true;
	switch (nodeTag(node))
	{
		case T_Const:
			if (walk->literals &&
				type_runs_not_builtin(((Const *) node)->consttype, true, walk))
				return true;
			break;
		case T_CoerceViaIO:
			{
				CoerceViaIO *io = (CoerceViaIO *) node;

				if (type_runs_not_builtin(io->resulttype, true, walk) ||
					type_runs_not_builtin(exprType((Node *) io->arg), false, walk))
					return true;
			}
			break;
		case T_CoerceToDomain:
			if (domain_runs_not_builtin(((CoerceToDomain *) node)->resulttype, walk))
				return true;
			break;
		case T_MinMaxExpr:
			if (not_builtin(lookup_type_cache(((MinMaxExpr *) node)->minmaxtype,
											  TYPECACHE_CMP_PROC)->cmp_proc, walk))
				return true;
			break;
		case T_SubscriptingRef:
			if (not_builtin(get_typsubscript(((SubscriptingRef *) node)->refcontainertype,
											 NULL), walk))
				return true;
			break;
		default:
			break;
	}
	return expression_tree_walker(node, runs_not_builtin, walk);
}

/*
 * The index's expressions or predicate as pg_index stores them: what the
 * query is deparsed from.  (The relation cache's copy has been through
 * constant folding, which leaves out a function of constant arguments that
 * the query's own folding would run.)
 */
static Node *
stored_expression(Relation index, int attnum)
{
	Datum		datum;
	bool		isnull;

	datum = SysCacheGetAttr(INDEXRELID, index->rd_indextuple, attnum, &isnull);
	return isnull ? NULL : (Node *) stringToNode(TextDatumGetCString(datum));
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
	HeapTuple	tuple = SearchSysCache1(RELOID, ObjectIdGetDatum(index->rd_index->indrelid));
	Oid			owner;
	OwnerCodeWalk walk;

	if (!HeapTupleIsValid(tuple))
		elog(ERROR, "cache lookup failed for relation %u", index->rd_index->indrelid);
	owner = ((Form_pg_class) GETSTRUCT(tuple))->relowner;
	ReleaseSysCache(tuple);
	if (has_privs_of_role(GetUserId(), owner))
		return;
	memset(&walk, 0, sizeof(walk));
	walk.literals = true;
	if (!runs_not_builtin(stored_expression(index, Anum_pg_index_indexprs), &walk) &&
		!runs_not_builtin(stored_expression(index, Anum_pg_index_indpred), &walk))
		return;
	if (OidIsValid(walk.domain))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("%s does not run the functions of index \"%s\" for a role other than its table's owner",
						fname, RelationGetRelationName(index)),
				 errdetail("Its expression or predicate calls function %s, which is not built into PostgreSQL, through a CHECK constraint of domain %s; it would run with the current role's privileges.",
						   format_procedure(walk.func), format_type_be(walk.domain)),
				 errhint("Run it as a role with the privileges of the table's owner, or build the filter with bloom_agg over the table.")));
	ereport(ERROR,
			(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
			 errmsg("%s does not run the functions of index \"%s\" for a role other than its table's owner",
					fname, RelationGetRelationName(index)),
			 errdetail("Its expression or predicate calls function %s, which is not built into PostgreSQL; it would run with the current role's privileges.",
					   format_procedure(walk.func)),
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
		: open_index(indexoid, fname, NULL);
	if (index == NULL)
		report_gone(indexoid);
	heapoid = index->rd_index->indrelid;
	if (PG_ARGISNULL(1))
		p = amq_index_option_fpr(index);
	else
	{
		p = PG_GETARG_FLOAT8(1);
		if (!(p > 0.0 && p < 1.0))
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("bloom filter false-positive rate p must be greater than 0 and less than 1"),
					 errdetail("p = %s was given.", amq_format_p(p))));
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
