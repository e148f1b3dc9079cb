/*
 * cuckoo_agg.c
 *		Aggregates that build cuckoo filters: cuckoo_agg and cuckoo_union_agg.
 *
 * The transition state is a filter in a growable buffer the aggregate owns
 * (cuckoo_buffer.c), updated in place.  Hashes are inserted in batches so
 * that the cache misses of a large filter overlap.  When n was an
 * underestimate the filter grows by appending tables; nothing is ever
 * dropped and no error is raised short of the 1 GB size limit.
 *
 * Unlike a bloom filter, a cuckoo filter's bytes depend on insertion order
 * (evictions move fingerprints), so a parallel build holds the same values
 * as a serial one but not necessarily the same bytes.  Combining merges the
 * partial filters without losing a fingerprint (amq_cuckoo_merge_step).
 *
 * Arguments are checked before anything is allocated in the aggregate
 * context; the final and serial functions copy the state out and leave it
 * untouched.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "amqfilter.h"

PG_FUNCTION_INFO_V1(cuckoo_agg_transfn);
PG_FUNCTION_INFO_V1(cuckoo_agg_combinefn);
PG_FUNCTION_INFO_V1(cuckoo_union_agg_transfn);
PG_FUNCTION_INFO_V1(cuckoo_union_agg_combinefn);
PG_FUNCTION_INFO_V1(cuckoo_agg_serialfn);
PG_FUNCTION_INFO_V1(cuckoo_agg_deserialfn);
PG_FUNCTION_INFO_V1(cuckoo_agg_finalfn);

/* Hashes buffered before they are inserted (see bloom_agg.c). */
#define CUCKOO_AGG_BATCH 256

/*
 * The aggregate state: the filter plus hashes not yet inserted.  Everything
 * that reads the state inserts them into a copy.
 */
typedef struct CuckooAggState
{
	AmqCuckooBuffer filter;
	uint32		pending_family;
	int			npending;
	uint64		pending[CUCKOO_AGG_BATCH];
} CuckooAggState;

/* A new state holding a copy of src, in the aggregate context. */
static CuckooAggState *
state_copy(MemoryContext aggcxt, const amq_cuckoo_view *src)
{
	CuckooAggState *state = MemoryContextAlloc(aggcxt, sizeof(CuckooAggState));

	amq_cuckoo_buffer_copy(&state->filter, aggcxt, src, 0);
	state->npending = 0;
	state->pending_family = 0;
	return state;
}

/* Inserts a state's pending hashes into a filter (the state's own or another). */
static void
apply_pending(const CuckooAggState *state, AmqCuckooBuffer *filter)
{
	amq_cuckoo_buffer_add_many(filter, state->pending, state->npending,
							   state->pending_family);
}

/* The state's logical filter as a new varlena; the state is not changed. */
static struct varlena *
state_to_varlena(const CuckooAggState *state)
{
	AmqCuckooBuffer copy;

	if (state->npending == 0)
		return amq_cuckoo_to_varlena(&state->filter.view);
	amq_cuckoo_buffer_copy(&copy, CurrentMemoryContext, &state->filter.view, 0);
	apply_pending(state, &copy);
	return amq_cuckoo_buffer_finish(&copy);
}

/*
 * Merges src into the state.  The sizeless empty filter is the identity:
 * a state holding it is replaced by a copy of src.
 */
static void
state_merge(MemoryContext aggcxt, CuckooAggState *state, const amq_cuckoo_view *src)
{
	amq_status	status;

	if (src->tables == 0)
		return;
	if (state->filter.view.tables == 0)
	{
		/* only cuckoo_union_agg has such states, and they have no hashes pending */
		Assert(state->npending == 0);
		pfree(state->filter.value);
		amq_cuckoo_buffer_copy(&state->filter, aggcxt, src, 0);
		return;
	}
	status = amq_cuckoo_compatible(&state->filter.view, src);
	if (status != AMQ_OK)
		amq_report_cuckoo_mismatch(status, &state->filter.view, src);
	amq_cuckoo_buffer_merge(&state->filter, src);
}

/* Errors unless a row's n and p are those the group started with. */
static void
check_same_sizing(const amq_cuckoo_view *state, int64 n, double p)
{
	if (state->capacity != (uint64) n || state->target_fpr != p)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cuckoo_agg arguments n and p must be the same for every row of a group"),
				 errdetail("The group started with n = " UINT64_FORMAT ", p = %g; "
						   "a row has n = " INT64_FORMAT ", p = %g.",
						   state->capacity, state->target_fpr, n, p)));
}

/*
 * cuckoo_agg_transfn(internal, anyelement, n, p).  NULL values are skipped,
 * but the first row still sizes the filter, so a group of only NULLs yields
 * an empty filter of the requested size.
 */
Datum
cuckoo_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "cuckoo_agg_transfn");
	CuckooAggState *state = PG_ARGISNULL(0) ? NULL : (CuckooAggState *) PG_GETARG_POINTER(0);
	int64		n;
	double		p;

	if (PG_ARGISNULL(2) || PG_ARGISNULL(3))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("cuckoo_agg arguments n and p must not be null")));
	n = PG_GETARG_INT64(2);
	p = PG_GETARG_FLOAT8(3);

	if (state == NULL)
	{
		amq_cuckoo_params params;
		amq_status	status;

		/* check n and p before allocating anything in the aggregate context */
		status = amq_cuckoo_size(n < 1 ? 0 : (uint64) n, p, &params);
		if (status != AMQ_OK)
			amq_report_sizing("cuckoo filter", status, n, p);
		state = MemoryContextAlloc(aggcxt, sizeof(CuckooAggState));
		amq_cuckoo_buffer_new(&state->filter, aggcxt, n, p);
		state->npending = 0;
		state->pending_family = 0;
	}
	else
		check_same_sizing(&state->filter.view, n, p);

	if (!PG_ARGISNULL(1))
	{
		AmqHasher  *hasher = amq_hasher_get(fcinfo, 1);

		if (state->npending == CUCKOO_AGG_BATCH)
		{
			apply_pending(state, &state->filter);
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
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "cuckoo combine function");
	CuckooAggState *s1 = PG_ARGISNULL(0) ? NULL : (CuckooAggState *) PG_GETARG_POINTER(0);
	CuckooAggState *s2 = PG_ARGISNULL(1) ? NULL : (CuckooAggState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		s1 = state_copy(aggcxt, &s2->filter.view);
		apply_pending(s2, &s1->filter);
		PG_RETURN_POINTER(s1);
	}

	/* cuckoo_agg: rows seen by different workers must agree as in a serial scan */
	if (same_sizing)
		check_same_sizing(&s1->filter.view, (int64) s2->filter.view.capacity,
						  s2->filter.view.target_fpr);
	state_merge(aggcxt, s1, &s2->filter.view);
	/* s2's pending hashes go straight into s1's filter; s1 keeps its own */
	apply_pending(s2, &s1->filter);
	PG_RETURN_POINTER(s1);
}

/* cuckoo_agg_combinefn(internal, internal) */
Datum
cuckoo_agg_combinefn(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, true);
}

/* cuckoo_union_agg_combinefn(internal, internal) */
Datum
cuckoo_union_agg_combinefn(PG_FUNCTION_ARGS)
{
	return combine(fcinfo, false);
}

/* cuckoo_union_agg_transfn(internal, cuckoo): NULL filters are skipped */
Datum
cuckoo_union_agg_transfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "cuckoo_union_agg_transfn");
	CuckooAggState *state = PG_ARGISNULL(0) ? NULL : (CuckooAggState *) PG_GETARG_POINTER(0);
	amq_cuckoo_view input;

	if (PG_ARGISNULL(1))
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	amq_cuckoo_arg(fcinfo, 1, &amq_call_cache(fcinfo)->filter[0], &input);
	if (state == NULL)
		state = state_copy(aggcxt, &input);
	else
		state_merge(aggcxt, state, &input);
	PG_RETURN_POINTER(state);
}

/* cuckoo_agg_serialfn(internal) -> bytea: the filter's own bytes */
Datum
cuckoo_agg_serialfn(PG_FUNCTION_ARGS)
{
	CuckooAggState *state = (CuckooAggState *) PG_GETARG_POINTER(0);

	PG_RETURN_BYTEA_P(state_to_varlena(state));
}

/* cuckoo_agg_deserialfn(bytea, internal): validated like any binary input */
Datum
cuckoo_agg_deserialfn(PG_FUNCTION_ARGS)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, "cuckoo_agg_deserialfn");
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	amq_cuckoo_view view;

	amq_cuckoo_open_or_error(VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
							 AMQ_GATE_BINARY, &view);
	PG_RETURN_POINTER(state_copy(aggcxt, &view));
}

/*
 * cuckoo_agg_finalfn(internal) -> cuckoo.  Over zero rows: the sizeless
 * empty filter, not NULL.  The state is copied out, never modified
 * (FINALFUNC_MODIFY = READ_ONLY).
 */
Datum
cuckoo_agg_finalfn(PG_FUNCTION_ARGS)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_POINTER(amq_cuckoo_empty_varlena());
	PG_RETURN_POINTER(state_to_varlena((CuckooAggState *) PG_GETARG_POINTER(0)));
}
