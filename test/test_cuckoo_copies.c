/*
 * test_cuckoo_copies.c
 *		Unit tests of the cuckoo core: values added many times, against an
 *		exact multiset.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why: a value's copies past those its bucket pair
 * holds must be counted, not stored, whatever else shares its buckets.
 * When only pairs holding nothing but one fingerprint were counted, every
 * value whose pair met another value's fingerprints took a table of the
 * filter's full size per 9 copies (10 values, 2,000 copies each: 308
 * tables).  So the filters here are compared with the filter of the same
 * values added once each (their distinct count): the same tables, and
 * bytes that differ by the counter section alone.  Counts are exact for
 * every value that shares its fingerprint and pair with no other (and
 * never below the truth for the others), deletes take exactly one copy,
 * and unions add counts; the multiset is a count per key kept beside the
 * filter.  Filters of distinct values should rarely get a counter section
 * (only when a new value meets an equal fingerprint where the filter would
 * grow), and tiny ones never, where the section outweighs a table.
 *
 * Keys are splitmix64 outputs from fixed seeds, or hashes made to land in
 * chosen buckets (ref_hash_at), handed to the core as the 64-bit hash a
 * PostgreSQL hash function would produce, so every run sees the same
 * numbers.  The growable filter is test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo copies: N passed, M failed"; exit
 * status 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L

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
 * The exact multiset and the checks against it.
 * ----------------------------------------------------------------
 */

typedef struct multiset
{
	size_t		n;				/* keys */
	uint64_t   *hash;			/* key i's hash */
	uint64_t   *count;			/* its copies added and not deleted */
	bool	   *collides;		/* another key has its fingerprint and pair */
	uint64_t	total;
} multiset;

/* A key's fingerprint and first-table pair, sortable. */
typedef struct key_place
{
	uint32_t	fp;
	uint64_t	pair[2];		/* sorted */
	size_t		key;
} key_place;

static int
key_place_cmp(const void *pa, const void *pb)
{
	const key_place *a = pa;
	const key_place *b = pb;

	if (a->fp != b->fp)
		return a->fp < b->fp ? -1 : 1;
	if (a->pair[0] != b->pair[0])
		return a->pair[0] < b->pair[0] ? -1 : 1;
	if (a->pair[1] != b->pair[1])
		return a->pair[1] < b->pair[1] ? -1 : 1;
	return 0;
}

/*
 * Marks the keys that share fingerprint and first-table pair with another
 * key.  Values that share them in a larger table share them in the first
 * (tables nest), so a key unmarked here is exact in every table.
 */
static void
ms_mark_collisions(multiset *ms, uint32_t f, uint64_t base)
{
	key_place  *kp = xmalloc(ms->n * sizeof(key_place));
	size_t		i;

	for (i = 0; i < ms->n; i++)
	{
		core_pair(ms->hash[i], f, base, 0, kp[i].pair);
		sort_pair(kp[i].pair);
		kp[i].fp = amq_cuckoo_fingerprint(ms->hash[i], f);
		kp[i].key = i;
		ms->collides[i] = false;
	}
	qsort(kp, ms->n, sizeof(key_place), key_place_cmp);
	for (i = 1; i < ms->n; i++)
		if (key_place_cmp(&kp[i - 1], &kp[i]) == 0)
			ms->collides[kp[i - 1].key] = ms->collides[kp[i].key] = true;
	free(kp);
}

static void
ms_init(multiset *ms, size_t n)
{
	ms->n = n;
	ms->hash = xmalloc(n * sizeof(uint64_t));
	ms->count = xmalloc(n * sizeof(uint64_t));
	ms->collides = xmalloc(n * sizeof(bool));
	memset(ms->count, 0, n * sizeof(uint64_t));
	ms->total = 0;
}

/* n keys of the splitmix64 stream from seed. */
static void
ms_keys(multiset *ms, size_t n, uint64_t seed, uint32_t f, uint64_t base)
{
	uint64_t	s = seed;
	size_t		i;

	ms_init(ms, n);
	for (i = 0; i < n; i++)
		ms->hash[i] = splitmix64(&s);
	ms_mark_collisions(ms, f, base);
}

/*
 * n keys in a chain through the first table of base buckets: key i's first
 * bucket is the second bucket of key i - 1's pair, so every key shares each
 * of its buckets with a neighbour's copies (the case that grew tables).
 * Fingerprints are drawn until no two keys share fingerprint and pair.
 */
static void
ms_chain(multiset *ms, size_t n, uint64_t seed, uint32_t f, uint64_t base)
{
	uint64_t	s = seed;
	uint64_t	b = splitmix64(&s) % base;
	size_t		i;

	ms_init(ms, n);
	for (i = 0; i < n; i++)
	{
		uint64_t	h = ref_hash_at((uint32_t) splitmix64(&s), base, b, &s);
		uint64_t	alt = amq_cuckoo_alternate(b, amq_cuckoo_fingerprint(h, f),
											   base, 0);

		if (alt == b)
		{
			i--;				/* a pair of one bucket shares nothing: again */
			continue;
		}
		ms->hash[i] = h;
		b = alt;
	}
	ms_mark_collisions(ms, f, base);
	for (i = 0; i < n; i++)
		CHECK(!ms->collides[i]);
}

static void
ms_free(multiset *ms)
{
	free(ms->hash);
	free(ms->count);
	free(ms->collides);
}

static bool
ms_add(cf *c, multiset *ms, size_t i)
{
	if (!cf_add(c, ms->hash[i], FAMILY_A))
		return false;
	ms->count[i]++;
	ms->total++;
	return true;
}

/*
 * Key i against the filter: present if it has copies, its count exact
 * unless it collides (then at least the truth), and absent when it has no
 * copies and nothing shares its fingerprint and pair.  Returns whether all
 * held, so that loops can stop at the first key that fails.
 */
static bool
ms_check_key(const cf *c, const multiset *ms, size_t i)
{
	uint64_t	got = amq_cuckoo_count(&c->v, ms->hash[i]);
	bool		present = amq_cuckoo_may_contain(&c->v, ms->hash[i]);
	bool		ok = ms->collides[i] ? got >= ms->count[i] : got == ms->count[i];

	if (ms->count[i] > 0 && !present)
		ok = false;
	if (!ms->collides[i] && ms->count[i] == 0 && present)
		ok = false;
	if (!ok)
	{
		diag("key %zu (%s): count %llu, present %d; multiset %llu",
			 i, ms->collides[i] ? "colliding" : "alone",
			 (unsigned long long) got, (int) present,
			 (unsigned long long) ms->count[i]);
		current_failures++;
	}
	return ok;
}

/* Every key, the item count and the bytes. */
static void
ms_check_all(const cf *c, const multiset *ms)
{
	size_t		i;

	CHECK(c->v.items == ms->total);
	cf_valid(c);
	for (i = 0; i < ms->n; i++)
		if (!ms_check_key(c, ms, i))
			break;
}

/*
 * The filter of ms's keys added once each, sized (n, p): what the copies
 * are compared with.
 */
static bool
distinct_filter(cf *d, const multiset *ms, uint64_t n, double p)
{
	size_t		i;

	if (!cf_make(d, n, p))
		return false;
	for (i = 0; i < ms->n; i++)
		if (!cf_add(d, ms->hash[i], FAMILY_A))
			return false;
	return true;
}

/* Bytes of the counter section. */
static size_t
counter_bytes(const cf *c)
{
	return (size_t) c->v.counters * AMQ_CUCKOO_COUNTER_SIZE;
}

/*
 * Adds copies of every key of ms to c: rounds of one copy each
 * (interleaved), or all copies of a key before the next (grouped).
 */
static bool
add_copies(cf *c, multiset *ms, uint64_t copies, bool grouped)
{
	uint64_t	r;
	size_t		i;

	if (grouped)
	{
		for (i = 0; i < ms->n; i++)
			for (r = 0; r < copies; r++)
				if (!ms_add(c, ms, i))
					return false;
		return true;
	}
	for (r = 0; r < copies; r++)
		for (i = 0; i < ms->n; i++)
			if (!ms_add(c, ms, i))
				return false;
	return true;
}

/*
 * Builds copies of each of ms's keys in a filter for (n, p) and compares it
 * with the distinct filter of the same keys: the same tables, table bytes
 * equal (the counter section aside) when interleaved; at most one table
 * more when grouped (a key's copies arriving together fill its pair before
 * its counter starts).  Exact counts throughout.
 */
static void
check_copies_cost(multiset *ms, uint64_t copies, uint64_t n, double p,
				  bool grouped, const char *what)
{
	cf			c;
	cf			d;

	if (!distinct_filter(&d, ms, n, p) || !cf_make(&c, n, p))
		return;
	if (add_copies(&c, ms, copies, grouped))
	{
		diag("%s, %s: %u tables, %zu bytes (tables %zu, counters %zu); "
			 "distinct: %u tables, %zu bytes",
			 what, grouped ? "grouped" : "interleaved", c.v.tables,
			 c.v.bytes, c.v.tables_end, counter_bytes(&c), d.v.tables,
			 d.v.bytes);
		if (grouped)
			CHECK(c.v.tables <= d.v.tables + 1);
		else
		{
			CHECK(c.v.tables == d.v.tables);
			CHECK(c.v.tables_end == d.v.tables_end);
			CHECK(c.v.bytes == d.v.bytes + counter_bytes(&c));
		}
		/* one entry per key at most, the section at most four times that */
		CHECK(c.v.counters_used <= ms->n);
		CHECK(c.v.counters <= AMQ_CUCKOO_MIN_COUNTERS || c.v.counters < 4 * ms->n);
		ms_check_all(&c, ms);
	}
	cf_free(&c);
	cf_free(&d);
}

/* ----------------------------------------------------------------
 * Tests.
 * ----------------------------------------------------------------
 */

/*
 * The issue's case: ten values, 2,000 and 100,000 copies each, in a filter
 * for n = 2,000 at p = 1% (the SQL was cuckoo_agg(g % 10, 2000, 0.01) over
 * 20,000 and 1,000,000 rows): random keys, and keys chained so that every
 * bucket of every pair is shared with another key's copies.
 */
static void
test_few_values(void)
{
	amq_cuckoo_params pr;
	multiset	ms;
	int			chained;

	CHECK_STATUS(amq_cuckoo_size(2000, 0.01, &pr), AMQ_OK);
	for (chained = 0; chained < 2; chained++)
	{
		uint64_t	rows[] = {2000, 100000};
		size_t		r;

		for (r = 0; r < lengthof(rows); r++)
		{
			if (chained)
				ms_chain(&ms, 10, 0xc0ffee, pr.fp_bits, pr.buckets);
			else
				ms_keys(&ms, 10, KEYS_SEED, pr.fp_bits, pr.buckets);
			check_copies_cost(&ms, rows[r], 2000, 0.01, false,
							  chained ? "10 chained keys" : "10 keys");
			ms_free(&ms);
		}
	}
}

/*
 * Mixes what docs/limits.md states: 1,000 values with 1,000
 * copies each in a filter for n = 2,000, and 100,000 values with 100
 * copies each in a filter for n = 1M, at p = 1%, added interleaved and
 * grouped.
 */
static void
test_mixes(void)
{
	amq_cuckoo_params pr;
	multiset	ms;
	int			grouped;

	for (grouped = 0; grouped < 2; grouped++)
	{
		CHECK_STATUS(amq_cuckoo_size(2000, 0.01, &pr), AMQ_OK);
		ms_keys(&ms, 1000, KEYS_SEED + 1, pr.fp_bits, pr.buckets);
		check_copies_cost(&ms, 1000, 2000, 0.01, grouped, "1,000 keys x 1,000");
		ms_free(&ms);

		CHECK_STATUS(amq_cuckoo_size(1000000, 0.01, &pr), AMQ_OK);
		ms_keys(&ms, 100000, KEYS_SEED + 2, pr.fp_bits, pr.buckets);
		check_copies_cost(&ms, 100, 1000000, 0.01, grouped, "100,000 keys x 100");
		ms_free(&ms);
	}
}

/*
 * Deleting: chained keys with many copies among distinct keys, then every
 * copy of each chained key deleted one by one.  Each delete takes exactly
 * one copy (counted copies and stored ones alike), and at the end each
 * chained key has count 0 and is absent; the distinct keys never go
 * missing.  Then random adds and deletes of a few keys, with 4-bit
 * fingerprints so that keys collide, checked after every operation.
 */
static void
test_delete_copies(void)
{
	amq_cuckoo_params pr;
	multiset	ms;
	cf			c;
	size_t		i;
	uint64_t	s = 77;
	uint64_t	step;

	CHECK_STATUS(amq_cuckoo_size(2000, 0.01, &pr), AMQ_OK);
	/* keys 0..9 chained, 10..509 distinct */
	ms_chain(&ms, 10, 0xdead, pr.fp_bits, pr.buckets);
	ms.hash = realloc(ms.hash, 510 * sizeof(uint64_t));
	ms.count = realloc(ms.count, 510 * sizeof(uint64_t));
	ms.collides = realloc(ms.collides, 510 * sizeof(bool));
	for (i = 10; i < 510; i++)
	{
		ms.hash[i] = splitmix64(&s);
		ms.count[i] = 0;
	}
	ms.n = 510;
	ms_mark_collisions(&ms, pr.fp_bits, pr.buckets);
	if (!cf_make(&c, 2000, 0.01))
		return;
	for (step = 0; step < 300; step++)
		for (i = 0; i < 10; i++)
			ms_add(&c, &ms, i);
	for (i = 10; i < 510; i++)
		ms_add(&c, &ms, i);
	CHECK(c.v.counters_used > 0);
	CHECK(c.v.tables == 1);
	ms_check_all(&c, &ms);
	for (i = 0; i < 10; i++)
	{
		while (ms.count[i] > 0)
		{
			uint64_t	items = c.v.items;

			CHECK(amq_cuckoo_delete(&c.v, ms.hash[i]));
			ms.count[i]--;
			ms.total--;
			CHECK(c.v.items == items - 1);
			if (!ms_check_key(&c, &ms, i))
				break;
		}
		ms_check_all(&c, &ms);
		CHECK(amq_cuckoo_count(&c.v, ms.hash[i]) == 0);
		CHECK(!amq_cuckoo_may_contain(&c.v, ms.hash[i]));
		/* nothing left to take: the filter stays as it is */
		CHECK(!amq_cuckoo_delete(&c.v, ms.hash[i]));
	}
	CHECK(c.v.counters_used == 0);
	cf_free(&c);
	ms_free(&ms);

	/* random adds and deletes, colliding keys included */
	CHECK_STATUS(amq_cuckoo_size(16, 0.5, &pr), AMQ_OK);
	ms_keys(&ms, 12, 4242, pr.fp_bits, pr.buckets);
	if (!cf_make(&c, 16, 0.5))
		return;
	s = 99;
	for (step = 0; step < 200000; step++)
	{
		uint64_t	r = splitmix64(&s);
		size_t		k = (size_t) (r % 3 == 0 ? r % ms.n : r % 3);	/* 3 hot keys */
		bool		del = (r >> 32) % 3 == 0 && ms.count[k] > 0;

		if (del)
		{
			CHECK(amq_cuckoo_delete(&c.v, ms.hash[k]));
			ms.count[k]--;
			ms.total--;
		}
		else if (!ms_add(&c, &ms, k))
			break;
		if (!ms_check_key(&c, &ms, k) || c.v.items != ms.total)
		{
			diag("after step %llu", (unsigned long long) step);
			current_failures++;
			break;
		}
		if (step % 4096 == 0)
			ms_check_all(&c, &ms);
	}
	ms_check_all(&c, &ms);
	diag("random adds and deletes: %u tables, %u counters used, %llu items",
		 c.v.tables, c.v.counters_used, (unsigned long long) c.v.items);
	CHECK(c.v.tables <= 4);
	cf_free(&c);
	ms_free(&ms);
}

/* The merge's reserve function: a fresh buffer of exactly need bytes. */
static uint8_t *
union_reserve(void *ctx, size_t need)
{
	cf		   *f = ctx;

	return cf_move(f, need) ? f->buf : NULL;
}

/* Merges src into dst, in steps. */
static void
union_into(cf *dst, const cf *src)
{
	amq_cuckoo_merge *m = xmalloc(sizeof(amq_cuckoo_merge));
	bool		done = false;

	CHECK_STATUS(amq_cuckoo_merge_begin(m, &dst->v, &src->v, union_reserve, dst),
				 AMQ_OK);
	while (!done)
	{
		amq_status	st = amq_cuckoo_merge_step(m, &dst->v, &src->v, 1000, &done);

		CHECK_STATUS(st, AMQ_OK);
		if (st != AMQ_OK)
			break;
	}
	dst->len = dst->v.bytes;
	CHECK_STATUS(amq_cuckoo_open(dst->buf, dst->v.bytes, &dst->v), AMQ_OK);
	free(m);
}

/*
 * Unions of filters whose chained keys are counted: copies add up exactly,
 * and the union stays one table; also a filter unioned with itself.
 */
static void
test_union_copies(void)
{
	amq_cuckoo_params pr;
	multiset	ms;
	cf			a;
	cf			b;
	size_t		i;
	uint64_t	r;

	CHECK_STATUS(amq_cuckoo_size(2000, 0.01, &pr), AMQ_OK);
	ms_chain(&ms, 10, 0xbeef, pr.fp_bits, pr.buckets);
	if (!cf_make(&a, 2000, 0.01) || !cf_make(&b, 2000, 0.01))
		return;
	for (r = 0; r < 500; r++)
		for (i = 0; i < 10; i++)
		{
			ms_add(&a, &ms, i);
			if (i % 2 == 0 || r < 3)
				ms_add(&b, &ms, i);
		}
	union_into(&a, &b);
	ms_check_all(&a, &ms);
	CHECK(a.v.tables == 1);
	/* with itself: every count doubles */
	cf_free(&b);
	b.buf = xmalloc(a.v.bytes);
	memcpy(b.buf, a.buf, a.v.bytes);
	b.len = a.v.bytes;
	CHECK_STATUS(amq_cuckoo_open(b.buf, b.len, &b.v), AMQ_OK);
	union_into(&a, &b);
	for (i = 0; i < ms.n; i++)
		ms.count[i] *= 2;
	ms.total *= 2;
	ms_check_all(&a, &ms);
	CHECK(a.v.tables == 1);
	diag("union of counted copies: %u tables, %zu bytes, %llu items",
		 a.v.tables, a.v.bytes, (unsigned long long) a.v.items);
	cf_free(&a);
	cf_free(&b);
	ms_free(&ms);
}

/*
 * Filters of distinct values keep the format they always had, but where a
 * new value meets an equal fingerprint in its full pair at the moment the
 * filter would grow (once in about 2^f / 8 per table of such moments, one
 * or two per growth): builds that never fill, none; tiny filters, which
 * grow rather than start a counter section larger than their tables, none
 * even at 4-bit fingerprints; and at p = 1%, few of 100 builds that grow
 * twice (7 of 200 when measured; the bound allows for chance).
 */
static void
test_distinct_counters(void)
{
	cf			c;
	uint64_t	k;
	int			with = 0;
	int			tiny = 0;

	if (!cf_make(&c, 100000, 0.01))
		return;
	cf_add_keys(&c, KEYS_SEED + 8, 100000, FAMILY_A);
	CHECK(c.v.tables == 1 && c.v.counters == 0 && c.buf[4] == AMQ_CUCKOO_VERSION);
	cf_free(&c);

	for (k = 10; k <= 60; k++)
	{
		if (!cf_make(&c, 5, 0.5))
			return;
		cf_add_keys(&c, KEYS_SEED + 100 * k, k, FAMILY_A);
		tiny += c.v.counters != 0;
		CHECK(c.v.tables > 1);
		cf_free(&c);
	}
	for (k = 0; k < 100; k++)
	{
		if (!cf_make(&c, 500, 0.01))
			return;
		cf_add_keys(&c, KEYS_SEED + 1000 * k, 3000, FAMILY_A);
		CHECK(c.v.tables == 3);
		with += c.v.counters != 0;
		CHECK(c.v.counters == 0 || c.v.counters_used <= 2);
		cf_free(&c);
	}
	diag("distinct values with a counter section: %d of 51 tiny filters "
		 "(n = 5, p = 0.5, 10..60 values), %d of 100 at n = 500, p = 1%% "
		 "(3,000 values)", tiny, with);
	CHECK(tiny == 0);
	CHECK(with <= 10);
}

/*
 * A tiny filter (n = 5, p = 0.5: tables of 48 bytes) grows rather than
 * start a counter section of 384, and once its tables pass that size its
 * copies are counted: 10 values with 2,000 copies each stay a few tables.
 */
static void
test_tiny_filter_copies(void)
{
	amq_cuckoo_params pr;
	multiset	ms;
	cf			c;

	CHECK_STATUS(amq_cuckoo_size(5, 0.5, &pr), AMQ_OK);
	ms_keys(&ms, 10, KEYS_SEED + 3, pr.fp_bits, pr.buckets);
	if (!cf_make(&c, 5, 0.5))
		return;
	if (add_copies(&c, &ms, 2000, false))
	{
		diag("10 keys x 2,000 at n = 5, p = 0.5: %u tables, %zu bytes "
			 "(counters %zu)", c.v.tables, c.v.bytes, counter_bytes(&c));
		CHECK(c.v.tables <= 8);
		CHECK(c.v.bytes <= 4096);
		ms_check_all(&c, &ms);
	}
	cf_free(&c);
	ms_free(&ms);
}

static const amq_test tests[] = {
	{"few values, many copies", test_few_values},
	{"mixes of values and copies", test_mixes},
	{"deleting counted copies", test_delete_copies},
	{"unions of counted copies", test_union_copies},
	{"distinct values and counters", test_distinct_counters},
	{"tiny filters, many copies", test_tiny_filter_copies},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo copies");
}
