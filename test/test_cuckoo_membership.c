/*
 * test_cuckoo_membership.c
 *		Unit tests of the cuckoo core: membership, growth and batched adds.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why:
 *
 *	- membership: no false negatives, ever, and the false-positive rate and
 *	  the load reached before growth, measured on fixed key streams;
 *	- growth and batched adds: amq_cuckoo_add_many is amq_cuckoo_add in a
 *	  loop, also where it stops at AMQ_FULL, and amq_cuckoo_add_growing, the
 *	  growth loop every caller uses, grows, follows a moved buffer, and
 *	  stops cleanly where its reserve function or the size limit refuses.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  The reference reading of the format is
 * test/cuckoo_model.h, the growable filter test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo membership: N passed, M failed"; exit
 * status 1 on failure.
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
 * Membership.
 * ----------------------------------------------------------------
 */

/*
 * n = 100,000 keys at p = 1%, all found; the measured rate over 10^6 absent
 * keys must not exceed p (the model, 8 * 0.95 / 1023, is ~0.0074; the
 * standard deviation of the measurement is ~0.00009).
 */
static void
test_no_false_negatives(void)
{
	const uint64_t n = 100000;
	const uint64_t probes = 1000000;
	cf			f;
	uint64_t	found,
				fp;
	double		measured;

	if (!cf_make(&f, n, 0.01))
		return;
	cf_add_keys(&f, KEYS_SEED, n, FAMILY_A);
	if (f.growths != 0)
		diag("n keys needed %d growth tables", f.growths);
	CHECK(f.growths == 0);
	found = cf_count_present(&f, KEYS_SEED, n);
	CHECK(found == n);
	fp = cf_count_present(&f, ABSENT_SEED, probes);
	measured = (double) fp / (double) probes;
	diag("n=%llu p=0.01: f=%u load=%.4f model=%.5g measured fpr=%.5g",
		 (unsigned long long) n, f.v.fp_bits,
		 (double) f.v.items / (4.0 * (double) f.params.buckets),
		 f.params.expected_fpr, measured);
	CHECK(measured <= 0.01);
	CHECK(measured >= 0.005);	/* a rate far below the model is suspect too */
	cf_valid(&f);
	cf_free(&f);

	/* small filters and other rates: no false negative either */
	{
		static const uint64_t ns[] = {1, 7, 1000};
		static const double ps[] = {0.5, 1e-6, AMQ_CUCKOO_MIN_FPR};
		size_t		i,
					j;

		for (i = 0; i < lengthof(ns); i++)
			for (j = 0; j < lengthof(ps); j++)
			{
				if (!cf_make(&f, ns[i], ps[j]))
					continue;
				cf_add_keys(&f, KEYS_SEED + i, 3 * ns[i], FAMILY_A);
				CHECK(cf_count_present(&f, KEYS_SEED + i, 3 * ns[i]) == 3 * ns[i]);
				cf_valid(&f);
				cf_free(&f);
			}
	}
}

/*
 * The load one table reaches before the first AMQ_FULL: at least the design
 * load, so n values always fit without growth.
 */
static void
check_load(double p, uint32_t want_f, bool assert_load)
{
	const uint64_t n = 100000;
	cf			f;
	uint64_t	s = 4321;
	uint64_t	added = 0;
	double		load;
	double		t0 = now_seconds();

	if (!cf_make(&f, n, p))
		return;
	if (want_f)
		CHECK(f.v.fp_bits == want_f);
	for (;;)
	{
		amq_status	st = amq_cuckoo_add(&f.v, splitmix64(&s), FAMILY_A);

		if (st == AMQ_FULL)
			break;
		CHECK_STATUS(st, AMQ_OK);
		if (st != AMQ_OK || ++added > 4 * f.params.buckets + 1)
			break;
	}
	load = (double) f.v.items / (4.0 * (double) f.params.buckets);
	diag("p=%g f=%u buckets=%llu: first AMQ_FULL after %llu values, load %.4f (%.2f s)",
		 p, f.v.fp_bits, (unsigned long long) f.params.buckets,
		 (unsigned long long) f.v.items, load, now_seconds() - t0);
	CHECK(f.v.items == added);
	if (assert_load)
	{
		CHECK(load >= AMQ_CUCKOO_DESIGN_LOAD);
		CHECK(added >= n);
		/* still no false negative at that load */
		CHECK(cf_count_present(&f, 4321, added) == added);
	}
	cf_valid(&f);
	cf_free(&f);
}

static void
test_load_f10(void)
{
	check_load(0.01, 10, true);
}

static void
test_load_f16(void)
{
	check_load(1.5e-4, 16, true);
}

/* Narrow fingerprints: reported, not asserted (fewer alternates exist). */
static void
test_load_narrow(void)
{
	check_load(0.5, 0, false);
	check_load(0.1, 0, false);
}

/*
 * Two-choice placement: a value goes to the emptier of its two buckets, so
 * at three quarters of the design load bucket loads stay closer to their
 * mean of 2.85.  Filling the first bucket that has room left 41% of the
 * buckets full and 16% holding at most one fingerprint here; two-choice
 * placement leaves 22% full and 6% with at most one.  The bounds sit
 * between the two.  A full bucket is where the next value may have to
 * evict.
 */
static void
test_two_choice_balance(void)
{
	const uint64_t n = 100000;
	cf			f;
	amq_cuckoo_table t;
	uint64_t	added;
	uint64_t	b;
	uint64_t	full = 0,
				sparse = 0;

	if (!cf_make(&f, n, 0.01))
		return;
	added = (uint64_t) (0.75 * AMQ_CUCKOO_DESIGN_LOAD * 4.0 * (double) f.params.buckets);
	CHECK(cf_add_keys(&f, 99, added, FAMILY_A));
	amq_cuckoo_table_at(&f.v, 0, &t);
	for (b = 0; b < t.buckets; b++)
	{
		unsigned	used = 0;
		unsigned	s;

		for (s = 0; s < 4; s++)
			used += amq_cuckoo_slot(&f.v, &t, b, s) != 0;
		full += used == 4;
		sparse += used <= 1;
	}
	diag("%llu values in %llu buckets: %.2f%% full, %.2f%% with at most one",
		 (unsigned long long) added, (unsigned long long) t.buckets,
		 100.0 * (double) full / (double) t.buckets,
		 100.0 * (double) sparse / (double) t.buckets);
	CHECK(full * 100 < t.buckets * 30);
	CHECK(sparse * 100 < t.buckets * 10);
	CHECK(cf_count_present(&f, 99, added) == added);
	cf_free(&f);
}

/* ----------------------------------------------------------------
 * Growth.
 * ----------------------------------------------------------------
 */

/* 20,000 distinct values into a filter sized for 1,000. */
static void
test_growth(void)
{
	const uint64_t count = 20000;
	cf			f;
	amq_cuckoo_view v;
	amq_cuckoo_table t0,
				t1;
	uint64_t	s = 2024;
	uint64_t	i;
	uint64_t	fp;

	if (!cf_make(&f, 1000, 0.01))
		return;
	for (i = 0; i < count; i++)
		if (!cf_add(&f, splitmix64(&s), FAMILY_A))
			break;
	CHECK_STATUS(amq_cuckoo_open(f.buf, f.v.bytes, &v), AMQ_OK);
	CHECK(v.tables > 1);
	CHECK(v.items == count);
	CHECK(v.family == FAMILY_A);
	check_table_walk(&f);
	amq_cuckoo_table_at(&v, 0, &t0);
	amq_cuckoo_table_at(&v, 1, &t1);
	CHECK(t0.buckets == 264);
	CHECK(t1.buckets == 2 * t0.buckets);
	s = 2024;
	for (i = 0; i < count; i++)
	{
		uint64_t	h = splitmix64(&s);

		CHECK(amq_cuckoo_may_contain(&v, h));
		CHECK(amq_cuckoo_count(&v, h) >= 1);
	}
	fp = cf_count_present(&f, ABSENT_SEED, 1000000);
	{
		amq_cuckoo_stats st = view_stats(&v, UINT64_MAX);

		diag("%llu values, %u tables, %zu bytes (%.2f bits/value): load %.3f, "
			 "measured fpr %.5g, est_fpr %.5g",
			 (unsigned long long) count, v.tables, v.bytes,
			 8.0 * (double) v.bytes / (double) count, st.load_factor,
			 (double) fp / 1e6, st.est_fpr);
		CHECK(st.occupied == count);
	}
	cf_free(&f);
}

enum
{
	N = 20000					/* keys of the batched-add tests */
};

/* Batch sizes, uneven as an aggregate's buffer flushes them, used in turn. */
static const size_t batch_sizes[] = {0, 1, 7, 8, 9, 255, 256, 3000};

/*
 * N keys of the stream seeded with seed (malloc'd), a few repeated so that
 * some adds go to the same bucket pair.
 */
static uint64_t *
batch_keys(uint64_t seed)
{
	uint64_t   *keys = xmalloc(N * sizeof(uint64_t));
	uint64_t	s = seed;
	size_t		i;

	for (i = 0; i < N; i++)
		keys[i] = splitmix64(&s);
	for (i = 100; i < N; i += 97)
		keys[i] = keys[i - 50];
	return keys;
}

/* Whether f's bytes are ref's. */
static bool
cf_same_bytes(const cf *f, const cf *ref)
{
	return f->v.bytes == ref->v.bytes &&
		memcmp(f->buf, ref->buf, ref->v.bytes) == 0;
}

/* amq_cuckoo_add_many is amq_cuckoo_add in a loop, across growth too. */
static void
test_add_many(void)
{
	uint64_t   *keys = batch_keys(31337);
	cf			one,
				many;
	size_t		i,
				at = 0,
				next = 0;
	int			fulls = 0;

	if (!cf_make(&one, 1000, 0.01) || !cf_make(&many, 1000, 0.01))
	{
		free(keys);
		return;
	}
	for (i = 0; i < N; i++)
		cf_add(&one, keys[i], FAMILY_A);

	while (at < N)
	{
		size_t		len = batch_sizes[next++ % lengthof(batch_sizes)];
		size_t		done = (size_t) -1;
		amq_status	st;

		if (len > N - at)
			len = N - at;
		st = amq_cuckoo_add_many(&many.v, keys + at, len, FAMILY_A, &done);
		CHECK(done <= len);
		if (done > len)
			break;
		if (st == AMQ_FULL)
		{
			CHECK(done < len);
			fulls++;
			at += done;
			if (!cf_grow(&many))
				break;
			continue;
		}
		CHECK_STATUS(st, AMQ_OK);
		CHECK(done == len);
		if (st != AMQ_OK)
			break;
		at += len;
	}
	diag("%d AMQ_FULL stops, %u tables", fulls, many.v.tables);
	CHECK(fulls > 0);
	CHECK(one.v.items == N && many.v.items == N);
	CHECK(cf_same_bytes(&many, &one));
	cf_valid(&many);
	cf_free(&one);
	cf_free(&many);
	free(keys);
}

/* ----------------------------------------------------------------
 * The growth loop, amq_cuckoo_add_growing.
 * ----------------------------------------------------------------
 */

/* What growing_reserve grants, and what it saw. */
typedef struct growing_ctx
{
	cf		   *f;
	int			allow;			/* growths granted; -1: every one */
	int			calls;
	size_t		room;			/* > 0: f->buf holds this many bytes, so
								 * growth happens in place */
} growing_ctx;

/*
 * A reserve function that checks the filter is valid whenever the core asks
 * for room, counts the calls, and grants g->allow of them: in place when the
 * buffer has room, else with a fresh buffer each time (cf_reserve), so that
 * the base moves at every growth.
 */
static uint8_t *
growing_reserve(void *arg, size_t need)
{
	growing_ctx *g = arg;

	g->calls++;
	CHECK(need > g->f->v.bytes);
	cf_valid(g->f);
	if (g->allow >= 0 && g->calls > g->allow)
		return NULL;
	if (g->room > 0)
		return need <= g->room ? g->f->buf : NULL;
	return cf_reserve(g->f, need);
}

/* A reserve function for calls that must not grow: being called fails. */
static uint8_t *
never_reserve(void *arg, size_t need)
{
	(void) arg;
	diag("reserve asked for %zu bytes where no growth may happen", need);
	current_failures++;
	return NULL;
}

/*
 * amq_cuckoo_add_growing gives the bytes of amq_cuckoo_add with growth, one
 * value at a time, whether the hashes come in one call or in batches of
 * uneven sizes, and whether the buffer moves at every growth (the view
 * follows it; ASan sees any use of the old one) or grows in place.
 */
static void
test_add_growing(void)
{
	uint64_t   *keys = batch_keys(4711);
	cf			one,
				all,
				batched,
				inplace;
	growing_ctx g;
	size_t		i,
				at,
				next,
				done = 0;
	amq_status	st;

	if (!cf_make(&one, 1000, 0.01) || !cf_make(&all, 1000, 0.01) ||
		!cf_make(&batched, 1000, 0.01) || !cf_make(&inplace, 1000, 0.01))
	{
		free(keys);
		return;
	}
	for (i = 0; i < N; i++)
		cf_add(&one, keys[i], FAMILY_A);
	CHECK(one.growths >= 3);

	/* all at once, a fresh buffer at every growth */
	g = (growing_ctx) {&all, -1, 0, 0};
	st = amq_cuckoo_add_growing(&all.v, keys, N, FAMILY_A, growing_reserve, &g,
								&done);
	CHECK_STATUS(st, AMQ_OK);
	CHECK(done == N);
	CHECK(g.calls == (int) all.v.tables - 1);
	CHECK(all.v.base == all.buf);
	CHECK(all.v.bytes == all.len);
	CHECK(cf_same_bytes(&all, &one));
	cf_valid(&all);

	/* in batches */
	g = (growing_ctx) {&batched, -1, 0, 0};
	for (at = 0, next = 0; at < N; at += done)
	{
		size_t		len = batch_sizes[next++ % lengthof(batch_sizes)];

		if (len > N - at)
			len = N - at;
		done = SIZE_MAX;
		st = amq_cuckoo_add_growing(&batched.v, keys + at, len, FAMILY_A,
									growing_reserve, &g, &done);
		CHECK_STATUS(st, AMQ_OK);
		CHECK(done == len);
		if (st != AMQ_OK || done != len)
			break;
	}
	CHECK(g.calls == (int) batched.v.tables - 1);
	CHECK(cf_same_bytes(&batched, &one));

	/* in place: a buffer with room for every table never moves */
	{
		uint8_t    *room = xmalloc(one.v.bytes);

		memcpy(room, inplace.buf, inplace.v.bytes);
		free(inplace.buf);
		inplace.buf = room;
		inplace.len = one.v.bytes;
		CHECK_STATUS(amq_cuckoo_open(room, inplace.v.bytes, &inplace.v), AMQ_OK);
		g = (growing_ctx) {&inplace, -1, 0, one.v.bytes};
		st = amq_cuckoo_add_growing(&inplace.v, keys, N, FAMILY_A,
									growing_reserve, &g, &done);
		CHECK_STATUS(st, AMQ_OK);
		CHECK(done == N);
		CHECK(g.calls == (int) inplace.v.tables - 1);
		CHECK(inplace.v.base == room);
		CHECK(cf_same_bytes(&inplace, &one));
	}
	diag("%d growths, %u tables, %zu bytes", g.calls, one.v.tables, one.v.bytes);
	cf_free(&one);
	cf_free(&all);
	cf_free(&batched);
	cf_free(&inplace);
	free(keys);
}

/*
 * Where amq_cuckoo_add_growing stops: its reserve function returns NULL
 * (after two growths, and at once), a growth would pass AMQ_CUCKOO_MAX_BYTES,
 * the sizeless empty filter.  Each time *done counts exactly the values
 * added and the filter is valid, unchanged since the AMQ_FULL that asked for
 * room; adding the rest later gives the bytes of an uninterrupted run.
 */
static void
test_add_growing_refused(void)
{
	uint64_t   *keys = batch_keys(8080);
	cf			ref,
				f;
	growing_ctx g;
	size_t		i,
				done = SIZE_MAX,
				more = SIZE_MAX;
	uint8_t    *snap;
	size_t		snap_len;
	amq_status	st;

	if (!cf_make(&ref, 1000, 0.01) || !cf_make(&f, 1000, 0.01))
	{
		free(keys);
		return;
	}
	for (i = 0; i < N; i++)
		cf_add(&ref, keys[i], FAMILY_A);
	CHECK(ref.v.tables > 3);

	/* two growths granted, the third refused */
	g = (growing_ctx) {&f, 2, 0, 0};
	st = amq_cuckoo_add_growing(&f.v, keys, N, FAMILY_A, growing_reserve, &g,
								&done);
	CHECK_STATUS(st, AMQ_ERR_TOO_LARGE);
	CHECK(g.calls == 3);
	CHECK(f.v.tables == 3);
	CHECK(done > 0 && done < N);
	CHECK(f.v.items == done);
	CHECK(f.v.bytes == f.len);
	cf_valid(&f);
	for (i = 0; i < done && i < N; i++)
		CHECK(amq_cuckoo_may_contain(&f.v, keys[i]));
	/* the value that did not fit finds the filter full, and changes nothing */
	snap_len = f.v.bytes;
	snap = xmalloc(snap_len);
	memcpy(snap, f.buf, snap_len);
	if (done < N)
		CHECK_STATUS(amq_cuckoo_add(&f.v, keys[done], FAMILY_A), AMQ_FULL);
	CHECK(f.v.bytes == snap_len && memcmp(snap, f.buf, snap_len) == 0);

	/* refused at once: nothing added, nothing changed */
	g = (growing_ctx) {&f, 0, 0, 0};
	st = amq_cuckoo_add_growing(&f.v, keys + done, N - done, FAMILY_A,
								growing_reserve, &g, &more);
	CHECK_STATUS(st, AMQ_ERR_TOO_LARGE);
	CHECK(more == 0 && g.calls == 1);
	CHECK(f.v.bytes == snap_len && memcmp(snap, f.buf, snap_len) == 0);
	free(snap);

	/* nothing to add: no growth, although the filter is full */
	st = amq_cuckoo_add_growing(&f.v, keys, 0, FAMILY_A, never_reserve, NULL,
								&more);
	CHECK_STATUS(st, AMQ_OK);
	CHECK(more == 0);

	/*
	 * Past the size limit: a view that claims a filter just under it.  Adding
	 * reads only the header and the tables themselves, so the claim is seen
	 * only where growth checks the size, which must refuse before asking for
	 * room.
	 */
	{
		amq_cuckoo_view huge = f.v;

		snap_len = f.v.bytes;
		snap = xmalloc(snap_len);
		memcpy(snap, f.buf, snap_len);
		huge.bytes = AMQ_CUCKOO_MAX_BYTES - 8;
		st = amq_cuckoo_add_growing(&huge, keys + done, N - done, FAMILY_A,
									never_reserve, NULL, &more);
		CHECK_STATUS(st, AMQ_ERR_TOO_LARGE);
		CHECK(more == 0);
		CHECK(memcmp(snap, f.buf, snap_len) == 0);
		free(snap);
	}

	/* the rest, later: the bytes of an uninterrupted run */
	g = (growing_ctx) {&f, -1, 0, 0};
	st = amq_cuckoo_add_growing(&f.v, keys + done, N - done, FAMILY_A,
								growing_reserve, &g, &more);
	CHECK_STATUS(st, AMQ_OK);
	CHECK(more == N - done);
	CHECK(cf_same_bytes(&f, &ref));

	/* the sizeless empty filter takes no values */
	{
		uint8_t		e[AMQ_CUCKOO_HEADER_SIZE];
		amq_cuckoo_view ev;

		amq_cuckoo_init_empty(e);
		CHECK_STATUS(amq_cuckoo_open(e, sizeof(e), &ev), AMQ_OK);
		st = amq_cuckoo_add_growing(&ev, keys, 3, FAMILY_A, never_reserve, NULL,
									&more);
		CHECK_STATUS(st, AMQ_ERR_NO_GEOMETRY);
		CHECK(more == 0);
	}
	diag("the third growth refused after %zu of %d values", done, (int) N);
	cf_free(&ref);
	cf_free(&f);
	free(keys);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

static const amq_test tests[] = {
	{"no false negatives", test_no_false_negatives},
	{"load before growth f=10", test_load_f10},
	{"load before growth f=16", test_load_f16},
	{"load narrow fingerprints", test_load_narrow},
	{"two-choice balance", test_two_choice_balance},
	{"growth", test_growth},
	{"add_many", test_add_many},
	{"add_growing", test_add_growing},
	{"add_growing refused", test_add_growing_refused},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo membership");
}
