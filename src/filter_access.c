/*
 * filter_access.c
 *		Getting filters in and out of Datums, and owning their memory.
 *
 * A probe like "(SELECT f FROM filters WHERE id = 1) @> col" passes the same
 * TOASTed filter to every row.  Detoasting a 12 MB value per row would make
 * the probe cost proportional to the filter size, so a TOASTed argument is
 * detoasted once into fn_mcxt and kept, keyed by its TOAST pointer (a TOAST
 * value never changes; its pointer identifies it for the whole query).
 * In-line values cost nothing to detoast and are opened per call: opening is
 * an O(1) header check.
 *
 * Filters the glue owns (aggregate states, cached copies) are placed so that
 * their bit arrays start on a 64-byte boundary: then each 512-bit block of
 * the blocked layout is exactly one cache line.  Values handed back to
 * PostgreSQL are ordinary palloc'd varlenas.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "amqfilter.h"

#define AMQ_CACHE_LINE 64

/* The per-call cache in fn_extra, created on first use. */
AmqCallCache *
amq_call_cache(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(AmqCallCache));
	return (AmqCallCache *) fcinfo->flinfo->fn_extra;
}

/* Validates bytes that came from outside, erroring as the gate requires. */
void
amq_bloom_open_or_error(const void *data, size_t len, AmqGate gate,
						amq_bloom_view *view)
{
	amq_status	status = amq_bloom_open(data, len, view);

	if (status != AMQ_OK)
		amq_report_invalid(&amq_bloom_format, status, gate, NULL);
}

/*
 * Allocates room for a serialized filter of the given size whose bit array
 * starts on a cache-line boundary.  owned->view is zeroed except for base.
 */
void
amq_owned_bloom_alloc(MemoryContext cxt, size_t bytes, AmqOwnedBloom *owned)
{
	char	   *raw;
	uintptr_t	bits;

	raw = MemoryContextAllocHuge(cxt, bytes + AMQ_CACHE_LINE);
	bits = TYPEALIGN(AMQ_CACHE_LINE, (uintptr_t) raw + AMQ_BLOOM_HEADER_SIZE);
	owned->alloc = raw;
	memset(&owned->view, 0, sizeof(owned->view));
	owned->view.base = (uint8 *) (bits - AMQ_BLOOM_HEADER_SIZE);
}

/* Copies a filter into memory the caller owns, in cxt. */
void
amq_owned_bloom_copy(MemoryContext cxt, const amq_bloom_view *src,
					 AmqOwnedBloom *owned)
{
	size_t		bytes = amq_bloom_total_bytes(src);
	amq_status	status;

	amq_owned_bloom_alloc(cxt, bytes, owned);
	memcpy(owned->view.base, src->base, bytes);
	status = amq_bloom_open(owned->view.base, bytes, &owned->view);
	if (status != AMQ_OK)
		elog(ERROR, "copied bloom filter failed validation: %s",
			 amq_status_text(status));
}

/* A palloc'd varlena holding a copy of the filter, to return to SQL. */
struct varlena *
amq_bloom_to_varlena(const amq_bloom_view *view)
{
	size_t		bytes = amq_bloom_total_bytes(view);
	struct varlena *result = palloc(VARHDRSZ + bytes);

	SET_VARSIZE(result, VARHDRSZ + bytes);
	memcpy(VARDATA(result), view->base, bytes);
	return result;
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
		char	   *alloc;
		uintptr_t	aligned;

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
		alloc = MemoryContextAllocHuge(fcinfo->flinfo->fn_mcxt,
									   bytes + format->header_size + AMQ_CACHE_LINE);
		aligned = TYPEALIGN(AMQ_CACHE_LINE, (uintptr_t) alloc + format->header_size);
		cache->alloc = alloc;
		cache->data = (uint8 *) (aligned - format->header_size);
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
 * Opens bloom argument argno, validating it unless it is the cached value
 * validated before.  A value that fails validation here was stored or built
 * wrongly: data corruption.
 */
void
amq_bloom_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			  amq_bloom_view *view)
{
	uint8	   *data;
	size_t		len;

	if (amq_filter_arg(fcinfo, argno, cache, &amq_bloom_format, &data, &len))
	{
		*view = cache->view.bloom;
		return;
	}
	amq_bloom_open_or_error(data, len, AMQ_GATE_STORED, view);
	if (cache->valid && data == cache->data)
	{
		cache->view.bloom = *view;
		cache->opened = true;
	}
}

/*
 * Merges src into dst (OR, or AND when intersecting), slice by slice so that
 * a large merge can be cancelled.  Both must be non-empty and compatible.
 */
void
amq_bloom_merge(amq_bloom_view *dst, const amq_bloom_view *src, bool intersect)
{
	size_t		total = amq_bloom_bits_bytes(dst);
	size_t		from;

	for (from = 0; from < total; from += AMQ_SLICE_BYTES)
	{
		size_t		to = Min(total, from + AMQ_SLICE_BYTES);

		CHECK_FOR_INTERRUPTS();
		if (intersect)
			amq_bloom_intersect_bits(dst, src, from, to);
		else
			amq_bloom_union_bits(dst, src, from, to);
	}
	if (intersect)
		amq_bloom_intersect_finish(dst, src);
	else
		amq_bloom_union_finish(dst, src);
}

/* The layout code for a layout name given in SQL. */
int
amq_parse_layout(text *layout)
{
	const char *s = VARDATA_ANY(layout);
	int			len = VARSIZE_ANY_EXHDR(layout);

	if (len == 7 && memcmp(s, "blocked", 7) == 0)
		return AMQ_BLOOM_LAYOUT_BLOCKED;
	if (len == 7 && memcmp(s, "classic", 7) == 0)
		return AMQ_BLOOM_LAYOUT_CLASSIC;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown bloom filter layout \"%s\"", text_to_cstring(layout)),
			 errhint("Valid layouts are 'blocked' (the default) and 'classic'.")));
	pg_unreachable();
}

/* The SQL name of a layout code. */
const char *
amq_layout_name(int layout)
{
	switch (layout)
	{
		case AMQ_BLOOM_LAYOUT_BLOCKED:
			return "blocked";
		case AMQ_BLOOM_LAYOUT_CLASSIC:
			return "classic";
		default:
			return "empty";
	}
}
