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
 * The merge's reserve function (ctx a cf): checks that the filter asking is
 * valid and asks for more than it has but never more than both inputs
 * together, then moves it to a fresh buffer of exactly that size (cf_move),
 * so that whatever the merge appends must fit what it asked for.  With
 * refuse set it returns NULL instead, as a caller at its size limit does.
 */
static size_t merge_sum;		/* dst + src bytes of the merge running */
static bool merge_refuse;		/* reserve says no */
static int	merge_reserves;		/* calls of merge_reserve */

static uint8_t *
merge_reserve(void *ctx, size_t need)
{
	cf		   *f = ctx;

	merge_reserves++;
	cf_valid(f);
	CHECK(need > f->v.bytes && need <= merge_sum);
	if (merge_refuse)
		return NULL;
	return cf_move(f, need) ? f->buf : NULL;
}

/*
 * Merges src into a copy of dst, max_work units per step, checking that dst
 * is valid after every step and that a step stops within one bucket's work
 * of its budget.  Returns false (out untouched) if merge_begin refused with
 * the status *begin (when begin is not NULL).  *work, if not NULL, is the
 * merge's total work count.
 */
static bool
cf_merge_work(cf *out, const cf *dst, const cf *src, uint64_t max_work,
			  amq_status *begin, uint64_t *work)
{
	amq_cuckoo_merge *m = xmalloc(sizeof(amq_cuckoo_merge));
	uint64_t	src_buckets = (src->v.slots - src->v.tables) / 4;
	/* one bucket: four fingerprints and the victim, each tried in a window,
	 * an eviction walk written and undone, a spill table appended */
	uint64_t	per_bucket = 5 * (AMQ_CUCKOO_MERGE_WINDOW + 2 * (AMQ_CUCKOO_MAX_KICKS + 2) + 1) +
		1 + src_buckets;
	uint64_t	steps = 0,
				max_steps;
	amq_status	st;
	bool		done = false;

	memset(out, 0, sizeof(*out));
	out->buf = xmalloc(dst->v.bytes);
	out->len = dst->v.bytes;
	memcpy(out->buf, dst->buf, dst->v.bytes);
	st = amq_cuckoo_open(out->buf, dst->v.bytes, &out->v);
	CHECK_STATUS(st, AMQ_OK);
	merge_sum = dst->v.bytes + src->v.bytes;
	merge_refuse = false;
	st = amq_cuckoo_merge_begin(m, &out->v, &src->v, merge_reserve, out);
	if (begin)
		*begin = st;
	if (st != AMQ_OK)
	{
		if (!begin)
			CHECK_STATUS(st, AMQ_OK);
		cf_free(out);
		free(m);
		return false;
	}
	/* linear in both filters (see test_merge_work_linear) */
	max_steps = (2 * (uint64_t) (dst->v.tables + src->v.tables) + 2 * src_buckets +
				 src->v.slots * (AMQ_CUCKOO_MERGE_WINDOW + 2 * AMQ_CUCKOO_MAX_KICKS + 8)) /
		(max_work ? max_work : 1) + 2;
	while (!done)
	{
		amq_cuckoo_view chk;
		uint64_t	before = m->work;

		st = amq_cuckoo_merge_step(m, &out->v, &src->v, max_work, &done);
		CHECK_STATUS(st, AMQ_OK);
		if (max_work < UINT64_MAX - per_bucket)
			CHECK(m->work - before <= (max_work ? max_work : 1) + per_bucket);
		CHECK(out->v.bytes <= out->len);
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
	if (work)
		*work = m->work;
	free(m);
	/* the buffer grew only by what the merge asked for, and it used all of it */
	CHECK(out->v.bytes == out->len);
	/* re-open on the final length, as the glue would */
	st = amq_cuckoo_open(out->buf, out->v.bytes, &out->v);
	CHECK_STATUS(st, AMQ_OK);
	return true;
}

static bool
cf_merge(cf *out, const cf *dst, const cf *src, uint64_t max_work,
		 amq_status *begin)
{
	return cf_merge_work(out, dst, src, max_work, begin, NULL);
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

/*
 * Merges src into a copy of dst with a reserve function that refuses, as a
 * caller at its size limit does.  Returns the merge's status; *need is the
 * room it asked for, *reserves how often it asked.  dst's copy stays valid
 * and, on AMQ_OK, keeps its size.
 */
static amq_status
merge_refused(const cf *dst, const cf *src, size_t *need, int *reserves)
{
	amq_cuckoo_merge *m = xmalloc(sizeof(amq_cuckoo_merge));
	cf			out;
	amq_status	st;
	bool		done = false;

	memset(&out, 0, sizeof(out));
	out.buf = xmalloc(dst->v.bytes);
	out.len = dst->v.bytes;
	memcpy(out.buf, dst->buf, dst->v.bytes);
	CHECK_STATUS(amq_cuckoo_open(out.buf, out.len, &out.v), AMQ_OK);
	merge_sum = dst->v.bytes + src->v.bytes;
	merge_refuse = true;
	merge_reserves = 0;
	st = amq_cuckoo_merge_begin(m, &out.v, &src->v, merge_reserve, &out);
	CHECK_STATUS(st, AMQ_OK);
	while (st == AMQ_OK && !done)
		st = amq_cuckoo_merge_step(m, &out.v, &src->v, 100, &done);
	*need = m->need;
	*reserves = merge_reserves;
	cf_valid(&out);
	CHECK(out.v.bytes == dst->v.bytes && out.v.items >= dst->v.items);
	merge_refuse = false;
	free(m);
	cf_free(&out);
	return st;
}

/*
 * A merge asks for room only when it appends a table, and for that table
 * only: a union that fits in the destination needs no room for the source,
 * so two filters each over half the size limit can be merged.  When a table
 * must be appended and the room is refused, the merge stops with
 * AMQ_ERR_TOO_LARGE, saying how much it needed.
 */
static void
test_merge_reserve(void)
{
	cf			a,
				b,
				c,
				g;
	size_t		need = 0;
	int			reserves = 0;
	uint64_t	n70;

	if (!cf_make(&a, 10000, 0.01) || !cf_make(&b, 10000, 0.01) ||
		!cf_make(&c, 10000, 0.01) || !cf_make(&g, 1000, 0.01))
		return;
	n70 = (uint64_t) (0.7 * 4 * (double) a.params.buckets);
	cf_add_keys(&a, 1, 1000, FAMILY_A);
	cf_add_keys(&b, 2, 1000, FAMILY_A);
	cf_add_keys(&c, 3, n70, FAMILY_A);
	cf_add_keys(&g, 4, 6000, FAMILY_A);
	CHECK(g.v.tables >= 3);

	/* everything fits in dst's table: no room asked for */
	CHECK_STATUS(merge_refused(&a, &b, &need, &reserves), AMQ_OK);
	CHECK(reserves == 0);
	/* the same with dst unbound and src bound, and with src unbound */
	{
		cf			e;

		if (cf_make(&e, 10000, 0.01))
		{
			CHECK_STATUS(merge_refused(&e, &a, &need, &reserves), AMQ_OK);
			CHECK(reserves == 0);
			CHECK_STATUS(merge_refused(&a, &e, &need, &reserves), AMQ_OK);
			CHECK(reserves == 0);
			cf_free(&e);
		}
	}

	/* two 70% filters: a spill table of the first table's size is needed */
	CHECK_STATUS(merge_refused(&c, &c, &need, &reserves), AMQ_ERR_TOO_LARGE);
	CHECK(reserves == 1);
	CHECK(need == c.v.bytes + amq_cuckoo_table_bytes(c.params.buckets, c.v.fp_bits));

	/*
	 * A grown source into a smaller filter: its tables without a match come
	 * over whole, each after asking for exactly its size.
	 */
	{
		cf			small,
					u;
		uint64_t	work;

		if (cf_make(&small, 1000, 0.01))
		{
			cf_add_keys(&small, 5, 10, FAMILY_A);
			CHECK_STATUS(merge_refused(&small, &g, &need, &reserves), AMQ_ERR_TOO_LARGE);
			CHECK(reserves == 1);
			CHECK(need > small.v.bytes && need < small.v.bytes + g.v.bytes);
			/*
			 * allowed: one reservation per table appended (cf_merge_work
			 * checks the result is as long as what it asked for)
			 */
			merge_reserves = 0;
			if (cf_merge_work(&u, &small, &g, 50, NULL, &work))
			{
				CHECK(merge_reserves == (int) u.v.tables - 1);
				CHECK(u.v.tables >= g.v.tables);
				CHECK(u.v.bytes < small.v.bytes + g.v.bytes);
				CHECK(u.v.items == g.v.items + 10);
				check_keys(&u, 4, 6000, 1);
				check_keys(&u, 5, 10, 1);
				cf_free(&u);
			}
			cf_free(&small);
		}
	}

	cf_free(&a);
	cf_free(&b);
	cf_free(&c);
	cf_free(&g);
}

/*
 * The work of a merge is linear in the filters, whatever their tables: a
 * filter of 2,000 full one-bucket tables (appended one by one, then filled
 * with distinct values), none of whose fingerprints fits in another such
 * table.  Trying every table of the size for every fingerprint did items x
 * tables tries (20 million here, with no interrupt check for seconds); the
 * window does at most AMQ_CUCKOO_MERGE_WINDOW tries per fingerprint, one
 * failed eviction walk per source table and a spill.  cf_merge_work checks
 * that every step stays within its budget, so the caller's interrupt checks
 * come at a bounded interval.
 */
static void
test_merge_work_linear(void)
{
	const uint32_t tables = 2000;
	cf			a,
				u;
	uint64_t	work = 0;
	uint64_t	buckets;
	uint64_t	bound;
	uint64_t	s = 4242;
	uint32_t	i;
	int			k;

	if (!cf_make(&a, 1, 0.5))
		return;
	for (i = 0; i < tables; i++)
	{
		if (i > 0 && !cf_grow_to(&a, a.v.base_buckets))
			break;
		for (k = 0; k < 5; k++)
			cf_add(&a, splitmix64(&s), FAMILY_A);
	}
	diag("%u one-bucket tables, %llu items, %zu bytes", a.v.tables,
		 (unsigned long long) a.v.items, a.v.bytes);
	CHECK(a.v.tables >= tables && a.v.tables <= tables + 10);
	CHECK(a.v.items == 5 * (uint64_t) tables);
	buckets = (a.v.slots - a.v.tables) / 4;
	/* index and start, read, tries and spill, failed walks, spills zeroed */
	bound = 2 * (uint64_t) a.v.tables + buckets +
		a.v.items * (AMQ_CUCKOO_MERGE_WINDOW + 2) +
		(uint64_t) a.v.tables * 2 * (AMQ_CUCKOO_MAX_KICKS + 2) + buckets;
	if (cf_merge_work(&u, &a, &a, 1000, NULL, &work))
	{
		diag("self-union: %u tables, %llu work units (bound %llu, %llu per fingerprint)",
			 u.v.tables, (unsigned long long) work, (unsigned long long) bound,
			 (unsigned long long) (work / a.v.items));
		CHECK(work <= bound);
		CHECK(work < a.v.items * a.v.tables / 8);
		CHECK(u.v.items == 2 * a.v.items);
		CHECK(u.v.tables >= a.v.tables + a.v.tables / 2);
		s = 4242;
		for (i = 0; i < 5 * tables; i++)
			if (amq_cuckoo_count(&u.v, splitmix64(&s)) < 2)
			{
				CHECK(!"a value lost copies in the union");
				break;
			}
		cf_valid(&u);
		cf_free(&u);
	}
	/* and in small steps: every step within its budget (cf_merge_work) */
	if (cf_merge_work(&u, &a, &a, 7, NULL, &work))
	{
		CHECK(work <= bound);
		cf_free(&u);
	}
	cf_free(&a);
}

/* FNV-1a of a filter's bytes. */
static uint64_t
bytes_fnv(const cf *f)
{
	uint64_t	h = UINT64_C(14695981039346656037);
	size_t		i;

	for (i = 0; i < f->v.bytes; i++)
	{
		h ^= f->buf[i];
		h *= UINT64_C(1099511628211);
	}
	return h;
}

static void
check_merge_bytes(const char *name, const cf *dst, const cf *src,
				  uint32_t tables, size_t bytes, uint64_t fnv)
{
	cf			u;

	if (!cf_merge(&u, dst, src, 1000, NULL))
		return;
	if (u.v.tables != tables || u.v.bytes != bytes || bytes_fnv(&u) != fnv)
	{
		diag("%s: %u tables, %zu bytes, FNV-1a %016llx; expected %u, %zu, %016llx",
			 name, u.v.tables, u.v.bytes, (unsigned long long) bytes_fnv(&u),
			 tables, bytes, (unsigned long long) fnv);
		current_failures++;
	}
	cf_free(&u);
}

/*
 * The bytes of unions, as merges gave them when they tried every table of a
 * size: where earlier tables of a size have filled, as they do in a chain of
 * unions (cuckoo_union_agg) or in a filter of many copies of one value, a
 * window of the newest tables places every fingerprint where trying them all
 * did.  Pinned, so that a change to where merges put fingerprints shows.
 * (Pinned again when adds and merges began to fill the emptier bucket of a
 * pair: the table counts and sizes stayed, the bytes changed.)
 */
static void
test_merge_bytes_unchanged(void)
{
	cf			a,
				b,
				c,
				x[20],
				u;
	uint64_t	na;
	int			i;

	if (!cf_make(&a, 10000, 0.01) || !cf_make(&b, 10000, 0.01))
		return;
	na = (uint64_t) (0.7 * 4 * (double) a.params.buckets);
	cf_add_keys(&a, 11, na, FAMILY_A);
	cf_add_keys(&b, 22, na, FAMILY_A);
	check_merge_bytes("disjoint", &a, &b, 2, 26464, UINT64_C(0x13a1b20a2f8d47f9));
	check_merge_bytes("self", &a, &a, 2, 26464, UINT64_C(0x5ee138a1af87ccbd));
	cf_free(&a);
	cf_free(&b);

	if (!cf_make(&a, 1000, 0.01) || !cf_make(&b, 1000, 0.01) ||
		!cf_make(&c, 1000, 0.01))
		return;
	cf_add_keys(&a, 101, 6000, FAMILY_A);
	cf_add_keys(&b, 102, 2500, FAMILY_A);
	cf_add_keys(&c, 103, 700, FAMILY_A);
	check_merge_bytes("grown a|b", &a, &b, 5, 13464, UINT64_C(0xe504eb79c37135d2));
	check_merge_bytes("grown c|a", &c, &a, 4, 10784, UINT64_C(0x99dc545eda794e21));
	check_merge_bytes("grown a|c", &a, &c, 4, 10784, UINT64_C(0x7957eab0439e31a9));
	check_merge_bytes("grown a|a", &a, &a, 6, 18784, UINT64_C(0x43d835ffb21aeacb));
	cf_free(&a);
	cf_free(&b);
	cf_free(&c);

	/* a chain of 20 unions of 70% filters: 15 tables of one size at the end */
	for (i = 0; i < 20; i++)
	{
		if (!cf_make(&x[i], 5000, 0.01))
			return;
		cf_add_keys(&x[i], 200 + (uint64_t) i,
					(uint64_t) (0.7 * 4 * (double) x[i].params.buckets), FAMILY_A);
	}
	u = x[0];
	for (i = 1; i < 20; i++)
	{
		cf			next;

		if (!cf_merge(&next, &u, &x[i], 1000, NULL))
			break;
		cf_free(&u);
		u = next;
		if (i == 5)
			CHECK(u.v.tables == 5 && bytes_fnv(&u) == UINT64_C(0x723e9247977a90ac));
	}
	CHECK(u.v.tables == 15 && u.v.bytes == 99424 && u.v.items == 73680);
	CHECK(bytes_fnv(&u) == UINT64_C(0x63e2503f2d6322b4));
	cf_free(&u);
	for (i = 1; i < 20; i++)
		cf_free(&x[i]);

	/*
	 * One value 2,700 times: its one-bucket pair holds four copies, the
	 * counter the rest (it took 301 tables before counters); a self-union
	 * adds the counts and the four slot copies land in the counter too.
	 */
	if (!cf_make(&a, 1, 0.5))
		return;
	for (i = 0; i < 9 * 300; i++)
		cf_add(&a, 42, FAMILY_A);
	CHECK(a.v.tables == 1 && a.v.counted == 2700 - 4);
	if (cf_merge(&u, &a, &a, 1000, NULL))
	{
		CHECK(u.v.tables == 1 && u.v.counted == 5400 - 4);
		CHECK(amq_cuckoo_count(&u.v, 42) == 5400);
		cf_valid(&u);
		cf_free(&u);
	}
	cf_free(&a);
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
	{"merge reserves what the result needs", test_merge_reserve},
	{"merge work linear", test_merge_work_linear},
	{"merge bytes unchanged", test_merge_bytes_unchanged},
	{"stats empty", test_stats_empty},
	{"stats estimates", test_stats_estimates},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo merge");
}
