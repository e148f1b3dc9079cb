/*
 * test_bloom_paged.c
 *		Unit tests of the paged blocked bloom filter (amq_bloom_paged.h), the
 *		geometry of the amqfilter index: the rate budget across generations,
 *		sizing (also past what one allocation holds), where keys go, and that
 *		a generation filled to its capacity answers "maybe" for absent keys at
 *		no more than its rate.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "harness.h"
#include "amq_bloom.h"
#include "amq_bloom_paged.h"

#define BPP 127					/* blocks per 8 kB page, as the index has */

/* The generations' shares of p sum to less than p, however many there are. */
static void
test_rate_budget(void)
{
	double		sum = 0.0;
	unsigned	i;

	for (i = 0; i < AMQ_PAGED_MAX_GENS; i++)
	{
		double		g = amq_paged_gen_p(0.01, i);

		CHECK(g > 0.0);
		if (i > 0)
			CHECK(g < amq_paged_gen_p(0.01, i - 1));
		sum += g;
	}
	CHECK(sum <= 0.01);
	CHECK(sum > 0.0099);
}

/*
 * Sizing: whole pages, k in range, the page limit respected; every
 * generation an index may have can be sized, even at the lowest rate an
 * index takes, for capacities past what one allocation holds (4^15 * 4096
 * values is what an index built empty reaches at its last generation), at
 * bits per key that grow by generation, not with the capacity.
 */
static void
test_sizing(void)
{
	amq_paged_gen g;
	uint64_t	n;
	unsigned	gen;
	double		last_bits = 0.0;

	for (n = 1; n <= 10000000; n *= 10)
	{
		CHECK_STATUS(amq_paged_size(n, 0.01, 0, BPP, 1u << 30, &g), AMQ_OK);
		CHECK(g.npages >= 1);
		CHECK(g.hashes >= 1 && g.hashes <= AMQ_BLOOM_MAX_HASHES);
		CHECK(g.capacity == n);
	}
	for (gen = 0; gen < AMQ_PAGED_MAX_GENS; gen++)
	{
		double		bits;

		CHECK_STATUS(amq_paged_size(UINT64_C(1) << 30, 1e-6, gen, BPP, 0xFFFFFFFEu, &g),
					 AMQ_OK);
		bits = (double) g.npages * BPP * 512 / (double) (UINT64_C(1) << 30);
		CHECK(bits > last_bits);
		CHECK(bits < 130.0);
		last_bits = bits;
	}
	/* 2^30 values at 1e-6: 5 GB, more than one allocation may be */
	CHECK_STATUS(amq_paged_size(UINT64_C(1) << 30, 1e-6, 0, BPP, 0xFFFFFFFEu, &g), AMQ_OK);
	CHECK((double) g.npages * 8192 > 4e9);
	CHECK_STATUS(amq_paged_size(10000000, 0.01, 0, BPP, 10, &g), AMQ_ERR_TOO_LARGE);
	CHECK_STATUS(amq_paged_size(100, 0.01, AMQ_PAGED_MAX_GENS, BPP, 1000, &g),
				 AMQ_ERR_GEOMETRY);
	CHECK_STATUS(amq_paged_size(100, 3.0, 0, BPP, 1000, &g), AMQ_ERR_PARAM_P);
}

/* Keys go to the page and block fastrange maps them to, in hash order. */
static void
test_locate(void)
{
	amq_paged_gen g;
	uint64_t	state = KEYS_SEED;
	uint32_t	last_page = 0;
	uint64_t	last_hash = 0;
	int			i;

	CHECK_STATUS(amq_paged_size(100000, 0.01, 0, BPP, 1u << 30, &g), AMQ_OK);
	for (i = 0; i < 100000; i++)
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	page,
					block;

		amq_paged_locate(&g, h, &page, &block);
		CHECK(page < g.npages && block < BPP);
	}
	/* monotonic: sorted hashes fill the pages in order (the build relies on it) */
	for (i = 0; i <= 1000; i++)
	{
		uint64_t	h = last_hash + (UINT64_MAX / 1001);
		uint32_t	page,
					block;

		amq_paged_locate(&g, h, &page, &block);
		CHECK(page >= last_page);
		last_page = page;
		last_hash = h;
	}
}

/*
 * A generation filled with its capacity of keys: no false negative, and a
 * rate of "maybe" for absent keys at its target (within three standard deviations of 200,000 probes).
 */
static void
test_fill_and_rate(void)
{
	const uint64_t n = 50000;
	const double p = 0.01;
	amq_paged_gen g;
	uint8_t    *bits;
	uint64_t	state = KEYS_SEED;
	uint64_t	i;
	uint64_t	maybe = 0;
	double		rate;
	double		bound;

	CHECK_STATUS(amq_paged_size(n, p, 0, BPP, 1u << 30, &g), AMQ_OK);
	bits = xmalloc((size_t) g.npages * BPP * AMQ_BLOCK_BYTES);
	memset(bits, 0, (size_t) g.npages * BPP * AMQ_BLOCK_BYTES);
	for (i = 0; i < n; i++)
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	page,
					block;

		amq_paged_locate(&g, h, &page, &block);
		amq_block_set(bits + ((size_t) page * BPP + block) * AMQ_BLOCK_BYTES,
					  amq_fmix64(h), g.hashes);
	}
	state = KEYS_SEED;
	for (i = 0; i < n; i++)
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	page,
					block;

		amq_paged_locate(&g, h, &page, &block);
		CHECK(amq_block_test(bits + ((size_t) page * BPP + block) * AMQ_BLOCK_BYTES,
							 amq_fmix64(h), g.hashes));
	}
	state = ABSENT_SEED;
	for (i = 0; i < 200000; i++)
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	page,
					block;

		amq_paged_locate(&g, h, &page, &block);
		maybe += amq_block_test(bits + ((size_t) page * BPP + block) * AMQ_BLOCK_BYTES,
								amq_fmix64(h), g.hashes);
	}
	rate = (double) maybe / 200000.0;
	bound = g.p + 3.0 * sqrt(g.p * (1.0 - g.p) / 200000.0);
	diag("%u pages, k = %u; rate %.5f, target %.5f", g.npages,
		 g.hashes, rate, g.p);
	CHECK(rate <= bound);
	free(bits);
}

/* A page's blocks are the blocked layout's blocks: the same bits for a key. */
static void
test_same_blocks_as_bloom(void)
{
	amq_bloom_params params;
	amq_bloom_view view;
	uint8_t    *buf;
	uint8_t		block[AMQ_BLOCK_BYTES];
	uint64_t	h = UINT64_C(0x0123456789abcdef);

	/* a blocked filter of one block: every key in block 0 */
	CHECK_STATUS(amq_bloom_size(1, 0.01, AMQ_BLOOM_LAYOUT_BLOCKED, &params), AMQ_OK);
	buf = xmalloc(params.bytes);
	amq_bloom_init(buf, &params, 1, 0.01, AMQ_BLOOM_DEFAULT_SEED);
	CHECK_STATUS(amq_bloom_open(buf, params.bytes, &view), AMQ_OK);
	CHECK(view.nblocks == 1);
	CHECK_STATUS(amq_bloom_add(&view, h, 1), AMQ_OK);
	memset(block, 0, sizeof(block));
	CHECK(amq_block_set(block, amq_fmix64(h), params.hashes) == params.hashes ||
		  params.hashes > 1);
	CHECK(memcmp(block, buf + AMQ_BLOOM_HEADER_SIZE, AMQ_BLOCK_BYTES) == 0);
	/* setting again adds nothing */
	CHECK(amq_block_set(block, amq_fmix64(h), params.hashes) == 0);
	free(buf);
}

static const amq_test tests[] = {
	{"rate budget across generations", test_rate_budget},
	{"generation sizing", test_sizing},
	{"key placement", test_locate},
	{"fill to capacity and rate", test_fill_and_rate},
	{"pages hold the blocked layout's blocks", test_same_blocks_as_bloom},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core bloom paged");
}
