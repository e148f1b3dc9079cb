/*
 * amqfilter.c
 *		The one place where core status codes become errors, the setting of
 *		how stored filters are read, and the few fmgr and memory helpers
 *		every other glue file shares.
 *
 * Every gate that accepts bytes (text input, recv, the bytea cast, aggregate
 * deserialization, any read of a stored value) runs the same core validator
 * and reports its verdict through amq_report_invalid(), so one fault reads
 * the same wherever it is caught: the message names what failed, the detail
 * says why, and only the errcode says which gate caught it.
 *
 * This file is the base of the glue (see amqfilter.h): it calls nothing
 * else of it.
 */
#include "postgres.h"

#include <ctype.h>
#ifdef __linux__
#include <sys/mman.h>
#endif

#include "fmgr.h"
#include "access/htup_details.h"
#include "funcapi.h"
#include "utils/float.h"
#include "utils/guc.h"

#include "glue/amqfilter.h"

int			amq_probe_read = AMQ_PROBE_READ_AUTO;

static const struct config_enum_entry probe_read_options[] = {
	{"auto", AMQ_PROBE_READ_AUTO, false},
	{"slices", AMQ_PROBE_READ_SLICES, false},
	{"whole", AMQ_PROBE_READ_WHOLE, false},
	{NULL, 0, false}
};

/* Defines the glue's setting (src/module.c calls it from _PG_init). */
void
amq_glue_init(void)
{
	DefineCustomEnumVariable("amqfilter.probe_read",
							 "How probes read a filter stored out of line.",
							 "auto reads slices while they cost less than reading the "
							 "whole value once, slices always reads slices, whole "
							 "always reads the whole value.",
							 &amq_probe_read, AMQ_PROBE_READ_AUTO,
							 probe_read_options, PGC_USERSET, 0,
							 NULL, NULL, NULL);
}

/* errcode for a validation failure at a gate */
static int
invalid_errcode(amq_status status, AmqGate gate)
{
	if (status == AMQ_ERR_VERSION)
		return ERRCODE_FEATURE_NOT_SUPPORTED;
	switch (gate)
	{
		case AMQ_GATE_TEXT:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case AMQ_GATE_BINARY:
			return ERRCODE_INVALID_BINARY_REPRESENTATION;
		case AMQ_GATE_STORED:
			break;
	}
	return ERRCODE_DATA_CORRUPTED;
}

/*
 * The core's wording of a status as an errdetail sentence: capitalised,
 * with a full stop.  The core keeps lower-case fragments because its texts
 * also end up inside other messages.
 */
static char *
status_sentence(amq_status status)
{
	char	   *s = psprintf("%s.", amq_status_text(status));

	s[0] = (char) toupper((unsigned char) s[0]);
	return s;
}

/*
 * Reports a value that failed validation.  With a soft-error context (text
 * input on PostgreSQL 16 and later) the error is saved there and false is
 * returned, so the caller returns NULL; otherwise it does not return.
 */
bool
amq_report_invalid(const AmqFormat *format, amq_status status, AmqGate gate,
				   Node *escontext)
{
	const char *what = gate == AMQ_GATE_TEXT ? "invalid input syntax for type"
		: "invalid value of type";

	errsave(escontext,
			(errcode(invalid_errcode(status, gate)),
			 errmsg("%s %s", what, format->name),
			 errdetail_internal("%s", status_sentence(status)),
			 status == AMQ_ERR_VERSION ?
			 (format->version > 1 ?
			  errhint("This build of amqfilter reads format versions 1 to %d.",
					  format->version) :
			  errhint("This build of amqfilter reads format version 1.")) : 0));
	(void) escontext;
	return false;
}

/* Opens a filter the glue just wrote; failure is a bug, not bad input. */
void
amq_open_own(const AmqFormat *format, const void *data, size_t len, void *view)
{
	amq_status	status = format->open(data, len, view);

	if (status != AMQ_OK)
		elog(ERROR, "%s filter built in memory failed validation: %s",
			 format->name, amq_status_text(status));
}

/*
 * A palloc'd varlena holding a copy of a filter's len bytes, to return to
 * SQL; if copy is not NULL, it is set to a view of the copy, to change it
 * before it is returned.
 */
struct varlena *
amq_filter_copy(const AmqFormat *format, const void *data, size_t len,
				void *copy)
{
	struct varlena *result = amq_varlena_copy(data, len);

	if (copy != NULL)
		amq_open_own(format, VARDATA(result), len, copy);
	return result;
}

/* The sizeless empty filter of a type, as a palloc'd varlena. */
struct varlena *
amq_empty_varlena(const AmqFormat *format)
{
	struct varlena *result = amq_varlena_alloc(format->header_size);

	format->init_empty((uint8 *) VARDATA(result));
	return result;
}

/* Validates bytes from a gate into *view, erroring as the gate requires. */
void
amq_open_or_error(const AmqFormat *format, const void *data, size_t len,
				  AmqGate gate, void *view)
{
	amq_status	status = format->open(data, len, view);

	if (status != AMQ_OK)
		amq_report_invalid(format, status, gate, NULL);
}

/* p as PostgreSQL prints a float8: the shortest text that reads back exactly. */
const char *
amq_format_p(double p)
{
	return float8out_internal(p);
}

/*
 * Reports n, p or a size that the core refused, or that is over
 * AMQ_MAX_FILTER_BYTES, before anything was allocated.  hint, if not NULL,
 * replaces the generic advice for a filter too large.  Type-specific
 * refusals (a rate below what the type reaches) are reported by the type's
 * own file.
 */
void
amq_report_sizing(const AmqFormat *format, amq_status status, int64 n, double p,
				  const char *hint)
{
	switch (status)
	{
		case AMQ_ERR_PARAM_N:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s filter capacity n must be at least 1", format->name),
					 errdetail("n = " INT64_FORMAT " was given.", n)));
			break;
		case AMQ_ERR_PARAM_P:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s filter false-positive rate p must be greater than 0 and less than 1",
							format->name),
					 errdetail("p = %s was given.", amq_format_p(p))));
			break;
		case AMQ_ERR_TOO_LARGE:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s filter for n = " INT64_FORMAT " at p = %s would exceed the size limit of %zu bytes",
							format->name, n, amq_format_p(p), AMQ_MAX_FILTER_BYTES),
					 errdetail("A filter's text form, which pg_dump and COPY write, must fit in a 1 GB value."),
					 errhint("%s", hint ? hint :
							 "Use a larger p, a smaller n, or one filter per partition.")));
			break;
		default:
			elog(ERROR, "unexpected sizing status %d", (int) status);
	}
	pg_unreachable();
}

/* Builds the composite result of a record-returning function. */
Datum
amq_return_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/* The aggregate context, or an error for a call outside an aggregate. */
MemoryContext
amq_aggregate_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fname);
	return aggcxt;
}

/*
 * Filters from this size on are allocated with a request for transparent
 * huge pages (where the kernel grants them on request, as Linux does with
 * transparent_hugepage=madvise, its common setting).  A large filter is
 * written or read at random: with 4 kB pages every new page is a fault when
 * it is first touched (about 3,000 for a 12 MB filter, 40 ms measured on a
 * virtual machine) and most probes miss the TLB; with 2 MB pages both
 * nearly vanish.
 */
#define AMQ_HUGE_PAGE_BYTES ((size_t) 2 * 1024 * 1024)
#define AMQ_HUGE_PAGE_MIN_BYTES (2 * AMQ_HUGE_PAGE_BYTES)

/*
 * Asks for huge pages for the whole 2 MB pages inside [p, p + len), before
 * they are first touched.  Only a hint: where it is refused or unsupported
 * nothing changes.
 */
void
amq_hint_huge_pages(void *p, size_t len)
{
#if defined(__linux__) && defined(MADV_HUGEPAGE)
	uintptr_t	start = TYPEALIGN(AMQ_HUGE_PAGE_BYTES, (uintptr_t) p);
	uintptr_t	end = TYPEALIGN_DOWN(AMQ_HUGE_PAGE_BYTES, (uintptr_t) p + len);

	if (len >= AMQ_HUGE_PAGE_MIN_BYTES && end > start)
		(void) madvise((void *) start, end - start, MADV_HUGEPAGE);
#else
	(void) p;
	(void) len;
#endif
}

/* A palloc'd varlena for len bytes of data, to fill and return to SQL. */
struct varlena *
amq_varlena_alloc(size_t len)
{
	struct varlena *result = palloc(VARHDRSZ + len);

	amq_hint_huge_pages(result, VARHDRSZ + len);
	SET_VARSIZE(result, VARHDRSZ + len);
	return result;
}

/*
 * Memory for a filter that will be written at random, in cxt: with the
 * huge-page hint for large ones, given before any of it is touched.
 */
void *
amq_alloc_filter(MemoryContext cxt, size_t bytes)
{
	void	   *p = MemoryContextAlloc(cxt, bytes);

	amq_hint_huge_pages(p, bytes);
	return p;
}

/* A palloc'd varlena holding a copy of len bytes, to return to SQL. */
struct varlena *
amq_varlena_copy(const void *data, size_t len)
{
	struct varlena *result = amq_varlena_alloc(len);

	memcpy(VARDATA(result), data, len);
	return result;
}

/* The bytes amq_alloc_aligned requests for a filter of bytes. */
size_t
amq_aligned_request(size_t bytes)
{
	return bytes + (bytes >= AMQ_HUGE_PAGE_MIN_BYTES ?
					AMQ_HUGE_PAGE_BYTES : AMQ_CACHE_LINE);
}

/*
 * Room for a serialized filter of the given size in cxt, placed so that
 * what follows its header_size-byte header starts on a cache-line boundary:
 * then each 512-bit block of a blocked bloom filter is one cache line.
 * Returns the filter's start; *alloc is what to pfree.
 *
 * A filter large enough for huge pages starts its array on a 2 MB
 * boundary instead, so that the hint covers all of it but the last partial
 * page: from a line-aligned start, up to 2 MB at each end stayed in 4 kB
 * pages, half of a 4 MB filter.  The extra address space is never touched.
 */
uint8 *
amq_alloc_aligned(MemoryContext cxt, size_t bytes, size_t header_size,
				  void **alloc)
{
	size_t		align = amq_aligned_request(bytes) - bytes;
	char	   *raw = MemoryContextAllocHuge(cxt, bytes + align);
	uintptr_t	data = TYPEALIGN(align, (uintptr_t) raw + header_size);

	amq_hint_huge_pages(raw, bytes + align);

	*alloc = raw;
	return (uint8 *) (data - header_size);
}
