/*
 * test_bloom.c
 *		Standalone unit tests of the bloom filter core (no PostgreSQL).
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.  Keys are
 * splitmix64 outputs from fixed seeds, handed to the core as the 64-bit
 * hash a PostgreSQL hash function would produce, so every run sees the same
 * numbers and the statistical bounds are checked against known,
 * reproducible values.
 *
 * Header fields are poked by explicit offset with the harness's own
 * little-endian helpers, independently of the core's, so that a byte-order
 * or offset mistake in the core cannot cancel out against the tests.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core bloom: N passed, M failed"; exit status 1 on
 * failure.  The harness (checks, key stream, driver) is test/harness.h, the
 * filter fixture test/bloom_fixture.h.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_base64.h"
#include "amq_bloom.h"
#include "amq_bloom_block.h"
#include "amq_status.h"
#include "bloom_fixture.h"
#include "harness.h"

/* ----------------------------------------------------------------
 * Helpers.
 * ----------------------------------------------------------------
 */

static const char *
layout_name(int layout)
{
	return layout == AMQ_BLOOM_LAYOUT_BLOCKED ? "blocked" : "classic";
}

/* ----------------------------------------------------------------
 * Membership.
 * ----------------------------------------------------------------
 */

/* Every added key must be found: the one-sided guarantee. */
static void
test_no_false_negatives(void)
{
	static const uint64_t ns[] = {1, 7, 1000, 50000};
	static const double ps[] = {0.5, 0.01, 1e-6};
	int			layout;
	size_t		i,
				j;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
		for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
			for (j = 0; j < sizeof(ps) / sizeof(ps[0]); j++)
			{
				filter		f;
				uint64_t	found;

				if (!filter_make(&f, ns[i], ps[j], layout))
				{
					current_failures++;
					continue;
				}
				add_keys(&f, KEYS_SEED + i, ns[i], FAMILY_A);
				found = count_present(&f, KEYS_SEED + i, ns[i]);
				if (found != ns[i])
					diag("%s n=%llu p=%g: %llu of %llu found",
						 layout_name(layout), (unsigned long long) ns[i], ps[j],
						 (unsigned long long) found, (unsigned long long) ns[i]);
				CHECK(found == ns[i]);
				filter_free(&f);
			}
}

/*
 * Measured FPR at capacity against the target.  100,000 keys, 1,000,000
 * absent probes: at p = 0.001 that is ~1000 expected false positives, so
 * 1.15 p is ~4.7 standard deviations above p, far from sampling noise but
 * tight enough to catch a degenerate probe scheme.
 */
static void
check_fpr(int layout, double p)
{
	const uint64_t n = 100000;
	const uint64_t probes = 1000000;
	filter		f;
	uint64_t	fp;
	double		measured;

	if (!filter_make(&f, n, p, layout))
	{
		current_failures++;
		return;
	}
	add_keys(&f, KEYS_SEED, n, FAMILY_A);
	fp = count_present(&f, ABSENT_SEED, probes);
	measured = (double) fp / (double) probes;
	diag("%s p=%g: k=%u bits/key=%.3f model=%.5g measured=%.5g (%.3f p)",
		 layout_name(layout), p, f.params.hashes, f.params.bits_per_key,
		 f.params.expected_fpr, measured, measured / p);
	CHECK(measured <= p * 1.15);
	CHECK(f.params.expected_fpr <= p);
	CHECK(f.params.bits_per_key >= 1.44 * log2(1.0 / p));
	filter_free(&f);
}

static void
test_fpr_blocked_001(void)
{
	check_fpr(AMQ_BLOOM_LAYOUT_BLOCKED, 0.01);
}

static void
test_fpr_blocked_0001(void)
{
	check_fpr(AMQ_BLOOM_LAYOUT_BLOCKED, 0.001);
}

static void
test_fpr_classic_001(void)
{
	check_fpr(AMQ_BLOOM_LAYOUT_CLASSIC, 0.01);
}

static void
test_fpr_classic_0001(void)
{
	check_fpr(AMQ_BLOOM_LAYOUT_CLASSIC, 0.001);
}

/*
 * Known answers: bit positions for two hashes in hand-built headers.  The
 * positions are part of the format (docs/format.md lists the same numbers),
 * so a change here breaks every stored filter.
 */
static void
check_known_positions(int layout, uint64_t nbits, uint16_t k, uint64_t hash,
					  const unsigned *want, size_t nwant)
{
	size_t		len = AMQ_BLOOM_HEADER_SIZE + (size_t) (nbits / 8);
	uint8_t    *buf = xmalloc(len);
	amq_bloom_view v;
	size_t		i;
	uint64_t	expected_set = 0;
	uint64_t	bit;

	memset(buf, 0, len);
	memcpy(buf, "AMQB", 4);
	buf[4] = 1;					/* version */
	buf[5] = (uint8_t) layout;
	buf[6] = 1;					/* hash scheme */
	poke_u16(buf + 12, k);
	poke_u64(buf + 16, AMQ_BLOOM_DEFAULT_SEED);
	poke_u64(buf + 24, nbits);
	poke_u64(buf + 32, 100);
	poke_f64(buf + 40, 0.01);
	CHECK_STATUS(amq_bloom_open(buf, len, &v), AMQ_OK);
	amq_bloom_add(&v, hash, FAMILY_A);

	for (bit = 0; bit < nbits; bit++)
	{
		bool		is_set = (buf[AMQ_BLOOM_HEADER_SIZE + bit / 8] >> (bit % 8)) & 1;
		bool		wanted = false;

		for (i = 0; i < nwant; i++)
			wanted |= (want[i] == bit);
		expected_set += wanted;
		if (is_set != wanted)
			diag("%s hash %016llx: bit %llu is %s", layout_name(layout),
				 (unsigned long long) hash, (unsigned long long) bit,
				 is_set ? "set" : "clear");
		CHECK(is_set == wanted);
	}
	CHECK(expected_set > 0);
	CHECK(amq_bloom_may_contain(&v, hash));
	free(buf);
}

static void
test_known_positions(void)
{
	/* classic, nbits = 1024, k = 3 */
	static const unsigned c1[] = {4, 547, 66};
	static const unsigned c2[] = {1019, 11, 26};

	/* blocked, nbits = 2048 (4 blocks), k = 9: block * 512 + bit */
	static const unsigned b1[] = {271, 303, 479, 488, 288, 139, 117, 158, 164};
	static const unsigned b2[] = {3 * 512 + 7, 3 * 512 + 431, 3 * 512 + 350,
		3 * 512 + 193, 3 * 512 + 489, 3 * 512 + 155, 3 * 512 + 491,
	3 * 512 + 164, 3 * 512 + 368};

	check_known_positions(AMQ_BLOOM_LAYOUT_CLASSIC, 1024, 3,
						  UINT64_C(0x0123456789abcdef), c1, 3);
	check_known_positions(AMQ_BLOOM_LAYOUT_CLASSIC, 1024, 3,
						  UINT64_C(0xfedcba9876543210), c2, 3);
	check_known_positions(AMQ_BLOOM_LAYOUT_BLOCKED, 2048, 9,
						  UINT64_C(0x0123456789abcdef), b1, 9);
	check_known_positions(AMQ_BLOOM_LAYOUT_BLOCKED, 2048, 9,
						  UINT64_C(0xfedcba9876543210), b2, 9);
	/* k = 7 (p = 1%), set and tested unrolled: the first 7 of the same bits */
	check_known_positions(AMQ_BLOOM_LAYOUT_BLOCKED, 2048, 7,
						  UINT64_C(0x0123456789abcdef), b1, 7);
	check_known_positions(AMQ_BLOOM_LAYOUT_BLOCKED, 2048, 7,
						  UINT64_C(0xfedcba9876543210), b2, 7);
}

/*
 * The unrolled block add and test (k <= 7) against the bit stream that
 * defines the layout, for every k the format allows up to 12 and blocks
 * of random fill: the same bits set, the same answers.
 */
static void
test_block_unrolled(void)
{
	uint64_t	x = UINT64_C(0x9e3779b97f4a7c15);
	unsigned	k;
	int			round;

	for (k = 1; k <= 12; k++)
	{
		for (round = 0; round < 2000; round++)
		{
			uint8_t		a[AMQ_BLOCK_BYTES];
			uint8_t		b[AMQ_BLOCK_BYTES];
			uint64_t	h2 = amq_fmix64(x += UINT64_C(0x9e3779b97f4a7c15));
			amq_block_bits stream;
			bool		all_set = true;
			unsigned	i;

			for (i = 0; i < AMQ_BLOCK_BYTES; i++)
				a[i] = (uint8_t) (amq_fmix64(x + i) & amq_fmix64(x - i));
			memcpy(b, a, sizeof(a));
			amq_block_bits_start(&stream, h2);
			for (i = 0; i < k; i++)
			{
				unsigned	bit = amq_block_bits_next(&stream);

				all_set &= (a[bit >> 3] >> (bit & 7)) & 1;
			}
			CHECK(amq_block_test(a, h2, k) == all_set);
			(void) amq_block_set(a, h2, k);
			amq_block_or(b, h2, k);
			CHECK(memcmp(a, b, sizeof(a)) == 0);
			CHECK(amq_block_test(b, h2, k));
		}
	}
}

/* ----------------------------------------------------------------
 * Sizing.
 * ----------------------------------------------------------------
 */

static void
test_sizing_errors(void)
{
	amq_bloom_params pr;
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		CHECK_STATUS(amq_bloom_size(0, 0.01, layout, &pr), AMQ_ERR_PARAM_N);
		CHECK_STATUS(amq_bloom_size(100, 0.0, layout, &pr), AMQ_ERR_PARAM_P);
		CHECK_STATUS(amq_bloom_size(100, 1.0, layout, &pr), AMQ_ERR_PARAM_P);
		CHECK_STATUS(amq_bloom_size(100, NAN, layout, &pr), AMQ_ERR_PARAM_P);
		CHECK_STATUS(amq_bloom_size(100, -0.5, layout, &pr), AMQ_ERR_PARAM_P);
		CHECK_STATUS(amq_bloom_size(100, INFINITY, layout, &pr), AMQ_ERR_PARAM_P);
		CHECK_STATUS(amq_bloom_size(UINT64_C(1000000000000000), 1e-12, layout, &pr),
					 AMQ_ERR_TOO_LARGE);
		CHECK_STATUS(amq_bloom_size(UINT64_MAX, 0.5, layout, &pr), AMQ_ERR_TOO_LARGE);
		/* the smallest positive double: k = 64 and ~7e6 bits per key */
		CHECK_STATUS(amq_bloom_size(1000000, 4.9406564584124654e-324, layout, &pr),
					 AMQ_ERR_TOO_LARGE);
	}
	CHECK_STATUS(amq_bloom_size(100, 0.01, AMQ_BLOOM_LAYOUT_EMPTY, &pr), AMQ_ERR_GEOMETRY);
	CHECK_STATUS(amq_bloom_size(100, 0.01, 5, &pr), AMQ_ERR_GEOMETRY);
}

/* The textbook numbers: n = 10^6, p = 1% needs k = 7 and ~9.59 bits/key. */
static void
test_sizing_classic_example(void)
{
	amq_bloom_params pr;

	CHECK_STATUS(amq_bloom_size(1000000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC, &pr), AMQ_OK);
	diag("classic n=1e6 p=0.01: k=%u nbits=%llu bits/key=%.4f bytes=%zu fpr=%.6g",
		 pr.hashes, (unsigned long long) pr.nbits, pr.bits_per_key, pr.bytes,
		 pr.expected_fpr);
	CHECK(pr.layout == AMQ_BLOOM_LAYOUT_CLASSIC);
	CHECK(pr.hashes == 7);
	CHECK(pr.bits_per_key >= 9.5 && pr.bits_per_key <= 9.7);
	CHECK(pr.nbits % 64 == 0);
	CHECK(pr.bytes == AMQ_BLOOM_HEADER_SIZE + pr.nbits / 8);
	CHECK(pr.expected_fpr <= 0.01);
}

/*
 * Over a grid of n and p, both layouts: the model FPR never exceeds p, the
 * geometry has the layout's granularity, the blocked layout never uses fewer
 * bits than the classic one, and TOO_LARGE only where the classic size is
 * really over the limit.
 */
static void
test_sizing_grid(void)
{
	static const double ns[] = {1, 10, 1000, 1e6, 1e9};
	static const double ps[] = {0.5, 0.1, 0.01, 1e-4, 1e-8};
	const double limit_bits = (double) (AMQ_BLOOM_MAX_BYTES - AMQ_BLOOM_HEADER_SIZE) * 8.0;
	size_t		i,
				j;

	for (i = 0; i < sizeof(ns) / sizeof(ns[0]); i++)
		for (j = 0; j < sizeof(ps) / sizeof(ps[0]); j++)
		{
			uint64_t	n = (uint64_t) ns[i];
			double		p = ps[j];
			amq_bloom_params cl,
						bl;
			amq_status	scl = amq_bloom_size(n, p, AMQ_BLOOM_LAYOUT_CLASSIC, &cl);
			amq_status	sbl = amq_bloom_size(n, p, AMQ_BLOOM_LAYOUT_BLOCKED, &bl);
			double		optimal_bits = ns[i] * log2(1.0 / p) / log(2.0);

			CHECK(scl == AMQ_OK || scl == AMQ_ERR_TOO_LARGE);
			CHECK(sbl == AMQ_OK || sbl == AMQ_ERR_TOO_LARGE);
			if (scl == AMQ_ERR_TOO_LARGE)
			{
				/* only when even the information-theoretic optimum is close */
				CHECK(optimal_bits > 0.9 * limit_bits);
				CHECK(sbl == AMQ_ERR_TOO_LARGE);
			}
			if (scl == AMQ_OK)
			{
				CHECK(cl.expected_fpr <= p);
				CHECK(cl.nbits % 64 == 0 && cl.nbits >= 64);
				CHECK(cl.hashes >= 1 && cl.hashes <= AMQ_BLOOM_MAX_HASHES);
				CHECK(cl.bytes == AMQ_BLOOM_HEADER_SIZE + cl.nbits / 8);
				CHECK(cl.bytes <= AMQ_BLOOM_MAX_BYTES);
				CHECK(cl.bits_per_key >= 1.44 * log2(1.0 / p));
			}
			if (sbl == AMQ_OK)
			{
				CHECK(bl.expected_fpr <= p);
				CHECK(bl.nbits % 512 == 0 && bl.nbits >= 512);
				CHECK(bl.hashes >= 1 && bl.hashes <= AMQ_BLOOM_MAX_HASHES);
				CHECK(bl.bytes == AMQ_BLOOM_HEADER_SIZE + bl.nbits / 8);
				CHECK(bl.bytes <= AMQ_BLOOM_MAX_BYTES);
				CHECK(scl == AMQ_OK);
			}
			if (scl == AMQ_OK && sbl == AMQ_OK)
				CHECK(bl.nbits >= cl.nbits);
			if (n >= 1000000 && scl == AMQ_OK && sbl == AMQ_OK)
				diag("n=%-10.0f p=%-6g classic k=%-2u %7.3f bits/key | blocked k=%-2u %7.3f bits/key",
					 ns[i], p, cl.hashes, cl.bits_per_key, bl.hashes, bl.bits_per_key);
		}
}

/*
 * Model FPR <= p over a dense sweep, the property the sizing promises.
 * Large n at tiny p may legitimately exceed the size limit (the blocked
 * layout needs far more bits than the classic one below p ~ 1e-6).
 */
static void
test_sizing_model_sweep(void)
{
	int			layout;
	int			bad = 0;
	int			total = 0;
	int			too_large = 0;
	uint64_t	n;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
		for (n = 1; n <= UINT64_C(100000000); n = n * 3 + 1)
		{
			double		p;

			for (p = 0.9; p > 1e-12; p *= 0.37)
			{
				amq_bloom_params pr;
				amq_status	st = amq_bloom_size(n, p, layout, &pr);

				total++;
				if (st == AMQ_ERR_TOO_LARGE && n >= 1000000)
				{
					too_large++;
					continue;
				}
				if (st != AMQ_OK || !(pr.expected_fpr <= p) ||
					pr.bits_per_key < 1.44 * log2(1.0 / p))
				{
					bad++;
					diag("%s n=%llu p=%g: status %d fpr %g", layout_name(layout),
						 (unsigned long long) n, p, (int) st, pr.expected_fpr);
				}
			}
		}
	diag("%d sizings checked, %d over the size limit", total, too_large);
	CHECK(bad == 0);
}

/* Sizing runs once per aggregate group: report its cost (not asserted). */
static void
test_sizing_timing(void)
{
	static const struct
	{
		uint64_t	n;
		double		p;
	}			cases[] = {{10000000, 0.01}, {10000000, 1e-4}, {1000000, 1e-8}, {1000, 0.01}};
	size_t		i;
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
		for (i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		{
			const int	reps = 200;
			amq_bloom_params pr;
			amq_status	st = AMQ_OK;
			double		t0 = now_seconds();
			double		us;
			int			r;

			for (r = 0; r < reps; r++)
				st = amq_bloom_size(cases[i].n, cases[i].p, layout, &pr);
			us = (now_seconds() - t0) / reps * 1e6;
			CHECK_STATUS(st, AMQ_OK);
			diag("amq_bloom_size(%s, n=%llu, p=%g): %.1f us, k=%u, %.3f bits/key",
				 layout_name(layout), (unsigned long long) cases[i].n,
				 cases[i].p, us, pr.hashes, pr.bits_per_key);
		}
}

/* ----------------------------------------------------------------
 * Merging.
 * ----------------------------------------------------------------
 */

/* A union holds both sides' keys; counts add; families bind. */
static void
test_union(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		a,
					b;

		if (!filter_make(&a, 20000, 0.01, layout) ||
			!filter_make(&b, 20000, 0.01, layout))
		{
			current_failures++;
			return;
		}
		add_keys(&a, 11, 10000, FAMILY_A);
		add_keys(&b, 22, 10000, FAMILY_A);

		CHECK_STATUS(amq_bloom_compatible(&a.view, &b.view), AMQ_OK);
		amq_bloom_merge_bits(&a.view, &b.view, 0, amq_bloom_bits_bytes(&a.view), false);
		amq_bloom_merge_finish(&a.view, &b.view, false);
		CHECK(count_present(&a, 11, 10000) == 10000);
		CHECK(count_present(&a, 22, 10000) == 10000);
		CHECK(a.view.inserted == 20000);
		CHECK(a.view.family == FAMILY_A);

		/* the header bytes agree with the view */
		CHECK_STATUS(amq_bloom_open(a.buf, a.len, &b.view), AMQ_OK);
		CHECK(b.view.inserted == 20000 && b.view.family == FAMILY_A);

		filter_free(&a);
		filter_free(&b);
	}
}

/* An unbound (family 0) filter merges with any family and adopts it. */
static void
test_union_family_binding(void)
{
	filter		a,
				b,
				c;

	if (!filter_make(&a, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC) ||
		!filter_make(&b, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC) ||
		!filter_make(&c, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		current_failures++;
		return;
	}
	add_keys(&b, 5, 100, FAMILY_B);
	add_keys(&c, 6, 100, FAMILY_A);

	/* a is unbound: merges with b in either direction */
	CHECK_STATUS(amq_bloom_compatible(&a.view, &b.view), AMQ_OK);
	CHECK_STATUS(amq_bloom_compatible(&b.view, &a.view), AMQ_OK);
	amq_bloom_merge_bits(&a.view, &b.view, 0, amq_bloom_bits_bytes(&a.view), false);
	amq_bloom_merge_finish(&a.view, &b.view, false);
	CHECK(a.view.family == FAMILY_B);
	CHECK(a.view.inserted == 100);

	/* now a is bound to FAMILY_B and refuses FAMILY_A */
	CHECK_STATUS(amq_bloom_compatible(&a.view, &c.view), AMQ_ERR_FAMILY_MISMATCH);
	CHECK_STATUS(amq_bloom_compatible(&c.view, &a.view), AMQ_ERR_FAMILY_MISMATCH);

	/* counts saturate instead of wrapping */
	poke_u64(c.buf + 48, UINT64_MAX - 5);
	CHECK_STATUS(amq_bloom_open(c.buf, c.len, &c.view), AMQ_OK);
	CHECK_STATUS(amq_bloom_open(b.buf, b.len, &b.view), AMQ_OK);
	amq_bloom_merge_finish(&c.view, &b.view, false);
	CHECK(c.view.inserted == UINT64_MAX);
	CHECK(peek_u64(c.buf + 48) == UINT64_MAX);
	amq_bloom_add(&c.view, 42, FAMILY_A);
	CHECK(c.view.inserted == UINT64_MAX);

	filter_free(&a);
	filter_free(&b);
	filter_free(&c);
}

/* Each geometry difference is refused; the empty filter is not. */
static void
test_union_geometry_mismatch(void)
{
	filter		base,
				other;
	uint8_t		empty[AMQ_BLOOM_HEADER_SIZE];
	amq_bloom_view ev;

	if (!filter_make(&base, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		current_failures++;
		return;
	}

	/* different nbits */
	if (filter_make(&other, 2000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		CHECK_STATUS(amq_bloom_compatible(&base.view, &other.view), AMQ_ERR_GEOMETRY_MISMATCH);
		filter_free(&other);
	}
	/* different layout */
	if (filter_make(&other, 1000, 0.01, AMQ_BLOOM_LAYOUT_BLOCKED))
	{
		CHECK_STATUS(amq_bloom_compatible(&base.view, &other.view), AMQ_ERR_GEOMETRY_MISMATCH);
		filter_free(&other);
	}
	/* same size, different k (poked) */
	if (filter_make(&other, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		poke_u16(other.buf + 12, (uint16_t) (other.params.hashes + 1));
		CHECK_STATUS(amq_bloom_open(other.buf, other.len, &other.view), AMQ_OK);
		CHECK_STATUS(amq_bloom_compatible(&base.view, &other.view), AMQ_ERR_GEOMETRY_MISMATCH);
		filter_free(&other);
	}
	/* same size and k, different seed */
	if (filter_make(&other, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		amq_bloom_init(other.buf, &other.params, 1000, 0.01, 12345);
		CHECK_STATUS(amq_bloom_open(other.buf, other.len, &other.view), AMQ_OK);
		CHECK_STATUS(amq_bloom_compatible(&base.view, &other.view), AMQ_ERR_GEOMETRY_MISMATCH);
		filter_free(&other);
	}
	/* different capacity and p but the same geometry: compatible */
	if (filter_make(&other, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		amq_bloom_init(other.buf, &other.params, 999, 0.0101, AMQ_BLOOM_DEFAULT_SEED);
		CHECK_STATUS(amq_bloom_open(other.buf, other.len, &other.view), AMQ_OK);
		CHECK_STATUS(amq_bloom_compatible(&base.view, &other.view), AMQ_OK);
		filter_free(&other);
	}

	amq_bloom_init_empty(empty);
	CHECK_STATUS(amq_bloom_open(empty, sizeof(empty), &ev), AMQ_OK);
	CHECK_STATUS(amq_bloom_compatible(&base.view, &ev), AMQ_OK);
	CHECK_STATUS(amq_bloom_compatible(&ev, &base.view), AMQ_OK);
	CHECK(!amq_bloom_may_contain(&ev, 42));

	filter_free(&base);
}

/* Keys in both sides survive an intersection; the count is the minimum. */
static void
test_intersect(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		a,
					b;
		uint64_t	only_a;

		if (!filter_make(&a, 30000, 0.01, layout) ||
			!filter_make(&b, 30000, 0.01, layout))
		{
			current_failures++;
			return;
		}
		add_keys(&a, 100, 5000, FAMILY_A);	/* common */
		add_keys(&b, 100, 5000, FAMILY_A);
		add_keys(&a, 200, 10000, FAMILY_A); /* a only */
		add_keys(&b, 300, 5000, FAMILY_A);	/* b only */

		CHECK_STATUS(amq_bloom_compatible(&a.view, &b.view), AMQ_OK);
		amq_bloom_merge_bits(&a.view, &b.view, 0, amq_bloom_bits_bytes(&a.view), true);
		amq_bloom_merge_finish(&a.view, &b.view, true);
		CHECK(count_present(&a, 100, 5000) == 5000);
		CHECK(a.view.inserted == 10000);
		CHECK(peek_u64(a.buf + 48) == 10000);
		/* most a-only keys are gone (a few survive as false positives) */
		only_a = count_present(&a, 200, 10000);
		CHECK(only_a < 1000);
		filter_free(&a);
		filter_free(&b);
	}
}

/* Merging slice by slice (odd slice sizes) is byte-identical to one go. */
static void
test_union_slices(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		a1,
					a2,
					b;
		size_t		nbytes,
					from;

		if (!filter_make(&a1, 50000, 0.001, layout) ||
			!filter_make(&a2, 50000, 0.001, layout) ||
			!filter_make(&b, 50000, 0.001, layout))
		{
			current_failures++;
			return;
		}
		add_keys(&a1, 7, 20000, FAMILY_A);
		add_keys(&a2, 7, 20000, FAMILY_A);
		add_keys(&b, 8, 20000, FAMILY_A);
		nbytes = amq_bloom_bits_bytes(&a1.view);

		amq_bloom_merge_bits(&a1.view, &b.view, 0, nbytes, false);
		amq_bloom_merge_finish(&a1.view, &b.view, false);

		for (from = 0; from < nbytes; from += 4093)
			amq_bloom_merge_bits(&a2.view, &b.view, from,
								 from + 4093 < nbytes ? from + 4093 : nbytes, false);
		amq_bloom_merge_finish(&a2.view, &b.view, false);
		CHECK(a1.len == a2.len && memcmp(a1.buf, a2.buf, a1.len) == 0);

		/* the same for intersection, with 1-byte and unaligned slices */
		add_keys(&b, 9, 1000, FAMILY_A);
		amq_bloom_merge_bits(&a1.view, &b.view, 0, nbytes, true);
		amq_bloom_merge_finish(&a1.view, &b.view, true);
		amq_bloom_merge_bits(&a2.view, &b.view, 0, 1, true);
		amq_bloom_merge_bits(&a2.view, &b.view, 1, 13, true);
		amq_bloom_merge_bits(&a2.view, &b.view, 13, nbytes, true);
		amq_bloom_merge_finish(&a2.view, &b.view, true);
		CHECK(memcmp(a1.buf, a2.buf, a1.len) == 0);

		filter_free(&a1);
		filter_free(&a2);
		filter_free(&b);
	}
}

/* ----------------------------------------------------------------
 * The validator.
 * ----------------------------------------------------------------
 */

/* A valid bound filter to break, one rule at a time. */
static uint8_t *
valid_copy(const filter *f)
{
	uint8_t    *c = xmalloc(f->len + 1);

	memcpy(c, f->buf, f->len);
	c[f->len] = 0;				/* for the one-byte-long case */
	return c;
}

static void
test_validator_truncated(void)
{
	filter		f;
	amq_bloom_view v;
	size_t		len;

	if (!filter_make(&f, 100, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
	{
		current_failures++;
		return;
	}
	/*
	 * Each length gets a buffer of exactly that many bytes, so ASan catches
	 * any header read before the length check.
	 */
	for (len = 0; len < AMQ_BLOOM_HEADER_SIZE; len++)
	{
		uint8_t    *c = xmalloc(len);

		memcpy(c, f.buf, len);
		CHECK_STATUS(amq_bloom_open(c, len, &v), AMQ_ERR_TRUNCATED);
		free(c);
	}
	filter_free(&f);
}

/* One test case per rule; each starts from the valid bytes. */
static void
test_validator_rules(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		f;
		amq_bloom_view v;
		uint8_t    *c;
		uint64_t	nbits;

		if (!filter_make(&f, 1000, 0.01, layout))
		{
			current_failures++;
			return;
		}
		add_keys(&f, 3, 500, FAMILY_A);
		nbits = f.view.nbits;

		/* the unbroken value */
		CHECK_STATUS(amq_bloom_open(f.buf, f.len, &v), AMQ_OK);

#define BREAK(stmt, want) \
		do { \
			c = valid_copy(&f); \
			stmt; \
			CHECK_STATUS(amq_bloom_open(c, f.len, &v), want); \
			free(c); \
		} while (0)

		BREAK(c[0] = 'X', AMQ_ERR_MAGIC);	/* magic "XMQB" */
		BREAK(c[3] = 'b', AMQ_ERR_MAGIC);	/* magic "AMQb" */
		BREAK(c[4] = 2, AMQ_ERR_VERSION);	/* version 2 */
		BREAK(c[4] = 0, AMQ_ERR_VERSION);	/* version 0 */
		BREAK(c[5] = 5, AMQ_ERR_LAYOUT);	/* layout 5 */
		BREAK(c[6] = 0, AMQ_ERR_HASH_SCHEME);	/* hash scheme 0 */
		BREAK(c[6] = 2, AMQ_ERR_HASH_SCHEME);	/* hash scheme 2 */
		BREAK(c[7] = 1, AMQ_ERR_RESERVED);	/* flags */
		BREAK(c[7] = 0x80, AMQ_ERR_RESERVED);	/* flags, top bit */
		BREAK(c[14] = 1, AMQ_ERR_RESERVED); /* reserved low byte */
		BREAK(c[15] = 1, AMQ_ERR_RESERVED); /* reserved high byte */
		BREAK(poke_u16(c + 12, 0), AMQ_ERR_GEOMETRY);	/* k = 0 */
		BREAK(poke_u16(c + 12, 65), AMQ_ERR_GEOMETRY);	/* k = 65 */
		BREAK(poke_u16(c + 12, 0xFFFF), AMQ_ERR_GEOMETRY);	/* k = 65535 */
		BREAK(poke_u64(c + 24, 0), AMQ_ERR_GEOMETRY);	/* nbits = 0 */
		/* nbits off the layout's granularity (8 bits fewer keeps len whole) */
		BREAK(poke_u64(c + 24, nbits - 8), AMQ_ERR_GEOMETRY);
		if (layout == AMQ_BLOOM_LAYOUT_BLOCKED)
			BREAK(poke_u64(c + 24, nbits - 64), AMQ_ERR_GEOMETRY);
		BREAK(poke_u64(c + 32, 0), AMQ_ERR_GEOMETRY);	/* capacity 0 */
		BREAK(poke_f64(c + 40, 0.0), AMQ_ERR_GEOMETRY); /* p = 0 */
		BREAK(poke_f64(c + 40, -0.0), AMQ_ERR_GEOMETRY);	/* p = -0 */
		BREAK(poke_f64(c + 40, NAN), AMQ_ERR_GEOMETRY); /* p = NaN */
		BREAK(poke_f64(c + 40, 1.0), AMQ_ERR_GEOMETRY); /* p = 1 */
		BREAK(poke_f64(c + 40, -0.5), AMQ_ERR_GEOMETRY);	/* p < 0 */
		BREAK(poke_f64(c + 40, INFINITY), AMQ_ERR_GEOMETRY);	/* p = inf */
		/* nbits = 2^60 with a short body: over the size limit, not LENGTH */
		BREAK(poke_u64(c + 24, UINT64_C(1) << 60), AMQ_ERR_GEOMETRY);
		/* nbits = 2^64 - 512: an overflowing 56 + nbits/8 must not pass */
		BREAK(poke_u64(c + 24, UINT64_MAX - 511), AMQ_ERR_GEOMETRY);
		/* the largest nbits under the limit, with a short body: LENGTH */
		BREAK(poke_u64(c + 24, ((uint64_t) (AMQ_BLOOM_MAX_BYTES - AMQ_BLOOM_HEADER_SIZE) * 8)
						/ 512 * 512), AMQ_ERR_LENGTH);
		/* 1 MiB of bits claimed, a few hundred bytes present */
		BREAK(poke_u64(c + 24, UINT64_C(8) << 20), AMQ_ERR_LENGTH);
		/* unbound family with a count */
		BREAK(poke_u32(c + 8, 0), AMQ_ERR_UNBOUND_COUNT);

		/* total length one short and one long */
		c = valid_copy(&f);
		CHECK_STATUS(amq_bloom_open(c, f.len - 1, &v), AMQ_ERR_LENGTH);
		CHECK_STATUS(amq_bloom_open(c, f.len + 1, &v), AMQ_ERR_LENGTH);
		free(c);

		/* rule order: a wrong version and a wrong layout report the version */
		BREAK((c[4] = 9, c[5] = 9), AMQ_ERR_VERSION);
		/* geometry before the count check */
		BREAK((poke_u16(c + 12, 0), poke_u32(c + 8, 0)), AMQ_ERR_GEOMETRY);

		/* unbound and uncounted is fine, as is any seed */
		BREAK((poke_u32(c + 8, 0), poke_u64(c + 48, 0)), AMQ_OK);
		BREAK(poke_u64(c + 16, 0), AMQ_OK);

#undef BREAK
		filter_free(&f);
	}
}

/* The sizeless empty filter: one spelling only. */
static void
test_validator_empty(void)
{
	uint8_t		e[AMQ_BLOOM_HEADER_SIZE + 1];
	uint8_t		c[AMQ_BLOOM_HEADER_SIZE + 1];
	amq_bloom_view v;
	static const struct
	{
		int			off;
		const char *field;
	}			fields[] = {
		{8, "family"}, {12, "hashes"}, {16, "seed"}, {24, "nbits"},
		{32, "capacity"}, {40, "target_fpr"}, {47, "target_fpr sign byte"},
		{48, "inserted"}
	};
	size_t		i;

	amq_bloom_init_empty(e);
	CHECK_STATUS(amq_bloom_open(e, AMQ_BLOOM_HEADER_SIZE, &v), AMQ_OK);
	CHECK(v.layout == AMQ_BLOOM_LAYOUT_EMPTY && v.nbits == 0 && v.nblocks == 0);
	CHECK(memcmp(e, "AMQB\001\000\001\000", 8) == 0);
	for (i = 8; i < AMQ_BLOOM_HEADER_SIZE; i++)
		CHECK(e[i] == 0);

	for (i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
	{
		memcpy(c, e, AMQ_BLOOM_HEADER_SIZE);
		c[fields[i].off] = 0x80;
		if (amq_bloom_open(c, AMQ_BLOOM_HEADER_SIZE, &v) != AMQ_ERR_GEOMETRY)
			diag("empty filter with nonzero %s accepted", fields[i].field);
		CHECK_STATUS(amq_bloom_open(c, AMQ_BLOOM_HEADER_SIZE, &v), AMQ_ERR_GEOMETRY);
	}
	/* the text form of the empty filter */
	{
		char		enc[76];

		CHECK(amq_base64_encoded_len(AMQ_BLOOM_HEADER_SIZE) == 76);
		amq_base64_encode(e, AMQ_BLOOM_HEADER_SIZE, enc);
		CHECK(memcmp(enc, "QU1RQgEAAQAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAAA"
					 "AAAAAAAAAAAAAAAAAAAAAAAAAAA=", 76) == 0);
	}

	/* no bits may follow */
	e[AMQ_BLOOM_HEADER_SIZE] = 0;
	CHECK_STATUS(amq_bloom_open(e, AMQ_BLOOM_HEADER_SIZE + 1, &v), AMQ_ERR_LENGTH);
}

/* Adds keep the header bytes in step with the view. */
static void
test_header_round_trip(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		f;
		amq_bloom_view v;

		if (!filter_make(&f, 5000, 0.02, layout))
		{
			current_failures++;
			return;
		}
		CHECK(f.view.family == 0 && f.view.inserted == 0);
		add_keys(&f, 77, 1234, FAMILY_B);
		add_keys(&f, 77, 10, FAMILY_A);		/* duplicates count; family kept */
		CHECK_STATUS(amq_bloom_open(f.buf, f.len, &v), AMQ_OK);
		CHECK(v.inserted == 1244 && f.view.inserted == 1244);
		CHECK(v.family == FAMILY_B && f.view.family == FAMILY_B);
		CHECK(v.layout == layout);
		CHECK(v.hash_scheme == AMQ_HASH_SCHEME_PG_EXTENDED);
		CHECK(v.hashes == f.params.hashes);
		CHECK(v.nbits == f.params.nbits);
		CHECK(v.nblocks == (layout == AMQ_BLOOM_LAYOUT_BLOCKED ? v.nbits / 512 : 0));
		CHECK(v.seed == AMQ_BLOOM_DEFAULT_SEED);
		CHECK(v.capacity == 5000);
		CHECK(v.target_fpr == 0.02);
		CHECK(v.base == f.buf && v.bits == f.buf + AMQ_BLOOM_HEADER_SIZE);
		CHECK(amq_bloom_total_bytes(&v) == f.len);
		/* field offsets, read independently of the core */
		CHECK(peek_u64(f.buf + 24) == f.params.nbits);
		CHECK(peek_u64(f.buf + 32) == 5000);
		CHECK(peek_u64(f.buf + 48) == 1244);
		CHECK(f.buf[8] == (FAMILY_B & 0xFF) && f.buf[9] == (FAMILY_B >> 8));
		filter_free(&f);
	}
}

/* ----------------------------------------------------------------
 * Statistics.
 * ----------------------------------------------------------------
 */

static void
test_stats_empty(void)
{
	uint8_t		e[AMQ_BLOOM_HEADER_SIZE];
	amq_bloom_view v;
	amq_bloom_stats_acc acc;
	amq_bloom_stats st;
	int			layout;

	amq_bloom_init_empty(e);
	CHECK_STATUS(amq_bloom_open(e, sizeof(e), &v), AMQ_OK);
	amq_bloom_stats_begin(&acc);
	amq_bloom_stats_accumulate(&v, &acc, 0, amq_bloom_bits_bytes(&v));
	amq_bloom_stats_end(&v, &acc, &st);
	CHECK(st.bits_set == 0 && st.est_distinct == 0.0 && st.est_fpr == 0.0);

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		filter		f;

		if (!filter_make(&f, 1000, 0.01, layout))
		{
			current_failures++;
			return;
		}
		st = filter_stats(&f);
		CHECK(st.bits_set == 0 && st.est_distinct == 0.0 && st.est_fpr == 0.0);

		/* a full filter: every probe hits, the distinct count is unknown */
		memset(f.buf + AMQ_BLOOM_HEADER_SIZE, 0xFF, f.len - AMQ_BLOOM_HEADER_SIZE);
		st = filter_stats(&f);
		CHECK(st.bits_set == f.view.nbits);
		CHECK(isinf(st.est_distinct) && st.est_distinct > 0);
		CHECK(st.est_fpr == 1.0);
		CHECK(amq_bloom_may_contain(&f.view, 12345));
		filter_free(&f);
	}
}

/* Fill-based estimates at capacity: distinct count and FPR. */
static void
test_stats_estimates(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		const uint64_t n = 10000;
		const double p = 0.01;
		filter		f;
		amq_bloom_stats st,
					st2;
		amq_bloom_stats_acc acc;
		size_t		nbytes,
					from;

		if (!filter_make(&f, n, p, layout))
		{
			current_failures++;
			return;
		}
		add_keys(&f, 4242, n, FAMILY_A);
		add_keys(&f, 4242, n / 2, FAMILY_A);	/* duplicates: no change */
		st = filter_stats(&f);
		diag("%s n=%llu p=%g: bits_set=%llu/%llu est_distinct=%.1f est_fpr=%.5g",
			 layout_name(layout), (unsigned long long) n, p,
			 (unsigned long long) st.bits_set, (unsigned long long) f.view.nbits,
			 st.est_distinct, st.est_fpr);
		CHECK(fabs(st.est_distinct - (double) n) <= 0.05 * (double) n);
		CHECK(st.est_fpr >= 0.5 * p && st.est_fpr <= 2.0 * p);

		/* accumulating in 64-byte-multiple slices gives the same result */
		nbytes = amq_bloom_bits_bytes(&f.view);
		amq_bloom_stats_begin(&acc);
		for (from = 0; from < nbytes; from += 64 * 7)
			amq_bloom_stats_accumulate(&f.view, &acc, from,
									   from + 64 * 7 < nbytes ? from + 64 * 7 : nbytes);
		amq_bloom_stats_end(&f.view, &acc, &st2);
		CHECK(st2.bits_set == st.bits_set);
		CHECK(fabs(st2.est_fpr - st.est_fpr) <= 1e-12 * st.est_fpr);
		filter_free(&f);
	}
}

/*
 * The blocked layout's batched adds (amq_bloom_add_many, and
 * amq_bloom_add_requested for a caller that requested the keys' lines) set
 * the bytes key-at-a-time adds set, for every k the sizing gives from p =
 * 0.1 to 1e-5: the add is specialized for some k and unrolled seven bits a
 * stream word, the probe is not.  Every key then probes true.
 */
static void
test_blocked_batches_every_k(void)
{
	static const double ps[] = {0.1, 0.05, 0.01, 0.001, 0.0001, 0.00001};
	enum
	{
		N = 5000
	};
	size_t		pi;

	for (pi = 0; pi < sizeof(ps) / sizeof(ps[0]); pi++)
	{
		uint64_t	keys[N];
		uint64_t	s = 4242 + pi;
		filter		one,
					many,
					requested;
		amq_key_lines lines;
		size_t		i;
		bool		all_found = true;

		for (i = 0; i < N; i++)
			keys[i] = splitmix64(&s);
		if (!filter_make(&one, N, ps[pi], AMQ_BLOOM_LAYOUT_BLOCKED) ||
			!filter_make(&many, N, ps[pi], AMQ_BLOOM_LAYOUT_BLOCKED) ||
			!filter_make(&requested, N, ps[pi], AMQ_BLOOM_LAYOUT_BLOCKED))
		{
			current_failures++;
			return;
		}
		for (i = 0; i < N; i++)
			amq_bloom_add(&one.view, keys[i], FAMILY_A);
		CHECK_STATUS(amq_bloom_add_many(&many.view, keys, 1000, FAMILY_A), AMQ_OK);
		CHECK_STATUS(amq_bloom_add_many(&many.view, keys + 1000, N - 1000, FAMILY_A), AMQ_OK);
		CHECK(amq_bloom_key_lines(&requested.view, &lines));
		CHECK(lines.base == requested.view.bits);
		for (i = 0; i < N; i++)
			amq_prefetch_key_line(&lines, keys[i]);
		amq_bloom_add_requested(&requested.view, keys, 17, FAMILY_A);
		amq_bloom_add_requested(&requested.view, keys + 17, N - 17, FAMILY_A);
		diag("p = %g: k = %u", ps[pi], (unsigned) one.view.hashes);
		CHECK(memcmp(one.buf, many.buf, one.len) == 0);
		CHECK(memcmp(one.buf, requested.buf, one.len) == 0);
		for (i = 0; i < N; i++)
			all_found &= amq_bloom_may_contain(&requested.view, keys[i]);
		CHECK(all_found);
		filter_free(&one);
		filter_free(&many);
		filter_free(&requested);
	}
	/* the other layouts do not add within one line */
	{
		filter		classic;
		amq_key_lines lines;

		if (filter_make(&classic, 1000, 0.01, AMQ_BLOOM_LAYOUT_CLASSIC))
		{
			CHECK(!amq_bloom_key_lines(&classic.view, &lines));
			filter_free(&classic);
		}
		else
			current_failures++;
	}
}

/* ----------------------------------------------------------------
 * Determinism: what parallel aggregation relies on.
 * ----------------------------------------------------------------
 */

static void
test_determinism(void)
{
	int			layout;

	for (layout = AMQ_BLOOM_LAYOUT_BLOCKED; layout <= AMQ_BLOOM_LAYOUT_CLASSIC; layout++)
	{
		enum
		{
			N = 20000
		};
		uint64_t   *keys = xmalloc(N * sizeof(uint64_t));
		uint64_t	s = 31337;
		filter		fwd,
					rev,
					shuf,
					batch,
					half1,
					half2;
		size_t		i;

		for (i = 0; i < N; i++)
			keys[i] = splitmix64(&s);

		if (!filter_make(&fwd, N, 0.01, layout) ||
			!filter_make(&rev, N, 0.01, layout) ||
			!filter_make(&shuf, N, 0.01, layout) ||
			!filter_make(&batch, N, 0.01, layout) ||
			!filter_make(&half1, N, 0.01, layout) ||
			!filter_make(&half2, N, 0.01, layout))
		{
			current_failures++;
			free(keys);
			return;
		}

		for (i = 0; i < N; i++)
			amq_bloom_add(&fwd.view, keys[i], FAMILY_A);
		for (i = N; i-- > 0;)
			amq_bloom_add(&rev.view, keys[i], FAMILY_A);
		/* a fixed-seed Fisher-Yates shuffle */
		for (i = N - 1; i > 0; i--)
		{
			size_t		j = (size_t) (splitmix64(&s) % (i + 1));
			uint64_t	t = keys[i];

			keys[i] = keys[j];
			keys[j] = t;
		}
		for (i = 0; i < N; i++)
			amq_bloom_add(&shuf.view, keys[i], FAMILY_A);
		/* batched adds of uneven sizes, as an aggregate's buffer flushes them */
		{
			size_t		sizes[] = {0, 1, 7, 8, 9, 255, 256, 3000};
			size_t		next = 0,
						at = 0;

			while (at < N)
			{
				size_t		len = sizes[next++ % (sizeof(sizes) / sizeof(sizes[0]))];

				if (len > N - at)
					len = N - at;
				amq_bloom_add_many(&batch.view, keys + at, len, FAMILY_A);
				at += len;
			}
		}
		/* split like two parallel workers, interleaved, then combined */
		for (i = 0; i < N; i++)
			amq_bloom_add(i % 3 == 0 ? &half1.view : &half2.view, keys[i], FAMILY_A);
		CHECK_STATUS(amq_bloom_compatible(&half2.view, &half1.view), AMQ_OK);
		amq_bloom_merge_bits(&half2.view, &half1.view, 0, amq_bloom_bits_bytes(&half2.view), false);
		amq_bloom_merge_finish(&half2.view, &half1.view, false);

		CHECK(memcmp(fwd.buf, rev.buf, fwd.len) == 0);
		CHECK(memcmp(fwd.buf, shuf.buf, fwd.len) == 0);
		CHECK(memcmp(fwd.buf, batch.buf, fwd.len) == 0);
		CHECK(memcmp(fwd.buf, half2.buf, fwd.len) == 0);

		filter_free(&fwd);
		filter_free(&rev);
		filter_free(&shuf);
		filter_free(&batch);
		filter_free(&half1);
		filter_free(&half2);
		free(keys);
	}
}

/* The status texts exist, are distinct and read as fragments. */
static void
test_status_text(void)
{
	int			i,
				j;

	for (i = AMQ_OK; i <= AMQ_FULL; i++)
	{
		const char *t = amq_status_text((amq_status) i);

		CHECK(t != NULL && t[0] != '\0');
		CHECK(t[0] >= 'a' && t[0] <= 'z');
		CHECK(t[strlen(t) - 1] != '.');
		for (j = AMQ_OK; j < i; j++)
			CHECK(strcmp(t, amq_status_text((amq_status) j)) != 0);
	}
	CHECK(strcmp(amq_status_text(AMQ_ERR_TRUNCATED),
				 "value is shorter than the fixed header of its format") == 0);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

static const amq_test tests[] = {
	{"no false negatives", test_no_false_negatives},
	{"fpr blocked p=0.01", test_fpr_blocked_001},
	{"fpr blocked p=0.001", test_fpr_blocked_0001},
	{"fpr classic p=0.01", test_fpr_classic_001},
	{"fpr classic p=0.001", test_fpr_classic_0001},
	{"known bit positions", test_known_positions},
	{"blocked batches at every k", test_blocked_batches_every_k},
	{"blocked add and test unrolled", test_block_unrolled},
	{"sizing errors", test_sizing_errors},
	{"sizing classic example", test_sizing_classic_example},
	{"sizing grid", test_sizing_grid},
	{"sizing model sweep", test_sizing_model_sweep},
	{"sizing timing", test_sizing_timing},
	{"union", test_union},
	{"union family binding", test_union_family_binding},
	{"union geometry mismatch", test_union_geometry_mismatch},
	{"intersect", test_intersect},
	{"union in slices", test_union_slices},
	{"validator truncated", test_validator_truncated},
	{"validator rules", test_validator_rules},
	{"validator empty filter", test_validator_empty},
	{"header round trip", test_header_round_trip},
	{"stats empty and full", test_stats_empty},
	{"stats estimates", test_stats_estimates},
	{"determinism", test_determinism},
	{"status text", test_status_text},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core bloom");
}
