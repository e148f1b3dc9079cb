/*
 * bloom_ops.c
 *		Scalar functions on the bloom type: create, add, probe, merge, inspect.
 *
 * Functions never modify their arguments: bloom_add and the merges return a
 * new value.  The sizeless empty filter (what bloom_agg returns over zero
 * rows) answers "no" to every probe and merges with anything, so recipes like
 * "NOT bloom_contains((SELECT bloom_agg(...)), x)" stay correct when the
 * build side is empty.  Only the counting and dleft layouts can delete and
 * count copies; bloom_count on the others says whether the value may be
 * present.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "types/bloom_type.h"

PG_FUNCTION_INFO_V1(bloom_empty);
PG_FUNCTION_INFO_V1(bloom_add);
PG_FUNCTION_INFO_V1(bloom_delete);
PG_FUNCTION_INFO_V1(bloom_count);
PG_FUNCTION_INFO_V1(bloom_contains);
PG_FUNCTION_INFO_V1(bloom_contained_by);
PG_FUNCTION_INFO_V1(bloom_union);
PG_FUNCTION_INFO_V1(bloom_intersect);
PG_FUNCTION_INFO_V1(bloom_info);
PG_FUNCTION_INFO_V1(bloom_params);
PG_FUNCTION_INFO_V1(bloom_contains_sel);
PG_FUNCTION_INFO_V1(bloom_contains_support);
PG_FUNCTION_INFO_V1(bloom_merge_support);

/* Sizes a filter from SQL arguments (n, p [, layout]), erroring before any allocation. */
static void
size_from_args(FunctionCallInfo fcinfo, amq_bloom_params *params)
{
	amq_bloom_size_or_error(PG_GETARG_INT64(0), PG_GETARG_FLOAT8(1),
							PG_NARGS() > 2 ? amq_bloom_parse_layout(PG_GETARG_TEXT_PP(2))
							: AMQ_BLOOM_LAYOUT_BLOCKED,
							params);
}

/* bloom_empty(n, p [, layout]): a filter with no members */
Datum
bloom_empty(PG_FUNCTION_ARGS)
{
	amq_bloom_params params;
	struct varlena *result;

	size_from_args(fcinfo, &params);
	result = amq_varlena_alloc(params.bytes);
	amq_bloom_init((uint8 *) VARDATA(result), &params,
				   (uint64) PG_GETARG_INT64(0), PG_GETARG_FLOAT8(1),
				   AMQ_BLOOM_DEFAULT_SEED);
	PG_RETURN_POINTER(result);
}

/* bloom_params(n, p [, layout]): the geometry bloom_agg would choose */
Datum
bloom_params(PG_FUNCTION_ARGS)
{
	amq_bloom_params params;
	Datum		values[4];
	bool		nulls[4] = {false};

	size_from_args(fcinfo, &params);
	values[0] = Int64GetDatum((int64) params.nbits);
	values[1] = Int64GetDatum((int64) params.bytes);
	/* as in bloom_info: dleft probes its 4 tables; hashes holds r */
	values[2] = Int32GetDatum(params.layout == AMQ_BLOOM_LAYOUT_DLEFT ?
							  AMQ_BLOOM_DLEFT_TABLES : (int32) params.hashes);
	values[3] = Float8GetDatum(params.bits_per_key);
	return amq_return_record(fcinfo, values, nulls);
}

/*
 * bloom_add(bloom, anyelement): a copy with one more member.  Not strict: a
 * NULL value leaves the filter as it is (so "SET f = bloom_add(f, x)" never
 * wipes a filter), a NULL filter stays NULL.
 */
Datum
bloom_add(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;
	AmqHasher  *hasher;
	struct varlena *result;
	uint64		hash;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	hasher = amq_hasher_get(fcinfo, 1);
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(amq_bloom_to_varlena(&view, NULL));
	if (amq_bloom_is_empty(&view))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot add to the sizeless empty bloom filter"),
				 errdetail("An aggregate over zero rows returns a filter without a size."),
				 errhint("Start from bloom_empty(n, p) instead.")));
	amq_check_family(hasher, view.family, "bloom filter");

	result = amq_bloom_to_varlena(&view, &view);
	hash = amq_hash_datum(hasher, PG_GETARG_DATUM(1), view.seed, view.family);
	amq_bloom_add_or_error(&view, &hash, 1, hasher->family);
	amq_bloom_warn_if_overfilled(&view);
	PG_RETURN_POINTER(result);
}

/*
 * bloom_delete(bloom, anyelement): a copy with one copy of the value
 * removed; unchanged if the filter certainly does not hold the value.  Only
 * the counting and dleft layouts can delete; the sizeless empty filter holds
 * nothing.  NULLs as in bloom_add.
 */
Datum
bloom_delete(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;
	AmqHasher  *hasher;
	struct varlena *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	hasher = amq_hasher_get(fcinfo, 1);
	if (!amq_bloom_is_empty(&view) && !amq_bloom_layout_counts(view.layout))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("cannot delete from a bloom filter of layout %s",
						amq_bloom_layout_name(view.layout)),
				 errdetail("Its bits do not record how many values set them."),
				 errhint("Build the filter with layout 'counting' or 'dleft' to delete values.")));
	if (PG_ARGISNULL(1) || view.family == 0)
		PG_RETURN_POINTER(amq_bloom_to_varlena(&view, NULL));
	amq_check_family(hasher, view.family, "bloom filter");

	result = amq_bloom_to_varlena(&view, &view);
	amq_bloom_delete(&view, amq_hash_datum(hasher, PG_GETARG_DATUM(1), view.seed,
										   view.family));
	PG_RETURN_POINTER(result);
}

/*
 * The filter argument and the value's hash, for the probes; false when the
 * filter holds no values at all (so no hash is needed).
 */
static bool
probe_args(FunctionCallInfo fcinfo, int filter_arg, int value_arg,
		   const amq_bloom_view **view, uint64 *hash, amq_read_fn *read,
		   AmqFilterCache **filter)
{
	*filter = &amq_call_cache(fcinfo)->filter[0];
	/* a stored filter may be read in slices (filter_access.c) */
	*read = amq_filter_probe_arg(fcinfo, filter_arg, *filter, &amq_bloom_format,
								 (const void **) view);
	return amq_probe_hash(fcinfo, value_arg, (*view)->family, (*view)->seed,
						  "bloom filter", hash);
}

/* Membership test shared by @> and <@; strict, so a NULL value gives NULL. */
static bool
probe(FunctionCallInfo fcinfo, int filter_arg, int value_arg)
{
	const amq_bloom_view *view;
	uint64		hash;
	amq_read_fn read;
	AmqFilterCache *filter;

	if (!probe_args(fcinfo, filter_arg, value_arg, &view, &hash, &read, &filter))
		return false;
	return read ? amq_bloom_may_contain_read(view, hash, read, filter)
		: amq_bloom_may_contain(view, hash);
}

/*
 * bloom_count(bloom, anyelement): copies of the value, never fewer than were
 * added and not deleted (counting, dleft); 1 or 0 on the other layouts.
 */
Datum
bloom_count(PG_FUNCTION_ARGS)
{
	const amq_bloom_view *view;
	uint64		hash;
	uint64		n = 0;
	amq_read_fn read;
	AmqFilterCache *filter;

	/* only the bit layouts are read in slices; they count 1 or 0 */
	if (probe_args(fcinfo, 0, 1, &view, &hash, &read, &filter))
		n = read ? amq_bloom_may_contain_read(view, hash, read, filter)
			: amq_bloom_count(view, hash);
	PG_RETURN_INT32(n > PG_INT32_MAX ? PG_INT32_MAX : (int32) n);
}

/* bloom_contains(bloom, anyelement): false means certainly not a member */
Datum
bloom_contains(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(probe(fcinfo, 0, 1));
}

/* bloom_contained_by(anyelement, bloom): the same test, for "<@" */
Datum
bloom_contained_by(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(probe(fcinfo, 1, 0));
}

/* Union or intersection of two filter arguments, as a new value. */
static Datum
merge_args(FunctionCallInfo fcinfo, bool intersect)
{
	AmqCallCache *cache = amq_call_cache(fcinfo);
	amq_bloom_view a;
	amq_bloom_view b;
	amq_bloom_view result;
	struct varlena *value;

	/* the same inputs as a previous call: the same result */
	if ((value = amq_merge_cached(fcinfo)) != NULL)
		PG_RETURN_POINTER(value);

	amq_bloom_arg(fcinfo, 0, &cache->filter[0], &a);
	amq_bloom_arg(fcinfo, 1, &cache->filter[1], &b);

	/* the sizeless empty filter is the empty set */
	if (amq_bloom_is_empty(&a))
		value = amq_bloom_to_varlena(intersect ? &a : &b, NULL);
	else if (amq_bloom_is_empty(&b))
		value = amq_bloom_to_varlena(intersect ? &b : &a, NULL);
	else
	{
		value = amq_bloom_to_varlena(&a, &result);
		amq_bloom_merge(&result, &b, intersect);
		if (!intersect)
			amq_bloom_warn_if_overfilled(&result);
	}
	PG_RETURN_POINTER(amq_merge_remember(fcinfo, value));
}

/* bloom_union(bloom, bloom): members of either (operator |) */
Datum
bloom_union(PG_FUNCTION_ARGS)
{
	return merge_args(fcinfo, false);
}

/* bloom_intersect(bloom, bloom): may-members of both (operator &) */
Datum
bloom_intersect(PG_FUNCTION_ARGS)
{
	return merge_args(fcinfo, true);
}

/* Fill-derived statistics of a filter, in slices that can be cancelled. */
static void
filter_stats(const amq_bloom_view *view, amq_bloom_stats *stats)
{
	amq_bloom_stats_acc acc;
	size_t		total = amq_bloom_bits_bytes(view);
	size_t		from;

	amq_bloom_stats_begin(&acc);
	for (from = 0; from < total; from += AMQ_SLICE_BYTES)
	{
		CHECK_FOR_INTERRUPTS();
		amq_bloom_stats_accumulate(view, &acc, from,
								   Min(total, from + AMQ_SLICE_BYTES));
	}
	amq_bloom_stats_end(view, &acc, stats);
}

/*
 * Warns, once per statement, when a filter has a rate past twice its
 * target (filter_overfill.c); its fill is read only for a filter given more
 * additions than its n.
 */
void
amq_bloom_warn_if_overfilled(const void *filter)
{
	const amq_bloom_view *view = filter;
	amq_bloom_stats stats;
	AmqOverfill overfill;

	if (amq_bloom_is_empty(view) ||
		!amq_overfill_worth_checking(view->inserted, view->capacity))
		return;
	filter_stats(view, &stats);
	overfill.type_name = "bloom";
	overfill.agg_name = "bloom_agg";
	overfill.capacity = amq_count_to_int64(view->capacity);
	overfill.target_fpr = view->target_fpr;
	overfill.inserted = view->inserted;
	overfill.holds = stats.est_distinct;
	overfill.est_fpr = stats.est_fpr;
	amq_warn_if_overfilled(&overfill);
}

/*
 * bloom_info(bloom): geometry, counts and fill-derived estimates.
 * est_distinct is the Swamidass-Baldi estimate from the fill (dleft: the
 * cells used); est_fpr is the false-positive rate the filter has now.  The
 * counting and dleft layouts add their counters or cells, how many are used
 * and stuck at the maximum, and dleft its fingerprint width.  overfilled:
 * est_fpr is past twice target_fpr (the filter was given more than its n).
 */
Datum
bloom_info(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;
	amq_bloom_stats stats;
	Datum		values[17];
	bool		nulls[17] = {false};
	bool		counts;

	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	filter_stats(&view, &stats);

	values[0] = CStringGetTextDatum(amq_bloom_layout_name(view.layout));
	values[1] = Int64GetDatum((int64) view.nbits);
	values[2] = Int64GetDatum((int64) amq_bloom_total_bytes(&view));
	/* dleft's hashes field is its fingerprint width; it probes its 4 tables */
	values[3] = Int32GetDatum(view.layout == AMQ_BLOOM_LAYOUT_DLEFT ?
							  AMQ_BLOOM_DLEFT_TABLES : (int32) view.hashes);
	values[4] = Int64GetDatum(amq_count_to_int64(view.capacity));
	values[5] = Float8GetDatum(view.target_fpr);
	values[6] = Int64GetDatum(amq_count_to_int64(view.inserted));
	values[7] = Int64GetDatum((int64) stats.bits_set);
	values[8] = Float8GetDatum(stats.est_distinct);
	values[9] = Float8GetDatum(stats.est_fpr);
	/* a filter without a size has no target */
	nulls[4] = nulls[5] = amq_bloom_is_empty(&view);
	/* what the values are; NULL until a value is added */
	nulls[10] = view.family == 0;
	if (!nulls[10])
		values[10] = PointerGetDatum(amq_family_identity(fcinfo, view.family));

	/* counters or cells: the counting and dleft layouts only */
	counts = amq_bloom_layout_counts(view.layout);
	nulls[7] = view.layout == AMQ_BLOOM_LAYOUT_DLEFT;
	nulls[11] = nulls[12] = nulls[13] = nulls[14] = !counts;
	values[11] = Int64GetDatum((int64) view.cells);
	values[12] = Int64GetDatum((int64) stats.cells_used);
	values[13] = Int64GetDatum((int64) stats.saturated);
	values[14] = Float8GetDatum(view.cells ? (double) stats.cells_used / (double) view.cells : 0.0);
	nulls[15] = view.layout != AMQ_BLOOM_LAYOUT_DLEFT;
	values[15] = Int32GetDatum((int32) view.hashes);
	/* its rate past twice its target; a filter without a size has none */
	values[16] = BoolGetDatum(amq_is_overfilled(stats.est_fpr, view.target_fpr));
	nulls[16] = amq_bloom_is_empty(&view);
	return amq_return_record(fcinfo, values, nulls);
}

/*
 * The summary the planner estimates probes from: the distinct values the
 * fill suggests and the false-positive rate the filter has now.
 */
static void
summarize(const void *view, double *distinct, double *fpr)
{
	amq_bloom_stats stats;

	filter_stats(view, &stats);
	*distinct = stats.est_distinct;
	*fpr = stats.est_fpr;
}

/* bloom_contains_sel(internal, oid, internal, integer): estimator of @> and <@ */
Datum
bloom_contains_sel(PG_FUNCTION_ARGS)
{
	return amq_probe_restrict(fcinfo, &amq_bloom_format, summarize);
}

/* bloom_contains_support(internal): planner support of the probe functions */
Datum
bloom_contains_support(PG_FUNCTION_ARGS)
{
	return amq_probe_support(fcinfo, &amq_bloom_format, summarize);
}

/* bloom_merge_support(internal): planner support of the merges */
Datum
bloom_merge_support(PG_FUNCTION_ARGS)
{
	return amq_merge_support(fcinfo);
}
