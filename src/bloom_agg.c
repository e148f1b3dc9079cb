/*
 * bloom_agg.c
 *		Aggregates that build bloom filters: bloom_agg and bloom_union_agg.
 *
 * The transition state is a filter the aggregate owns, allocated once in the
 * aggregate context and updated in place, so a row costs one hash and k bit
 * sets, never a copy of the filter.  Hashes are set in batches so that the
 * cache misses of a large filter overlap instead of queueing.  Both aggregates share the state, its
 * serialization (the filter's own bytes, validated on the way back in) and
 * the merge used by the combine functions.  Because a union is an OR of bits
 * and a sum of counts, the order in which rows and partial states arrive does
 * not matter: a parallel build yields the bytes a serial build yields.
 *
 * Arguments are checked before anything is allocated in the aggregate
 * context; the final functions copy the state out and leave it untouched.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "amqfilter.h"

PG_FUNCTION_INFO_V1(bloom_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_agg_combinefn);
PG_FUNCTION_INFO_V1(bloom_union_agg_transfn);
PG_FUNCTION_INFO_V1(bloom_union_agg_combinefn);
PG_FUNCTION_INFO_V1(bloom_agg_serialfn);
PG_FUNCTION_INFO_V1(bloom_agg_deserialfn);
PG_FUNCTION_INFO_V1(bloom_agg_finalfn);

/*
 * Hashes buffered before their bits are set.  Setting the bits of one key in
 * a filter larger than the cache costs a memory round trip; a batch lets the
 * core overlap those round trips (amq_bloom_add_many).
 */
#define BLOOM_AGG_BATCH 256

/*
 * The aggregate state: a filter the aggregate owns plus hashes not yet
 * applied to it.  The logical filter is the bits plus the pending hashes;
 * everything that reads the state applies them to a copy, so reading never
 * changes the state.
 */
typedef struct BloomAggState
{
	AmqOwnedBloom filter;
	uint32		pending_family;
	int			npending;
	uint64		pending[BLOOM_AGG_BATCH];
} BloomAggState;

/* A new state holding a copy of src, in the aggregate context. */
static BloomAggState *
state_copy(MemoryContext aggcxt, const amq_bloom_view *src)
{
	BloomAggState *state = MemoryContextAlloc(aggcxt, sizeof(BloomAggState));

	amq_owned_bloom_copy(aggcxt, src, &state->filter);
	state->npending = 0;
	state->pending_family = 0;
	return state;
}

/* Applies a state's pending hashes to a filter (the state's own or a copy). */
static void
apply_pending(const BloomAggState *state, amq_bloom_view *filter)
{
	amq_bloom_add_many(filter, state->pending, state->npending,
					   state->pending_family);
}

/* The state's logical filter as a new varlena; the state is not changed. */
static struct varlena *
state_to_varlena(const BloomAggState *state)
{
	struct varlena *result = amq_bloom_to_varlena(&state->filter.view);
	amq_bloom_view copy;

	if (state->npending > 0)
	{
		if (amq_bloom_open((uint8 *) VARDATA(result), VARSIZE(result) - VARHDRSZ,
						   &copy) != AMQ_OK)
			elog(ERROR, "copied bloom filter failed validation");
		apply_pending(state, &copy);
	}
	return result;
}

/*
 * Merges src into the state.  The sizeless empty filter is the identity:
 * a state holding it is replaced by a copy of src.
 */
static void
state_merge(MemoryContext aggcxt, BloomAggState *state, const amq_bloom_view *src)
{
	amq_status	status;

	if (src->layout == AMQ_BLOOM_LAYOUT_EMPTY)
		return;
	if (state->filter.view.layout == AMQ_BLOOM_LAYOUT_EMPTY)
	{
		/* only bloom_union_agg has such states, and they have no hashes pending */
		Assert(state->npending == 0);
		pfree(state->filter.alloc);
		amq_owned_bloom_copy(aggcxt, src, &state->filter);
		return;
	}
	status = amq_bloom_compatible(&state->filter.view, src);
	if (status != AMQ_OK)
		amq_report_mismatch(status, &state->filter.view, src);
	amq_bloom_merge(&state->filter.view, src, false);
}

/* Errors unless a row's n, p and layout are those the group started with. */
static void
check_same_sizing(const amq_bloom_view *state, int64 n, double p, int layout)
{
	if (state->capacity != (uint64) n || state->target_fpr != p ||
		state->layout != layout)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("bloom_agg arguments n, p and layout must be the same for every row of a group"),
				 errdetail("The group started with n = " UINT64_FORMAT ", p = %g, layout %s; "
						   "a row has n = " INT64_FORMAT ", p = %g, layout %s.",
						   state->capacity, state->target_fpr,
						   amq_layout_name(state->layout), n, p,
						   amq_layout_name(layout))));
}

/*
 * bloom_agg_transfn(internal, anyelement, n, p [, layout]).  NULL values are
 * skipped, but the first row still sizes the filter, so a group of only
 * NULLs yields an empty filter of the requested size.
 */
Datum
bloom_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "bloom_agg_transfn");
	BloomAggState *state = PG_ARGISNULL(0) ? NULL : (BloomAggState *) PG_GETARG_POINTER(0);
	int64		n;
	double		p;
	int			layout = AMQ_BLOOM_LAYOUT_BLOCKED;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3) || (PG_NARGS() > 4 && PG_ARGISNULL(4)))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("bloom_agg arguments n, p and layout must not be null")));
	n = PG_GETARG_INT64(2);
	p = PG_GETARG_FLOAT8(3);
	if (PG_NARGS() > 4)
		layout = amq_parse_layout(PG_GETARG_TEXT_PP(4));

	if (state == NULL)
	{
		amq_bloom_params params;
		amq_status	status;

		status = amq_bloom_size(n < 1 ? 0 : (uint64) n, p, layout, &params);
		if (status != AMQ_OK)
			amq_report_sizing("bloom filter", status, n, p);

		state = MemoryContextAlloc(aggcxt, sizeof(BloomAggState));
		amq_owned_bloom_alloc(aggcxt, params.bytes, &state->filter);
		amq_bloom_init(state->filter.view.base, &params, (uint64) n, p,
					   AMQ_BLOOM_DEFAULT_SEED);
		status = amq_bloom_open(state->filter.view.base, params.bytes,
								&state->filter.view);
		if (status != AMQ_OK)
			elog(ERROR, "new bloom filter failed validation: %s",
				 amq_status_text(status));
		state->npending = 0;
		state->pending_family = 0;
	}
	else
		check_same_sizing(&state->filter.view, n, p, layout);

	if (!PG_ARGISNULL(1))
	{
		AmqHasher  *hasher = amq_hasher_get(fcinfo, 1);

		if (state->npending == BLOOM_AGG_BATCH)
		{
			apply_pending(state, &state->filter.view);
			state->npending = 0;
		}
		state->pending_family = hasher->family;
		state->pending[state->npending++] =
			amq_hash_datum(hasher, PG_GETARG_DATUM(1), state->filter.view.seed);
	}
	PG_RETURN_POINTER(state);
}

/*
 * Combine for both aggregates.  A NULL side means that worker saw no rows;
 * the other side is copied into the aggregate context.
 */
static Datum
combine(FunctionCallInfo fcinfo, bool same_sizing)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "bloom combine function");
	BloomAggState *s1 = PG_ARGISNULL(0) ? NULL : (BloomAggState *) PG_GETARG_POINTER(0);
	BloomAggState *s2 = PG_ARGISNULL(1) ? NULL : (BloomAggState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		s1 = state_copy(aggcxt, &s2->filter.view);
		apply_pending(s2, &s1->filter.view);
		PG_RETURN_POINTER(s1);
	}

	/* bloom_agg: rows seen by different workers must agree as in a serial scan */
	if (same_sizing)
		check_same_sizing(&s1->filter.view, (int64) s2->filter.view.capacity,
						  s2->filter.view.target_fpr, s2->filter.view.layout);
	state_merge(aggcxt, s1, &s2->filter.view);
	/* s2's pending hashes go straight into s1's bits; s1 keeps its own */
	apply_pending(s2, &s1->filter.view);
	PG_RETURN_POINTER(s1);
}

/* bloom_agg_combinefn(internal, internal) */
Datum
bloom_agg_combinefn(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, true);
}

/* bloom_union_agg_combinefn(internal, internal) */
Datum
bloom_union_agg_combinefn(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, false);
}

/* bloom_union_agg_transfn(internal, bloom): NULL filters are skipped */
Datum
bloom_union_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "bloom_union_agg_transfn");
	BloomAggState *state = PG_ARGISNULL(0) ? NULL : (BloomAggState *) PG_GETARG_POINTER(0);
	amq_bloom_view input;

	if (PG_ARGISNULL(1))
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	amq_bloom_arg(fcinfo, 1, &amq_call_cache(fcinfo)->filter[0], &input);
	if (state == NULL)
		state = state_copy(aggcxt, &input);
	else
		state_merge(aggcxt, state, &input);
	PG_RETURN_POINTER(state);
}

/* bloom_agg_serialfn(internal) -> bytea: the filter's own bytes */
Datum
bloom_agg_serialfn(PG_FUNCTION_ARGS)
{
	BloomAggState *state = (BloomAggState *) PG_GETARG_POINTER(0);

	PG_RETURN_BYTEA_P(state_to_varlena(state));
}

/* bloom_agg_deserialfn(bytea, internal): validated like any binary input */
Datum
bloom_agg_deserialfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "bloom_agg_deserialfn");
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	amq_bloom_view view;

	amq_bloom_open_or_error(VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
							AMQ_GATE_BINARY, &view);
	PG_RETURN_POINTER(state_copy(aggcxt, &view));
}

/*
 * bloom_agg_finalfn(internal) -> bloom.  Over zero rows: the sizeless empty
 * filter, not NULL, so anti-join recipes stay correct.  The state is copied
 * out, never modified (FINALFUNC_MODIFY = READ_ONLY).
 */
Datum
bloom_agg_finalfn(PG_FUNCTION_ARGS)
{
	BloomAggState *state;
	struct varlena *result;

	if (PG_ARGISNULL(0))
	{
		result = palloc(VARHDRSZ + AMQ_BLOOM_HEADER_SIZE);
		SET_VARSIZE(result, VARHDRSZ + AMQ_BLOOM_HEADER_SIZE);
		amq_bloom_init_empty((uint8 *) VARDATA(result));
		PG_RETURN_POINTER(result);
	}
	state = (BloomAggState *) PG_GETARG_POINTER(0);
	PG_RETURN_POINTER(state_to_varlena(state));
}
