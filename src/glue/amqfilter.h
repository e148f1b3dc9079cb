/*
 * amqfilter.h
 *		The base of amqfilter's PostgreSQL glue: what every other glue file
 *		may use, and which itself uses nothing else of the glue.
 *
 * The glue (src/glue/) is what every filter type and feature shares.  It
 * uses only the core (src/core/, plain C), and its files are layered so
 * that calls run one way, from the bottom of this list to the top:
 *
 *	amqfilter.c			base: status codes -> errors, fmgr helpers
 *	filter_cache.c		type-independent glue (filter_glue.h), written once
 *	filter_access.c		against a descriptor of the filter type: the
 *	hashing.c			transaction's cache of stored filters, argument
 *	filter_io.c			access and the TOAST cache, hashing of Datums,
 *	filter_agg.c		text/binary I/O, aggregate plumbing, planner
 *	filter_agg_sizeless.c	estimates of probes, the overfill warning
 *	filter_overfill.c
 *	filter_selectivity.c
 *	filter_compare.c	equality, order and hashing of whole values
 *
 * A file calls only files above it.  The types (src/types/), the index
 * (src/index/) and the join filters (src/join/) build on the glue; nothing
 * here calls them (test/layers.py checks).
 */
#ifndef AMQFILTER_H
#define AMQFILTER_H

#include "postgres.h"

#include "glue/pg_compat.h"
#include "fmgr.h"
#include "nodes/nodes.h"
#include "utils/memutils.h"

#include "core/amq_read.h"
#include "core/amq_status.h"

/*
 * Where untrusted bytes entered: decides the errcode of a validation
 * failure.  Text and binary input are the user's mistake; a stored value that
 * fails the check is corruption.
 */
typedef enum AmqGate
{
	AMQ_GATE_TEXT,				/* type input function */
	AMQ_GATE_BINARY,			/* recv, cast from bytea, aggregate deserialize */
	AMQ_GATE_STORED				/* any other read of a value */
} AmqGate;

/*
 * Bytes of work between interrupt checks in loops over a whole filter.  A
 * multiple of 64 (block size) and of 3 (base64 groups).
 */
#define AMQ_SLICE_BYTES		(1024 * 1024 * 3)

/*
 * The largest filter amqfilter builds: one whose text form (base64, four
 * characters per three bytes) still fits in a 1 GB value with a megabyte to
 * spare for the other columns of its row, so that text COPY and pg_dump can
 * always write it.  The validators accept up to the core's 1 GB limits, so
 * larger values written by 0.1 are still read (see amq_filter_out).
 */
#define AMQ_MAX_FILTER_BYTES	((size_t) (MaxAllocSize - 1024 * 1024) / 4 * 3)

/* Owned filters put their data on this boundary (one blocked-bloom block). */
#define AMQ_CACHE_LINE		64

/*
 * What the type-independent glue needs to know about a filter type: its
 * name, its serialized format and the core's view of an opened value.
 */
typedef struct AmqFormat
{
	const char *name;			/* SQL type name */
	int			version;		/* format version this build reads */
	size_t		header_size;	/* owned copies align the data after it */
	size_t		view_size;		/* sizeof the core's view struct */
	/* the type's one core validator: fills *view on success */
	amq_status	(*open) (const uint8 *buf, size_t len, void *view);
	/* the same validator reading the value through read (amq_read.h) */
	amq_status	(*open_read) (amq_read_fn read, void *ctx, size_t len,
							  void *view);
	/* reads open_read makes, from the (unvalidated) header's counts */
	uint64		(*open_reads) (const uint8 *header);
	/* whether a view opened so can be probed through reads */
	bool		(*probe_reads) (const void *view);
	/* true for the sizeless empty filter, what aggregates over no rows give */
	bool		(*is_empty) (const void *view);
	/* writes the sizeless empty filter, header_size bytes */
	void		(*init_empty) (uint8 *buf);
} AmqFormat;

/*
 * How a probe reads a filter stored out of line, uncompressed
 * (amqfilter.probe_read; see filter_access.c): slices while they are
 * cheaper, then the whole value once (auto), always slices, or always the
 * whole value (what versions before 0.2 did).
 */
typedef enum AmqProbeRead
{
	AMQ_PROBE_READ_AUTO,
	AMQ_PROBE_READ_SLICES,
	AMQ_PROBE_READ_WHOLE
} AmqProbeRead;

extern int	amq_probe_read;
extern void amq_glue_init(void);

/* amqfilter.c: mapping core status codes to errors */
extern bool amq_report_invalid(const AmqFormat *format, amq_status status,
							   AmqGate gate, Node *escontext);
extern void amq_open_or_error(const AmqFormat *format, const void *data,
							  size_t len, AmqGate gate, void *view);
extern void amq_open_own(const AmqFormat *format, const void *data, size_t len,
						 void *view);
extern struct varlena *amq_filter_copy(const AmqFormat *format, const void *data,
									   size_t len, void *copy);
extern struct varlena *amq_empty_varlena(const AmqFormat *format);
pg_noreturn extern void amq_report_sizing(const AmqFormat *format, amq_status status,
										  int64 n, double p, const char *hint);
extern const char *amq_format_p(double p);

/*
 * A count from a filter header as a bigint: counts above its range (only a
 * crafted value holds one) show as its maximum, never as a negative number.
 */
static inline int64
amq_count_to_int64(uint64 count)
{
	return count > (uint64) PG_INT64_MAX ? PG_INT64_MAX : (int64) count;
}

/* amqfilter.c: fmgr and memory helpers */
extern Datum amq_return_record(FunctionCallInfo fcinfo, Datum *values,
							   bool *nulls);
extern MemoryContext amq_aggregate_context(FunctionCallInfo fcinfo,
										   const char *fname);
extern struct varlena *amq_varlena_alloc(size_t len);
extern struct varlena *amq_varlena_copy(const void *data, size_t len);
extern uint8 *amq_alloc_aligned(MemoryContext cxt, size_t bytes,
								size_t header_size, void **alloc);
extern size_t amq_aligned_request(size_t bytes);
extern void *amq_alloc_filter(MemoryContext cxt, size_t bytes);
extern void amq_hint_huge_pages(void *p, size_t len);

#endif							/* AMQFILTER_H */
