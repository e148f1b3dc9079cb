/*
 * cuckoo_type.c
 *		The cuckoo type's own glue: its format descriptor and I/O functions,
 *		opening cuckoo arguments, filters in growable memory the glue owns,
 *		merging and the error for filters that cannot be combined.
 *
 * A cuckoo filter grows: adding to a full filter appends a table, and a
 * merge may append tables.  The core never allocates, so the glue keeps a
 * filter in an AmqCuckooBuffer: a varlena with spare room after the filter,
 * enlarged (at least doubled, so growth costs amortized constant time per
 * value) whenever the core asks for room.  The varlena is the result too:
 * finishing a buffer sets its length and hands it over without a copy.
 *
 * Sizes are checked against AMQ_MAX_FILTER_BYTES before anything is
 * allocated, so a filter that would outgrow what pg_dump can write is an
 * error naming the limit, never a failed allocation or a value that cannot
 * be backed up.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "types/cuckoo_type.h"

/*
 * Work units (about a bucket read or a table tried each: see
 * amq_cuckoo_merge_step) between interrupt checks in a merge: a few
 * milliseconds.
 */
#define MERGE_STEP_WORK		(256 * 1024)

/*
 * amq_cuckoo_format and cuckoo_in, cuckoo_out, cuckoo_recv, cuckoo_send, cuckoo_to_bytea,
 * cuckoo_from_bytea
 */
AMQ_FORMAT_FUNCTIONS(cuckoo, AMQ_CUCKOO_VERSION_COUNTERS, AMQ_CUCKOO_HEADER_SIZE)

/* Sizes a filter for SQL arguments, erroring before anything is allocated. */
void
amq_cuckoo_size_or_error(int64 n, double p, amq_cuckoo_params *params)
{
	amq_status	status = amq_cuckoo_size(n < 1 ? 0 : (uint64) n, p, params);

	if (status == AMQ_OK && params->bytes > AMQ_MAX_FILTER_BYTES)
		status = AMQ_ERR_TOO_LARGE;
	if (status == AMQ_ERR_PARAM_P_SMALL)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("cuckoo filter false-positive rate p must be at least %s",
						amq_format_p(AMQ_CUCKOO_MIN_FPR)),
				 errdetail("p = %s was given; 32-bit fingerprints reach no lower rate.",
						   amq_format_p(p)),
				 errhint("Use a bloom filter for lower rates.")));
	if (status != AMQ_OK)
		amq_report_sizing(&amq_cuckoo_format, status, n, p, NULL);
}

/* Errors unless a filter of the given size is within the limit. */
static void
check_size(size_t bytes)
{
	if (bytes > AMQ_MAX_FILTER_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cuckoo filter cannot grow beyond the size limit of %zu bytes",
						AMQ_MAX_FILTER_BYTES),
				 errdetail("It would need %zu bytes; a filter's text form, which pg_dump and COPY write, must fit in a 1 GB value.",
						   bytes),
				 errhint("Build it with a larger n, aggregate distinct values, or keep one filter per partition.")));
}

/* Makes room for at least need bytes of filter, keeping the contents. */
static void
reserve(AmqCuckooBuffer *buf, size_t need)
{
	size_t		room;

	if (need <= buf->room)
		return;
	check_size(need);
	room = Max(need, Min(2 * buf->room, AMQ_MAX_FILTER_BYTES));
	/*
	 * repalloc of a large chunk moves its pages without copying them (mremap)
	 * and without needing both sizes at once; the hint then reaches the
	 * pages the filter grows into before they are touched.
	 */
	buf->value = repalloc(buf->value, VARHDRSZ + room);
	amq_hint_huge_pages(buf->value, VARHDRSZ + room);
	buf->room = room;
	buf->view.base = (uint8 *) VARDATA(buf->value);
}

/* The core's way of asking for room while it grows a filter. */
static uint8 *
reserve_for_core(void *ctx, size_t need)
{
	AmqCuckooBuffer *buf = ctx;

	reserve(buf, need);
	return (uint8 *) VARDATA(buf->value);
}

/* A buffer of the given room in cxt, holding nothing yet. */
static void
buffer_alloc(AmqCuckooBuffer *buf, MemoryContext cxt, size_t room)
{
	check_size(room);
	buf->cxt = cxt;
	buf->room = room;
	buf->value = amq_alloc_filter(cxt, VARHDRSZ + room);
}

/* A new empty filter for n values at rate p in cxt; bad n or p error first. */
void
amq_cuckoo_buffer_new(AmqCuckooBuffer *buf, MemoryContext cxt, int64 n, double p)
{
	amq_cuckoo_params params;

	amq_cuckoo_size_or_error(n, p, &params);
	buffer_alloc(buf, cxt, params.bytes);
	amq_cuckoo_init((uint8 *) VARDATA(buf->value), &params, (uint64) n, p,
					AMQ_CUCKOO_DEFAULT_SEED);
	amq_open_own(&amq_cuckoo_format, VARDATA(buf->value), params.bytes, &buf->view);
}

/* A copy of src in cxt, with extra bytes of room to grow into. */
void
amq_cuckoo_buffer_copy(AmqCuckooBuffer *buf, MemoryContext cxt,
					   const amq_cuckoo_view *src, size_t extra)
{
	buffer_alloc(buf, cxt, src->bytes + Min(extra, AMQ_MAX_FILTER_BYTES - Min(src->bytes, AMQ_MAX_FILTER_BYTES)));
	memcpy(VARDATA(buf->value), src->base, src->bytes);
	amq_open_own(&amq_cuckoo_format, VARDATA(buf->value), src->bytes, &buf->view);
}

/*
 * Adds count hashed values, growing the filter as needed: the core asks for
 * room (reserve_for_core, which errors past the size limit).
 */
void
amq_cuckoo_buffer_add_many(AmqCuckooBuffer *buf, const uint64 *hashes,
						   size_t count, uint32 family)
{
	size_t		done;
	amq_status	status;

	status = amq_cuckoo_add_growing(&buf->view, hashes, count, family,
									reserve_for_core, buf, &done);
	if (status == AMQ_ERR_TOO_LARGE)
		check_size(amq_cuckoo_growth_bytes(&buf->view));
	if (status != AMQ_OK)
		elog(ERROR, "cuckoo filter insertion failed: %s", amq_status_text(status));
}

/*
 * Merges src into the buffer's filter; both non-empty; filters of different
 * geometry or element type are an error.  The merge proceeds in steps with
 * interrupt checks in between, and the core asks for room
 * (reserve_for_core) only when it appends a table, so the buffer grows to
 * what the result needs, not to the sum of both sizes.
 */
void
amq_cuckoo_buffer_merge(AmqCuckooBuffer *buf, const amq_cuckoo_view *src)
{
	amq_cuckoo_merge *m;
	amq_status	status;
	bool		done = false;

	m = palloc(sizeof(amq_cuckoo_merge));
	status = amq_cuckoo_merge_begin(m, &buf->view, src, reserve_for_core, buf);
	if (status != AMQ_OK)
		amq_report_cuckoo_mismatch(status, &buf->view, src);
	while (!done)
	{
		CHECK_FOR_INTERRUPTS();
		status = amq_cuckoo_merge_step(m, &buf->view, src, MERGE_STEP_WORK,
									   &done);
		if (status == AMQ_ERR_TOO_LARGE)
			check_size(m->need);
		if (status != AMQ_OK)
			elog(ERROR, "cuckoo filter merge failed: %s", amq_status_text(status));
	}
	pfree(m);
}

/* The buffer's filter as a varlena; the buffer is used up. */
struct varlena *
amq_cuckoo_buffer_finish(AmqCuckooBuffer *buf)
{
	struct varlena *result = buf->value;

	SET_VARSIZE(result, VARHDRSZ + buf->view.bytes);
	buf->value = NULL;
	return result;
}

/* Reports two cuckoo filters that cannot be merged, naming both geometries. */
void
amq_report_cuckoo_mismatch(amq_status status, const amq_cuckoo_view *a,
						   const amq_cuckoo_view *b)
{
	amq_cuckoo_table ta;
	amq_cuckoo_table tb;

	if (status == AMQ_ERR_FAMILY_MISMATCH)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine cuckoo filters built from values of different types"),
				 errdetail("The filters hash their values with different hash operator families.")));
	amq_cuckoo_table_first(a, &ta);
	amq_cuckoo_table_first(b, &tb);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("cannot combine cuckoo filters of different geometry"),
			 errdetail("Left: " UINT64_FORMAT " buckets, %u-bit fingerprints, seed %llx; "
					   "right: " UINT64_FORMAT " buckets, %u-bit fingerprints, seed %llx.",
					   ta.buckets, a->fp_bits, (unsigned long long) a->seed,
					   tb.buckets, b->fp_bits, (unsigned long long) b->seed),
			 errhint("Build both filters with the same n and p.")));
	pg_unreachable();
}
