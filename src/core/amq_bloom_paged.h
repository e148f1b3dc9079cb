/*
 * amq_bloom_paged.h
 *		The blocked bloom layout spread over fixed-size pages, in
 *		generations: the geometry behind the amqfilter index access method.
 *
 * Plain C99, no PostgreSQL headers.  An index holds its values in one or
 * more generations, each a blocked bloom filter (amq_bloom_block.h) whose
 * 64-byte blocks are laid out blocks_per_page to a page, so that a key's
 * block, and all of its k bits, lie on one page: a probe reads one page
 * per generation.
 *
 * A generation is sized for a capacity (distinct values) at its share of
 * the index's false-positive rate p: generation i gets p * (1 - r) * r^i,
 * r = AMQ_PAGED_RATE_RATIO, so that however many generations an index
 * grows, the rate of "maybe" for an absent value, at most the sum of the
 * generations' rates, stays at or under p (scalable bloom filters, Almeida
 * et al. 2007).  Each generation holds AMQ_PAGED_GROWTH times its
 * predecessor's capacity.  r = 1/2 with growth 4 costs each generation
 * about 1.4 bits a key more than the one before (blocked layout: 11.5 bits
 * at p = 0.5%, 27 at generation 8); r = 1/5, as a first version had, cost
 * 3.3 and drove the 13th generation past any size that can be allocated.
 *
 * A generation is full when the keys that set a bit in it (its count, which
 * the caller keeps) reach its capacity: the number of keys decides, not how
 * they fall on pages, so keys chosen to crowd one page cost no more growth
 * than any others.  Its rate of "maybe" then is at most its target.
 */
#ifndef AMQ_BLOOM_PAGED_H
#define AMQ_BLOOM_PAGED_H

#include <stdbool.h>
#include <stdint.h>

#include "amq_bloom_block.h"
#include "amq_bytes.h"
#include "amq_status.h"

/* each generation's rate is this share of its predecessor's */
#define AMQ_PAGED_RATE_RATIO	0.5
/* each generation's capacity is this many times its predecessor's */
#define AMQ_PAGED_GROWTH		4
/* generations an index may have (AMQ_PAGED_GROWTH^15 its first's capacity) */
#define AMQ_PAGED_MAX_GENS		16

/* A generation's geometry. */
typedef struct amq_paged_gen
{
	uint64_t	capacity;		/* distinct values it is sized for */
	double		p;				/* its target rate of "maybe" for absent values */
	uint32_t	hashes;			/* k */
	uint32_t	npages;
	uint32_t	blocks_per_page;
} amq_paged_gen;

/* The false-positive rate generation gen of an index at rate p is sized for. */
extern double amq_paged_gen_p(double p, unsigned gen);

/*
 * Sizes generation gen of an index at rate p for capacity values, in pages
 * of blocks_per_page blocks; AMQ_ERR_TOO_LARGE if it would need more than
 * max_pages pages.  Pages, not one allocation, hold it: no limit but
 * max_pages bounds its size.
 */
extern amq_status amq_paged_size(uint64_t capacity, double p, unsigned gen,
								 uint32_t blocks_per_page, uint32_t max_pages,
								 amq_paged_gen *out);

/* The page of the generation (0-based) and the block in it a key uses. */
/* blocks of an 8 kB page after a 64-byte header: what the index has */
#define AMQ_PAGED_BLOCKS_8K		127

static inline void
amq_paged_locate(const amq_paged_gen *g, uint64_t hash, uint32_t *page,
				 uint32_t *block)
{
	uint64_t	b = fastrange64(hash, (uint64_t) g->npages * g->blocks_per_page);
	uint64_t	q;

	/* a constant divisor is a multiplication, not a division */
	if (g->blocks_per_page == AMQ_PAGED_BLOCKS_8K)
		q = b / AMQ_PAGED_BLOCKS_8K;
	else
		q = b / g->blocks_per_page;
	*page = (uint32_t) q;
	*block = (uint32_t) (b - q * g->blocks_per_page);
}

/* Expected false-positive rate of a generation whose blocks are this full. */
extern double amq_paged_block_fpr(const uint8_t *block, unsigned hashes);

#endif							/* AMQ_BLOOM_PAGED_H */
