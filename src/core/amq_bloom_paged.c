/*
 * amq_bloom_paged.c
 *		Sizing the generations of the paged blocked bloom filter
 *		(amq_bloom_paged.h).
 *
 * A generation is the blocked layout's sizing (amq_bloom_size) for its
 * capacity at its share of the rate, rounded up to whole pages: the extra
 * blocks of the last page only lower its rate.
 */
#include <math.h>

#include "amq_bloom.h"
#include "amq_bloom_paged.h"
#include "amq_bytes.h"

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
	uint64_t	nblocks;
	uint64_t	npages;
	double		lambda;
	double		fill;

	if (blocks_per_page == 0 || gen >= AMQ_PAGED_MAX_GENS)
		return AMQ_ERR_GEOMETRY;
	if (capacity < 1)
		capacity = 1;
	out->p = amq_paged_gen_p(p, gen);
	status = amq_bloom_size(capacity, out->p, AMQ_BLOOM_LAYOUT_BLOCKED, &params);
	if (status != AMQ_OK)
		return status;
	nblocks = params.nbits / AMQ_BLOOM_BLOCK_BITS;
	npages = (nblocks + blocks_per_page - 1) / blocks_per_page;
	if (npages > max_pages)
		return AMQ_ERR_TOO_LARGE;

	out->capacity = capacity;
	out->hashes = params.hashes;
	out->npages = (uint32_t) npages;
	out->blocks_per_page = blocks_per_page;

	/*
	 * A block's keys are Poisson(lambda); j keys leave each bit clear with
	 * probability (1 - 1/512)^(jk), so the expected share of set bits is
	 * 1 - E[(1 - 1/512)^(kJ)] = 1 - exp(lambda ((1 - 1/512)^k - 1)).
	 */
	lambda = (double) capacity / (double) (npages * blocks_per_page);
	fill = 1.0 - exp(lambda * (exp((double) params.hashes * log1p(-1.0 / AMQ_BLOOM_BLOCK_BITS)) - 1.0));
	out->fill_limit = (uint32_t) floor(fill * (double) blocks_per_page * AMQ_BLOOM_BLOCK_BITS);
	if (out->fill_limit < 1)
		out->fill_limit = 1;
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
