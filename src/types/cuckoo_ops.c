/*
 * cuckoo_ops.c
 *		Scalar functions on the cuckoo type: create, add, delete, probe,
 *		count, merge, inspect.
 *
 * As for bloom, functions never modify their arguments: cuckoo_add,
 * cuckoo_delete and cuckoo_union return a new value, grown when the filter
 * is full.  The sizeless empty filter (what cuckoo_agg returns over zero
 * rows) contains nothing, merges with anything and cannot take values.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "types/cuckoo_type.h"

PG_FUNCTION_INFO_V1(cuckoo_empty);
PG_FUNCTION_INFO_V1(cuckoo_add);
PG_FUNCTION_INFO_V1(cuckoo_delete);
PG_FUNCTION_INFO_V1(cuckoo_contains);
PG_FUNCTION_INFO_V1(cuckoo_contained_by);
PG_FUNCTION_INFO_V1(cuckoo_count);
PG_FUNCTION_INFO_V1(cuckoo_union);
PG_FUNCTION_INFO_V1(cuckoo_info);
PG_FUNCTION_INFO_V1(cuckoo_params);
PG_FUNCTION_INFO_V1(cuckoo_contains_sel);
PG_FUNCTION_INFO_V1(cuckoo_contains_support);
PG_FUNCTION_INFO_V1(cuckoo_merge_support);

/* Buckets counted between interrupt checks in cuckoo_info. */
#define STATS_SLICE_BUCKETS	(1024 * 1024)

/* Sizes a filter from SQL arguments (n, p), erroring before any allocation. */
static void
size_from_args(FunctionCallInfo fcinfo, amq_cuckoo_params *params)
{
	amq_cuckoo_size_or_error(PG_GETARG_INT64(0), PG_GETARG_FLOAT8(1), params);
}

/* cuckoo_empty(n, p): a filter with no members */
Datum
cuckoo_empty(PG_FUNCTION_ARGS)
{
	amq_cuckoo_params params;
	struct varlena *result;

	size_from_args(fcinfo, &params);
	result = amq_varlena_alloc(params.bytes);
	amq_cuckoo_init((uint8 *) VARDATA(result), &params,
					(uint64) PG_GETARG_INT64(0), PG_GETARG_FLOAT8(1),
					AMQ_CUCKOO_DEFAULT_SEED);
	PG_RETURN_POINTER(result);
}

/* cuckoo_params(n, p): the geometry cuckoo_agg would choose */
Datum
cuckoo_params(PG_FUNCTION_ARGS)
{
	amq_cuckoo_params params;
	Datum		values[4];
	bool		nulls[4] = {false};

	size_from_args(fcinfo, &params);
	values[0] = Int64GetDatum((int64) params.buckets);
	values[1] = Int32GetDatum((int32) params.fp_bits);
	values[2] = Int64GetDatum((int64) params.bytes);
	values[3] = Float8GetDatum(params.bits_per_key);
	return amq_return_record(fcinfo, values, nulls);
}

/*
 * Opens the filter and value of an add or delete.  Returns false when the
 * result is the filter unchanged (a NULL value).  Like bloom_add these are
 * not strict, so that "SET f = cuckoo_add(f, x)" never wipes a filter.
 */
static bool
open_update(FunctionCallInfo fcinfo, amq_cuckoo_view *view, AmqHasher **hasher)
{
	amq_cuckoo_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], view);
	/* look the type up even for a NULL value: errors must not depend on data */
	*hasher = amq_hasher_get(fcinfo, 1);
	return !PG_ARGISNULL(1);
}

/* cuckoo_add(cuckoo, anyelement): a copy with one more copy of the value */
Datum
cuckoo_add(PG_FUNCTION_ARGS)
{
	amq_cuckoo_view view;
	AmqHasher  *hasher;
	AmqCuckooBuffer buf;
	uint64		hash;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (!open_update(fcinfo, &view, &hasher))
		PG_RETURN_POINTER(amq_cuckoo_to_varlena(&view, NULL));
	if (amq_cuckoo_is_empty(&view))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cannot add to the sizeless empty cuckoo filter"),
				 errdetail("An aggregate over zero rows returns a filter without a size."),
				 errhint("Start from cuckoo_empty(n, p) instead.")));
	amq_check_family(hasher, view.family, "cuckoo filter");

	hash = amq_hash_datum(hasher, PG_GETARG_DATUM(1), view.seed, view.family);
	amq_cuckoo_buffer_copy(&buf, CurrentMemoryContext, &view, 0);
	amq_cuckoo_buffer_add_many(&buf, &hash, 1, hasher->family);
	amq_cuckoo_warn_if_overfilled(&buf.view);
	PG_RETURN_POINTER(amq_cuckoo_buffer_finish(&buf));
}

/*
 * cuckoo_delete(cuckoo, anyelement): a copy with one copy of the value
 * removed; unchanged if the filter certainly does not hold the value.
 */
Datum
cuckoo_delete(PG_FUNCTION_ARGS)
{
	amq_cuckoo_view view;
	AmqHasher  *hasher;
	struct varlena *result;

	if (PG_ARGISNULL(0))
		PG_RETURN_NULL();
	if (!open_update(fcinfo, &view, &hasher) || view.family == 0)
		PG_RETURN_POINTER(amq_cuckoo_to_varlena(&view, NULL));
	amq_check_family(hasher, view.family, "cuckoo filter");

	result = amq_cuckoo_to_varlena(&view, &view);
	amq_cuckoo_delete(&view, amq_hash_datum(hasher, PG_GETARG_DATUM(1), view.seed, view.family));
	PG_RETURN_POINTER(result);
}

/*
 * The filter argument and the value's hash, for the probes; false when the
 * filter holds no values at all (so no hash is needed).  A stored filter may
 * be read in slices (filter_access.c): *read is then the function to probe
 * it with, its context *filter; else NULL.
 */
static bool
probe_args(FunctionCallInfo fcinfo, int filter_arg, int value_arg,
		   const amq_cuckoo_view **view, uint64 *hash, amq_read_fn *read,
		   AmqFilterCache **filter)
{
	*filter = &amq_call_cache(fcinfo)->filter[0];
	*read = amq_filter_probe_arg(fcinfo, filter_arg, *filter,
								 &amq_cuckoo_format, (const void **) view);
	return amq_probe_hash(fcinfo, value_arg, (*view)->family, (*view)->seed,
						  "cuckoo filter", hash);
}

/* Membership test shared by @> and <@; strict, so a NULL value gives NULL. */
static bool
probe(FunctionCallInfo fcinfo, int filter_arg, int value_arg)
{
	const amq_cuckoo_view *view;
	uint64		hash;
	amq_read_fn read;
	AmqFilterCache *filter;

	if (!probe_args(fcinfo, filter_arg, value_arg, &view, &hash, &read, &filter))
		return false;
	return read ? amq_cuckoo_may_contain_read(view, hash, read, filter)
		: amq_cuckoo_may_contain(view, hash);
}

/* cuckoo_contains(cuckoo, anyelement): false means certainly not stored */
Datum
cuckoo_contains(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(probe(fcinfo, 0, 1));
}

/* cuckoo_contained_by(anyelement, cuckoo): the same test, for "<@" */
Datum
cuckoo_contained_by(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(probe(fcinfo, 1, 0));
}

/*
 * cuckoo_count(cuckoo, anyelement): copies of the value's fingerprint, which
 * may count colliding values too but never fewer than the copies added.
 */
Datum
cuckoo_count(PG_FUNCTION_ARGS)
{
	const amq_cuckoo_view *view;
	uint64		hash;
	uint64		n = 0;
	amq_read_fn read;
	AmqFilterCache *filter;

	if (probe_args(fcinfo, 0, 1, &view, &hash, &read, &filter))
		n = read ? amq_cuckoo_count_read(view, hash, read, filter)
			: amq_cuckoo_count(view, hash);
	PG_RETURN_INT32(n > PG_INT32_MAX ? PG_INT32_MAX : (int32) n);
}

/* cuckoo_union(cuckoo, cuckoo): a filter holding the values of both (|) */
Datum
cuckoo_union(PG_FUNCTION_ARGS)
{
	AmqCallCache *cache = amq_call_cache(fcinfo);
	amq_cuckoo_view a;
	amq_cuckoo_view b;
	AmqCuckooBuffer buf;
	amq_status	status;
	struct varlena *value;

	/* the same inputs as a previous call: the same result */
	if ((value = amq_merge_cached(fcinfo)) != NULL)
		PG_RETURN_POINTER(value);

	amq_cuckoo_arg(fcinfo, 0, &cache->filter[0], &a);
	amq_cuckoo_arg(fcinfo, 1, &cache->filter[1], &b);

	/* the sizeless empty filter is the empty set */
	if (amq_cuckoo_is_empty(&a))
		value = amq_cuckoo_to_varlena(&b, NULL);
	else if (amq_cuckoo_is_empty(&b))
		value = amq_cuckoo_to_varlena(&a, NULL);
	else
	{
		status = amq_cuckoo_compatible(&a, &b);
		if (status != AMQ_OK)
			amq_report_cuckoo_mismatch(status, &a, &b);

		/* the merge asks for room when it appends a table, if it does */
		amq_cuckoo_buffer_copy(&buf, CurrentMemoryContext, &a, 0);
		amq_cuckoo_buffer_merge(&buf, &b);
		amq_cuckoo_warn_if_overfilled(&buf.view);
		value = amq_cuckoo_buffer_finish(&buf);
	}
	PG_RETURN_POINTER(amq_merge_remember(fcinfo, value));
}

/*
 * Load and false-positive statistics of a filter, in one pass over its
 * tables however many there are, in slices that can be cancelled.  Returns
 * the total of the tables' buckets.
 */
static uint64
filter_stats(const amq_cuckoo_view *view, amq_cuckoo_stats *stats)
{
	amq_cuckoo_stats_acc acc;
	amq_cuckoo_table table;
	bool		more;
	uint64		buckets = 0;

	amq_cuckoo_stats_begin(&acc);
	for (more = amq_cuckoo_table_first(view, &table); more;
		 more = amq_cuckoo_table_next(view, &table))
	{
		uint64		from;

		for (from = 0; from < table.buckets; from += STATS_SLICE_BUCKETS)
		{
			CHECK_FOR_INTERRUPTS();
			amq_cuckoo_stats_accumulate(view, &table, &acc, from,
										Min(table.buckets, from + STATS_SLICE_BUCKETS));
		}
		amq_cuckoo_stats_table_done(view, &table, &acc);
		buckets += table.buckets;
	}
	amq_cuckoo_stats_end(view, &acc, stats);
	return buckets;
}

/*
 * Warns, once per statement, when a filter has a rate past twice its
 * target (filter_overfill.c): a filter given more than its n grows a table
 * at a time, and each table adds to the rate.  Its tables are read only for
 * a filter holding more items than its n.
 */
void
amq_cuckoo_warn_if_overfilled(const void *filter)
{
	const amq_cuckoo_view *view = filter;
	amq_cuckoo_stats stats;
	AmqOverfill overfill;

	if (amq_cuckoo_is_empty(view) ||
		!amq_overfill_worth_checking(view->items, view->capacity))
		return;
	(void) filter_stats(view, &stats);
	overfill.type_name = "cuckoo";
	overfill.agg_name = "cuckoo_agg";
	overfill.capacity = amq_count_to_int64(view->capacity);
	overfill.target_fpr = view->target_fpr;
	overfill.inserted = view->items;
	/* copies included: an upper bound of the distinct values */
	overfill.holds = (double) view->items;
	overfill.est_fpr = stats.est_fpr;
	amq_warn_if_overfilled(&overfill);
}

/*
 * cuckoo_info(cuckoo): geometry, counts and fill-derived estimates.  buckets
 * is the total over all tables; load_factor is occupied slots over all
 * slots; est_fpr is the false-positive rate the filter has now, every table
 * counted; overfilled: est_fpr is past twice target_fpr.
 */
Datum
cuckoo_info(PG_FUNCTION_ARGS)
{
	amq_cuckoo_view view;
	amq_cuckoo_stats stats;
	uint64		buckets;
	Datum		values[12];
	bool		nulls[12] = {false};

	amq_cuckoo_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	buckets = filter_stats(&view, &stats);

	values[0] = Int64GetDatum((int64) buckets);
	values[1] = Int32GetDatum(view.tables ? AMQ_CUCKOO_BUCKET_SIZE : 0);
	values[2] = Int32GetDatum((int32) view.fp_bits);
	values[3] = Int64GetDatum((int64) view.bytes);
	values[4] = Int64GetDatum(amq_count_to_int64(view.capacity));
	values[5] = Float8GetDatum(view.target_fpr);
	values[6] = Int64GetDatum(amq_count_to_int64(view.items));
	values[7] = Float8GetDatum(stats.load_factor);
	values[8] = Float8GetDatum(stats.est_fpr);
	values[9] = Int32GetDatum((int32) view.tables);
	/* a filter without a size has no target */
	nulls[4] = nulls[5] = amq_cuckoo_is_empty(&view);
	/* what the values are; NULL until a value is added */
	nulls[10] = view.family == 0;
	if (!nulls[10])
		values[10] = PointerGetDatum(amq_family_identity(fcinfo, view.family));
	/* its rate past twice its target; a filter without a size has none */
	values[11] = BoolGetDatum(amq_is_overfilled(stats.est_fpr, view.target_fpr));
	nulls[11] = amq_cuckoo_is_empty(&view);
	return amq_return_record(fcinfo, values, nulls);
}

/*
 * The summary the planner estimates probes from: the items stored (copies
 * included, an upper bound of the distinct values) and the false-positive
 * rate the filter has now.
 */
static void
summarize(const void *view, double *distinct, double *fpr)
{
	amq_cuckoo_stats stats;

	(void) filter_stats(view, &stats);
	*distinct = (double) ((const amq_cuckoo_view *) view)->items;
	*fpr = stats.est_fpr;
}

/* cuckoo_contains_sel(internal, oid, internal, integer): estimator of @> and <@ */
Datum
cuckoo_contains_sel(PG_FUNCTION_ARGS)
{
	return amq_probe_restrict(fcinfo, &amq_cuckoo_format, summarize);
}

/* cuckoo_contains_support(internal): planner support of the probe functions */
Datum
cuckoo_contains_support(PG_FUNCTION_ARGS)
{
	return amq_probe_support(fcinfo, &amq_cuckoo_format, summarize);
}

/* cuckoo_merge_support(internal): planner support of the merges */
Datum
cuckoo_merge_support(PG_FUNCTION_ARGS)
{
	return amq_merge_support(fcinfo);
}
