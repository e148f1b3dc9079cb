/*
 * test_cuckoo_merge.c
 *		Unit tests of the cuckoo core: merging and statistics.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why: merging (union) with and without growth
 * tables, where a fingerprint can only go to a table of its own size and a
 * bookkeeping slip loses values; compatibility and family rules; the fill
 * statistics against measured rates.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  The reference reading of the format is
 * test/cuckoo_model.h, the growable filter test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo merge: N passed, M failed"; exit status
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
 * Merging.
 * ----------------------------------------------------------------
 */

/*
 * Merges src into a copy of dst in a buffer of dst + src bytes, max_buckets
 * source buckets per step, checking that dst is valid after every step.
 * Returns false (out untouched) if merge_begin refused with the status
 * *begin (when begin is not NULL).
 */
static bool
cf_merge(cf *out, const cf *dst, const cf *src, uint64_t max_buckets,
		 amq_status *begin)
{
	amq_cuckoo_merge m;
	size_t		room = dst->v.bytes + src->v.bytes;
	uint64_t	src_buckets = 0;
	uint64_t	steps = 0,
				max_steps;
	uint32_t	t;
	amq_status	st;
	bool		done = false;

	for (t = 0; t < src->v.tables; t++)
	{
		amq_cuckoo_table tb;

		amq_cuckoo_table_at(&src->v, t, &tb);
		src_buckets += tb.buckets;
	}
	max_steps = src_buckets / max_buckets + 2 * src->v.tables + 10;

	memset(out, 0, sizeof(*out));
	out->buf = xmalloc(room);
	memset(out->buf, 0xA5, room);
	memcpy(out->buf, dst->buf, dst->v.bytes);
	st = amq_cuckoo_open(out->buf, dst->v.bytes, &out->v);
	CHECK_STATUS(st, AMQ_OK);
	st = amq_cuckoo_merge_begin(&m, &out->v, &src->v);
	if (begin)
		*begin = st;
	if (st != AMQ_OK)
	{
		if (!begin)
			CHECK_STATUS(st, AMQ_OK);
		cf_free(out);
		return false;
	}
	while (!done)
	{
		amq_cuckoo_view chk;

		done = amq_cuckoo_merge_step(&m, &out->v, &src->v, max_buckets);
		CHECK(out->v.bytes <= room);
		st = amq_cuckoo_open(out->buf, out->v.bytes, &chk);
		if (st != AMQ_OK)
		{
			diag("merge step %llu leaves an invalid filter: %s",
				 (unsigned long long) steps, amq_status_text(st));
			current_failures++;
			break;
		}
		CHECK(chk.items == out->v.items && chk.tables == out->v.tables);
		CHECK(chk.items >= dst->v.items && chk.items <= dst->v.items + src->v.items);
		if (++steps > max_steps)
		{
			diag("merge did not finish in %llu steps", (unsigned long long) steps);
			current_failures++;
			break;
		}
	}
	/* re-open on the final length, as the glue would */
	st = amq_cuckoo_open(out->buf, out->v.bytes, &out->v);
	CHECK_STATUS(st, AMQ_OK);
	return true;
}

/* merge_begin refuses with want (and leaves nothing allocated). */
static void
check_merge_refused(const cf *dst, const cf *src, amq_status want)
{
	cf			u;
	amq_status	st = AMQ_OK;

	if (cf_merge(&u, dst, src, 1000, &st))
		cf_free(&u);
	CHECK_STATUS(st, want);
}

/* Every key of the stream, found and counted at least mult times. */
static void
check_keys(const cf *f, uint64_t seed, uint64_t count, uint64_t mult)
{
	uint64_t	s = seed;
	uint64_t	i;
	uint64_t	missing = 0,
				under = 0;

	for (i = 0; i < count; i++)
	{
		uint64_t	h = splitmix64(&s);

		missing += !amq_cuckoo_may_contain(&f->v, h);
		under += amq_cuckoo_count(&f->v, h) < mult;
	}
	if (missing || under)
		diag("keys of seed %llu: %llu of %llu missing, %llu under-counted",
			 (unsigned long long) seed, (unsigned long long) missing,
			 (unsigned long long) count, (unsigned long long) under);
	CHECK(missing == 0 && under == 0);
}

/* Two 70%-full filters of one geometry: the union needs a second table. */
static void
test_union_disjoint(void)
{
	cf			a,
				b,
				u,
				u2;
	uint64_t	na,
				nb;
	amq_cuckoo_stats st;

	if (!cf_make(&a, 10000, 0.01) || !cf_make(&b, 10000, 0.01))
		return;
	na = nb = (uint64_t) (0.7 * 4 * (double) a.params.buckets);
	cf_add_keys(&a, 11, na, FAMILY_A);
	cf_add_keys(&b, 22, nb, FAMILY_A);
	CHECK(a.v.tables == 1 && b.v.tables == 1);
	CHECK_STATUS(amq_cuckoo_compatible(&a.v, &b.v), AMQ_OK);
	if (cf_merge(&u, &a, &b, 1000, NULL))
	{
		check_keys(&u, 11, na, 1);
		check_keys(&u, 22, nb, 1);
		CHECK(u.v.items == na + nb);
		CHECK(u.v.tables > 1);
		CHECK(u.v.family == FAMILY_A);
		st = view_stats(&u.v, UINT64_MAX);
		CHECK(st.occupied == na + nb);
		check_table_walk(&u);
		diag("union of 2 x %llu values: %u tables, %zu bytes",
			 (unsigned long long) na, u.v.tables, u.v.bytes);

		/* the step size does not change the result */
		if (cf_merge(&u2, &a, &b, 1, NULL))
		{
			CHECK(u2.v.bytes == u.v.bytes &&
				  memcmp(u2.buf, u.buf, u.v.bytes) == 0);
			cf_free(&u2);
		}
		if (cf_merge(&u2, &a, &b, UINT64_MAX, NULL))
		{
			CHECK(u2.v.bytes == u.v.bytes &&
				  memcmp(u2.buf, u.buf, u.v.bytes) == 0);
			cf_free(&u2);
		}
		/* the merged filter keeps growing as usual */
		cf_add_keys(&u, 33, 10000, FAMILY_A);
		check_keys(&u, 11, na, 1);
		check_keys(&u, 33, 10000, 1);
		cf_valid(&u);
		cf_free(&u);
	}
	/* a sparse union fits in one table */
	{
		cf			c,
					d;

		if (cf_make(&c, 10000, 0.01) && cf_make(&d, 10000, 0.01))
		{
			cf_add_keys(&c, 44, 3000, FAMILY_A);
			cf_add_keys(&d, 55, 3000, FAMILY_A);
			if (cf_merge(&u, &c, &d, 777, NULL))
			{
				CHECK(u.v.tables == 1);
				CHECK(u.v.items == 6000);
				check_keys(&u, 44, 3000, 1);
				check_keys(&u, 55, 3000, 1);
				cf_free(&u);
			}
		}
		cf_free(&c);
		cf_free(&d);
	}
	cf_free(&a);
	cf_free(&b);
}

/* The union of a filter with its own copy: every value twice. */
static void
test_union_self(void)
{
	cf			a,
				u;
	uint64_t	na;

	if (!cf_make(&a, 10000, 0.01))
		return;
	na = (uint64_t) (0.7 * 4 * (double) a.params.buckets);
	cf_add_keys(&a, 66, na, FAMILY_B);
	if (cf_merge(&u, &a, &a, 1000, NULL))
	{
		check_keys(&u, 66, na, 2);
		CHECK(u.v.items == 2 * na);
		CHECK(u.v.tables > 1);
		CHECK(view_stats(&u.v, UINT64_MAX).occupied == 2 * na);
		cf_free(&u);
	}
	cf_free(&a);
}

/* Unions of grown filters: matching tables fold, others are appended. */
static void
test_union_growth(void)
{
	cf			a,
				b,
				c,
				u;

	if (!cf_make(&a, 1000, 0.01) || !cf_make(&b, 1000, 0.01) ||
		!cf_make(&c, 1000, 0.01))
		return;
	cf_add_keys(&a, 101, 6000, FAMILY_A);
	cf_add_keys(&b, 102, 2500, FAMILY_A);
	cf_add_keys(&c, 103, 700, FAMILY_A);
	diag("tables: a %u, b %u, c %u", a.v.tables, b.v.tables, c.v.tables);
	CHECK(a.v.tables >= 3 && b.v.tables >= 2 && c.v.tables == 1);

	/* both grown */
	if (cf_merge(&u, &a, &b, 1000, NULL))
	{
		check_keys(&u, 101, 6000, 1);
		check_keys(&u, 102, 2500, 1);
		CHECK(u.v.items == 8500);
		CHECK(view_stats(&u.v, UINT64_MAX).occupied == 8500);
		check_table_walk(&u);
		cf_free(&u);
	}
	/* dst has one table, src has tables without a match */
	if (cf_merge(&u, &c, &a, 333, NULL))
	{
		check_keys(&u, 101, 6000, 1);
		check_keys(&u, 103, 700, 1);
		CHECK(u.v.items == 6700);
		CHECK(u.v.tables >= a.v.tables);
		CHECK(view_stats(&u.v, UINT64_MAX).occupied == 6700);
		check_table_walk(&u);
		/* and it still grows */
		cf_add_keys(&u, 104, 5000, FAMILY_A);
		check_keys(&u, 104, 5000, 1);
		check_keys(&u, 101, 6000, 1);
		cf_valid(&u);
		cf_free(&u);
	}
	/* the other way round */
	if (cf_merge(&u, &a, &c, 1, NULL))
	{
		check_keys(&u, 101, 6000, 1);
		check_keys(&u, 103, 700, 1);
		CHECK(u.v.items == 6700);
		cf_free(&u);
	}
	cf_free(&a);
	cf_free(&b);
	cf_free(&c);
}

/* Different fingerprint width, bucket count or seed: refused. */
static void
test_merge_geometry_mismatch(void)
{
	cf			base,
				other;

	if (!cf_make(&base, 1000, 0.01))
		return;
	cf_add_keys(&base, 1, 100, FAMILY_A);

	/* f = 13 */
	if (cf_make(&other, 1000, 0.001))
	{
		CHECK_STATUS(amq_cuckoo_compatible(&base.v, &other.v), AMQ_ERR_GEOMETRY_MISMATCH);
		check_merge_refused(&base, &other, AMQ_ERR_GEOMETRY_MISMATCH);
		cf_free(&other);
	}
	/* 527 buckets */
	if (cf_make(&other, 2000, 0.01))
	{
		CHECK_STATUS(amq_cuckoo_compatible(&base.v, &other.v), AMQ_ERR_GEOMETRY_MISMATCH);
		CHECK_STATUS(amq_cuckoo_compatible(&other.v, &base.v), AMQ_ERR_GEOMETRY_MISMATCH);
		check_merge_refused(&base, &other, AMQ_ERR_GEOMETRY_MISMATCH);
		cf_free(&other);
	}
	/* another seed */
	{
		amq_cuckoo_params pr = base.params;

		if (cf_make_params(&other, &pr, 1000, 0.01, 12345))
		{
			CHECK_STATUS(amq_cuckoo_compatible(&base.v, &other.v), AMQ_ERR_GEOMETRY_MISMATCH);
			check_merge_refused(&base, &other, AMQ_ERR_GEOMETRY_MISMATCH);
			cf_free(&other);
		}
	}
	/* the same geometry from another n and p: compatible */
	{
		amq_cuckoo_params pr = base.params;

		if (cf_make_params(&other, &pr, 999, 0.0101, AMQ_CUCKOO_DEFAULT_SEED))
		{
			CHECK_STATUS(amq_cuckoo_compatible(&base.v, &other.v), AMQ_OK);
			cf_free(&other);
		}
	}
	/* a grown filter against an ungrown one: first tables match */
	if (cf_make(&other, 1000, 0.01))
	{
		cf_add_keys(&other, 2, 3000, FAMILY_A);
		CHECK(other.v.tables > 1);
		CHECK_STATUS(amq_cuckoo_compatible(&base.v, &other.v), AMQ_OK);
		CHECK_STATUS(amq_cuckoo_compatible(&other.v, &base.v), AMQ_OK);
		cf_free(&other);
	}
	cf_free(&base);
}

/* Families: equal or one unbound; the union adopts the bound one. */
static void
test_merge_family(void)
{
	cf			a,
				b,
				e,
				e2,
				u;

	if (!cf_make(&a, 1000, 0.01) || !cf_make(&b, 1000, 0.01) ||
		!cf_make(&e, 1000, 0.01) || !cf_make(&e2, 1000, 0.01))
		return;
	cf_add_keys(&a, 1, 200, FAMILY_A);
	cf_add_keys(&b, 2, 200, FAMILY_B);

	CHECK_STATUS(amq_cuckoo_compatible(&a.v, &b.v), AMQ_ERR_FAMILY_MISMATCH);
	CHECK_STATUS(amq_cuckoo_compatible(&b.v, &a.v), AMQ_ERR_FAMILY_MISMATCH);
	check_merge_refused(&a, &b, AMQ_ERR_FAMILY_MISMATCH);

	/* unbound dst takes the source's family (it must: items > 0) */
	CHECK_STATUS(amq_cuckoo_compatible(&e.v, &b.v), AMQ_OK);
	if (cf_merge(&u, &e, &b, 50, NULL))
	{
		CHECK(u.v.family == FAMILY_B);
		CHECK(peek_u32(u.buf + OFF_FAMILY) == FAMILY_B);
		CHECK(u.v.items == 200);
		check_keys(&u, 2, 200, 1);
		cf_free(&u);
	}
	/* bound dst, unbound empty src: unchanged family */
	if (cf_merge(&u, &a, &e, 50, NULL))
	{
		CHECK(u.v.family == FAMILY_A);
		CHECK(u.v.items == 200);
		check_keys(&u, 1, 200, 1);
		cf_free(&u);
	}
	/* both unbound */
	if (cf_merge(&u, &e, &e2, 50, NULL))
	{
		CHECK(u.v.family == 0 && u.v.items == 0);
		cf_free(&u);
	}
	/* deleted down to empty: still a valid filter */
	{
		uint64_t	s = 1;
		int			i;

		for (i = 0; i < 200; i++)
			CHECK(amq_cuckoo_delete(&a.v, splitmix64(&s)));
		CHECK(a.v.items == 0);
		cf_valid(&a);
	}
	cf_free(&a);
	cf_free(&b);
	cf_free(&e);
	cf_free(&e2);
}

/* ----------------------------------------------------------------
 * Statistics.
 * ----------------------------------------------------------------
 */

static void
test_stats_empty(void)
{
	uint8_t		e[AMQ_CUCKOO_HEADER_SIZE];
	amq_cuckoo_view v;
	amq_cuckoo_stats st;
	cf			f;

	amq_cuckoo_init_empty(e);
	CHECK_STATUS(amq_cuckoo_open(e, sizeof(e), &v), AMQ_OK);
	st = view_stats(&v, UINT64_MAX);
	CHECK(st.occupied == 0 && st.load_factor == 0.0 && st.est_fpr == 0.0);

	if (!cf_make(&f, 1000, 0.01))
		return;
	st = view_stats(&f.v, UINT64_MAX);
	CHECK(st.occupied == 0 && st.load_factor == 0.0 && st.est_fpr == 0.0);
	/* one value: a small, nonzero rate */
	cf_add(&f, 42, FAMILY_A);
	st = view_stats(&f.v, UINT64_MAX);
	CHECK(st.occupied == 1);
	CHECK(st.load_factor > 0.0 && st.est_fpr > 0.0 && st.est_fpr < 0.001);
	cf_free(&f);
}

/* Fill-based estimates against the measured rate, one and many tables. */
static void
check_stats(uint64_t n, double p, uint64_t count)
{
	cf			f;
	amq_cuckoo_stats st,
				st2;
	uint64_t	fp;
	double		measured;

	if (!cf_make(&f, n, p))
		return;
	cf_add_keys(&f, 4242, count, FAMILY_A);
	st = view_stats(&f.v, UINT64_MAX);
	fp = cf_count_present(&f, ABSENT_SEED, 1000000);
	measured = (double) fp / 1e6;
	diag("n=%llu p=%g, %llu values in %u tables: occupied=%llu/%llu load=%.4f "
		 "est_fpr=%.5g measured=%.5g (%.3f)",
		 (unsigned long long) n, p, (unsigned long long) count, f.v.tables,
		 (unsigned long long) st.occupied, (unsigned long long) f.v.slots,
		 st.load_factor, st.est_fpr, measured, st.est_fpr / measured);
	CHECK(st.occupied == f.v.items);
	CHECK(fabs(st.load_factor - (double) f.v.items / (double) f.v.slots) <= 1e-12);
	CHECK(fabs(st.est_fpr - measured) <= 0.2 * measured);
	/* accumulating in slices gives the same result */
	st2 = view_stats(&f.v, 37);
	CHECK(st2.occupied == st.occupied);
	CHECK(fabs(st2.est_fpr - st.est_fpr) <= 1e-9 * st.est_fpr);
	CHECK(fabs(st2.load_factor - st.load_factor) <= 1e-12);
	cf_free(&f);
}

static void
test_stats_estimates(void)
{
	check_stats(100000, 0.01, 100000);
	check_stats(100000, 0.01, 50000);
	check_stats(1000, 0.01, 20000);
	check_stats(100000, 0.1, 100000);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

static const amq_test tests[] = {
	{"union disjoint", test_union_disjoint},
	{"union with itself", test_union_self},
	{"union with growth tables", test_union_growth},
	{"merge geometry mismatch", test_merge_geometry_mismatch},
	{"merge family", test_merge_family},
	{"stats empty", test_stats_empty},
	{"stats estimates", test_stats_estimates},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo merge");
}
