/*
 * bloom_type.h
 *		The bloom type's own glue: its descriptors, opening its arguments,
 *		the memory it owns, merging, layouts and mismatch errors
 *		(bloom_type.c).  Used by bloom_ops.c and bloom_agg.c.
 */
#ifndef BLOOM_TYPE_H
#define BLOOM_TYPE_H

#include "glue/filter_glue.h"

extern const AmqFormat amq_bloom_format;

/*
 * A bloom filter the glue owns (aggregate states, copies being changed),
 * its bits on a cache-line boundary.
 */
typedef struct AmqBloomBuffer
{
	amq_bloom_view view;		/* first: the buffer is its view (filter_agg.c) */
	void	   *alloc;			/* what to pfree */
} AmqBloomBuffer;

/* The sizeless empty filter: what aggregates return over zero rows. */
static inline bool
amq_bloom_is_empty(const amq_bloom_view *view)
{
	return view->layout == AMQ_BLOOM_LAYOUT_EMPTY;
}

/* Opens bloom argument argno (see amq_filter_open_arg). */
static inline void
amq_bloom_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			  amq_bloom_view *view)
{
	amq_filter_open_arg(fcinfo, argno, cache, &amq_bloom_format, view);
}

extern void amq_bloom_size_or_error(int64 n, double p, int layout,
									amq_bloom_params *params);
extern void amq_bloom_buffer_new(AmqBloomBuffer *buf, MemoryContext cxt,
								 int64 n, double p, int layout);
extern void amq_bloom_buffer_copy(AmqBloomBuffer *buf, MemoryContext cxt,
								  const amq_bloom_view *src);
/*
 * A palloc'd varlena holding a copy of the filter, to return to SQL; if copy
 * is not NULL, it is set to a view of the copy, to change it first.
 */
static inline struct varlena *
amq_bloom_to_varlena(const amq_bloom_view *src, amq_bloom_view *copy)
{
	return amq_filter_copy(&amq_bloom_format, src->base,
						   amq_bloom_total_bytes(src), copy);
}

extern void amq_bloom_merge(amq_bloom_view *dst, const amq_bloom_view *src,
							bool intersect);
extern void amq_bloom_add_or_error(amq_bloom_view *view, const uint64 *hashes,
								   int count, uint32 family);
pg_noreturn extern void amq_report_bloom_full(void);
/* bloom_ops.c */
extern void amq_bloom_warn_if_overfilled(const void *filter);
extern int	amq_bloom_parse_layout(text *layout);
extern const char *amq_bloom_layout_name(int layout);
pg_noreturn extern void amq_report_bloom_mismatch(amq_status status,
												  const amq_bloom_view *a,
												  const amq_bloom_view *b);

#endif							/* BLOOM_TYPE_H */
