/*
 * amq_bloom_layout.h
 *		The counting and d-left layouts of the bloom format, as seen by
 *		amq_bloom.c, and what the bloom files share (internal to the core).
 *
 * amq_bloom.c owns the header, the validator and the public entry points,
 * amq_bloom_size.c the sizing of the bit layouts; for a layout that stores
 * more than bits amq_bloom.c dispatches to that layout's own file
 * (amq_bloom_counting.c, amq_bloom_dleft.c), which works on the array only.
 * The header's count and family stay amq_bloom.c's business.
 */
#ifndef AMQ_BLOOM_LAYOUT_H
#define AMQ_BLOOM_LAYOUT_H

#include "amq_bloom.h"

/* largest bit array the size limit allows, in bits */
#define AMQ_BLOOM_MAX_NBITS	((uint64_t) (AMQ_BLOOM_MAX_BYTES - AMQ_BLOOM_HEADER_SIZE) * 8)

/*
 * x^k for a small positive integer k, by squaring: exact enough, no pow().
 * The sizing models and the statistics' estimates both raise a fill to k.
 */
static inline double
amq_ipow(double x, unsigned k)
{
	double		r = 1.0;

	while (k)
	{
		if (k & 1)
			r *= x;
		x *= x;
		k >>= 1;
	}
	return r;
}

/* amq_bloom_counting.c */
extern void amq_counting_add(const amq_bloom_view *view, uint64_t hash);
extern uint64_t amq_counting_min(const amq_bloom_view *view, uint64_t hash);
extern bool amq_counting_delete(const amq_bloom_view *view, uint64_t hash);
extern void amq_counting_merge(amq_bloom_view *dst, const amq_bloom_view *src,
							   size_t from, size_t to, bool intersect);
extern void amq_counting_stats(const amq_bloom_view *view,
							   amq_bloom_stats_acc *acc, size_t from, size_t to);

/* amq_bloom_dleft.c */
extern amq_status amq_dleft_size(double n, double p, uint64_t max_nbits,
								 amq_bloom_params *out);
extern bool amq_dleft_geometry(uint32_t fp_bits, uint64_t nbits,
							   uint64_t *buckets);
extern void amq_dleft_consts_init(amq_dleft_consts *c, uint64_t buckets,
								  uint32_t fp_bits);
extern uint64_t amq_dleft_mulmod(const amq_dleft_consts *c, uint64_t a,
								 uint64_t b);
extern uint64_t amq_dleft_permute(const amq_dleft_consts *c, int t, uint64_t v);
extern int	amq_dleft_scan_bucket(const amq_bloom_view *view,
								  const uint8_t *bucket, uint64_t fp,
								  unsigned *load);

extern amq_status amq_dleft_add(const amq_bloom_view *view, uint64_t hash);
extern amq_status amq_dleft_add_many(const amq_bloom_view *view,
									 const uint64_t *hashes, size_t count,
									 size_t *done);
extern uint64_t amq_dleft_counter(const amq_bloom_view *view, uint64_t hash);
extern bool amq_dleft_contains(const amq_bloom_view *view, uint64_t hash);
extern bool amq_dleft_delete(const amq_bloom_view *view, uint64_t hash);
extern amq_status amq_dleft_merge(amq_bloom_view *dst, const amq_bloom_view *src,
								  size_t from, size_t to, bool intersect);
extern void amq_dleft_stats(const amq_bloom_view *view,
							amq_bloom_stats_acc *acc, size_t from, size_t to);
extern double amq_dleft_fpr(const amq_bloom_view *view, uint64_t cells_used);

#endif							/* AMQ_BLOOM_LAYOUT_H */
