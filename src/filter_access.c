/*
 * filter_access.c
 *		Getting the bytes of filter arguments out of Datums, once per query
 *		for TOASTed values; the per-call cache that holds them.
 *
 * A probe like "(SELECT f FROM filters WHERE id = 1) @> col" passes the same
 * TOASTed filter to every row.  Detoasting a 12 MB value per row would make
 * the probe cost proportional to the filter size, so a TOASTed argument is
 * detoasted once into fn_mcxt and kept, keyed by its TOAST pointer (a TOAST
 * value never changes; its pointer identifies it for the whole query).
 * In-line values cost nothing to detoast and are opened per call: opening is
 * an O(1) header check.
 */
#include "postgres.h"

#include "access/detoast.h"

#include "filter_glue.h"

/* The per-call cache in fn_extra, created on first use. */
AmqCallCache *
amq_call_cache(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(AmqCallCache));
	return (AmqCallCache *) fcinfo->flinfo->fn_extra;
}

/*
 * The bytes of filter argument argno.  A TOASTed value is detoasted once per
 * query into fn_mcxt (see the file header), with its data after the format's
 * header on a cache-line boundary; any other value is used in place.  Returns
 * true when the value is the cached one and the cache's view was already
 * filled by a previous call: the caller may use it as it is.  Otherwise the
 * caller validates the bytes; if they are the cache's (*data ==
 * cache->data), it may store the view and set cache->opened.
 */
bool
amq_filter_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			   const AmqFormat *format, uint8 **data, size_t *len)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	struct varlena *detoasted;

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external toast_pointer;
		size_t		bytes;

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, raw);
		if (cache->valid &&
			cache->toastrelid == toast_pointer.va_toastrelid &&
			cache->valueid == toast_pointer.va_valueid)
		{
			*data = cache->data;
			*len = cache->len;
			return cache->opened;
		}
		if (cache->valid)
			pfree(cache->alloc);
		cache->valid = false;

		detoasted = detoast_attr(raw);
		bytes = VARSIZE(detoasted) - VARHDRSZ;
		cache->data = amq_alloc_aligned(fcinfo->flinfo->fn_mcxt, bytes,
										format->header_size, &cache->alloc);
		cache->len = bytes;
		memcpy(cache->data, VARDATA(detoasted), bytes);
		pfree(detoasted);
		cache->toastrelid = toast_pointer.va_toastrelid;
		cache->valueid = toast_pointer.va_valueid;
		cache->opened = false;
		cache->valid = true;
		*data = cache->data;
		*len = cache->len;
		return false;
	}

	detoasted = PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));
	*data = (uint8 *) VARDATA(detoasted);
	*len = VARSIZE(detoasted) - VARHDRSZ;
	return false;
}

/*
 * Opens filter argument argno with the format's validator, unless it is the
 * cached value validated before.  A value that fails validation here was
 * stored or built wrongly: data corruption.
 */
void
amq_filter_open_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
					const AmqFormat *format, void *view)
{
	uint8	   *data;
	size_t		len;

	Assert(format->view_size <= sizeof(cache->view));
	if (amq_filter_arg(fcinfo, argno, cache, format, &data, &len))
	{
		memcpy(view, &cache->view, format->view_size);
		return;
	}
	amq_open_or_error(format, data, len, AMQ_GATE_STORED, view);
	if (cache->valid && data == cache->data)
	{
		memcpy(&cache->view, view, format->view_size);
		cache->opened = true;
	}
}
