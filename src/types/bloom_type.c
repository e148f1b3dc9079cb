/*
 * bloom_type.c
 *		The bloom type's own glue: its format descriptor and I/O functions,
 *		opening bloom arguments, filters the glue owns, merging, layout
 *		names and the errors for filters that cannot be combined and for a
 *		full dleft filter.
 *
 * Filters the glue owns (aggregate states, cached copies) are placed so that
 * their bit arrays start on a 64-byte boundary: then each 512-bit block of
 * the blocked layout is exactly one cache line.  Values handed back to
 * PostgreSQL are ordinary palloc'd varlenas.
 */
#include "postgres.h"

#include "miscadmin.h"
#include "utils/builtins.h"

#include "types/bloom_type.h"

/*
 * amq_bloom_format and bloom_in, bloom_out, bloom_recv, bloom_send, bloom_to_bytea,
 * bloom_from_bytea
 */
AMQ_FORMAT_FUNCTIONS(bloom, AMQ_BLOOM_VERSION, AMQ_BLOOM_HEADER_SIZE)

/* The core's sizing, with amqfilter's size limit; false if over it. */
static bool
size_within_limit(int64 n, double p, int layout, amq_bloom_params *params,
				  amq_status *status)
{
	*status = amq_bloom_size(n < 1 ? 0 : (uint64) n, p, layout, params);
	if (*status == AMQ_OK && params->bytes > AMQ_MAX_FILTER_BYTES)
		*status = AMQ_ERR_TOO_LARGE;
	return *status == AMQ_OK;
}

/*
 * Sizes a filter for SQL arguments, erroring before anything is allocated.
 * At very low rates the blocked layout needs far more room than the classic
 * one (its k is capped at 64 within a block): if it is too large where
 * classic is not, the error says so.
 */
void
amq_bloom_size_or_error(int64 n, double p, int layout, amq_bloom_params *params)
{
	amq_status	status;
	amq_bloom_params classic;
	amq_status	classic_status;

	if (size_within_limit(n, p, layout, params, &status))
		return;
	if (status == AMQ_ERR_TOO_LARGE && layout == AMQ_BLOOM_LAYOUT_BLOCKED &&
		size_within_limit(n, p, AMQ_BLOOM_LAYOUT_CLASSIC, &classic, &classic_status))
		amq_report_sizing(&amq_bloom_format, status, n, p,
						  psprintf("The classic layout needs %zu bytes for this n and p: "
								   "pass 'classic' as the layout.", classic.bytes));
	amq_report_sizing(&amq_bloom_format, status, n, p, NULL);
}

/* A new empty filter for n values at rate p in cxt; bad n or p error first. */
void
amq_bloom_buffer_new(AmqBloomBuffer *buf, MemoryContext cxt, int64 n, double p,
					 int layout)
{
	amq_bloom_params params;

	amq_bloom_size_or_error(n, p, layout, &params);
	buf->view.base = amq_alloc_aligned(cxt, params.bytes, AMQ_BLOOM_HEADER_SIZE,
									   &buf->alloc);
	amq_bloom_init(buf->view.base, &params, (uint64) n, p, AMQ_BLOOM_DEFAULT_SEED);
	amq_open_own(&amq_bloom_format, buf->view.base, params.bytes, &buf->view);
}

/* A copy of src in cxt. */
void
amq_bloom_buffer_copy(AmqBloomBuffer *buf, MemoryContext cxt,
					  const amq_bloom_view *src)
{
	size_t		bytes = amq_bloom_total_bytes(src);

	buf->view.base = amq_alloc_aligned(cxt, bytes, AMQ_BLOOM_HEADER_SIZE,
									   &buf->alloc);
	memcpy(buf->view.base, src->base, bytes);
	amq_open_own(&amq_bloom_format, buf->view.base, bytes, &buf->view);
}

/*
 * Merges src into dst (OR, or AND when intersecting), slice by slice so that
 * a large merge can be cancelled.  Both must be non-empty; filters of
 * different geometry or element type are an error.
 */
void
amq_bloom_merge(amq_bloom_view *dst, const amq_bloom_view *src, bool intersect)
{
	size_t		total = amq_bloom_bits_bytes(dst);
	size_t		from;
	amq_status	status = amq_bloom_compatible(dst, src);

	if (status != AMQ_OK)
		amq_report_bloom_mismatch(status, dst, src);

	for (from = 0; from < total; from += AMQ_SLICE_BYTES)
	{
		size_t		to = Min(total, from + AMQ_SLICE_BYTES);

		CHECK_FOR_INTERRUPTS();
		if (amq_bloom_merge_bits(dst, src, from, to, intersect) != AMQ_OK)
			amq_report_bloom_full();
	}
	amq_bloom_merge_finish(dst, src, intersect);
}

/* Adds hashed values to a filter, or errors if a dleft filter is full. */
void
amq_bloom_add_or_error(amq_bloom_view *view, const uint64 *hashes, int count,
					   uint32 family)
{
	if (amq_bloom_add_many(view, hashes, count, family) != AMQ_OK)
		amq_report_bloom_full();
}

/* Reports a d-left filter with no room for a value. */
void
amq_report_bloom_full(void)
{
	ereport(ERROR,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("bloom filter is full"),
			 errdetail("A value has no cell in the dleft filter yet, and all %d buckets it may use are full.",
					   AMQ_BLOOM_DLEFT_TABLES),
			 errhint("Build the filter for a larger n.")));
	pg_unreachable();
}

/* The layout code for a layout name given in SQL. */
int
amq_bloom_parse_layout(text *layout)
{
	const char *s = VARDATA_ANY(layout);
	int			len = VARSIZE_ANY_EXHDR(layout);

	if (len == 7 && memcmp(s, "blocked", 7) == 0)
		return AMQ_BLOOM_LAYOUT_BLOCKED;
	if (len == 7 && memcmp(s, "classic", 7) == 0)
		return AMQ_BLOOM_LAYOUT_CLASSIC;
	if (len == 8 && memcmp(s, "counting", 8) == 0)
		return AMQ_BLOOM_LAYOUT_COUNTING;
	if (len == 5 && memcmp(s, "dleft", 5) == 0)
		return AMQ_BLOOM_LAYOUT_DLEFT;
	ereport(ERROR,
			(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
			 errmsg("unknown bloom filter layout \"%s\"", text_to_cstring(layout)),
			 errhint("Valid layouts are 'blocked' (the default), 'classic', 'counting' and 'dleft'.")));
	pg_unreachable();
}

/* The SQL name of a layout code. */
const char *
amq_bloom_layout_name(int layout)
{
	switch (layout)
	{
		case AMQ_BLOOM_LAYOUT_BLOCKED:
			return "blocked";
		case AMQ_BLOOM_LAYOUT_CLASSIC:
			return "classic";
		case AMQ_BLOOM_LAYOUT_COUNTING:
			return "counting";
		case AMQ_BLOOM_LAYOUT_DLEFT:
			return "dleft";
		default:
			return "empty";
	}
}

/* Reports two filters that cannot be merged, naming both geometries. */
void
amq_report_bloom_mismatch(amq_status status, const amq_bloom_view *a,
						  const amq_bloom_view *b)
{
	if (status == AMQ_ERR_FAMILY_MISMATCH)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine bloom filters built from values of different types"),
				 errdetail("The filters hash their values with different hash operator families.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("cannot combine bloom filters of different geometry"),
			 errdetail("Left: %s layout, " UINT64_FORMAT " bits, k = %u, seed %llx; "
					   "right: %s layout, " UINT64_FORMAT " bits, k = %u, seed %llx.",
					   amq_bloom_layout_name(a->layout), a->nbits, a->hashes,
					   (unsigned long long) a->seed,
					   amq_bloom_layout_name(b->layout), b->nbits, b->hashes,
					   (unsigned long long) b->seed),
			 errhint("Build both filters with the same n, p and layout.")));
	pg_unreachable();
}
