/*
 * test_range_table.c
 *		Unit tests of a page's table of (fingerprint, range) entries
 *		(amq_range_table.h): every range a key was added with is found,
 *		duplicates take no room, a key in too many ranges becomes one
 *		"everywhere" entry, a page fills to its buckets and stash before it
 *		saturates, and a saturated page answers "everywhere" for every key;
 *		false matches at the rate the fingerprint bits give.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>

#include "harness.h"
#include "amq_hash.h"
#include "amq_range_table.h"

#define PAGE_BYTES	(8192 - 64)

typedef struct Page
{
	amq_rt_geom g;
	amq_rt_page hdr;
	uint32_t   *slots;
} Page;

static void
page_init(Page *p, uint32_t fp_bits)
{
	CHECK(amq_rt_geometry(PAGE_BYTES, fp_bits, &p->g));
	memset(&p->hdr, 0, sizeof(p->hdr));
	p->slots = xmalloc(sizeof(uint32_t) * amq_rt_slots(&p->g));
	memset(p->slots, 0, sizeof(uint32_t) * amq_rt_slots(&p->g));
}

static amq_rt_key
key_of(const Page *p, uint64_t h)
{
	return amq_rt_place(&p->g, amq_fmix64(h));
}

/* true if the key's lookup answers range (or everywhere) */
static bool
finds(const Page *p, uint64_t h, uint32_t range)
{
	uint32_t	ranges[64];
	int			n = amq_rt_lookup(&p->g, &p->hdr, p->slots, key_of(p, h), ranges, 64);
	int			i;

	if (n < 0)
		return true;
	for (i = 0; i < n && i < 64; i++)
		if (ranges[i] == range)
			return true;
	return false;
}

/* Geometry: an 8 kB page's buckets, the fingerprint bits for a rate. */
static void
test_geometry(void)
{
	amq_rt_geom g;

	CHECK(amq_rt_geometry(PAGE_BYTES, 12, &g));
	CHECK(g.nbuckets == 504);
	CHECK(amq_rt_slots(&g) * 4 <= PAGE_BYTES);
	CHECK(amq_rt_everywhere(&g) == (1u << 20) - 1);
	CHECK(!amq_rt_geometry(PAGE_BYTES, 7, &g));
	CHECK(!amq_rt_geometry(PAGE_BYTES, 25, &g));
	CHECK(!amq_rt_geometry(16, 12, &g));
	/* 8 entries compared in each of 4 generations, under 1% */
	CHECK(amq_rt_fp_bits_for(0.01, 4) == 12);
	CHECK(amq_rt_fp_bits_for(0.5, 1) == AMQ_RT_MIN_FP_BITS);
	CHECK(amq_rt_fp_bits_for(1e-9, 4) == AMQ_RT_MAX_FP_BITS);
}

/*
 * Filled to 95% of its slots with distinct keys, each in a range: every
 * key's range is found, the counts agree, the page is not saturated.
 */
static void
test_fill(void)
{
	Page		p;
	uint64_t	state = KEYS_SEED;
	uint32_t	n;
	uint32_t	i;
	uint32_t	target;

	page_init(&p, 12);
	target = (uint32_t) (0.95 * amq_rt_slots(&p.g));
	for (i = 0; i < target; i++)
	{
		uint64_t	h = splitmix64(&state);
		int			delta;
		amq_rt_result r = amq_rt_insert(&p.g, &p.hdr, p.slots, key_of(&p, h),
										(uint32_t) (h % 1000000), &delta);

		CHECK(r == AMQ_RT_ADDED || r == AMQ_RT_PRESENT || r == AMQ_RT_WIDENED);
	}
	CHECK(!(p.hdr.flags & AMQ_RT_SATURATED));
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	diag("%u entries of %u slots, %u in the stash", p.hdr.nentries,
		 amq_rt_slots(&p.g), p.hdr.nstash);
	CHECK(p.hdr.nentries >= target - 5);
	state = KEYS_SEED;
	n = 0;
	for (i = 0; i < target; i++)
	{
		uint64_t	h = splitmix64(&state);

		n += finds(&p, h, (uint32_t) (h % 1000000));
	}
	CHECK(n == target);
	free(p.slots);
}

/* A key added twice with a range, and in a second range. */
static void
test_duplicates_and_ranges(void)
{
	Page		p;
	amq_rt_key	k;
	int			delta;
	uint32_t	ranges[8];

	page_init(&p, 12);
	k = key_of(&p, 42);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 7, &delta) == AMQ_RT_ADDED);
	CHECK(delta == 1);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 7, &delta) == AMQ_RT_PRESENT);
	CHECK(delta == 0 && p.hdr.nentries == 1);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 9, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8) == 2);
	CHECK((ranges[0] == 7 && ranges[1] == 9) || (ranges[0] == 9 && ranges[1] == 7));
	CHECK(amq_rt_may_contain(&p.g, &p.hdr, p.slots, k));
	CHECK(!amq_rt_may_contain(&p.g, &p.hdr, p.slots, key_of(&p, 43)) ||
		  key_of(&p, 43).fp == k.fp);
	free(p.slots);
}

/* A key in more than AMQ_RT_MAX_RANGES ranges: one "everywhere" entry. */
static void
test_everywhere(void)
{
	Page		p;
	amq_rt_key	k;
	int			delta;
	uint32_t	r;
	uint32_t	ranges[8];

	page_init(&p, 12);
	k = key_of(&p, 4242);
	for (r = 0; r < AMQ_RT_MAX_RANGES; r++)
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, r, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8) == AMQ_RT_MAX_RANGES);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 100, &delta) == AMQ_RT_WIDENED);
	CHECK(delta == 1 - AMQ_RT_MAX_RANGES);
	CHECK(p.hdr.nentries == 1);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8) == -1);
	/* further ranges add nothing */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 200, &delta) == AMQ_RT_PRESENT);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	free(p.slots);
}

/*
 * Past its slots a page saturates, and then answers "everywhere" for every
 * key: no key added before or after is ever missed.
 */
static void
test_saturation(void)
{
	Page		p;
	uint64_t	state = KEYS_SEED;
	uint32_t	i;
	uint32_t	total = 0;
	bool		saturated = false;

	page_init(&p, 12);
	for (i = 0; i < 2 * amq_rt_slots(&p.g); i++)
	{
		uint64_t	h = splitmix64(&state);
		int			delta;

		if (amq_rt_insert(&p.g, &p.hdr, p.slots, key_of(&p, h), (uint32_t) i,
						  &delta) == AMQ_RT_NOW_SATURATED)
			saturated = true;
		total++;
	}
	CHECK(saturated && (p.hdr.flags & AMQ_RT_SATURATED));
	state = KEYS_SEED;
	for (i = 0; i < total; i++)
		CHECK(finds(&p, splitmix64(&state), i));
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, key_of(&p, 1), NULL, 0) == -1);
	free(p.slots);
}

/*
 * False matches: a page at 85% load, probed with absent keys, matches at
 * about 8 x load / 2^fp_bits (within three standard deviations).
 */
static void
test_false_matches(void)
{
	Page		p;
	uint64_t	state = KEYS_SEED;
	uint32_t	i;
	uint32_t	target;
	uint32_t	matches = 0;
	const uint32_t probes = 400000;
	double		expected;
	double		sd;

	page_init(&p, 12);
	target = (uint32_t) (0.85 * amq_rt_slots(&p.g));
	for (i = 0; i < target; i++)
	{
		int			delta;

		amq_rt_insert(&p.g, &p.hdr, p.slots, key_of(&p, splitmix64(&state)), 1, &delta);
	}
	state = ABSENT_SEED;
	for (i = 0; i < probes; i++)
		matches += amq_rt_may_contain(&p.g, &p.hdr, p.slots, key_of(&p, splitmix64(&state)));
	expected = probes * 8.0 * ((double) p.hdr.nentries / amq_rt_slots(&p.g)) / 4095.0;
	sd = sqrt(expected);
	diag("%u false matches of %u probes, %.0f expected", matches, probes, expected);
	CHECK(fabs(matches - expected) < 3 * sd + 5);
	free(p.slots);
}

/* The full check finds counts that disagree with the slots. */
static void
test_check(void)
{
	Page		p;
	int			delta;

	page_init(&p, 12);
	amq_rt_insert(&p.g, &p.hdr, p.slots, key_of(&p, 1), 1, &delta);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	p.hdr.nentries = 5;
	CHECK(!amq_rt_check(&p.g, &p.hdr, p.slots));
	p.hdr.nentries = 1;
	p.hdr.nstash = AMQ_RT_STASH_SLOTS + 1;
	CHECK(!amq_rt_check_header(&p.g, &p.hdr));
	p.hdr.nstash = 0;
	p.hdr.flags = 0x8000;
	CHECK(!amq_rt_check_header(&p.g, &p.hdr));
	free(p.slots);
}

static const amq_test tests[] = {
	{"geometry", test_geometry},
	{"fill to 95% without a miss", test_fill},
	{"duplicates and ranges", test_duplicates_and_ranges},
	{"a key in too many ranges is everywhere", test_everywhere},
	{"a saturated page answers everything", test_saturation},
	{"false matches", test_false_matches},
	{"page checks", test_check},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core range table");
}
