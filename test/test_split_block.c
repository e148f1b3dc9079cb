/*
 * test_split_block.c
 *		The split block Bloom filter of runtime join filters
 *		(amq_split_block.h): no key added is ever missed, and the rate of
 *		"maybe" for keys never added stays at what 12 bits a key give.
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "amq_split_block.h"

#define BITS_PER_KEY 12.0
#define ABSENT_PROBES 1000000

static bool
make(amq_split_block *f, uint64_t n)
{
	f->nblocks = amq_split_block_blocks(n, BITS_PER_KEY);
	f->words = calloc(f->nblocks, AMQ_SPLIT_BLOCK_BYTES);
	CHECK(f->words != NULL);
	return f->words != NULL;
}

/* n keys: every one found; the rate over a million absent keys */
static double
fill_and_probe(uint64_t n)
{
	amq_split_block f;
	uint64_t	state = KEYS_SEED;
	uint64_t	i;
	uint64_t	maybe = 0;
	uint64_t	missed = 0;

	if (!make(&f, n))
		return 1.0;
	for (i = 0; i < n; i++)
		amq_split_block_add(&f, splitmix64(&state));
	state = KEYS_SEED;
	for (i = 0; i < n; i++)
		missed += !amq_split_block_may_contain(&f, splitmix64(&state));
	CHECK(missed == 0);
	state = ABSENT_SEED;
	for (i = 0; i < ABSENT_PROBES; i++)
		maybe += amq_split_block_may_contain(&f, splitmix64(&state));
	free(f.words);
	return (double) maybe / ABSENT_PROBES;
}

static void
test_no_false_negatives_and_rate(void)
{
	static const uint64_t sizes[] = {1, 10, 1000, 100000, 1000000, 4000000};
	size_t		i;

	for (i = 0; i < lengthof(sizes); i++)
	{
		double		rate = fill_and_probe(sizes[i]);

		diag("%llu keys, %.0f bits a key: rate %.4f", (unsigned long long) sizes[i],
			 BITS_PER_KEY, rate);
		/* 12 bits a key in 256-bit blocks of 8 words: about 0.55% */
		CHECK(rate <= 0.007);
	}
}

/* An empty filter says "no" to everything; a full one "maybe". */
static void
test_empty_and_full(void)
{
	amq_split_block f;
	uint64_t	state = ABSENT_SEED;
	int			i;

	if (!make(&f, 1000))
		return;
	for (i = 0; i < 1000; i++)
		CHECK(!amq_split_block_may_contain(&f, splitmix64(&state)));
	memset(f.words, 0xff, f.nblocks * AMQ_SPLIT_BLOCK_BYTES);
	for (i = 0; i < 1000; i++)
		CHECK(amq_split_block_may_contain(&f, splitmix64(&state)));
	free(f.words);
}

/*
 * A key differing in one bit of the low half (the bits chosen) or of the
 * top of the high half (the block chosen) is a different key.  (The low
 * bits of the high half barely move the block: the hash must be mixed, as
 * PostgreSQL's extended hash functions are.)
 */
static void
test_both_halves_used(void)
{
	amq_split_block f;
	uint64_t	key = UINT64_C(0x0123456789abcdef);
	int			b;
	int			maybe = 0;

	if (!make(&f, 100000))
		return;
	amq_split_block_add(&f, key);
	for (b = 0; b < 32; b++)
		maybe += amq_split_block_may_contain(&f, key ^ (UINT64_C(1) << b));
	for (b = 52; b < 64; b++)
		maybe += amq_split_block_may_contain(&f, key ^ (UINT64_C(1) << b));
	/* one key in 1.2 Mbit: a neighbour says "maybe" only by chance */
	CHECK(maybe <= 1);
	free(f.words);
}

static const amq_test tests[] = {
	{"no false negatives, rate at 12 bits a key", test_no_false_negatives_and_rate},
	{"empty and full filters", test_empty_and_full},
	{"both halves of the hash used", test_both_halves_used},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core split block");
}
