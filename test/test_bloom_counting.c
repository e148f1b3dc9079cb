/*
 * test_bloom_counting.c
 *		Unit tests of the counting and d-left layouts of the bloom core.
 *
 * Keys are splitmix64 outputs from fixed seeds (harness.h), handed to the
 * core as 64-bit hashes.  The exact multiset a filter should hold is kept
 * beside it as an array of (key, copies), so that "never a false negative"
 * and "a count is never below the copies" are checked against the truth
 * rather than against another run of the same code.
 *
 * Output as test_bloom.c: "ok - name" per test, a last line
 * "core bloom counting: N passed, M failed".
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_bloom.h"
#include "amq_bloom_layout.h"
#include "amq_status.h"
#include "bloom_fixture.h"
#include "harness.h"

static const int counting_layouts[] = {AMQ_BLOOM_LAYOUT_COUNTING, AMQ_BLOOM_LAYOUT_DLEFT};

static const char *
name_of(int layout)
{
	return layout == AMQ_BLOOM_LAYOUT_COUNTING ? "counting" : "dleft";
}

/* A copy of f in its own buffer, opened. */
static void
filter_clone(filter *dst, const filter *src)
{
	*dst = *src;
	dst->buf = xmalloc(src->len);
	memcpy(dst->buf, src->buf, src->len);
	CHECK_STATUS(amq_bloom_open(dst->buf, dst->len, &dst->view), AMQ_OK);
}

/* ----------------------------------------------------------------
 * Sizing.
 * ----------------------------------------------------------------
 */

/*
 * counting is classic with 4-bit counters: exactly 4x its bits, same k and
 * model rate.  dleft is at most 0.55x counting (the seed claims half), its
 * model rate at most p, and its table size not rounded to a power of two.
 */
static void
test_sizing(void)
{
	static const double ps[] = {0.1, 0.01, 0.001, 0.0001, 1e-6};
	static const uint64_t ns[] = {1, 100, 12345, 1000000};
	size_t		i,
				j;

	for (i = 0; i < lengthof(ns); i++)
		for (j = 0; j < lengthof(ps); j++)
		{
			amq_bloom_params cl,
						co,
						dl;

			CHECK_STATUS(amq_bloom_size(ns[i], ps[j], AMQ_BLOOM_LAYOUT_CLASSIC, &cl), AMQ_OK);
			CHECK_STATUS(amq_bloom_size(ns[i], ps[j], AMQ_BLOOM_LAYOUT_COUNTING, &co), AMQ_OK);
			CHECK_STATUS(amq_bloom_size(ns[i], ps[j], AMQ_BLOOM_LAYOUT_DLEFT, &dl), AMQ_OK);
			CHECK(co.layout == AMQ_BLOOM_LAYOUT_COUNTING);
			CHECK(co.nbits == 4 * cl.nbits);
			CHECK(co.hashes == cl.hashes);
			CHECK(co.expected_fpr == cl.expected_fpr);
			CHECK(dl.layout == AMQ_BLOOM_LAYOUT_DLEFT);
			CHECK(dl.expected_fpr <= ps[j]);
			CHECK(dl.hashes >= 1 && dl.hashes <= AMQ_BLOOM_DLEFT_MAX_FP);
			CHECK(dl.nbits % (32 * (dl.hashes + 2)) == 0);
			CHECK(dl.bytes == AMQ_BLOOM_HEADER_SIZE + dl.nbits / 8);
			if (ns[i] >= 12345 && ps[j] <= 0.01)
			{
				CHECK(dl.bits_per_key <= 0.55 * co.bits_per_key);
				if (dl.bits_per_key > 0.55 * co.bits_per_key)
					diag("n=%llu p=%g: dleft %.2f vs counting %.2f bits/key",
						 (unsigned long long) ns[i], ps[j], dl.bits_per_key,
						 co.bits_per_key);
			}
		}

	{
		amq_bloom_params dl;

		/* 1e6 keys at 1%: B = ceil(1e6 / 24) buckets, not a power of two */
		CHECK_STATUS(amq_bloom_size(1000000, 0.01, AMQ_BLOOM_LAYOUT_DLEFT, &dl), AMQ_OK);
		CHECK(dl.hashes == 12);
		CHECK(dl.nbits == UINT64_C(41667) * 32 * 14);
		diag("dleft n=1e6 p=0.01: r=%u bits/key=%.3f model=%.5f", dl.hashes,
			 dl.bits_per_key, dl.expected_fpr);
	}
	CHECK_STATUS(amq_bloom_size(UINT64_MAX, 0.5, AMQ_BLOOM_LAYOUT_COUNTING, &(amq_bloom_params) {0}),
				 AMQ_ERR_TOO_LARGE);
	CHECK_STATUS(amq_bloom_size(UINT64_MAX, 0.5, AMQ_BLOOM_LAYOUT_DLEFT, &(amq_bloom_params) {0}),
				 AMQ_ERR_TOO_LARGE);
	CHECK_STATUS(amq_bloom_size(0, 0.5, AMQ_BLOOM_LAYOUT_DLEFT, &(amq_bloom_params) {0}),
				 AMQ_ERR_PARAM_N);
}

/* ----------------------------------------------------------------
 * Membership, counts and the false-positive rate.
 * ----------------------------------------------------------------
 */

/*
 * At n keys: every key present, counts >= 1, measured rate near p.  For
 * dleft, p = 1% and 0.1% scan buckets in 2 and 3 groups of cells (probes
 * specialized for those), 1e-5 in 4 (the general scan).
 */
static void
test_membership_fpr(void)
{
	static const double ps[] = {0.01, 0.001, 0.00001};
	const uint64_t n = 100000;
	const uint64_t probes = 1000000;
	size_t		l,
				j;

	for (l = 0; l < lengthof(counting_layouts); l++)
		for (j = 0; j < lengthof(ps); j++)
		{
			filter		f;
			uint64_t	s = KEYS_SEED;
			uint64_t	i;
			uint64_t	fp;
			double		rate;

			if (!filter_make(&f, n, ps[j], counting_layouts[l]))
			{
				current_failures++;
				continue;
			}
			for (i = 0; i < n; i++)
				CHECK_STATUS(amq_bloom_add(&f.view, splitmix64(&s), FAMILY_A), AMQ_OK);
			CHECK(count_present(&f, KEYS_SEED, n) == n);
			s = KEYS_SEED;
			for (i = 0; i < n; i++)
				if (amq_bloom_count(&f.view, splitmix64(&s)) < 1)
				{
					current_failures++;
					break;
				}
			fp = count_present(&f, ABSENT_SEED, probes);
			rate = (double) fp / (double) probes;
			/* 4 sigma of a binomial at p over `probes` trials */
			CHECK(rate <= ps[j] + 4.0 * sqrt(ps[j] / (double) probes));
			diag("%s p=%g: bits/key=%.2f model=%.6f measured=%.6f", name_of(counting_layouts[l]),
				 ps[j], f.params.bits_per_key, f.params.expected_fpr, rate);
			CHECK(f.view.inserted == n);
			filter_free(&f);
		}
}

/* An exact multiset of keys beside a filter. */
typedef struct truth
{
	uint64_t	key[64];
	uint64_t	copies[64];
	int			nkeys;
} truth;

/*
 * Random adds and deletes of 64 keys, each delete of a key the truth holds:
 * the filter never loses a key and never counts fewer copies.  When a key's
 * copies drop to zero and nothing stuck, it is absent again (dleft: always,
 * its cell is its own; counting: unless another key shares its counters, so
 * only dleft is checked for that).
 */
static void
test_add_delete_model(void)
{
	size_t		l;

	for (l = 0; l < lengthof(counting_layouts); l++)
	{
		int			layout = counting_layouts[l];
		filter		f;
		truth		t;
		uint64_t	s = 42;
		int			step;
		int			i;

		if (!filter_make(&f, 2000, 0.001, layout))
		{
			current_failures++;
			continue;
		}
		t.nkeys = 64;
		for (i = 0; i < t.nkeys; i++)
		{
			t.key[i] = splitmix64(&s);
			t.copies[i] = 0;
		}
		for (step = 0; step < 20000; step++)
		{
			uint64_t	r = splitmix64(&s);
			int			k = (int) (r % t.nkeys);
			bool		del = ((r >> 8) % 3) == 0;

			if (del && t.copies[k] > 0)
			{
				CHECK(amq_bloom_delete(&f.view, t.key[k]));
				t.copies[k]--;
			}
			else if (!del && t.copies[k] < 2)
			{
				/* at most 2 copies: no counter sticks, so counts are exact-or-above */
				CHECK_STATUS(amq_bloom_add(&f.view, t.key[k], FAMILY_A), AMQ_OK);
				t.copies[k]++;
			}
			if (amq_bloom_count(&f.view, t.key[k]) < t.copies[k])
			{
				current_failures++;
				diag("%s step %d: key %d counted %llu < %llu", name_of(layout), step, k,
					 (unsigned long long) amq_bloom_count(&f.view, t.key[k]),
					 (unsigned long long) t.copies[k]);
				break;
			}
			if (layout == AMQ_BLOOM_LAYOUT_DLEFT)
				CHECK(amq_bloom_count(&f.view, t.key[k]) == t.copies[k]);
		}
		/* the header counts stored copies */
		{
			uint64_t	total = 0;

			for (i = 0; i < t.nkeys; i++)
				total += t.copies[i];
			CHECK(f.view.inserted == total);
		}
		/* delete everything: dleft is empty again, counting all zero */
		for (i = 0; i < t.nkeys; i++)
			while (t.copies[i] > 0)
			{
				CHECK(amq_bloom_delete(&f.view, t.key[i]));
				t.copies[i]--;
			}
		{
			amq_bloom_stats st = filter_stats(&f);

			CHECK(st.cells_used == 0);
			CHECK(f.view.inserted == 0);
		}
		filter_free(&f);
	}
}

/* Deleting a certainly absent key changes nothing and says so. */
static void
test_delete_absent(void)
{
	size_t		l;

	for (l = 0; l < lengthof(counting_layouts); l++)
	{
		filter		f;
		uint8_t    *before;
		uint64_t	s = ABSENT_SEED;
		int			tried = 0;
		int			i;

		if (!filter_make(&f, 1000, 0.001, counting_layouts[l]))
		{
			current_failures++;
			continue;
		}
		add_keys(&f, KEYS_SEED, 500, FAMILY_A);
		before = xmalloc(f.len);
		memcpy(before, f.buf, f.len);
		for (i = 0; i < 1000; i++)
		{
			uint64_t	k = splitmix64(&s);

			if (amq_bloom_may_contain(&f.view, k))
				continue;
			tried++;
			CHECK(!amq_bloom_delete(&f.view, k));
			CHECK(amq_bloom_count(&f.view, k) == 0);
		}
		CHECK(tried > 900);
		CHECK(memcmp(before, f.buf, f.len) == 0);
		free(before);
		filter_free(&f);
	}

	/* the bit layouts cannot delete */
	{
		filter		f;

		if (filter_make(&f, 100, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
		{
			uint64_t	s = KEYS_SEED;
			uint64_t	k = splitmix64(&s);

			amq_bloom_add(&f.view, k, FAMILY_A);
			CHECK(!amq_bloom_delete(&f.view, k));
			CHECK(amq_bloom_may_contain(&f.view, k));
			CHECK(amq_bloom_count(&f.view, k) == 1);
			filter_free(&f);
		}
	}
}

/*
 * Counters that reach their maximum stick: the key stays present through
 * any number of deletes, and its count is then the filter's stored copies,
 * never below the truth.
 */
static void
test_saturation(void)
{
	size_t		l;

	for (l = 0; l < lengthof(counting_layouts); l++)
	{
		filter		f;
		uint64_t	s = KEYS_SEED;
		uint64_t	k = splitmix64(&s);
		uint64_t	other = splitmix64(&s);
		int			i;
		amq_bloom_stats st;

		if (!filter_make(&f, 1000, 0.01, counting_layouts[l]))
		{
			current_failures++;
			continue;
		}
		for (i = 0; i < 40; i++)
			CHECK_STATUS(amq_bloom_add(&f.view, k, FAMILY_A), AMQ_OK);
		CHECK_STATUS(amq_bloom_add(&f.view, other, FAMILY_A), AMQ_OK);
		CHECK(amq_bloom_count(&f.view, k) >= 40);
		st = filter_stats(&f);
		CHECK(st.saturated >= 1);
		for (i = 0; i < 39; i++)
			CHECK(amq_bloom_delete(&f.view, k));
		CHECK(amq_bloom_count(&f.view, k) >= 1);
		CHECK(amq_bloom_delete(&f.view, k));
		/* no copies left, but stuck counters keep it "maybe present" */
		CHECK(amq_bloom_may_contain(&f.view, k));
		CHECK(amq_bloom_count(&f.view, other) >= 1);
		filter_free(&f);
	}
}

/* ----------------------------------------------------------------
 * d-left limits.
 * ----------------------------------------------------------------
 */

/*
 * A filter of one bucket per sub-table takes 32 distinct keys at most:
 * past that, AMQ_FULL with nothing changed, and every key added before is
 * still present with its count.
 */
static void
test_dleft_full(void)
{
	filter		f;
	uint64_t	s = KEYS_SEED;
	uint64_t	keys[64];
	int			added = 0;
	int			full = 0;
	int			i;

	/* one bucket per sub-table, r = 10: 1024 values of v for 64 keys */
	if (!filter_make(&f, 1, 0.001, AMQ_BLOOM_LAYOUT_DLEFT))
	{
		current_failures++;
		return;
	}
	CHECK(f.view.buckets == 1);
	CHECK(f.view.hashes == 10);
	for (i = 0; i < 64; i++)
	{
		uint64_t	k = splitmix64(&s);
		uint8_t    *before = xmalloc(f.len);
		amq_status	st;

		memcpy(before, f.buf, f.len);
		st = amq_bloom_add(&f.view, k, FAMILY_A);
		if (st == AMQ_OK)
			keys[added++] = k;
		else
		{
			CHECK_STATUS(st, AMQ_FULL);
			CHECK(memcmp(before, f.buf, f.len) == 0);
			full++;
		}
		free(before);
	}
	CHECK(filter_stats(&f).cells_used == 32);
	CHECK(full > 0);
	CHECK(f.view.inserted == (uint64_t) added);
	for (i = 0; i < added; i++)
		CHECK(amq_bloom_count(&f.view, keys[i]) >= 1);

	/* add_many stops at the first key that does not fit and counts the rest */
	{
		filter		g;
		uint64_t	many[64];

		s = KEYS_SEED;
		for (i = 0; i < 64; i++)
			many[i] = splitmix64(&s);
		if (filter_make(&g, 1, 0.001, AMQ_BLOOM_LAYOUT_DLEFT))
		{
			CHECK_STATUS(amq_bloom_add_many(&g.view, many, 64, FAMILY_A), AMQ_FULL);
			CHECK(g.view.inserted >= 32 && g.view.inserted < 64);
			CHECK(amq_bloom_open(g.buf, g.len, &g.view) == AMQ_OK);
			filter_free(&g);
		}
	}
	filter_free(&f);
}

/* At capacity, d-left never runs out of room (sized at 6 of 8 cells). */
static void
test_dleft_capacity(void)
{
	static const uint64_t ns[] = {24, 1000, 200000};
	size_t		i;

	for (i = 0; i < lengthof(ns); i++)
	{
		filter		f;
		uint64_t	s = ns[i];
		uint64_t	j;
		amq_bloom_stats st;

		if (!filter_make(&f, ns[i], 0.001, AMQ_BLOOM_LAYOUT_DLEFT))
		{
			current_failures++;
			continue;
		}
		for (j = 0; j < ns[i]; j++)
			CHECK_STATUS(amq_bloom_add(&f.view, splitmix64(&s), FAMILY_A), AMQ_OK);
		st = filter_stats(&f);
		/*
		 * distinct keys, one cell each, but for keys that share v: about
		 * n^2 / 2N of them, n p / 48 at this sizing
		 */
		CHECK(st.cells_used <= ns[i] && st.cells_used >= ns[i] - ns[i] / 1000 - 1);
		diag("dleft n=%llu: %llu cells used", (unsigned long long) ns[i],
			 (unsigned long long) st.cells_used);
		CHECK(st.est_fpr <= 0.001);
		filter_free(&f);
	}
}

/* ----------------------------------------------------------------
 * Merging.
 * ----------------------------------------------------------------
 */

/* Merges b into a whole, or in slices of slice bytes. */
static amq_status
merge(filter *a, const filter *b, bool intersect, size_t slice)
{
	size_t		total = amq_bloom_bits_bytes(&a->view);
	size_t		from;

	CHECK_STATUS(amq_bloom_compatible(&a->view, &b->view), AMQ_OK);
	for (from = 0; from < total; from += slice)
	{
		amq_status	st = amq_bloom_merge_bits(&a->view, &b->view, from,
											  from + slice, intersect);

		if (st != AMQ_OK)
			return st;
	}
	amq_bloom_merge_finish(&a->view, &b->view, intersect);
	return AMQ_OK;
}

/*
 * Keys 0..299 once into A, keys 200..499 once into B (twice for 200..249).
 * Union: counts add; intersection: the smaller count.  A serial filter of
 * the union's keys has the same counts, and dleft's merge in odd slices
 * equals the merge in one piece.
 */
static void
test_merge_counts(void)
{
	size_t		l;

	for (l = 0; l < lengthof(counting_layouts); l++)
	{
		int			layout = counting_layouts[l];
		filter		a,
					b,
					u,
					u2,
					x,
					serial;
		uint64_t	keys[500];
		uint64_t	s = 7;
		int			i;

		for (i = 0; i < 500; i++)
			keys[i] = splitmix64(&s);
		if (!filter_make(&a, 1000, 0.001, layout) ||
			!filter_make(&b, 1000, 0.001, layout) ||
			!filter_make(&serial, 1000, 0.001, layout))
		{
			current_failures++;
			continue;
		}
		for (i = 0; i < 300; i++)
			amq_bloom_add(&a.view, keys[i], FAMILY_A);
		for (i = 200; i < 500; i++)
			amq_bloom_add(&b.view, keys[i], FAMILY_A);
		for (i = 200; i < 250; i++)
			amq_bloom_add(&b.view, keys[i], FAMILY_A);
		for (i = 0; i < 500; i++)
			amq_bloom_add(&serial.view, keys[i], FAMILY_A);
		for (i = 200; i < 300; i++)
			amq_bloom_add(&serial.view, keys[i], FAMILY_A);
		for (i = 200; i < 250; i++)
			amq_bloom_add(&serial.view, keys[i], FAMILY_A);

		filter_clone(&u, &a);
		filter_clone(&u2, &a);
		filter_clone(&x, &a);
		CHECK_STATUS(merge(&u, &b, false, 1 << 20), AMQ_OK);
		CHECK_STATUS(merge(&u2, &b, false, 7), AMQ_OK);
		CHECK_STATUS(merge(&x, &b, true, 13), AMQ_OK);
		CHECK(u.view.inserted == 300 + 350);
		CHECK(x.view.inserted == 300);
		for (i = 0; i < 500; i++)
		{
			uint64_t	want_u = (i >= 200 && i < 250) ? 3 : (i >= 200 && i < 300) ? 2 : 1;
			uint64_t	want_x = (i >= 200 && i < 300) ? 1 : 0;
			uint64_t	cu = amq_bloom_count(&u.view, keys[i]);

			CHECK(cu >= want_u);
			CHECK(amq_bloom_count(&u2.view, keys[i]) == cu);
			CHECK(amq_bloom_count(&serial.view, keys[i]) == cu);
			CHECK(amq_bloom_count(&x.view, keys[i]) >= want_x);
			if (layout == AMQ_BLOOM_LAYOUT_DLEFT)
			{
				/* 3 copies stick, and then count as the stored copies */
				CHECK(want_u == 3 ? cu == 650 : cu == want_u);
				CHECK(amq_bloom_count(&x.view, keys[i]) == want_x);
			}
		}
		if (layout == AMQ_BLOOM_LAYOUT_COUNTING)
		{
			/* counters add in any order: the union is the serial filter's bytes */
			CHECK(memcmp(u.buf + AMQ_BLOOM_HEADER_SIZE, serial.buf + AMQ_BLOOM_HEADER_SIZE,
						 u.len - AMQ_BLOOM_HEADER_SIZE) == 0);
		}
		else
		{
			CHECK(filter_stats(&u).cells_used == 500);
			CHECK(filter_stats(&x).cells_used == 100);
			CHECK(memcmp(u.buf, u2.buf, u.len) == 0);
		}
		filter_free(&a);
		filter_free(&b);
		filter_free(&u);
		filter_free(&u2);
		filter_free(&x);
		filter_free(&serial);
	}
}

/* ----------------------------------------------------------------
 * Format and validation.
 * ----------------------------------------------------------------
 */

/* Each validation rule of the two layouts, broken once. */
static void
test_validator(void)
{
	filter		f;
	uint8_t    *c;
	amq_bloom_view v;
	uint64_t	nbits;

	/* counting: the classic rules on a 4-bit array */
	if (!filter_make(&f, 100, 0.01, AMQ_BLOOM_LAYOUT_COUNTING))
	{
		current_failures++;
		return;
	}
	nbits = f.view.nbits;
	CHECK(f.view.cells == nbits / 4);
	c = xmalloc(f.len);
	memcpy(c, f.buf, f.len);
	poke_u16(c + 12, 0);		/* k = 0 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	poke_u16(c + 12, 65);		/* k = 65 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	memcpy(c, f.buf, f.len);
	poke_u64(c + 24, nbits - 8);	/* not a multiple of 64 */
	CHECK_STATUS(amq_bloom_open(c, f.len - 1, &v), AMQ_ERR_GEOMETRY);
	memcpy(c, f.buf, f.len);
	CHECK_STATUS(amq_bloom_open(c, f.len - 1, &v), AMQ_ERR_LENGTH);
	free(c);
	filter_free(&f);

	/* dleft: r in 1..32, nbits = 32 B (r + 2), exact length */
	if (!filter_make(&f, 1000, 0.01, AMQ_BLOOM_LAYOUT_DLEFT))
	{
		current_failures++;
		return;
	}
	nbits = f.view.nbits;
	/* B = ceil(1000 / 24); 1000 / (42 * 2^12) <= 0.01 < 1000 / (42 * 2^11) */
	CHECK(f.view.hashes == 12);
	CHECK(f.view.buckets == 42);
	CHECK(nbits == 42 * 32 * 14);
	c = xmalloc(f.len);
	memcpy(c, f.buf, f.len);
	poke_u16(c + 12, 0);		/* r = 0 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	poke_u16(c + 12, 33);		/* r = 33 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	poke_u16(c + 12, 11);		/* r = 11: 42 * 32 * 14 is not a multiple of 32 * 13 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	memcpy(c, f.buf, f.len);
	poke_u64(c + 24, 0);		/* no buckets */
	CHECK_STATUS(amq_bloom_open(c, AMQ_BLOOM_HEADER_SIZE, &v), AMQ_ERR_GEOMETRY);
	/* N = B 2^r below 2^62 (the size limit implies it): r = 32, B = 2^30 */
	poke_u16(c + 12, 32);
	poke_u64(c + 24, (UINT64_C(1) << 30) * 32 * 34);
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_GEOMETRY);
	memcpy(c, f.buf, f.len);
	c[5] = 5;					/* layout 5 */
	CHECK_STATUS(amq_bloom_open(c, f.len, &v), AMQ_ERR_LAYOUT);
	memcpy(c, f.buf, f.len);
	CHECK_STATUS(amq_bloom_open(c, f.len + 0, &v), AMQ_OK);
	CHECK_STATUS(amq_bloom_open(c, f.len - 1, &v), AMQ_ERR_LENGTH);
	free(c);
	filter_free(&f);
}

/*
 * The cells are where docs/format.md says: one key added to an empty filter
 * sits in sub-table 0 (all buckets tie at load 0, leftmost wins), in the
 * bucket and with the fingerprint of P_0(v) = a_0 v mod N, a_0 =
 * 0x65378c45424e619b, computed here independently with exact arithmetic.
 */
static void
test_dleft_known_cell(void)
{
	filter		f;
	uint64_t	h = UINT64_C(0x0123456789abcdef);
	uint64_t	nn,
				v,
				x,
				bucket,
				fp;
	unsigned	r,
				w;
	uint64_t	cell = 0;
	unsigned	bit;
	const uint8_t *b;

	if (!filter_make(&f, 1000, 0.01, AMQ_BLOOM_LAYOUT_DLEFT))
	{
		current_failures++;
		return;
	}
	amq_bloom_add(&f.view, h, FAMILY_A);
	r = f.view.hashes;
	w = r + 2;
	nn = f.view.buckets << r;
	/* v = floor(h * N / 2^64), x = a_0 v mod N, in long division by parts */
	{
		long double q = (long double) h * (long double) nn / 18446744073709551616.0L;

		v = (uint64_t) q;
	}
	{
		uint64_t	a = UINT64_C(0x65378c45424e619b) % nn;
		uint64_t	acc = 0;
		uint64_t	bb = v;

		/* a, v < 2^16 here: the product fits in 64 bits */
		CHECK(a < (UINT64_C(1) << 32) && v < (UINT64_C(1) << 32));
		acc = (a * bb) % nn;
		x = acc;
	}
	bucket = x >> r;
	fp = x & ((UINT64_C(1) << r) - 1);
	b = f.buf + AMQ_BLOOM_HEADER_SIZE + bucket * w;
	for (bit = 0; bit < w; bit++)
		cell |= (uint64_t) ((b[bit >> 3] >> (bit & 7)) & 1) << bit;
	CHECK((cell & 3) == 1);
	CHECK((cell >> 2) == fp);
	CHECK(filter_stats(&f).cells_used == 1);
	filter_free(&f);
}

/*
 * The d-left arithmetic modulo N, (a * b) mod N through N's reciprocal and
 * the permutations P_t through their multipliers' fractions, against a
 * reference that only adds and doubles (every intermediate below
 * 2N < 2^63), for geometries across the format's range: N = B * 2^r with
 * B = 1, small, large, prime-ish and of every magnitude, r = 1..32.
 */
static uint64_t
mulmod_reference(uint64_t a, uint64_t b, uint64_t n)
{
	uint64_t	r = 0;

	a %= n;
	while (b)
	{
		if (b & 1)
		{
			r += a;
			if (r >= n)
				r -= n;
		}
		a += a;
		if (a >= n)
			a -= n;
		b >>= 1;
	}
	return r;
}

static void
test_dleft_mulmod(void)
{
	uint64_t	rng = UINT64_C(0x243f6a8885a308d3);
	uint64_t	checked = 0;
	uint32_t	r;

	for (r = 1; r <= AMQ_BLOOM_DLEFT_MAX_FP; r++)
	{
		int			i;

		for (i = 0; i < 200; i++)
		{
			uint64_t	max_b = (UINT64_C(1) << (62 - r)) - 1;
			uint64_t	b;
			amq_dleft_consts c;
			int			k;

			uint64_t	draw = splitmix64(&rng);

			if (i == 0)
				b = 1;
			else if (i == 1)
				b = max_b;
			else
				/* every magnitude: a random number of low bits */
				b = (draw >> (draw & 63)) % max_b + 1;
			amq_dleft_consts_init(&c, b, r);
			CHECK(c.n == b << r);
			for (k = 0; k < 4; k++)
				CHECK(c.mult[k] < c.n);
			for (k = 0; k < 50; k++)
			{
				uint64_t	x,
							y;

				x = k == 0 ? c.n - 1 : splitmix64(&rng) % c.n;
				y = k == 0 ? c.n - 1 : (k == 1 ? 0 : splitmix64(&rng) % c.n);
				if (amq_dleft_mulmod(&c, x, y) != mulmod_reference(x, y, c.n))
				{
					diag("N = %llu: %llu * %llu mod N = %llu, want %llu",
						 (unsigned long long) c.n, (unsigned long long) x,
						 (unsigned long long) y,
						 (unsigned long long) amq_dleft_mulmod(&c, x, y),
						 (unsigned long long) mulmod_reference(x, y, c.n));
					CHECK(false);
					return;
				}
				if (amq_dleft_permute(&c, k % 4, x) != mulmod_reference(c.mult[k % 4], x, c.n))
				{
					diag("N = %llu: P_%d(%llu) = %llu, want %llu",
						 (unsigned long long) c.n, k % 4, (unsigned long long) x,
						 (unsigned long long) amq_dleft_permute(&c, k % 4, x),
						 (unsigned long long) mulmod_reference(c.mult[k % 4], x, c.n));
					CHECK(false);
					return;
				}
				checked++;
			}
		}
	}
	CHECK(checked == (uint64_t) AMQ_BLOOM_DLEFT_MAX_FP * 200 * 50);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

/*
 * The bucket scan, several cells per word, against the cells read one by
 * one, for every fingerprint width: random bucket bytes (so some cells are
 * empty and, rarely, two hold the same fingerprint: the lowest is wanted),
 * probed for the fingerprint of one of their cells and for random ones,
 * in every bucket of a small array, the last ones read through the padded
 * copy.  The index of the matching cell, and the used cells when none
 * matches, must agree.
 */
static void
test_dleft_scan(void)
{
	uint64_t	rng = UINT64_C(0x13198a2e03707344);
	uint64_t	checked = 0;
	uint32_t	r;

	for (r = 1; r <= AMQ_BLOOM_DLEFT_MAX_FP; r++)
	{
		uint64_t	buckets = 3;
		unsigned	w = r + 2;
		size_t		bytes = 4 * buckets * w;
		uint8_t    *array = xmalloc(bytes);
		amq_bloom_view view;
		int			round;

		memset(&view, 0, sizeof(view));
		view.layout = AMQ_BLOOM_LAYOUT_DLEFT;
		view.bits = array;
		view.nbits = 8 * (uint64_t) bytes;
		view.hashes = r;
		view.buckets = buckets;
		amq_dleft_consts_init(&view.dleft, buckets, r);
		for (round = 0; round < 40; round++)
		{
			size_t		i,
						b;

			for (i = 0; i < bytes; i++)
				array[i] = (uint8_t) splitmix64(&rng);
			for (b = 0; b < 4 * buckets; b++)
			{
				const uint8_t *bucket = array + b * w;
				int			probe;

				for (probe = 0; probe < 4; probe++)
				{
					uint64_t	cells[8];
					uint64_t	fp;
					int			want = -1;
					unsigned	used = 0,
								load = 99;
					int			got,
								j;

					for (j = 0; j < 8; j++)
					{
						uint64_t	v = 0;
						unsigned	k;

						for (k = 0; k < w; k++)
						{
							unsigned	bit = (unsigned) j * w + k;

							v |= (uint64_t) ((bucket[bit >> 3] >> (bit & 7)) & 1) << k;
						}
						cells[j] = v;
					}
					fp = probe < 2 ? cells[splitmix64(&rng) % 8] >> 2 :
						splitmix64(&rng) & ((UINT64_C(1) << r) - 1);
					for (j = 0; j < 8; j++)
					{
						if ((cells[j] & 3) != 0)
							used++;
						if (want < 0 && (cells[j] & 3) != 0 && cells[j] >> 2 == fp)
							want = j;
					}
					got = amq_dleft_scan_bucket(&view, bucket, fp, &load);
					if (got != want || (want < 0 && load != used))
					{
						diag("r = %u, bucket %zu, fp %llu: cell %d, want %d; "
							 "%u used, want %u", r, b, (unsigned long long) fp,
							 got, want, load, used);
						CHECK(false);
						free(array);
						return;
					}
					checked++;
				}
			}
		}
		free(array);
	}
	diag("%llu scans checked", (unsigned long long) checked);
	CHECK(checked == 32 * 40 * 12 * 4);
}

static const amq_test tests[] = {
	{"sizing", test_sizing},
	{"membership and fpr", test_membership_fpr},
	{"add/delete against a model", test_add_delete_model},
	{"delete absent", test_delete_absent},
	{"saturation", test_saturation},
	{"dleft full", test_dleft_full},
	{"dleft capacity", test_dleft_capacity},
	{"merge counts", test_merge_counts},
	{"validator", test_validator},
	{"dleft known cell", test_dleft_known_cell},
	{"dleft mulmod", test_dleft_mulmod},
	{"dleft bucket scan", test_dleft_scan},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core bloom counting");
}
