/*
 * test_range_table.c
 *		Unit tests of a page's table of (fingerprint, range) entries
 *		(amq_range_table.h): every range a key was added with is found,
 *		duplicates take no room, a key in too many ranges becomes one
 *		"everywhere" entry, or with spans a span of its first to its last
 *		range, a page fills to its buckets and stash before it saturates,
 *		and a saturated page answers "everywhere" for every key; false
 *		matches at the rate the fingerprint bits give.
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
page_init_spans(Page *p, uint32_t fp_bits, uint32_t spans)
{
	CHECK(amq_rt_geometry(PAGE_BYTES, fp_bits, &p->g));
	p->g.spans = spans;
	memset(&p->hdr, 0, sizeof(p->hdr));
	p->slots = xmalloc(sizeof(uint32_t) * amq_rt_slots(&p->g));
	memset(p->slots, 0, sizeof(uint32_t) * amq_rt_slots(&p->g));
}

static void
page_init(Page *p, uint32_t fp_bits)
{
	page_init_spans(p, fp_bits, 0);
}

static amq_rt_key
key_of(const Page *p, uint64_t h)
{
	return amq_rt_place(&p->g, amq_fmix64(h));
}

/*
 * true if the key's lookup answers range (its entry, its span, or
 * everywhere); amq_rt_holds must say the same
 */
static bool
finds(const Page *p, uint64_t h, uint32_t range)
{
	uint32_t	ranges[64];
	amq_rt_span span;
	int			n = amq_rt_lookup(&p->g, &p->hdr, p->slots, key_of(p, h), ranges, 64, &span);
	bool		found = n < 0 || (span.lo <= range && range <= span.hi);
	int			i;

	for (i = 0; !found && i < n && i < 64; i++)
		found = ranges[i] == range;
	CHECK(found == amq_rt_holds(&p->g, &p->hdr, p->slots, key_of(p, h), range));
	return found;
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
	CHECK(amq_rt_ranges(&g) == (1u << 20) - 1);
	/* with spans, the top bit of a range marks a span's end */
	g.spans = 1;
	CHECK(amq_rt_ranges(&g) == (1u << 19) - 1);
	g.spans = 0;
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
	amq_rt_span span;

	page_init(&p, 12);
	k = key_of(&p, 42);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 7, &delta) == AMQ_RT_ADDED);
	CHECK(delta == 1);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 7, &delta) == AMQ_RT_PRESENT);
	CHECK(delta == 0 && p.hdr.nentries == 1);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 9, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == 2);
	CHECK(span.lo > span.hi);
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
	amq_rt_span span;

	page_init(&p, 12);
	k = key_of(&p, 4242);
	for (r = 0; r < AMQ_RT_MAX_RANGES; r++)
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, r, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == AMQ_RT_MAX_RANGES);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 100, &delta) == AMQ_RT_WIDENED);
	CHECK(delta == 1 - AMQ_RT_MAX_RANGES);
	CHECK(p.hdr.nentries == 1);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == -1);
	/* further ranges add nothing */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 200, &delta) == AMQ_RT_PRESENT);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	free(p.slots);
}

/* The ranges a lookup of the key reads: its ranges and its span's. */
static uint32_t
reads(const Page *p, amq_rt_key k)
{
	uint32_t	ranges[64];
	amq_rt_span span;
	int			n = amq_rt_lookup(&p->g, &p->hdr, p->slots, k, ranges, 64, &span);

	CHECK(n >= 0);
	return (uint32_t) n + (span.lo <= span.hi ? span.hi - span.lo + 1 : 0);
}

/*
 * With spans, a key in more than AMQ_RT_MAX_RANGES ranges keeps a span and
 * up to AMQ_RT_SPAN_BESIDE ranges beside it, whichever reads fewest ranges;
 * a range inside adds nothing; "everywhere" replaces it all.
 */
static void
test_spans(void)
{
	Page		p;
	amq_rt_key	k;
	int			delta;
	uint32_t	r;
	uint32_t	ranges[8];
	amq_rt_span span;
	static const uint32_t later[] = {30, 20, 3};
	int			i;

	page_init_spans(&p, 12, 1);
	k = key_of(&p, 4242);
	for (r = 10; r < 10 + AMQ_RT_MAX_RANGES; r++)
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, r, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == AMQ_RT_MAX_RANGES);
	CHECK(span.lo > span.hi);
	/* 10 .. 13 and 30: the span 10 .. 13, 30 beside it */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 30, &delta) == AMQ_RT_WIDENED);
	CHECK(delta == 3 - AMQ_RT_MAX_RANGES && p.hdr.nentries == 3);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == 1);
	CHECK(span.lo == 10 && span.hi == 13 && ranges[0] == 30);
	CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, 11));
	CHECK(!amq_rt_holds(&p.g, &p.hdr, p.slots, k, 20));
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 12, &delta) == AMQ_RT_PRESENT);
	CHECK(delta == 0);
	/* 20 beside too; then 3: one of the three joins the span (13 ranges read) */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 20, &delta) == AMQ_RT_WIDENED);
	CHECK(p.hdr.nentries == 4 && reads(&p, k) == 6);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 3, &delta) == AMQ_RT_WIDENED);
	CHECK(p.hdr.nentries == 4 && reads(&p, k) == 13);
	for (r = 10; r < 14; r++)
		CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, r));
	for (i = 0; i < 3; i++)
		CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, later[i]));
	/* next to the span: it joins it rather than stand beside it */
	amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, span.hi + 1, &delta) == AMQ_RT_WIDENED);
	CHECK(p.hdr.nentries == 4 && reads(&p, k) == 14);
	CHECK(amq_rt_may_contain(&p.g, &p.hdr, p.slots, k));
	/* the largest range a table with spans numbers */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, amq_rt_ranges(&p.g) - 1, &delta) ==
		  AMQ_RT_WIDENED);
	CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, amq_rt_ranges(&p.g) - 1));
	CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, 3));
	/* a range past them is "everywhere", which replaces it all */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, amq_rt_ranges(&p.g), &delta) ==
		  AMQ_RT_WIDENED);
	CHECK(delta == 1 - 4 && p.hdr.nentries == 1);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == -1);
	CHECK(amq_rt_count_everywhere(&p.g, &p.hdr, p.slots) == 1);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	/* a span added whole, as a build adds a key's, with ranges beside it */
	k = key_of(&p, 77);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 500, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_insert_span(&p.g, &p.hdr, p.slots, k, 100, 200, NULL, 0, &delta) == AMQ_RT_WIDENED);
	CHECK(delta == 1 && p.hdr.nentries == 3);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == 0);
	CHECK(span.lo == 100 && span.hi == 500);
	CHECK(amq_rt_insert_span(&p.g, &p.hdr, p.slots, k, 150, 160, NULL, 0, &delta) == AMQ_RT_WIDENED);
	CHECK(delta == 0 && p.hdr.nentries == 3);
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 900, &delta) == AMQ_RT_WIDENED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == 1);
	CHECK(span.lo == 100 && span.hi == 500 && ranges[0] == 900);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	/* a build's span with 4 ranges beside it: 6 entries, each range held */
	k = key_of(&p, 78);
	{
		static const uint32_t beside[] = {5, 7, 9000, 9100};

		CHECK(amq_rt_insert_span(&p.g, &p.hdr, p.slots, k, 1000, 1040, beside, 4, &delta) ==
			  AMQ_RT_WIDENED);
		CHECK(delta == 6);
		CHECK(reads(&p, k) == 41 + 4);
		for (i = 0; i < 4; i++)
			CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, beside[i]));
		CHECK(!amq_rt_holds(&p.g, &p.hdr, p.slots, k, 6));
		/* next to the span: it joins it, the 4 beside stay */
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 1041, &delta) == AMQ_RT_WIDENED);
		CHECK(delta == 0 && reads(&p, k) == 42 + 4);
		/* far: an insert keeps the 4 beside it had, the span takes in the nearest (7) */
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, 20000, &delta) == AMQ_RT_WIDENED);
		CHECK(delta == 0 && reads(&p, k) == (1041 - 7 + 1) + 4);
		for (i = 0; i < 4; i++)
			CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, beside[i]));
		CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, 1020));
		CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, 20000));
	}
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	free(p.slots);
	/* without spans, a span is "everywhere" */
	page_init(&p, 12);
	k = key_of(&p, 77);
	CHECK(amq_rt_insert_span(&p.g, &p.hdr, p.slots, k, 100, 200, NULL, 0, &delta) == AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 8, &span) == -1);
	free(p.slots);
}

/*
 * With spans, a page filled to 60% by keys of every shape (one range, a
 * few, a cluster with rows elsewhere, many): every (key, range) added is
 * answered, and the counts agree with the slots.
 */
static void
test_spans_fill(void)
{
	Page		p;
	uint64_t	state = KEYS_SEED;
	uint64_t	first_state;
	uint32_t	target;
	uint32_t	keys = 0;
	uint32_t	k;
	uint32_t	missed = 0;
	uint32_t	spans = 0;

	page_init_spans(&p, 14, 1);
	/*
	 * keys of several entries each (up to 4: a span and 2 beside it) fill
	 * a page's buckets less evenly
	 */
	target = (uint32_t) (0.6 * amq_rt_slots(&p.g));
	first_state = state;
	/* a key's ranges: up to 9 of them around a base, now and then one far off */
	while (p.hdr.nentries < target && !(p.hdr.flags & AMQ_RT_SATURATED))
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	base = (uint32_t) (h % 100000);
		uint32_t	n = 1 + (uint32_t) ((h >> 20) % 9);
		uint32_t	i;

		for (i = 0; i < n; i++)
		{
			int			delta;
			uint32_t	r = (i == n - 1 && (h >> 40) % 4 == 0) ?
				(uint32_t) ((h >> 8) % amq_rt_ranges(&p.g)) : base + i * (1 + (h >> 50) % 3);

			amq_rt_insert(&p.g, &p.hdr, p.slots, key_of(&p, h), r, &delta);
		}
		keys++;
	}
	CHECK(!(p.hdr.flags & AMQ_RT_SATURATED));
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	state = first_state;
	for (k = 0; k < keys; k++)
	{
		uint64_t	h = splitmix64(&state);
		uint32_t	base = (uint32_t) (h % 100000);
		uint32_t	n = 1 + (uint32_t) ((h >> 20) % 9);
		uint32_t	i;
		uint32_t	ranges[64];
		amq_rt_span span;

		for (i = 0; i < n; i++)
		{
			uint32_t	r = (i == n - 1 && (h >> 40) % 4 == 0) ?
				(uint32_t) ((h >> 8) % amq_rt_ranges(&p.g)) : base + i * (1 + (h >> 50) % 3);

			missed += !finds(&p, h, r);
		}
		amq_rt_lookup(&p.g, &p.hdr, p.slots, key_of(&p, h), ranges, 64, &span);
		spans += span.lo <= span.hi;
	}
	diag("%u keys, %u entries, %u with a span", keys, p.hdr.nentries, spans);
	CHECK(missed == 0);
	CHECK(spans > keys / 4);
	CHECK(amq_rt_count_everywhere(&p.g, &p.hdr, p.slots) == 0);
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
	{
		amq_rt_span span;

		CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, key_of(&p, 1), NULL, 0, &span) == -1);
	}
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

/*
 * With lanes: a page keeps every entry it is given (the caller moves a
 * key's fifth range to its next lane), only an "everywhere" replaces them;
 * a row class is held by its own entry and by its whole range's.
 */
static void
test_lanes(void)
{
	Page		p;
	amq_rt_key	k;
	uint32_t	ranges[64];
	amq_rt_span span;
	uint32_t	whole;
	int			delta;
	int			n;
	uint32_t	i;

	page_init(&p, 12);
	p.g.lanes = 1;
	p.g.row_bits = 4;
	whole = amq_rt_whole_bit(&p.g);
	CHECK(amq_rt_ranges(&p.g) == (1u << 19) - 1);
	CHECK(whole == 1u << 19);
	k = key_of(&p, 77);
	/* six classes of six ranges: no widening */
	for (i = 0; i < 6; i++)
		CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, (i * 10) << 4 | i, &delta) == AMQ_RT_ADDED);
	n = amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 64, &span);
	CHECK(n == 6);
	CHECK(span.lo > span.hi);
	CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, (20 << 4) | 2));
	CHECK(!amq_rt_holds(&p.g, &p.hdr, p.slots, k, (20 << 4) | 3));
	/* a whole range holds each of its classes */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, whole | 70, &delta) == AMQ_RT_ADDED);
	for (i = 0; i < 16; i++)
		CHECK(amq_rt_holds(&p.g, &p.hdr, p.slots, k, (70 << 4) | i));
	CHECK(!amq_rt_holds(&p.g, &p.hdr, p.slots, k, (71 << 4) | 0));
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, (70 << 4) | 9, &delta) == AMQ_RT_PRESENT);
	/* the largest whole range is not "everywhere" */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, whole | (amq_rt_ranges(&p.g) - 1), &delta) ==
		  AMQ_RT_ADDED);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 64, &span) == 8);
	CHECK(amq_rt_check(&p.g, &p.hdr, p.slots));
	/* "everywhere" replaces them */
	CHECK(amq_rt_insert(&p.g, &p.hdr, p.slots, k, amq_rt_everywhere(&p.g), &delta) == AMQ_RT_WIDENED);
	CHECK(delta == -7);
	CHECK(amq_rt_lookup(&p.g, &p.hdr, p.slots, k, ranges, 64, &span) < 0);
	CHECK(amq_rt_count_everywhere(&p.g, &p.hdr, p.slots) == 1);
	free(p.slots);
}

static const amq_test tests[] = {
	{"geometry", test_geometry},
	{"fill to 95% without a miss", test_fill},
	{"duplicates and ranges", test_duplicates_and_ranges},
	{"a key in too many ranges is everywhere", test_everywhere},
	{"with spans, a key in too many ranges is a span", test_spans},
	{"with spans, keys of every shape without a miss", test_spans_fill},
	{"with lanes, a page keeps what it is given", test_lanes},
	{"a saturated page answers everything", test_saturation},
	{"false matches", test_false_matches},
	{"page checks", test_check},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core range table");
}
