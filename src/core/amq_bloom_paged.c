/*
 * amq_bloom_paged.c
 *		Sizing the generations of the paged blocked bloom filter
 *		(amq_bloom_paged.h).
 *
 * A generation is the blocked layout's sizing (amq_bloom_size) for its
 * capacity at its share of the rate, rounded up to whole pages: the extra
 * blocks of the last page only lower its rate.  Past AMQ_PAGED_SIZE_UNIT
 * values the blocks are those of AMQ_PAGED_SIZE_UNIT values, scaled: the
 * blocked layout's bits per key do not change with n at that size, and
 * amq_bloom_size would refuse what one allocation cannot hold.
 */
#include <math.h>

#include "amq_bloom.h"
#include "amq_bloom_paged.h"
#include "amq_bytes.h"

#define AMQ_PAGED_SIZE_UNIT		(UINT64_C(1) << 20)

double
amq_paged_gen_p(double p, unsigned gen)
{
	double		share = p * (1.0 - AMQ_PAGED_RATE_RATIO);
	unsigned	i;

	for (i = 0; i < gen; i++)
		share *= AMQ_PAGED_RATE_RATIO;
	return share;
}

amq_status
amq_paged_size(uint64_t capacity, double p, unsigned gen,
			   uint32_t blocks_per_page, uint32_t max_pages, amq_paged_gen *out)
{
	amq_bloom_params params;
	amq_status	status;
	uint64_t	unit;
	double		nblocks;
	double		npages;

	if (blocks_per_page == 0 || gen >= AMQ_PAGED_MAX_GENS)
		return AMQ_ERR_GEOMETRY;
	if (capacity < 1)
		capacity = 1;
	out->p = amq_paged_gen_p(p, gen);
	unit = capacity < AMQ_PAGED_SIZE_UNIT ? capacity : AMQ_PAGED_SIZE_UNIT;
	status = amq_bloom_size(unit, out->p, AMQ_BLOOM_LAYOUT_BLOCKED, &params);
	if (status != AMQ_OK)
		return status;
	nblocks = ceil((double) (params.nbits / AMQ_BLOOM_BLOCK_BITS) *
				   ((double) capacity / (double) unit));
	npages = ceil(nblocks / blocks_per_page);
	if (!(npages <= (double) max_pages))
		return AMQ_ERR_TOO_LARGE;

	out->capacity = capacity;
	out->hashes = params.hashes;
	out->npages = (uint32_t) npages;
	out->blocks_per_page = blocks_per_page;
	return AMQ_OK;
}

double
amq_paged_block_fpr(const uint8_t *block, unsigned hashes)
{
	unsigned	set = 0;
	unsigned	i;
	double		fill;
	double		r = 1.0;

	for (i = 0; i < AMQ_BLOCK_BYTES; i += 8)
		set += (unsigned) amq_popcount64(load_word(block + i));
	fill = (double) set / AMQ_BLOOM_BLOCK_BITS;
	for (i = 0; i < hashes; i++)
		r *= fill;
	return r;
}
