/*
 * cuckoo_agg.c
 *		Aggregates that build cuckoo filters: cuckoo_agg and cuckoo_union_agg.
 *
 * The plumbing (batched hashes, combine, serialization, final) is
 * filter_agg.c's; this file reads cuckoo_agg's sizing arguments and says how
 * the aggregate's owned filter, a growable AmqCuckooBuffer, is created,
 * added to, merged, copied and serialized.  When n was an underestimate the
 * filter grows by appending tables; nothing is ever dropped and no error is
 * raised short of the 1 GB size limit.
 *
 * Unlike a bloom filter, a cuckoo filter's bytes depend on insertion order
 * (evictions move fingerprints), so a parallel build holds the same values
 * as a serial one but not necessarily the same bytes.  Combining merges the
 * partial filters without losing a fingerprint (amq_cuckoo_merge_step).
 */
#include "postgres.h"

#include "types/cuckoo_type.h"

PG_FUNCTION_INFO_V1(cuckoo_agg_transfn);

/* A new empty filter; bad n or p error before anything is allocated. */
static void *
cuckoo_owned_create(MemoryContext cxt, const AmqAggSizing *sizing)
{
	AmqCuckooBuffer	buf;

	amq_cuckoo_buffer_new(&buf, cxt, sizing->n, sizing->p);
	return memcpy(MemoryContextAlloc(cxt, sizeof(buf)), &buf, sizeof(buf));
}

/* Errors unless a row's n and p are those the group started with. */
static void
cuckoo_owned_check_sizing(const void *filter, const AmqAggSizing *row)
{
	const amq_cuckoo_view *group = filter;

	if (group->capacity != (uint64) row->n || group->target_fpr != row->p)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cuckoo_agg arguments n and p must be the same for every row of a group"),
				 errdetail("The group started with n = " UINT64_FORMAT ", p = %s; "
						   "a row has n = " INT64_FORMAT ", p = %s.",
						   group->capacity, amq_format_p(group->target_fpr), row->n,
						   amq_format_p(row->p))));
}

static void
cuckoo_owned_sizing_of(const void *view, AmqAggSizing *sizing)
{
	const amq_cuckoo_view *v = view;

	sizing->n = (int64) v->capacity;
	sizing->p = v->target_fpr;
	sizing->layout = 0;
}

static uint64
cuckoo_owned_seed(const void *filter)
{
	return ((const amq_cuckoo_view *) filter)->seed;
}

static void *
cuckoo_owned_copy(MemoryContext cxt, const void *view)
{
	AmqCuckooBuffer *buf = MemoryContextAlloc(cxt, sizeof(AmqCuckooBuffer));

	amq_cuckoo_buffer_copy(buf, cxt, view, 0);
	return buf;
}

static void
cuckoo_owned_free(void *filter)
{
	pfree(((AmqCuckooBuffer *) filter)->value);
	pfree(filter);
}

static void
cuckoo_owned_add_hashes(void *filter, const uint64 *hashes, int count,
						uint32 family, bool lines_requested)
{
	amq_cuckoo_buffer_add_many(filter, hashes, count, family);
}

/* A value's add reads two buckets and may move others: not one line. */
static bool
cuckoo_owned_key_lines(const void *filter, amq_key_lines *lines)
{
	return false;
}

static void
cuckoo_owned_merge(void *filter, const void *src)
{
	amq_cuckoo_buffer_merge(filter, src);
}

static struct varlena *
cuckoo_owned_to_varlena(const void *filter, const uint64 *hashes, int count,
						uint32 family)
{
	AmqCuckooBuffer copy;

	if (count == 0)
		return amq_cuckoo_to_varlena(filter, NULL);
	amq_cuckoo_buffer_copy(&copy, CurrentMemoryContext, filter, 0);
	amq_cuckoo_buffer_add_many(&copy, hashes, count, family);
	return amq_cuckoo_buffer_finish(&copy);
}

/* a cuckoo filter stores every copy: its aggregates never drop one */
#define cuckoo_owned_count_duplicates NULL

/*
 * cuckoo_agg_type and cuckoo_agg_combinefn, cuckoo_union_agg_combinefn,
 * cuckoo_union_agg_transfn, cuckoo_agg_serialfn, cuckoo_agg_deserialfn,
 * cuckoo_agg_finalfn
 */
AMQ_AGG_FUNCTIONS(cuckoo)

/* The sizing arguments n, p of a cuckoo_agg_transfn call. */
static void
cuckoo_agg_read_sizing(FunctionCallInfo fcinfo, AmqAggSizing *sizing)
{
	amq_agg_check_not_null(fcinfo, "cuckoo_agg", 2, "n");
	amq_agg_check_not_null(fcinfo, "cuckoo_agg", 3, "p");
	sizing->n = PG_GETARG_INT64(2);
	sizing->p = PG_GETARG_FLOAT8(3);
	sizing->layout = 0;
}

/* cuckoo_agg_transfn(internal, anyelement, n, p) */
Datum
cuckoo_agg_transfn(PG_FUNCTION_ARGS)
{
	return amq_agg_transfn(fcinfo, &cuckoo_agg_type, cuckoo_agg_read_sizing);
}

/* The sizing argument p of a sizeless cuckoo_agg call. */
static void
cuckoo_agg_read_p(FunctionCallInfo fcinfo, AmqAggSizing *sizing)
{
	amq_agg_check_not_null(fcinfo, "cuckoo_agg", 2, "p");
	sizing->n = 1;				/* found from the values */
	sizing->p = PG_GETARG_FLOAT8(2);
	sizing->layout = 0;
}

/* A cuckoo filter counts copies. */
static bool
cuckoo_counts_copies(int layout)
{
	return true;
}

PG_FUNCTION_INFO_V1(cuckoo_agg_sizeless_transfn);

/* cuckoo_agg_sizeless_transfn(internal, anyelement, p) */
Datum
cuckoo_agg_sizeless_transfn(PG_FUNCTION_ARGS)
{
	return amq_sizeless_transfn(fcinfo, &cuckoo_agg_type, cuckoo_agg_read_p,
								cuckoo_counts_copies, AMQ_CUCKOO_DEFAULT_SEED);
}

/*
 * cuckoo_agg_sizeless_combinefn, cuckoo_agg_sizeless_serialfn,
 * cuckoo_agg_sizeless_deserialfn, cuckoo_agg_sizeless_finalfn
 */
AMQ_SIZELESS_AGG_FUNCTIONS(cuckoo)
