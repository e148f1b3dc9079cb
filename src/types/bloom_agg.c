/*
 * bloom_agg.c
 *		Aggregates that build bloom filters: bloom_agg and bloom_union_agg.
 *
 * The plumbing (batched hashes, combine, serialization, final) is
 * filter_agg.c's; this file reads bloom_agg's sizing arguments and says how
 * the aggregate's owned filter, an AmqBloomBuffer, is created, added to,
 * merged, copied and serialized.  Because a union is an OR of bits (a sum of
 * counters) and a sum of counts, the order in which rows and partial states
 * arrive does not matter: a parallel build yields the bytes a serial build
 * yields.  The dleft layout is the exception: where a value's cell lands
 * depends on the order, so a parallel build holds the same values with the
 * same counts in other cells.
 */
#include "postgres.h"

#include "types/bloom_type.h"

PG_FUNCTION_INFO_V1(bloom_agg_transfn);

/* A new empty filter; bad n or p error before anything is allocated. */
static void *
bloom_owned_create(MemoryContext cxt, const AmqAggSizing *sizing)
{
	AmqBloomBuffer	buf;

	amq_bloom_buffer_new(&buf, cxt, sizing->n, sizing->p, sizing->layout);
	return memcpy(MemoryContextAlloc(cxt, sizeof(buf)), &buf, sizeof(buf));
}

/* Errors unless a row's n, p and layout are those the group started with. */
static void
bloom_owned_check_sizing(const void *filter, const AmqAggSizing *row)
{
	const amq_bloom_view *group = filter;

	if (group->capacity != (uint64) row->n || group->target_fpr != row->p ||
		group->layout != row->layout)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bloom_agg arguments n, p and layout must be the same for every row of a group"),
				 errdetail("The group started with n = " UINT64_FORMAT ", p = %s, layout %s; "
						   "a row has n = " INT64_FORMAT ", p = %s, layout %s.",
						   group->capacity, amq_format_p(group->target_fpr),
						   amq_bloom_layout_name(group->layout), row->n, amq_format_p(row->p),
						   amq_bloom_layout_name(row->layout))));
}

static void
bloom_owned_sizing_of(const void *view, AmqAggSizing *sizing)
{
	const amq_bloom_view *v = view;

	sizing->n = (int64) v->capacity;
	sizing->p = v->target_fpr;
	sizing->layout = v->layout;
}

static uint64
bloom_owned_seed(const void *filter)
{
	return ((const amq_bloom_view *) filter)->seed;
}

static void *
bloom_owned_copy(MemoryContext cxt, const void *view)
{
	AmqBloomBuffer *buf = MemoryContextAlloc(cxt, sizeof(AmqBloomBuffer));

	amq_bloom_buffer_copy(buf, cxt, view);
	return buf;
}

static void
bloom_owned_free(void *filter)
{
	pfree(((AmqBloomBuffer *) filter)->alloc);
	pfree(filter);
}

static void
bloom_owned_add_hashes(void *filter, const uint64 *hashes, int count,
					   uint32 family, bool lines_requested)
{
	if (lines_requested)
		amq_bloom_add_requested(filter, hashes, count, family);
	else
		amq_bloom_add_or_error(filter, hashes, count, family);
}

static bool
bloom_owned_key_lines(const void *filter, amq_key_lines *lines)
{
	return amq_bloom_key_lines(filter, lines);
}

static void
bloom_owned_merge(void *filter, const void *src)
{
	amq_bloom_merge(filter, src, false);
}

static void
bloom_owned_count_duplicates(void *filter, uint64 count)
{
	amq_bloom_count_duplicates(filter, count);
}

static struct varlena *
bloom_owned_to_varlena(const void *filter, const uint64 *hashes, int count,
					   uint32 family)
{
	amq_bloom_view copy;
	struct varlena *result;

	if (count == 0)
		return amq_bloom_to_varlena(filter, NULL);
	result = amq_bloom_to_varlena(filter, &copy);
	amq_bloom_add_or_error(&copy, hashes, count, family);
	return result;
}

/*
 * bloom_agg_type and bloom_agg_combinefn, bloom_union_agg_combinefn,
 * bloom_union_agg_transfn, bloom_agg_serialfn, bloom_agg_deserialfn,
 * bloom_agg_finalfn
 */
AMQ_AGG_FUNCTIONS(bloom)

/* The sizing arguments n, p [, layout] of a bloom_agg_transfn call. */
static void
bloom_agg_read_sizing(FunctionCallInfo fcinfo, AmqAggSizing *sizing)
{
	amq_agg_check_not_null(fcinfo, "bloom_agg", 2, "n");
	amq_agg_check_not_null(fcinfo, "bloom_agg", 3, "p");
	amq_agg_check_not_null(fcinfo, "bloom_agg", 4, "layout");
	sizing->n = PG_GETARG_INT64(2);
	sizing->p = PG_GETARG_FLOAT8(3);
	sizing->layout = PG_NARGS() > 4 ? amq_bloom_parse_layout(PG_GETARG_TEXT_PP(4))
		: AMQ_BLOOM_LAYOUT_BLOCKED;
}

/* bloom_agg_transfn(internal, anyelement, n, p [, layout]) */
Datum
bloom_agg_transfn(PG_FUNCTION_ARGS)
{
	return amq_agg_transfn(fcinfo, &bloom_agg_type, bloom_agg_read_sizing);
}

/* The sizing arguments p [, layout] of a sizeless bloom_agg call. */
static void
bloom_agg_read_p(FunctionCallInfo fcinfo, AmqAggSizing *sizing)
{
	amq_agg_check_not_null(fcinfo, "bloom_agg", 2, "p");
	amq_agg_check_not_null(fcinfo, "bloom_agg", 3, "layout");
	sizing->n = 1;				/* found from the values */
	sizing->p = PG_GETARG_FLOAT8(2);
	sizing->layout = PG_NARGS() > 3 ? amq_bloom_parse_layout(PG_GETARG_TEXT_PP(3))
		: AMQ_BLOOM_LAYOUT_BLOCKED;
}

/* The counting and dleft layouts count copies; the others hold a set. */
static bool
bloom_counts_copies(int layout)
{
	return layout == AMQ_BLOOM_LAYOUT_COUNTING || layout == AMQ_BLOOM_LAYOUT_DLEFT;
}

PG_FUNCTION_INFO_V1(bloom_agg_sizeless_transfn);

/* bloom_agg_sizeless_transfn(internal, anyelement, p [, layout]) */
Datum
bloom_agg_sizeless_transfn(PG_FUNCTION_ARGS)
{
	return amq_sizeless_transfn(fcinfo, &bloom_agg_type, bloom_agg_read_p,
								bloom_counts_copies, AMQ_BLOOM_DEFAULT_SEED);
}

/*
 * bloom_agg_sizeless_combinefn, bloom_agg_sizeless_serialfn,
 * bloom_agg_sizeless_deserialfn, bloom_agg_sizeless_finalfn
 */
AMQ_SIZELESS_AGG_FUNCTIONS(bloom)
