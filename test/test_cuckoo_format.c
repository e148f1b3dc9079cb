/*
 * test_cuckoo_format.c
 *		Unit tests of the cuckoo core: sizing, the hash-to-slot mapping and
 *		the serialized layout.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why:
 *
 *	- sizing: the parameter errors, the fingerprint width and bucket count
 *	  formulas of amq_cuckoo.h, and the size limit (a filter that cannot be
 *	  stored must be refused quickly, before anything is allocated);
 *	- the hash-to-slot mapping and the bit packing, against the reference
 *	  formulas of amq_cuckoo.h and docs/format.md: they decide where
 *	  fingerprints live, so they are part of the format and a change breaks
 *	  every stored filter;
 *	- the nesting of tables (every table has base * 2^level buckets): the
 *	  alternate bucket is an involution for any base and level, indexes and
 *	  alternates commute with shifting right, and values sharing fingerprint
 *	  and bucket pair at one level share the pair at every lower one, which
 *	  is what deletion relies on;
 *	- the bytes init writes, and the header and view kept in step by adds;
 *	- docs/format.md's reference add (placement, counted copies, the two-move
 *	  search, the eviction walk, the victim, counting or making room where
 *	  the filter is full), written from the document, against the core's
 *	  bytes and counters after every add: the document claims they agree
 *	  exactly.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  The reference reading of the format is
 * test/cuckoo_model.h, the growable filter test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo format: N passed, M failed"; exit status
 * 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_cuckoo.h"
#include "amq_status.h"
#include "cuckoo_fixture.h"
#include "cuckoo_model.h"
#include "harness.h"

/* ----------------------------------------------------------------
 * Sizing.
 * ----------------------------------------------------------------
 */

/* Every parameter error, and the size limit refused without delay. */
static void
test_sizing_errors(void)
{
	amq_cuckoo_params pr;
	double		t0;
	double		ms;
	int			r;

	CHECK_STATUS(amq_cuckoo_size(0, 0.01, &pr), AMQ_ERR_PARAM_N);
	CHECK_STATUS(amq_cuckoo_size(0, NAN, &pr), AMQ_ERR_PARAM_N);
	CHECK_STATUS(amq_cuckoo_size(100, 0.0, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, -0.0, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, -0.5, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, 1.0, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, 1.5, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, NAN, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, INFINITY, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, -INFINITY, &pr), AMQ_ERR_PARAM_P);
	CHECK_STATUS(amq_cuckoo_size(100, nextafter(AMQ_CUCKOO_MIN_FPR, 0.0), &pr),
				 AMQ_ERR_PARAM_P_SMALL);
	CHECK_STATUS(amq_cuckoo_size(100, 1e-12, &pr), AMQ_ERR_PARAM_P_SMALL);
	CHECK_STATUS(amq_cuckoo_size(100, 4.9406564584124654e-324, &pr),
				 AMQ_ERR_PARAM_P_SMALL);
	CHECK_STATUS(amq_cuckoo_size(100, AMQ_CUCKOO_MIN_FPR, &pr), AMQ_OK);
	CHECK_STATUS(amq_cuckoo_size(1, nextafter(1.0, 0.0), &pr), AMQ_OK);

	t0 = now_seconds();
	for (r = 0; r < 100; r++)
	{
		CHECK_STATUS(amq_cuckoo_size(UINT64_C(1000000000000000), 0.01, &pr),
					 AMQ_ERR_TOO_LARGE);
		CHECK_STATUS(amq_cuckoo_size(UINT64_MAX, 0.5, &pr), AMQ_ERR_TOO_LARGE);
		CHECK_STATUS(amq_cuckoo_size(UINT64_MAX, AMQ_CUCKOO_MIN_FPR, &pr),
					 AMQ_ERR_TOO_LARGE);
		CHECK_STATUS(amq_cuckoo_size(UINT64_C(1000000000), 0.01, &pr),
					 AMQ_ERR_TOO_LARGE);
	}
	ms = (now_seconds() - t0) * 1000.0 / 400.0;
	diag("a refused sizing takes %.4f ms", ms);
	CHECK(ms < 1.0);
}

/* f = max(4, ceil(log2(8/p))), one more only where the model asks for it. */
static void
test_sizing_fp_bits(void)
{
	static const double ps[] = {0.9, 0.5, 0.3, 0.1, 0.05, 0.01, 1e-3, 1.5e-4,
	1e-4, 1e-6, 1e-8, 3e-9, AMQ_CUCKOO_MIN_FPR};
	static const uint32_t want[] = {4, 4, 5, 7, 8, 10, 13, 16, 17, 23, 30, 32, 32};
	size_t		i;

	for (i = 0; i < lengthof(ps); i++)
	{
		amq_cuckoo_params pr;
		uint32_t	base = ref_fp_bits(ps[i]);
		uint32_t	top = base < 32 ? base + 1 : 32;

		CHECK(base == want[i]);
		CHECK_STATUS(amq_cuckoo_size(100000, ps[i], &pr), AMQ_OK);
		if (pr.fp_bits < base || pr.fp_bits > top)
			diag("p=%g: f=%u, expected %u (or %u)", ps[i], pr.fp_bits, base, top);
		CHECK(pr.fp_bits >= base && pr.fp_bits <= top);
		CHECK(pr.fp_bits >= AMQ_CUCKOO_MIN_FP_BITS &&
			  pr.fp_bits <= AMQ_CUCKOO_MAX_FP_BITS);
		CHECK(pr.expected_fpr > 0.0 && pr.expected_fpr <= ps[i]);
		if (pr.fp_bits != base)
			diag("p=%g: f raised to %u (model %.4g)", ps[i], pr.fp_bits,
				 pr.expected_fpr);
	}
	/* the smallest rate needs all 32 bits */
	{
		amq_cuckoo_params pr;

		CHECK_STATUS(amq_cuckoo_size(1000, AMQ_CUCKOO_MIN_FPR, &pr), AMQ_OK);
		CHECK(pr.fp_bits == 32);
	}
}

/* buckets = ceil(n / 3.8), bytes = header + one table, bits/key, model. */
static void
test_sizing_geometry(void)
{
	static const uint64_t ns[] = {1, 2, 3, 4, 5, 18, 19, 20, 38, 95, 100, 999,
		1000, 1001, 9999, 10000, 12345, 100000, 1000000, 123456789};
	static const double ps[] = {0.5, 0.01, 1e-6};
	size_t		i,
				j;

	for (i = 0; i < lengthof(ns); i++)
		for (j = 0; j < lengthof(ps); j++)
		{
			amq_cuckoo_params pr;
			amq_status	st = amq_cuckoo_size(ns[i], ps[j], &pr);

			CHECK_STATUS(st, AMQ_OK);
			if (st != AMQ_OK)
				continue;
			if (pr.buckets != ref_buckets(ns[i]))
				diag("n=%llu p=%g: %llu buckets, expected %llu",
					 (unsigned long long) ns[i], ps[j],
					 (unsigned long long) pr.buckets,
					 (unsigned long long) ref_buckets(ns[i]));
			CHECK(pr.buckets == ref_buckets(ns[i]));
			CHECK(amq_cuckoo_table_bytes(pr.buckets, pr.fp_bits) ==
				  ref_table_bytes(pr.buckets, pr.fp_bits));
			CHECK(pr.bytes == AMQ_CUCKOO_HEADER_SIZE +
				  amq_cuckoo_table_bytes(pr.buckets, pr.fp_bits));
			CHECK(pr.bytes <= AMQ_CUCKOO_MAX_BYTES);
			CHECK(fabs(pr.bits_per_key - 8.0 * (double) pr.bytes / (double) ns[i]) <=
				  1e-9 * pr.bits_per_key);
			CHECK(pr.expected_fpr > 0.0 && pr.expected_fpr <= ps[j]);
		}

	/* the worked example: n = 1000 is 264 buckets, not a power of two */
	{
		amq_cuckoo_params pr;

		CHECK_STATUS(amq_cuckoo_size(1000, 0.01, &pr), AMQ_OK);
		CHECK(pr.buckets == 264);
		CHECK(pr.fp_bits == 10);
		/* 4 * 264 * 10 = 10560 bits = 165 words, plus one */
		CHECK(pr.bytes == 64 + 32 + 8 * 166);
	}
	/* p = 1%: about 10.5 bits per key */
	{
		amq_cuckoo_params pr;

		CHECK_STATUS(amq_cuckoo_size(1000000, 0.01, &pr), AMQ_OK);
		diag("n=1e6 p=0.01: f=%u buckets=%llu bytes=%zu bits/key=%.3f model=%.5g",
			 pr.fp_bits, (unsigned long long) pr.buckets, pr.bytes,
			 pr.bits_per_key, pr.expected_fpr);
		CHECK(pr.bits_per_key <= 11.0);
		CHECK_STATUS(amq_cuckoo_size(100000, 0.01, &pr), AMQ_OK);
		CHECK(pr.bits_per_key <= 11.0);
	}
}

/*
 * Over a sweep of n up to 10^10: accepted sizes stay within the limit, and
 * AMQ_ERR_TOO_LARGE only where the formula's size really exceeds it.
 */
static void
test_sizing_limit(void)
{
	static const double ps[] = {0.5, 0.01, 1e-6, AMQ_CUCKOO_MIN_FPR};
	size_t		j;
	int			refused = 0,
				total = 0;

	for (j = 0; j < lengthof(ps); j++)
	{
		uint64_t	n;

		for (n = 1; n <= UINT64_C(10000000000); n = n * 3 + 1)
		{
			amq_cuckoo_params pr;
			amq_status	st = amq_cuckoo_size(n, ps[j], &pr);
			uint64_t	want = AMQ_CUCKOO_HEADER_SIZE +
				ref_table_bytes(ref_buckets(n), ref_fp_bits(ps[j]));

			total++;
			if (st == AMQ_ERR_TOO_LARGE)
			{
				refused++;
				if (want <= AMQ_CUCKOO_MAX_BYTES)
					diag("n=%llu p=%g refused at %llu bytes", (unsigned long long) n,
						 ps[j], (unsigned long long) want);
				/* one extra fingerprint bit may tip it over */
				CHECK(want > AMQ_CUCKOO_MAX_BYTES ||
					  AMQ_CUCKOO_HEADER_SIZE +
					  ref_table_bytes(ref_buckets(n), ref_fp_bits(ps[j]) + 1) >
					  AMQ_CUCKOO_MAX_BYTES);
				continue;
			}
			CHECK_STATUS(st, AMQ_OK);
			if (st != AMQ_OK)
				continue;
			CHECK(pr.bytes <= AMQ_CUCKOO_MAX_BYTES);
			CHECK(pr.bytes >= want);
		}
	}
	diag("%d sizings, %d over the size limit", total, refused);
	CHECK(refused > 0);
}

/* ----------------------------------------------------------------
 * The mapping.
 * ----------------------------------------------------------------
 */

/* Fingerprints are in [1, 2^f) and follow the documented formula. */
static void
test_mapping_fingerprint(void)
{
	uint32_t	f;
	int			bad = 0;
	uint64_t	s0 = 5;
	int			k;

	/* the reference inverse really inverts the mix */
	for (k = 0; k < 1000; k++)
	{
		uint64_t	x = splitmix64(&s0);

		CHECK(ref_fmix64(ref_unmix64(x)) == x);
	}
	for (f = AMQ_CUCKOO_MIN_FP_BITS; f <= AMQ_CUCKOO_MAX_FP_BITS; f++)
	{
		uint64_t	s = 1000 + f;
		uint64_t	limit = UINT64_C(1) << f;
		int			i;
		static const uint64_t edges[] = {0, 1, UINT64_C(0xFFFFFFFF),
			UINT64_C(0xFFFFFFFF00000000), UINT64_MAX, UINT64_C(0x80000000),
		UINT64_C(0x7FFFFFFF)};
		size_t		e;

		for (i = 0; i < 50000; i++)
		{
			uint64_t	h = splitmix64(&s);
			uint32_t	fp = amq_cuckoo_fingerprint(h, f);

			if (fp == 0 || fp >= limit || fp != ref_fingerprint(h, f))
			{
				if (bad++ < 5)
					diag("f=%u hash %016llx: fingerprint %u, expected %u", f,
						 (unsigned long long) h, fp, ref_fingerprint(h, f));
			}
		}
		for (e = 0; e < lengthof(edges); e++)
		{
			uint32_t	fp = amq_cuckoo_fingerprint(edges[e], f);

			CHECK(fp != 0 && fp < limit && fp == ref_fingerprint(edges[e], f));
		}
		/* the extremes of the mixed low half map to 1 and 2^f - 1 */
		CHECK(amq_cuckoo_fingerprint(ref_unmix64(UINT64_C(0xFFFFFFFF00000000)), f) == 1);
		CHECK(amq_cuckoo_fingerprint(ref_unmix64(UINT64_C(0xFFFFFFFF)), f) == limit - 1);
		/* narrow widths: every value 1 .. 2^f - 1 occurs (~50 times each) */
		if (f <= 10)
		{
			static bool seen[1024];
			uint32_t	v,
						missing = 0;

			memset(seen, 0, sizeof(seen));
			s = 1000 + f;
			for (i = 0; i < 50000; i++)
			{
				uint32_t	fp = amq_cuckoo_fingerprint(splitmix64(&s), f);

				if (fp < 1024)
					seen[fp] = true;
			}
			for (v = 1; v < limit; v++)
				missing += !seen[v];
			CHECK(missing == 0);
		}
	}
	CHECK(bad == 0);
}

/* index = floor(fmix64(hash) * buckets / 2^64), always < buckets. */
static void
test_mapping_index(void)
{
	static const uint64_t bs[] = {1, 2, 3, 7, 264, 1000003, UINT64_C(1) << 20,
	UINT64_C(0x100000000) + 15, UINT64_C(1) << 40};
	uint64_t	s = 77;
	size_t		j;
	int			bad = 0;

	for (j = 0; j < lengthof(bs); j++)
	{
		int			i;

		CHECK(amq_cuckoo_index(ref_unmix64(0), bs[j]) == 0);
		CHECK(amq_cuckoo_index(ref_unmix64(UINT64_MAX), bs[j]) == bs[j] - 1);
		for (i = 0; i < 20000; i++)
		{
			uint64_t	h = splitmix64(&s);
			uint64_t	ix = amq_cuckoo_index(h, bs[j]);

			if (ix >= bs[j] || ix != ref_index(h, bs[j]))
				if (bad++ < 5)
					diag("index(%016llx, %llu) = %llu, expected %llu",
						 (unsigned long long) h, (unsigned long long) bs[j],
						 (unsigned long long) ix,
						 (unsigned long long) ref_index(h, bs[j]));
		}
	}
	CHECK(bad == 0);
}

/* A random fingerprint of a random width in 4 .. 32. */
static uint32_t
random_fp(uint64_t *state)
{
	uint64_t	r = splitmix64(state);
	uint32_t	f = 4 + (uint32_t) (r % 29);

	return ref_fingerprint(splitmix64(state), f);
}

/*
 * alternate(i, fp, base, level) follows the documented formula, stays in
 * [0, base 2^level) and is an involution, for bases 1, 2, 3, ..., 1000003
 * and beyond 2^32, levels 0 .. 10 (and higher where base 2^level fits),
 * random buckets and the edge buckets of each table.
 */
static void
test_mapping_alternate(void)
{
	static const uint64_t bs[] = {1, 2, 3, 5, 7, 264, 1000003,
		UINT64_C(1) << 20, UINT64_C(0x100000000) + 15, UINT64_C(1) << 40,
	UINT64_MAX / 3};
	static const unsigned high_levels[] = {16, 20, 31, 40, 53, 62, 63};
	uint64_t	s = 78;
	size_t		j;
	int			bad = 0;
	long		checked = 0;

	for (j = 0; j < lengthof(bs); j++)
	{
		uint64_t	base = bs[j];
		unsigned	li;

		for (li = 0; li < 11 + lengthof(high_levels); li++)
		{
			unsigned	level = li < 11 ? li : high_levels[li - 11];
			uint64_t	nb;
			int			i;

			/* base 2^level must fit in 64 bits */
			if (level > 0 && base > (UINT64_MAX >> level))
				continue;
			nb = base << level;
			for (i = 0; i < 2000; i++)
			{
				uint64_t	h = splitmix64(&s);
				uint32_t	fp = random_fp(&s);
				uint64_t	ix,
							alt,
							back,
							want;

				switch (i)
				{
					case 0:
						ix = 0;
						break;
					case 1:
						ix = nb - 1;
						break;
					case 2:
						ix = (UINT64_C(1) << level) - 1;	/* all low bits */
						break;
					case 3:
						ix = nb - (UINT64_C(1) << level);	/* top high, low 0 */
						break;
					default:
						ix = i % 2 ? ref_index(h, nb) : ref_range(h, nb);
				}
				if (i == 4)
					fp = 1;
				else if (i == 5)
					fp = UINT32_MAX;
				alt = amq_cuckoo_alternate(ix, fp, base, level);
				back = amq_cuckoo_alternate(alt, fp, base, level);
				want = ref_alternate(ix, fp, base, level);
				checked++;
				if (alt >= nb || back != ix || alt != want)
					if (bad++ < 5)
						diag("alternate(%llu, %u, base %llu, level %u) = %llu "
							 "(expected %llu), back %llu",
							 (unsigned long long) ix, fp,
							 (unsigned long long) base, level,
							 (unsigned long long) alt,
							 (unsigned long long) want,
							 (unsigned long long) back);
			}
		}
	}
	/* one bucket: the alternate is the bucket itself */
	CHECK(amq_cuckoo_alternate(0, 5, 1, 0) == 0);
	/* level 0 is the first table's mapping (H(fp) - i) mod base */
	{
		uint32_t	fp = 12345;
		uint64_t	h = ref_range(ref_fmix64(fp), 264);

		CHECK(amq_cuckoo_alternate(0, fp, 264, 0) == h);
		CHECK(amq_cuckoo_alternate(h, fp, 264, 0) == 0);
		CHECK(amq_cuckoo_alternate(h + 1, fp, 264, 0) == 263);
	}
	/* base 1: only the low bits move, xored with M */
	{
		uint32_t	fp = 777;
		unsigned	level;

		for (level = 1; level <= 10; level++)
			CHECK(amq_cuckoo_alternate(0, fp, 1, level) == ref_low_mask(fp, level));
	}
	diag("%ld (bucket, fingerprint, base, level) checked", checked);
	CHECK(bad == 0);
}


/*
 * h1 and h2 share fingerprint and bucket pair at level L: they share the
 * pair at every level below (by the core's mapping).  Counts failures.
 */
static int
check_nested_pair(uint64_t h1, uint64_t h2, uint32_t f, uint64_t base,
				  unsigned L)
{
	unsigned	l;
	int			bad = 0;

	for (l = 0; l < L; l++)
	{
		uint64_t	p1[2],
					p2[2];

		core_pair(h1, f, base, l, p1);
		core_pair(h2, f, base, l, p2);
		if (!same_pair(p1, p2))
		{
			if (bad++ == 0)
				diag("hashes %016llx and %016llx (f %u, base %llu) share their "
					 "pair at level %u but not at level %u: {%llu, %llu} vs "
					 "{%llu, %llu}", (unsigned long long) h1,
					 (unsigned long long) h2, f, (unsigned long long) base, L,
					 l, (unsigned long long) p1[0], (unsigned long long) p1[1],
					 (unsigned long long) p2[0], (unsigned long long) p2[1]);
		}
	}
	return bad;
}

/*
 * Tables nest: values that share fingerprint and bucket pair in a table of
 * level L share the pair in every table of a lower level, which is what
 * deletion relies on.  Two ways to get such values:
 *
 *	1. random hashes with 4-bit fingerprints and small bases, where they
 *	   collide all the time: every hash is filed under (fingerprint, pair)
 *	   at level L and checked against the first hash filed there;
 *	2. built on purpose, for larger bases and fingerprints: h2 gets a mix
 *	   with other low bits but the same fingerprint, and high bits that put
 *	   its index in h1's pair at level L (either bucket of it).
 */
static void
test_mapping_nesting(void)
{
	static const uint64_t small_bases[] = {1, 2, 3, 5, 7};
	static const uint64_t bases[] = {1, 3, 264, 1000, 1000003};
	static const uint32_t widths[] = {4, 7, 10, 13};
	enum
	{
		N = 6000
	};
	uint64_t   *hs = xmalloc(N * sizeof(uint64_t));
	uint64_t	s = 1234;
	long		random_checked = 0,
				built_checked = 0;
	long		not_shared_below = 0;
	int			bad = 0;
	size_t		j,
				w;

	/* 1. random collisions */
	for (j = 0; j < lengthof(small_bases); j++)
	{
		uint64_t	base = small_bases[j];
		unsigned	L;

		for (L = 1; L <= 8; L++)
		{
			uint64_t	nb = base << L;
			int		   *first = xmalloc(16 * nb * sizeof(int));
			long		here = 0;
			int			i;

			for (i = 0; i < (int) (16 * nb); i++)
				first[i] = -1;
			for (i = 0; i < N; i++)
			{
				uint64_t	h = splitmix64(&s);
				uint32_t	fp = amq_cuckoo_fingerprint(h, 4);
				uint64_t	p[2];
				int		   *slot;

				hs[i] = h;
				core_pair(h, 4, base, L, p);
				sort_pair(p);
				slot = &first[fp * nb + p[0]];
				if (*slot < 0)
				{
					*slot = i;
					continue;
				}
				/* same fingerprint, same smaller bucket: the same pair */
				{
					uint64_t	q[2];

					core_pair(hs[*slot], 4, base, L, q);
					CHECK(same_pair(p, q));
				}
				bad += check_nested_pair(hs[*slot], h, 4, base, L);
				here++;
				/* and the pair one level up is often another one */
				{
					uint64_t	a[2],
								b[2];

					core_pair(hs[*slot], 4, base, L + 1, a);
					core_pair(h, 4, base, L + 1, b);
					not_shared_below += !same_pair(a, b);
				}
			}
			/* at least N minus the number of (fingerprint, pair) keys */
			CHECK(here >= N - 15 * (long) nb);
			random_checked += here;
			free(first);
		}
	}

	/* 2. collisions built on purpose */
	for (j = 0; j < lengthof(bases); j++)
		for (w = 0; w < lengthof(widths); w++)
		{
			uint64_t	base = bases[j];
			uint32_t	f = widths[w];
			unsigned	L;

			for (L = 1; L <= 10 && (base << L) <= (UINT64_C(1) << 30); L++)
			{
				uint64_t	nb = base << L;
				int			i;

				for (i = 0; i < 300; i++)
				{
					uint64_t	h1 = splitmix64(&s);
					uint32_t	fp = ref_fingerprint(h1, f);
					uint32_t	lo1 = (uint32_t) ref_fmix64(h1);
					uint32_t	lo2 = lo1;
					uint64_t	p1[2],
								p2[2];
					uint64_t	h2;
					int			tries;

					/*
					 * other low bits, same fingerprint: a fingerprint covers
					 * about 2^(32 - f) >= 2^19 consecutive low values
					 */
					for (tries = 0; tries < 1000 && lo2 == lo1; tries++)
					{
						uint32_t	c = lo1 + (uint32_t) (splitmix64(&s) % 131072) - 65536;

						if (1 + (uint32_t) (((uint64_t) c * ((UINT64_C(1) << f) - 1)) >> 32) == fp)
							lo2 = c;
					}
					core_pair(h1, f, base, L, p1);
					h2 = ref_hash_at(lo2, nb, p1[i % 2], &s);
					core_pair(h2, f, base, L, p2);
					if (lo2 == lo1 || amq_cuckoo_fingerprint(h2, f) != fp ||
						!same_pair(p1, p2))
					{
						if (bad++ < 5)
							diag("built collision failed: f %u base %llu level %u",
								 f, (unsigned long long) base, L);
						continue;
					}
					bad += check_nested_pair(h1, h2, f, base, L);
					built_checked++;
				}
			}
		}
	diag("nesting: %ld random and %ld built collisions checked at all lower "
		 "levels; %ld of the random ones part one level up",
		 random_checked, built_checked, not_shared_below);
	/* enough collisions to mean something, and not a mapping that never parts */
	CHECK(random_checked >= 100000);
	CHECK(built_checked >= 50000);
	CHECK(not_shared_below >= 1000);
	CHECK(bad == 0);
	free(hs);
}

/*
 * The shifts: index at level L >> d is the index at level L - d, and the
 * alternate commutes with >> d, for every d <= L.
 */
static void
test_mapping_shift(void)
{
	static const uint64_t bases[] = {1, 2, 3, 5, 7, 264, 1000, 1000003,
	UINT64_C(0x100000000) + 15};
	uint64_t	s = 4321;
	size_t		j;
	int			bad = 0;
	long		checked = 0;

	for (j = 0; j < lengthof(bases); j++)
	{
		uint64_t	base = bases[j];
		unsigned	L;

		for (L = 0; L <= 24; L++)
		{
			int			i;

			if (L > 0 && base > (UINT64_MAX >> L))
				break;
			for (i = 0; i < 200; i++)
			{
				uint64_t	h = splitmix64(&s);
				uint32_t	fp = random_fp(&s);
				uint64_t	ix = amq_cuckoo_index(h, base << L);
				uint64_t	any = ref_range(splitmix64(&s), base << L);
				unsigned	d;

				for (d = 0; d <= L; d++)
				{
					uint64_t	ix_d = amq_cuckoo_index(h, base << (L - d));
					uint64_t	a = amq_cuckoo_alternate(ix, fp, base, L) >> d;
					uint64_t	a_d = amq_cuckoo_alternate(ix >> d, fp, base, L - d);
					uint64_t	b = amq_cuckoo_alternate(any, fp, base, L) >> d;
					uint64_t	b_d = amq_cuckoo_alternate(any >> d, fp, base, L - d);

					checked++;
					if ((ix >> d) != ix_d || a != a_d || b != b_d)
						if (bad++ < 5)
							diag("base %llu level %u d %u: index %llu >> d = %llu, "
								 "index at L - d %llu; alternates %llu / %llu, "
								 "%llu / %llu", (unsigned long long) base, L, d,
								 (unsigned long long) ix,
								 (unsigned long long) (ix >> d),
								 (unsigned long long) ix_d,
								 (unsigned long long) a, (unsigned long long) a_d,
								 (unsigned long long) b, (unsigned long long) b_d);
				}
			}
		}
	}
	diag("%ld (hash, level, shift) checked", checked);
	CHECK(bad == 0);
}

/* ----------------------------------------------------------------
 * The format.
 * ----------------------------------------------------------------
 */

/* init writes the documented bytes; adds keep header and view in step. */
static void
test_format_layout(void)
{
	cf			f;
	amq_cuckoo_table tb;
	size_t		i;
	uint64_t	s;
	uint8_t    *hand;

	if (!cf_make(&f, 1000, 0.01))
		return;
	CHECK(f.v.bytes == 64 + 32 + 8 * 166);
	CHECK(memcmp(f.buf, "AMQC", 4) == 0);
	CHECK(f.buf[OFF_VERSION] == 1);
	CHECK(f.buf[OFF_BUCKET_SIZE] == 4);
	CHECK(f.buf[OFF_HASH_SCHEME] == 1);
	CHECK(f.buf[OFF_FP_BITS] == 10);
	CHECK(peek_u32(f.buf + OFF_FLAGS) == 0);
	CHECK(peek_u32(f.buf + OFF_FAMILY) == 0);
	CHECK(peek_u64(f.buf + OFF_SEED) == AMQ_CUCKOO_DEFAULT_SEED);
	CHECK(peek_u64(f.buf + OFF_CAPACITY) == 1000);
	CHECK(peek_f64(f.buf + OFF_TARGET_FPR) == 0.01);
	CHECK(peek_u32(f.buf + OFF_TABLES) == 1);
	CHECK(peek_u32(f.buf + OFF_RESERVED) == 0);
	for (i = OFF_RESERVED2; i < 64; i++)
		CHECK(f.buf[i] == 0);
	CHECK(peek_u64(f.buf + 64 + TOFF_BUCKETS) == 264);
	CHECK(peek_u64(f.buf + 64 + TOFF_ITEMS) == 0);
	CHECK(peek_u64(f.buf + 64 + TOFF_VBUCKET) == 0);
	CHECK(peek_u32(f.buf + 64 + TOFF_VFP) == 0);
	CHECK(peek_u32(f.buf + 64 + TOFF_RESERVED) == 0);
	for (i = 96; i < f.v.bytes; i++)
		CHECK(f.buf[i] == 0);

	/* the view */
	CHECK(f.v.base == f.buf);
	CHECK(f.v.hash_scheme == 1);
	CHECK(f.v.fp_bits == 10 && f.v.family == 0 && f.v.tables == 1);
	CHECK(f.v.seed == AMQ_CUCKOO_DEFAULT_SEED);
	CHECK(f.v.capacity == 1000 && f.v.target_fpr == 0.01);
	CHECK(f.v.items == 0 && f.v.slots == 4 * 264 + 1);

	/* the same filter written by hand opens and is byte-identical */
	hand = xmalloc(f.v.bytes);
	memset(hand, 0, f.v.bytes);
	memcpy(hand, "AMQC", 4);
	hand[OFF_VERSION] = 1;
	hand[OFF_BUCKET_SIZE] = 4;
	hand[OFF_HASH_SCHEME] = 1;
	hand[OFF_FP_BITS] = 10;
	poke_u64(hand + OFF_SEED, AMQ_CUCKOO_DEFAULT_SEED);
	poke_u64(hand + OFF_CAPACITY, 1000);
	poke_f64(hand + OFF_TARGET_FPR, 0.01);
	poke_u32(hand + OFF_TABLES, 1);
	poke_u64(hand + 64 + TOFF_BUCKETS, 264);
	CHECK(memcmp(hand, f.buf, f.v.bytes) == 0);
	{
		amq_cuckoo_view hv;

		CHECK_STATUS(amq_cuckoo_open(hand, f.v.bytes, &hv), AMQ_OK);
	}
	free(hand);

	/* adds: family bound, item counts by offset, fingerprints where expected */
	s = 9;
	for (i = 0; i < 500; i++)
		cf_add(&f, splitmix64(&s), i < 250 ? FAMILY_A : FAMILY_B);
	CHECK(f.v.family == FAMILY_A);
	CHECK(peek_u32(f.buf + OFF_FAMILY) == FAMILY_A);
	CHECK(peek_u64(f.buf + 64 + TOFF_ITEMS) == 500);
	CHECK(f.v.items == 500);
	cf_valid(&f);
	check_table_walk(&f);
	amq_cuckoo_table_at(&f.v, 0, &tb);
	CHECK(tb.header == f.buf + 64 && tb.words == f.buf + 96);
	CHECK(tb.buckets == 264 && tb.items == 500);
	CHECK(tb.bytes == 32 + 8 * 166);
	s = 9;
	for (i = 0; i < 500; i++)
		CHECK(raw_copies(&f.v, &tb, splitmix64(&s)) >= 1);
	cf_free(&f);
}

/*
 * Bit packing: for fingerprint widths around the word and byte boundaries
 * and an odd bucket count, fill a table; every stored fingerprint is read
 * back (through amq_cuckoo_slot and from the raw bits) in the value's
 * bucket pair, nothing else is stored, and neighbours survive deletions.
 */
static void
test_bit_packing(void)
{
	static const uint32_t widths[] = {4, 5, 7, 10, 13, 16, 17, 31, 32};
	const uint64_t nb = 7;
	size_t		w;

	for (w = 0; w < lengthof(widths); w++)
	{
		uint32_t	f = widths[w];
		cf			c;
		amq_cuckoo_table tb;
		uint64_t	keys[64];
		bool		live[64];
		int			nkeys = 0;
		int			i;
		uint64_t	s = 500 + f;
		uint64_t	b;
		unsigned	sl;
		uint64_t	stored;
		int			round;

		if (!cf_make_geom(&c, nb, f))
			continue;
		CHECK(c.v.fp_bits == f);
		/* fill to the first AMQ_FULL, which must leave the bytes unchanged */
		while (nkeys < 64)
		{
			uint64_t	h = splitmix64(&s);
			uint8_t    *snap = xmalloc(c.v.bytes);
			amq_status	st;

			memcpy(snap, c.buf, c.v.bytes);
			st = amq_cuckoo_add(&c.v, h, FAMILY_A);
			if (st == AMQ_FULL)
			{
				CHECK(memcmp(snap, c.buf, c.v.bytes) == 0);
				free(snap);
				break;
			}
			free(snap);
			CHECK_STATUS(st, AMQ_OK);
			keys[nkeys] = h;
			live[nkeys++] = true;
		}
		CHECK(nkeys > 4 * (int) nb / 2 && nkeys <= 4 * (int) nb + 1);

		for (round = 0; round < 2; round++)
		{
			int			nlive = 0;

			cf_valid(&c);
			amq_cuckoo_table_at(&c.v, 0, &tb);
			/* every slot: the core and the raw bits agree; each value belongs */
			stored = 0;
			for (b = 0; b < nb; b++)
				for (sl = 0; sl < 4; sl++)
				{
					uint32_t	v = amq_cuckoo_slot(&c.v, &tb, b, sl);
					bool		owned = false;

					CHECK(v == raw_slot(tb.words, b, sl, f));
					if (v == 0)
						continue;
					stored++;
					for (i = 0; i < nkeys && !owned; i++)
					{
						uint32_t	fp = ref_fingerprint(keys[i], f);
						uint64_t	i1 = ref_index(keys[i], nb);

						owned = live[i] && fp == v &&
							(b == i1 || b == ref_alternate(i1, fp, nb, 0));
					}
					if (!owned)
						diag("f=%u: bucket %llu slot %u holds %u, no value's", f,
							 (unsigned long long) b, sl, v);
					CHECK(owned);
				}
			if (tb.victim_fp != 0)
			{
				bool		owned = false;

				stored++;
				for (i = 0; i < nkeys && !owned; i++)
				{
					uint32_t	fp = ref_fingerprint(keys[i], f);
					uint64_t	i1 = ref_index(keys[i], nb);

					owned = live[i] && fp == tb.victim_fp &&
						(tb.victim_bucket == i1 ||
						 tb.victim_bucket == ref_alternate(i1, fp, nb, 0));
				}
				CHECK(owned);
			}
			/* padding bits are zero */
			{
				uint64_t	j;
				uint64_t	end = 64 * ref_words(nb, f);

				for (j = 4 * nb * f; j < end; j++)
					CHECK(raw_bit(tb.words, j) == 0);
			}
			for (i = 0; i < nkeys; i++)
				if (live[i])
				{
					nlive++;
					CHECK(raw_copies(&c.v, &tb, keys[i]) >= 1);
					CHECK(amq_cuckoo_may_contain(&c.v, keys[i]));
				}
			CHECK(stored == (uint64_t) nlive);
			CHECK(tb.items == (uint64_t) nlive && c.v.items == (uint64_t) nlive);

			/* then delete every other value and look again */
			if (round == 0)
				for (i = 0; i < nkeys; i += 2)
				{
					CHECK(amq_cuckoo_delete(&c.v, keys[i]));
					live[i] = false;
				}
		}
		diag("f=%2u, %llu buckets: %d values until full", f,
			 (unsigned long long) nb, nkeys);
		cf_free(&c);
	}
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

/*
 * Step 1 of adding (docs/format.md), read from the raw bits: a value whose
 * pair has a free slot goes to the first free slot of the bucket with more free
 * slots, b1 on ties, and nothing else in the pair changes.  Every width
 * the single-load bucket read serves (f <= 14) and some it does not, with
 * adds one at a time and in batches, until the first pair that is full.
 */
static void
test_placement_rule(void)
{
	static const uint32_t widths[] = {4, 5, 7, 9, 10, 12, 13, 14, 15, 16, 21, 32};
	const uint64_t nb = 1000;
	size_t		w;

	for (w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
	{
		uint32_t	f = widths[w];
		int			batched;

		for (batched = 0; batched < 2; batched++)
		{
			cf			c;
			amq_cuckoo_table tb;
			uint64_t	s = 777 + f;
			uint64_t	checked = 0;

			if (!cf_make_geom(&c, nb, f))
				continue;
			for (;;)
			{
				uint64_t	h = splitmix64(&s);
				uint32_t	fp = ref_fingerprint(h, f);
				uint64_t	pair[2];
				uint32_t	before[8];
				unsigned	nfree[2] = {0, 0};
				unsigned	k;
				int			want = -1;
				size_t		done;

				pair[0] = ref_index(h, nb);
				pair[1] = ref_alternate(pair[0], fp, nb, 0);
				amq_cuckoo_table_at(&c.v, 0, &tb);
				for (k = 0; k < 8; k++)
				{
					before[k] = raw_slot(tb.words, pair[k / 4], k % 4, f);
					nfree[k / 4] += before[k] == 0;
				}
				if (nfree[0] == 0 && nfree[1] == 0)
					break;
				/* the chosen bucket's first free slot, as k in 0..7 */
				for (k = nfree[1] > nfree[0] ? 4 : 0; want < 0; k++)
					if (before[k] == 0)
						want = (int) k;
				if (batched)
					CHECK_STATUS(amq_cuckoo_add_many(&c.v, &h, 1, FAMILY_A, &done), AMQ_OK);
				else
					CHECK_STATUS(amq_cuckoo_add(&c.v, h, FAMILY_A), AMQ_OK);
				amq_cuckoo_table_at(&c.v, 0, &tb);
				for (k = 0; k < 8; k++)
				{
					uint32_t	now = raw_slot(tb.words, pair[k / 4], k % 4, f);

					/* when b1 = b2 both halves of the pair show the write */
					if (pair[0] == pair[1])
						CHECK(now == (before[k] != 0 ? before[k] :
									  k % 4 == (unsigned) want % 4 ? fp : 0));
					else
						CHECK(now == ((int) k == want ? fp : before[k]));
				}
				checked++;
			}
			CHECK(checked > 2 * nb);
			if (f == 10 || f == 16)
				diag("f=%u %s: %llu values placed by the rule before a pair was full",
					 f, batched ? "add_many" : "add", (unsigned long long) checked);
			cf_free(&c);
		}
	}
}

/*
 * docs/format.md's reference add for a filter of one table, written from the
 * document alone and kept on its own copy of the bytes and its own list of
 * counter entries (level 0, the only one; their places in the counter
 * section are the core's business): step 1 (the emptier bucket), step 3
 * (a counter, or a pair of nothing but fp), step 4 (full: a pair holding
 * fp counts, else a fingerprint with three copies in its pair makes room,
 * else full), step 5 (the search at most two moves deep), step 6 (the
 * eviction walk and its generator) and step 7 (the count).
 */
#define REF_MAX_COUNTERS	4096

typedef struct ref_counter
{
	uint64_t	bucket;			/* min(b1, b2) */
	uint32_t	fp;
	uint64_t	count;
} ref_counter;

typedef struct ref_table
{
	uint8_t    *words;
	uint64_t	nb;
	uint32_t	f;
	uint64_t	items;
	uint32_t	victim_fp;
	uint64_t	victim_bucket;
	ref_counter counters[REF_MAX_COUNTERS];
	uint32_t	ncounters;
	uint64_t	counted;		/* copies the counters hold */
	uint64_t	by_step[8];		/* adds finished by each step (6: walks ended) */
	uint64_t	full_counted;	/* step 4: a pair holding fp */
	uint64_t	full_made_room; /* step 4: a copy counted to make room */
	uint64_t	victims;		/* walks that parked a victim */
} ref_table;

typedef enum
{
	REF_ADDED,
	REF_FULL
} ref_outcome;

/* The counter entry of (bucket, fp), or NULL. */
static ref_counter *
ref_counter_of(ref_table *r, uint64_t bucket, uint32_t fp)
{
	uint32_t	i;

	for (i = 0; i < r->ncounters; i++)
		if (r->counters[i].bucket == bucket && r->counters[i].fp == fp)
			return &r->counters[i];
	return NULL;
}

/* One more copy of fp counted for the pair whose lower bucket is bucket. */
static void
ref_count(ref_table *r, uint64_t bucket, uint32_t fp)
{
	ref_counter *c = ref_counter_of(r, bucket, fp);

	if (c == NULL)
	{
		if (r->ncounters == REF_MAX_COUNTERS)
			abort();
		c = &r->counters[r->ncounters++];
		c->bucket = bucket;
		c->fp = fp;
		c->count = 0;
	}
	c->count++;
	r->counted++;
}

/* Copies of fp among the four slots of bucket b. */
static unsigned
ref_copies_in(const ref_table *r, uint64_t b, uint32_t fp)
{
	unsigned	s,
				n = 0;

	for (s = 0; s < 4; s++)
		n += raw_slot(r->words, b, s, r->f) == fp;
	return n;
}

static uint64_t
ref_next(uint64_t *state)
{
	*state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *state;
}

static int
ref_first_free(const ref_table *r, uint64_t b)
{
	unsigned	s;

	for (s = 0; s < 4; s++)
		if (raw_slot(r->words, b, s, r->f) == 0)
			return (int) s;
	return -1;
}

static unsigned
ref_free_slots(const ref_table *r, uint64_t b)
{
	unsigned	s,
				n = 0;

	for (s = 0; s < 4; s++)
		n += raw_slot(r->words, b, s, r->f) == 0;
	return n;
}

/* Moves fingerprint e into the first free slot of bucket to, if it has one. */
static bool
ref_move_into(ref_table *r, uint64_t to, uint32_t e)
{
	int			s = ref_first_free(r, to);

	if (s < 0)
		return false;
	raw_put_slot(r->words, to, (unsigned) s, r->f, e);
	return true;
}

static ref_outcome
ref_add(ref_table *r, uint64_t h)
{
	uint32_t	f = r->f;
	uint32_t	fp = ref_fingerprint(h, f);
	uint64_t	b1 = ref_index(h, r->nb);
	uint64_t	b2 = ref_alternate(b1, fp, r->nb, 0);
	uint64_t	src[8];
	uint32_t	e[8];
	uint64_t	a[8];
	uint32_t	g[32];
	uint64_t	c[32];
	unsigned	n1 = ref_free_slots(r, b1);
	unsigned	n2 = ref_free_slots(r, b2);
	unsigned	i,
				j,
				same = 0;
	uint64_t	state,
				b;
	int			step;

	/* 1: the emptier bucket of the pair, b1 on ties */
	if (n1 + n2 > 0)
	{
		uint64_t	to = n2 > n1 ? b2 : b1;

		raw_put_slot(r->words, to, (unsigned) ref_first_free(r, to), f, fp);
		r->by_step[1]++;
		r->items++;
		return REF_ADDED;
	}

	for (i = 0; i < 8; i++)
	{
		src[i] = i < 4 ? b1 : b2;
		e[i] = raw_slot(r->words, src[i], i % 4, f);
		a[i] = ref_alternate(src[i], e[i], r->nb, 0);
		same += e[i] == fp;
	}
	/* 3: a counter of the pair, or a pair of nothing but fp, counts it */
	if (ref_counter_of(r, b1 < b2 ? b1 : b2, fp) != NULL || same == 8)
	{
		ref_count(r, b1 < b2 ? b1 : b2, fp);
		r->by_step[3]++;
		return REF_ADDED;
	}
	/* 4: the victim slot is taken: full */
	if (r->victim_fp != 0)
	{
		uint64_t	grow = r->items >= 2 * r->nb ? 2 * r->nb : r->nb;

		/* no section yet, and the growth table is shorter than one */
		if (r->ncounters == 0 && ref_table_bytes(grow, f) < 16 * 24)
			return REF_FULL;
		/* a pair holding fp, in a slot or as its victim, counts it */
		if (same > 0 || (r->victim_fp == fp &&
						 (r->victim_bucket == b1 || r->victim_bucket == b2)))
		{
			ref_count(r, b1 < b2 ? b1 : b2, fp);
			r->full_counted++;
			return REF_ADDED;
		}
		/* the first slot whose fingerprint fills 3 slots of its own pair */
		for (i = 0; i < (b2 == b1 ? 4u : 8u); i++)
		{
			unsigned	copies = ref_copies_in(r, src[i], e[i]);

			if (a[i] != src[i])
				copies += ref_copies_in(r, a[i], e[i]);
			if (copies >= 3)
			{
				ref_count(r, src[i] < a[i] ? src[i] : a[i], e[i]);
				raw_put_slot(r->words, src[i], i % 4, f, fp);
				r->full_made_room++;
				return REF_ADDED;
			}
		}
		return REF_FULL;
	}

	/* 5: at most two moves, breadth first */
	for (i = 0; i < 8; i++)
		if (ref_move_into(r, a[i], e[i]))
		{
			raw_put_slot(r->words, src[i], i % 4, f, fp);
			r->by_step[5]++;
			r->items++;
			return REF_ADDED;
		}
	for (j = 0; j < 32; j++)
	{
		g[j] = raw_slot(r->words, a[j / 4], j % 4, f);
		c[j] = ref_alternate(a[j / 4], g[j], r->nb, 0);
	}
	for (j = 0; j < 32; j++)
		if (ref_move_into(r, c[j], g[j]))
		{
			raw_put_slot(r->words, a[j / 4], j % 4, f, e[j / 4]);
			raw_put_slot(r->words, src[j / 4], (j / 4) % 4, f, fp);
			r->by_step[5]++;
			r->items++;
			return REF_ADDED;
		}

	/* 6: the eviction walk, its generator seeded with the hash */
	state = h;
	b = (ref_next(&state) >> 63) == 1 ? b2 : b1;
	for (step = 0; step < AMQ_CUCKOO_MAX_KICKS; step++)
	{
		unsigned	s;

		for (s = 0; s < 4; s++)
		{
			e[s] = raw_slot(r->words, b, s, f);
			a[s] = ref_alternate(b, e[s], r->nb, 0);
		}
		for (s = 0; s < 4; s++)
			if (ref_move_into(r, a[s], e[s]))
			{
				raw_put_slot(r->words, b, s, f, fp);
				r->by_step[6]++;
				r->items++;
				return REF_ADDED;
			}
		s = (unsigned) (ref_next(&state) >> 62);
		raw_put_slot(r->words, b, s, f, fp);
		fp = e[s];
		b = a[s];
	}
	r->victim_fp = fp;
	r->victim_bucket = b;
	r->victims++;
	r->items++;
	return REF_ADDED;
}

/*
 * The core's table 0 against the model, byte for byte, and its counter
 * section: every model entry found (by a scan of the entries, read by
 * offset) with its count, and no other.
 */
static bool
ref_agrees(const cf *c, const ref_table *r)
{
	amq_cuckoo_table tb;
	const uint8_t *section = c->buf + c->v.tables_end;
	uint32_t	counters = c->v.counters;
	uint32_t	used = 0;
	uint32_t	i;

	amq_cuckoo_table_at(&c->v, 0, &tb);
	if (memcmp(tb.words, r->words, 8 * ref_words(r->nb, r->f)) != 0 ||
		tb.items != r->items || tb.victim_fp != r->victim_fp ||
		tb.victim_bucket != r->victim_bucket ||
		c->v.items != r->items + r->counted)
		return false;
	/* the counter section's entries, at 24 bytes each (docs/format.md) */
	for (i = 0; i < counters; i++)
	{
		const uint8_t *e = section + (size_t) i * 24;
		uint64_t	count = peek_u64(e + 8);
		ref_counter *rc;

		if (count == 0)
			continue;
		used++;
		rc = ref_counter_of((ref_table *) r, peek_u64(e), peek_u32(e + 16));
		if (rc == NULL || rc->count != count || e[20] != 0)
			return false;
	}
	return used == r->ncounters;
}

/*
 * Adds hashes[0 .. n) to the core, one by one or as one batch, growing the
 * counter section when the core asks for it (as amq_cuckoo_add_growing
 * does), but never adding a table: AMQ_FULL otherwise.
 */
static amq_status
core_add_no_table(cf *c, const uint64_t *hashes, size_t n, bool batched)
{
	size_t		done = 0;

	while (done < n)
	{
		size_t		added = 0;
		amq_status	st;

		if (batched)
			st = amq_cuckoo_add_many(&c->v, hashes + done, n - done, FAMILY_A, &added);
		else if ((st = amq_cuckoo_add(&c->v, hashes[done], FAMILY_A)) == AMQ_OK)
			added = 1;
		done += added;
		if (st == AMQ_FULL && c->v.grow_counters)
		{
			size_t		need = amq_cuckoo_growth_bytes(&c->v);

			if (!cf_move(c, need))
				return AMQ_ERR_TOO_LARGE;
			c->v.grow_counters = true;	/* reopening forgot it */
			amq_cuckoo_grow(&c->v);
			continue;
		}
		if (st != AMQ_OK)
			return st;
	}
	return AMQ_OK;
}

/*
 * The whole add of docs/format.md (steps 1 to 7) against the core, one value
 * at a time and in batches: a one-table filter filled until it is full, a
 * quarter of the adds copies of 16 hot values, so that counted copies
 * (step 3, and step 4 where the filter is full, both ways), the search of
 * step 5 (both levels), the eviction walk of step 6 and a parked victim all
 * happen, with the bytes, the counters, the item count and the victim
 * compared after every add (every batch).  The placement rule test checks
 * step 1 alone; this one is what keeps the document's later steps true to
 * the code.
 */
static void
test_reference_add(void)
{
	static const uint32_t widths[] = {5, 8, 10, 13, 16, 24, 32};
	const uint64_t nb = 300;
	uint64_t	totals[8] = {0};
	uint64_t	victims = 0;
	uint64_t	full_counted = 0;
	uint64_t	full_made_room = 0;
	size_t		w;

	for (w = 0; w < sizeof(widths) / sizeof(widths[0]); w++)
	{
		int			batched;

		for (batched = 0; batched < 2; batched++)
		{
			uint32_t	f = widths[w];
			cf			c;
			ref_table  *r = xmalloc(sizeof(ref_table));
			uint64_t	s = 4242 + f;
			uint64_t	hot[16];
			uint64_t	hashes[37];
			bool		done_all = false;
			unsigned	k;

			if (!cf_make_geom(&c, nb, f))
			{
				free(r);
				continue;
			}
			memset(r, 0, sizeof(*r));
			r->nb = nb;
			r->f = f;
			r->words = xmalloc(8 * ref_words(nb, f));
			memset(r->words, 0, 8 * ref_words(nb, f));
			for (k = 0; k < 16; k++)
				hot[k] = splitmix64(&s);

			while (!done_all)
			{
				size_t		n = batched ? 37 : 1;
				size_t		added = n;
				amq_status	st;

				for (k = 0; k < n; k++)
				{
					uint64_t	x = splitmix64(&s);

					hashes[k] = x % 4 == 0 ? hot[(x >> 8) % 16] : splitmix64(&s);
				}
				for (k = 0; k < n; k++)
				{
					if (ref_add(r, hashes[k]) != REF_ADDED)
					{
						added = k;
						done_all = true;
						break;
					}
				}
				st = core_add_no_table(&c, hashes, added, batched);
				CHECK_STATUS(st, AMQ_OK);
				if (done_all)
				{
					/* the value the model found no room for: the core is full too */
					CHECK(r->victim_fp != 0);
					st = core_add_no_table(&c, hashes + added, 1, batched);
					CHECK_STATUS(st, AMQ_FULL);
				}
				if (!ref_agrees(&c, r))
				{
					diag("f=%u %s: the core's bytes left docs/format.md's after %llu items",
						 f, batched ? "add_many" : "add",
						 (unsigned long long) (r->items + r->counted));
					CHECK(false);
					break;
				}
			}
			/*
			 * Filled to near its design load, unless a walk between hot
			 * values' shared pairs parked the victim early: a table whose
			 * victim slot is taken is full for any value that must evict.
			 */
			if (r->items <= 4 * nb * 95 / 100)
				diag("f=%u %s: full at %llu items", f,
					 batched ? "add_many" : "add", (unsigned long long) r->items);
			CHECK(r->items > 4 * nb / 2);
			for (k = 0; k < 8; k++)
				totals[k] += r->by_step[k];
			victims += r->victims;
			full_counted += r->full_counted;
			full_made_room += r->full_made_room;
			free(r->words);
			free(r);
			cf_free(&c);
		}
	}
	diag("adds by step: 1: %llu, 3: %llu, 4 (counted: %llu, made room: %llu), "
		 "5: %llu, 6: %llu; victims parked: %llu",
		 (unsigned long long) totals[1], (unsigned long long) totals[3],
		 (unsigned long long) full_counted, (unsigned long long) full_made_room,
		 (unsigned long long) totals[5], (unsigned long long) totals[6],
		 (unsigned long long) victims);
	/* every step ran, or the comparison proved less than it claims */
	CHECK(totals[3] > 0 && full_counted > 0 && full_made_room > 0);
	CHECK(totals[5] > 0 && totals[6] > 0 && victims > 0);
}

static const amq_test tests[] = {
	{"sizing errors", test_sizing_errors},
	{"sizing fingerprint width", test_sizing_fp_bits},
	{"sizing geometry", test_sizing_geometry},
	{"sizing limit", test_sizing_limit},
	{"mapping fingerprint", test_mapping_fingerprint},
	{"mapping index", test_mapping_index},
	{"mapping alternate", test_mapping_alternate},
	{"mapping nesting", test_mapping_nesting},
	{"mapping shift", test_mapping_shift},
	{"format layout", test_format_layout},
	{"bit packing", test_bit_packing},
	{"placement rule", test_placement_rule},
	{"reference add", test_reference_add},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo format");
}
