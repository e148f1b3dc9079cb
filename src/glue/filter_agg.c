/*
 * filter_agg.c
 *		The plumbing of the aggregates that build filters, written once for
 *		every filter type: batching of hashes, combine, union of filter
 *		inputs, serialization and the final function.
 *
 * A type (or a layout of one) takes part by providing an AmqAggType (see
 * filter_glue.h) and a transition function that reads its own sizing
 * arguments; everything else is here.
 *
 * The state is a filter the aggregate owns, allocated once in the aggregate
 * context and updated in place, so a row costs one hash and the filter's
 * insertion, never a copy of the filter.  Hashes are added in batches so
 * that the cache misses of a large filter overlap instead of queueing; the
 * integer types' values are batched as they are and hashed together when
 * their batch is added.  The logical filter is the owned one plus the
 * pending values; everything that reads the state adds them to a copy, so
 * reading never changes the state (FINALFUNC_MODIFY = READ_ONLY, and
 * serialization may be followed by more rows).
 *
 * Partial states travel as the filter's own bytes and are validated on the
 * way back in like any binary input.  A NULL state means the aggregate saw
 * no rows (or, for unions, only NULL filters): combine copies the other side
 * into the aggregate context, and the final function returns the sizeless
 * empty filter, not NULL, so anti-join recipes stay correct over an empty
 * build side.
 */
#include "postgres.h"

#include "nodes/primnodes.h"

#include "glue/filter_glue.h"

/* A new state holding an owned filter, in the aggregate context. */
static AmqAggState *
state_new(MemoryContext aggcxt, const AmqAggType *type, void *filter)
{
	AmqAggState *state = MemoryContextAlloc(aggcxt, sizeof(AmqAggState));

	state->type = type;
	state->filter = filter;
	state->hasher = NULL;
	state->seed = 0;
	state->sizing_fixed = false;
	state->steady = false;
	state->pending_ints = false;
	state->request_lines = false;
	state->int_hashes = false;
	state->pending_family = 0;
	state->npending = 0;
	return state;
}

/*
 * The hashes of a state's pending values: pending itself, or the hashes of
 * the integers whose Datums it holds, computed into buf (AMQ_AGG_BATCH
 * long), the seed's part of the hash once for all of them.
 */
static const uint64 *
pending_hashes(const AmqAggState *state, uint64 *buf)
{
	amq_lookup3_seeded seeded;
	int			i;

	if (!state->pending_ints)
		return state->pending;
	seeded = amq_hash_uint32_pg_seed(state->seed);
	for (i = 0; i < state->npending; i++)
		buf[i] = amq_hash_int_seeded(amq_hasher_int(state->hasher,
													(Datum) state->pending[i]),
									 state->seed, seeded);
	return buf;
}

/* Adds a state's pending values to an owned filter (its own or another's). */
static void
add_pending(const AmqAggState *state, void *filter)
{
	uint64		buf[AMQ_AGG_BATCH];

	if (state->npending > 0)
		state->type->add_hashes(filter, pending_hashes(state, buf),
								state->npending, state->pending_family,
								state->request_lines && filter == state->filter);
}

/*
 * True if every sizing argument of the aggregate call (all but the first,
 * the value) is a constant: then every row has the sizing of the first.
 */
static bool
sizing_is_constant(FunctionCallInfo fcinfo)
{
	Aggref	   *aggref = AggGetAggref(fcinfo);
	ListCell   *lc;

	if (aggref == NULL)
		return false;
	for_each_from(lc, aggref->args, 1)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);

		if (!IsA(tle->expr, Const))
			return false;
	}
	return true;
}

/* Appends a row's value (its hash, or the integer itself) to the batch. */
static pg_attribute_always_inline void
pend_value(AmqAggState *state, Datum value)
{
	uint64		hash;

	if (state->pending_ints)
	{
		state->pending[state->npending++] = (uint64) value;
		return;
	}
	if (state->int_hashes)
		hash = amq_hash_int_seeded(amq_hasher_int(state->hasher, value),
								   state->seed, state->seeded);
	else
		hash = amq_hash_datum(state->hasher, value, state->seed,
							  state->hasher->family);
	if (state->request_lines)
		amq_prefetch_key_line(&state->lines, hash);
	state->pending[state->npending++] = hash;
}

/*
 * Transition of an aggregate over values (internal, anyelement, sizing
 * arguments...).  NULL values are skipped, but the first row still sizes
 * the filter, so a group of only NULLs yields an empty filter of the
 * requested size.  The sizing arguments must be the same on every row.
 *
 * This runs once per row, so everything that can be done once per group is
 * done on its first row and kept in the state: the hasher, the seed, and
 * whether the sizing arguments are constants (the usual case), which then
 * need no reading and checking on later rows.  Such a state is steady, and
 * a row with a value and room in the batch only appends it (pend_value): a
 * few instructions, with nothing else to look up (perf, 10M int8 rows: the
 * transition had been a third of what bloom_agg costs beyond count);
 * transfn_slow does the rest.
 */
static pg_noinline Datum transfn_slow(FunctionCallInfo fcinfo,
									  const AmqAggType *type,
									  AmqAggReadSizing read_sizing,
									  AmqAggState *state);

/*
 * Errors if the aggregate's sizing argument argno (counted from the
 * transition function's 0, the state) was given and is null, naming it.
 */
void
amq_agg_check_not_null(FunctionCallInfo fcinfo, const char *agg, int argno,
					   const char *argname)
{
	if (argno < PG_NARGS() && PG_ARGISNULL(argno))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("%s argument %s must not be null", agg, argname)));
}

Datum
amq_agg_transfn(FunctionCallInfo fcinfo, const AmqAggType *type,
				AmqAggReadSizing read_sizing)
{
	AmqAggState *state = PG_ARGISNULL(0) ? NULL : (AmqAggState *) PG_GETARG_POINTER(0);

	if (likely(state != NULL && state->steady && !PG_ARGISNULL(1) &&
			   state->npending < AMQ_AGG_BATCH))
	{
		pend_value(state, PG_GETARG_DATUM(1));
		PG_RETURN_POINTER(state);
	}
	return transfn_slow(fcinfo, type, read_sizing, state);
}

static Datum
transfn_slow(FunctionCallInfo fcinfo, const AmqAggType *type,
			 AmqAggReadSizing read_sizing, AmqAggState *state)
{
	AmqHasher  *hasher;
	AmqAggSizing sizing;

	if (unlikely(state == NULL))
	{
		MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);

		read_sizing(fcinfo, &sizing);
		state = state_new(aggcxt, type, type->create(aggcxt, &sizing));
		state->sizing_fixed = sizing_is_constant(fcinfo);
	}
	else if (!state->sizing_fixed)
	{
		read_sizing(fcinfo, &sizing);
		type->check_sizing(state->filter, &sizing);
	}
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(state);

	if (unlikely(state->hasher == NULL))
	{
		state->hasher = amq_hasher_get(fcinfo, 1);
		state->seed = type->seed(state->filter);
		/*
		 * A filter whose adds write one line each: every row's value hashed
		 * as it comes and its line requested.  Otherwise integers the core
		 * hashes are kept as they are until their batch is added.
		 */
		state->request_lines = type->key_lines(state->filter, &state->lines);
		state->int_hashes = state->hasher->int_plain && state->request_lines;
		state->pending_ints = state->hasher->int_plain && !state->request_lines;
		state->seeded = amq_hash_uint32_pg_seed(state->seed);
		state->steady = state->sizing_fixed;
	}
	hasher = state->hasher;
	if (state->npending == AMQ_AGG_BATCH)
	{
		add_pending(state, state->filter);
		state->npending = 0;
	}
	state->pending_family = hasher->family;
	pend_value(state, PG_GETARG_DATUM(1));
	PG_RETURN_POINTER(state);
}

/*
 * Merges an opened filter into the state's.  The sizeless empty filter is
 * the identity: a state holding it is replaced by a copy of src.
 */
static void
state_merge(MemoryContext aggcxt, AmqAggState *state, const void *src)
{
	const AmqAggType *type = state->type;

	if (type->format->is_empty(src))
		return;
	if (type->format->is_empty(state->filter))
	{
		/* only union aggregates have such states, and they have no hashes */
		Assert(state->npending == 0);
		type->free(state->filter);
		state->filter = type->copy(aggcxt, src);
		return;
	}
	type->merge(state->filter, src);
}

/*
 * Combine.  same_sizing is set for the aggregates over values: rows seen by
 * different workers must agree on the sizing arguments, as in a serial scan.
 */
Datum
amq_agg_combine(FunctionCallInfo fcinfo, const AmqAggType *type,
				bool same_sizing)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
	AmqAggState *s1 = PG_ARGISNULL(0) ? NULL : (AmqAggState *) PG_GETARG_POINTER(0);
	AmqAggState *s2 = PG_ARGISNULL(1) ? NULL : (AmqAggState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
	{
		s1 = state_new(aggcxt, type,
							   type->copy(aggcxt, s2->filter));
		add_pending(s2, s1->filter);
		PG_RETURN_POINTER(s1);
	}

	if (same_sizing)
	{
		AmqAggSizing sizing;

		type->sizing_of(s2->filter, &sizing);
		type->check_sizing(s1->filter, &sizing);
	}
	state_merge(aggcxt, s1, s2->filter);
	/* s2's pending hashes go straight into s1's filter; s1 keeps its own */
	add_pending(s2, s1->filter);
	PG_RETURN_POINTER(s1);
}

/* Transition of a union aggregate (internal, filter): NULL filters are skipped. */
Datum
amq_agg_union_transfn(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
	AmqAggState *state = PG_ARGISNULL(0) ? NULL : (AmqAggState *) PG_GETARG_POINTER(0);
	AmqAnyView	input;

	if (PG_ARGISNULL(1))
	{
		if (state == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(state);
	}
	amq_filter_open_arg(fcinfo, 1, &amq_call_cache(fcinfo)->filter[0],
						type->format, &input);
	if (state == NULL)
		state = state_new(aggcxt, type, type->copy(aggcxt, &input));
	else
		state_merge(aggcxt, state, &input);
	PG_RETURN_POINTER(state);
}

/* The state's logical filter as a new varlena; the state is not changed. */
static struct varlena *
state_to_varlena(const AmqAggState *state)
{
	uint64		buf[AMQ_AGG_BATCH];

	return state->type->to_varlena(state->filter, pending_hashes(state, buf),
								   state->npending, state->pending_family);
}

/* Serialize (internal) -> bytea: the filter's own bytes. */
Datum
amq_agg_serialize(FunctionCallInfo fcinfo)
{
	PG_RETURN_BYTEA_P(state_to_varlena((AmqAggState *) PG_GETARG_POINTER(0)));
}

/* Deserialize (bytea, internal) -> internal: validated like any binary input. */
Datum
amq_agg_deserialize(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	AmqAnyView	view;

	amq_open_or_error(type->format, VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
					  AMQ_GATE_BINARY, &view);
	PG_RETURN_POINTER(state_new(aggcxt, type, type->copy(aggcxt, &view)));
}

/*
 * Final (internal) -> filter.  Over zero rows: the sizeless empty filter,
 * not NULL.  The state is copied out, never modified.  A filter given more
 * values than its n warns (filter_overfill.c).
 */
Datum
amq_agg_final(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	struct varlena *result;
	AmqAnyView	view;

	if (PG_ARGISNULL(0))
		PG_RETURN_POINTER(amq_empty_varlena(type->format));
	result = state_to_varlena((AmqAggState *) PG_GETARG_POINTER(0));
	/* built here: opened only to say whether it was given too many values */
	if (type->format->open((const uint8 *) VARDATA(result), VARSIZE(result) - VARHDRSZ,
						   &view) == AMQ_OK)
		type->warn_if_overfilled(&view);
	PG_RETURN_POINTER(result);
}
