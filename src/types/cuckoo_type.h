/*
 * cuckoo_type.h
 *		The cuckoo type's own glue: its descriptors, opening its arguments,
 *		the growable memory it owns, merging and mismatch errors
 *		(cuckoo_type.c).  Used by cuckoo_ops.c and cuckoo_agg.c.
 */
#ifndef CUCKOO_TYPE_H
#define CUCKOO_TYPE_H

#include "glue/filter_glue.h"

extern const AmqFormat amq_cuckoo_format;

/*
 * A cuckoo filter the glue owns, in a varlena with room to grow (see
 * cuckoo_type.c).
 */
typedef struct AmqCuckooBuffer
{
	amq_cuckoo_view view;		/* of the filter in value; first: the buffer
								 * is its view (filter_agg.c) */
	struct varlena *value;		/* palloc'd in cxt; VARDATA holds the filter */
	size_t		room;			/* bytes available after the varlena header */
	MemoryContext cxt;
} AmqCuckooBuffer;

/* The sizeless empty filter: what aggregates return over zero rows. */
static inline bool
amq_cuckoo_is_empty(const amq_cuckoo_view *view)
{
	return view->tables == 0;
}

/* Opens cuckoo argument argno (see amq_filter_open_arg). */
static inline void
amq_cuckoo_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			   amq_cuckoo_view *view)
{
	amq_filter_open_arg(fcinfo, argno, cache, &amq_cuckoo_format, view);
}

extern void amq_cuckoo_size_or_error(int64 n, double p,
									 amq_cuckoo_params *params);
extern void amq_cuckoo_buffer_new(AmqCuckooBuffer *buf, MemoryContext cxt,
								  int64 n, double p);
extern void amq_cuckoo_buffer_copy(AmqCuckooBuffer *buf, MemoryContext cxt,
								   const amq_cuckoo_view *src, size_t extra);
extern void amq_cuckoo_buffer_add_many(AmqCuckooBuffer *buf,
									   const uint64 *hashes, size_t count,
									   uint32 family);
extern void amq_cuckoo_buffer_merge(AmqCuckooBuffer *buf,
									const amq_cuckoo_view *src);
extern struct varlena *amq_cuckoo_buffer_finish(AmqCuckooBuffer *buf);
/*
 * A palloc'd varlena holding a copy of the filter, to return to SQL; if copy
 * is not NULL, it is set to a view of the copy, to change it first (in ways
 * that do not grow it).
 */
static inline struct varlena *
amq_cuckoo_to_varlena(const amq_cuckoo_view *src, amq_cuckoo_view *copy)
{
	return amq_filter_copy(&amq_cuckoo_format, src->base, src->bytes, copy);
}

/* cuckoo_ops.c */
extern void amq_cuckoo_warn_if_overfilled(const void *filter);
pg_noreturn extern void amq_report_cuckoo_mismatch(amq_status status,
												   const amq_cuckoo_view *a,
												   const amq_cuckoo_view *b);

#endif							/* CUCKOO_TYPE_H */
