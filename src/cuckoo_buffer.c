/*
 * cuckoo_buffer.c
 *		Cuckoo filters in growable memory the glue owns, and cuckoo arguments.
 *
 * A cuckoo filter grows: adding to a full filter appends a table, and a
 * merge may append tables.  The core never allocates, so the glue keeps a
 * filter in an AmqCuckooBuffer: a varlena with spare room after the filter,
 * enlarged (at least doubled, so growth costs amortized constant time per
 * value) whenever the core reports AMQ_FULL or a merge needs room.  The
 * varlena is the result too: finishing a buffer sets its length and hands
 * it over without a copy.
 *
 * Sizes are checked against AMQ_CUCKOO_MAX_BYTES before anything is
 * allocated, so a filter that would pass the 1 GB varlena limit is an error
 * naming the limit, never a failed allocation.
 */
#include "postgres.h"

#include "miscadmin.h"

#include "amqfilter.h"

/* Source buckets merged between interrupt checks. */
#define MERGE_STEP_BUCKETS	(256 * 1024)

/* Validates bytes that came from outside, erroring as the gate requires. */
void
amq_cuckoo_open_or_error(const void *data, size_t len, AmqGate gate,
						 amq_cuckoo_view *view)
{
	amq_status	status = amq_cuckoo_open(data, len, view);

	if (status != AMQ_OK)
		amq_report_invalid(&amq_cuckoo_format, status, gate, NULL);
}

/*
 * Opens cuckoo argument argno, validating it unless it is the cached value
 * validated before (see amq_filter_arg).
 */
void
amq_cuckoo_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			   amq_cuckoo_view *view)
{
	uint8	   *data;
	size_t		len;

	if (amq_filter_arg(fcinfo, argno, cache, &amq_cuckoo_format, &data, &len))
	{
		*view = cache->view.cuckoo;
		return;
	}
	amq_cuckoo_open_or_error(data, len, AMQ_GATE_STORED, view);
	if (cache->valid && data == cache->data)
	{
		cache->view.cuckoo = *view;
		cache->opened = true;
	}
}

static size_t
sum_saturating(size_t a, size_t b)
{
	return a > SIZE_MAX - b ? SIZE_MAX : a + b;
}

/* Errors unless a filter of the given size is within the limit. */
static void
check_size(size_t bytes)
{
	if (bytes > AMQ_CUCKOO_MAX_BYTES)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("cuckoo filter cannot grow beyond the 1 GB size limit"),
				 errdetail("It would need %zu bytes.", bytes),
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
	room = Max(need, Min(2 * buf->room, AMQ_CUCKOO_MAX_BYTES));
	buf->value = repalloc(buf->value, VARHDRSZ + room);
	buf->room = room;
	buf->view.base = (uint8 *) VARDATA(buf->value);
}

/* A buffer of the given room in cxt, holding nothing yet. */
static void
buffer_alloc(AmqCuckooBuffer *buf, MemoryContext cxt, size_t room)
{
	check_size(room);
	buf->cxt = cxt;
	buf->room = room;
	buf->value = MemoryContextAlloc(cxt, VARHDRSZ + room);
}

/* A new empty filter for n values at rate p; n and p already checked. */
void
amq_cuckoo_buffer_new(AmqCuckooBuffer *buf, MemoryContext cxt, int64 n, double p)
{
	amq_cuckoo_params params;
	amq_status	status;

	status = amq_cuckoo_size(n < 1 ? 0 : (uint64) n, p, &params);
	if (status != AMQ_OK)
		amq_report_sizing("cuckoo filter", status, n, p);
	buffer_alloc(buf, cxt, params.bytes);
	amq_cuckoo_init((uint8 *) VARDATA(buf->value), &params, (uint64) n, p,
					AMQ_CUCKOO_DEFAULT_SEED);
	status = amq_cuckoo_open((uint8 *) VARDATA(buf->value), params.bytes, &buf->view);
	if (status != AMQ_OK)
		elog(ERROR, "new cuckoo filter failed validation: %s",
			 amq_status_text(status));
}

/* A copy of src in cxt, with extra bytes of room to grow into. */
void
amq_cuckoo_buffer_copy(AmqCuckooBuffer *buf, MemoryContext cxt,
					   const amq_cuckoo_view *src, size_t extra)
{
	amq_status	status;

	buffer_alloc(buf, cxt, src->bytes + Min(extra, AMQ_CUCKOO_MAX_BYTES - src->bytes));
	memcpy(VARDATA(buf->value), src->base, src->bytes);
	status = amq_cuckoo_open((uint8 *) VARDATA(buf->value), src->bytes, &buf->view);
	if (status != AMQ_OK)
		elog(ERROR, "copied cuckoo filter failed validation: %s",
			 amq_status_text(status));
}

/* Appends the table the core asks for when the filter is full. */
static void
grow(AmqCuckooBuffer *buf)
{
	uint64		buckets = amq_cuckoo_growth_buckets(&buf->view);
	size_t		table = amq_cuckoo_table_bytes(buckets, buf->view.fp_bits);

	check_size(sum_saturating(buf->view.bytes, table));
	reserve(buf, buf->view.bytes + table);
	amq_cuckoo_append_table(&buf->view, buckets);
}

/* Adds count hashed values, growing the filter as needed. */
void
amq_cuckoo_buffer_add_many(AmqCuckooBuffer *buf, const uint64 *hashes,
						   size_t count, uint32 family)
{
	while (count > 0)
	{
		size_t		done;
		amq_status	status;

		status = amq_cuckoo_add_many(&buf->view, hashes, count, family, &done);
		if (status == AMQ_OK)
			return;
		if (status != AMQ_FULL)
			elog(ERROR, "cuckoo filter insertion failed: %s",
				 amq_status_text(status));
		grow(buf);
		hashes += done;
		count -= done;
	}
}

/*
 * Merges src into the buffer's filter; both non-empty and compatible.  The
 * merge proceeds in steps with interrupt checks in between.
 */
void
amq_cuckoo_buffer_merge(AmqCuckooBuffer *buf, const amq_cuckoo_view *src)
{
	amq_cuckoo_merge *m;
	amq_status	status;

	/* the merge may need the sum of both sizes */
	check_size(sum_saturating(buf->view.bytes, src->bytes));
	reserve(buf, buf->view.bytes + src->bytes);
	m = palloc(sizeof(amq_cuckoo_merge));
	status = amq_cuckoo_merge_begin(m, &buf->view, src);
	if (status != AMQ_OK)
		amq_report_cuckoo_mismatch(status, &buf->view, src);
	while (!amq_cuckoo_merge_step(m, &buf->view, src, MERGE_STEP_BUCKETS))
		CHECK_FOR_INTERRUPTS();
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

/* A palloc'd varlena holding a copy of the filter, to return to SQL. */
struct varlena *
amq_cuckoo_to_varlena(const amq_cuckoo_view *view)
{
	struct varlena *result = palloc(VARHDRSZ + view->bytes);

	SET_VARSIZE(result, VARHDRSZ + view->bytes);
	memcpy(VARDATA(result), view->base, view->bytes);
	return result;
}

/* The sizeless empty filter, as a palloc'd varlena. */
struct varlena *
amq_cuckoo_empty_varlena(void)
{
	struct varlena *result = palloc(VARHDRSZ + AMQ_CUCKOO_HEADER_SIZE);

	SET_VARSIZE(result, VARHDRSZ + AMQ_CUCKOO_HEADER_SIZE);
	amq_cuckoo_init_empty((uint8 *) VARDATA(result));
	return result;
}
