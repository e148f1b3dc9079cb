/*
 * test_cuckoo_delete.c
 *		Unit tests of the cuckoo core: duplicates and deletion.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why: deletion must never lose another stored value.
 * Copies of one value, random adds and deletes against an exact multiset,
 * victims, and values whose bucket pairs collide in one table but not in
 * another; each deletion also checked against the documented rule (one copy
 * goes, from the largest table holding one), including a stress run with
 * 4-bit fingerprints and tables of several levels, where a bookkeeping slip
 * or a search in the wrong table order loses fingerprints.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  The reference reading of the format is
 * test/cuckoo_model.h, the growable filter test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo delete: N passed, M failed"; exit status
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
 * Duplicates.
 * ----------------------------------------------------------------
 */

/*
 * Deletes hash, checking the documented rule with the reference mapping
 * (cuckoo_model.h): exactly one copy of its fingerprint in its bucket pairs
 * goes (victims count), from the table of the highest level holding one, the
 * last such among tables of that level; every other table keeps its copies.
 * Returns amq_cuckoo_delete's result; *wrong is set when the rule was broken.
 */
static bool
delete_checked(cf *f, uint64_t hash, bool *wrong)
{
	enum
	{
		MAXT = 64
	};
	unsigned	before[MAXT],
				after[MAXT];
	uint64_t	counted = f->v.counted;
	uint64_t	count = amq_cuckoo_count(&f->v, hash);
	uint32_t	ntables = f->v.tables < MAXT ? f->v.tables : MAXT;
	uint32_t	want = UINT32_MAX;
	int			want_level = -1;
	uint32_t	t;
	bool		deleted;

	*wrong = false;
	for (t = 0; t < ntables; t++)
	{
		amq_cuckoo_table tb;
		int			level;

		amq_cuckoo_table_at(&f->v, t, &tb);
		level = ref_level(ref_base(&f->v), tb.buckets);
		before[t] = raw_copies(&f->v, &tb, hash);
		if (before[t] > 0 && level >= want_level)
		{
			want = t;
			want_level = level;
		}
	}
	deleted = amq_cuckoo_delete(&f->v, hash);
	if (f->v.counted < counted)
	{
		/* a counted copy went: the slots stay as they were */
		want = UINT32_MAX;
		if (!deleted || amq_cuckoo_count(&f->v, hash) != count - 1)
		{
			diag("delete of %016llx took a counted copy but count went %llu -> %llu",
				 (unsigned long long) hash, (unsigned long long) count,
				 (unsigned long long) amq_cuckoo_count(&f->v, hash));
			*wrong = true;
		}
	}
	else if (deleted != (want != UINT32_MAX))
	{
		diag("delete of %016llx returned %s, %s copy in its pairs",
			 (unsigned long long) hash, deleted ? "true" : "false",
			 want != UINT32_MAX ? "with a" : "without any");
		*wrong = true;
	}
	for (t = 0; t < ntables; t++)
	{
		amq_cuckoo_table tb;

		amq_cuckoo_table_at(&f->v, t, &tb);
		after[t] = raw_copies(&f->v, &tb, hash);
	}
	for (t = 0; t < ntables && !*wrong; t++)
		if (after[t] + (t == want && deleted) != before[t])
		{
			diag("delete of %016llx: table %u had %u copies in its pair, now "
				 "%u; the copy should have come from table %d (level %d)",
				 (unsigned long long) hash, t, before[t], after[t],
				 want == UINT32_MAX ? -1 : (int) want, want_level);
			*wrong = true;
		}
	return deleted;
}

/*
 * One value added 20 times: eight copies fill its bucket pair, the other
 * twelve are counted in the counter section (no growth table, which used to
 * follow every eight copies), then deleted 20 times, counted copies first.
 */
static void
test_duplicates(void)
{
	const uint64_t h = UINT64_C(0x0123456789abcdef);
	cf			f;
	int			i;
	uint8_t    *snap;
	uint64_t	other = 5;

	if (!cf_make(&f, 1000, 0.01))
		return;
	f.check_full_unchanged = true;
	for (i = 1; i <= 20; i++)
	{
		cf_add(&f, h, FAMILY_A);
		CHECK(amq_cuckoo_count(&f.v, h) == (uint64_t) i);
	}
	diag("20 copies: %u tables, %zu bytes, %llu counted", f.v.tables,
		 f.v.bytes, (unsigned long long) f.v.counted);
	CHECK(f.v.tables == 1);
	CHECK(f.v.counted == 12 && f.v.counters_used == 1);
	CHECK(f.v.counters == AMQ_CUCKOO_MIN_COUNTERS);
	CHECK(f.v.bytes == f.params.bytes + AMQ_CUCKOO_MIN_COUNTERS * AMQ_CUCKOO_COUNTER_SIZE);
	CHECK(f.v.base[4] == AMQ_CUCKOO_VERSION_COUNTERS);
	cf_valid(&f);
	CHECK(f.v.items == 20);
	/* other values are absent (a false positive there would be 1 in 100) */
	for (i = 0; i < 5; i++)
		CHECK(amq_cuckoo_count(&f.v, splitmix64(&other)) == 0);

	for (i = 20; i >= 1; i--)
	{
		bool		wrong;

		/* from the last of the tables of equal level holding a copy */
		CHECK(delete_checked(&f, h, &wrong));
		CHECK(!wrong);
		CHECK(amq_cuckoo_count(&f.v, h) == (uint64_t) (i - 1));
		CHECK(f.v.items == (uint64_t) (i - 1));
		cf_valid(&f);
	}
	CHECK(!amq_cuckoo_may_contain(&f.v, h));
	CHECK(f.v.items == 0);
	snap = xmalloc(f.v.bytes);
	memcpy(snap, f.buf, f.v.bytes);
	CHECK(!amq_cuckoo_delete(&f.v, h));
	CHECK(memcmp(snap, f.buf, f.v.bytes) == 0);
	CHECK(f.v.items == 0);
	/* the filter holds nothing: every fingerprint bit is zero again */
	{
		amq_cuckoo_stats st = view_stats(&f.v, UINT64_MAX);

		CHECK(st.occupied == 0);
	}
	free(snap);
	cf_free(&f);
}

/*
 * Values stored many times at the scale users meet them: n = 1M, p = 1%,
 * 100,000 distinct values, then 20,000 copies of one value and 5,000 of
 * each of ten others.  Every copy is counted, no table is added, and the
 * counter section is all the filter grows by; then every hot copy goes.
 */
static void
test_hot_values(void)
{
	enum
	{
		DISTINCT = 100000, HOT = 11
	};
	cf			f;
	uint64_t	s = 77;
	uint64_t	hot[HOT];
	uint64_t	copies[HOT];
	int			i;
	uint64_t	c;

	if (!cf_make(&f, 1000000, 0.01))
		return;
	for (i = 0; i < DISTINCT; i++)
		cf_add(&f, splitmix64(&s), FAMILY_A);
	for (i = 0; i < HOT; i++)
	{
		hot[i] = splitmix64(&s);
		copies[i] = i == 0 ? 20000 : 5000;
		for (c = 0; c < copies[i]; c++)
			cf_add(&f, hot[i], FAMILY_A);
	}
	diag("n=1e6 p=0.01: %d values, 20,000 + 10 x 5,000 copies: %u tables, "
		 "%zu bytes (%zu sized), %u counters",
		 DISTINCT, f.v.tables, f.v.bytes, f.params.bytes, f.v.counters);
	CHECK(f.v.tables == 1);
	CHECK(f.v.bytes <= f.params.bytes + AMQ_CUCKOO_MIN_COUNTERS * AMQ_CUCKOO_COUNTER_SIZE * 2);
	CHECK(f.v.items == DISTINCT + 70000);
	for (i = 0; i < HOT; i++)
		CHECK(amq_cuckoo_count(&f.v, hot[i]) >= copies[i]);
	cf_valid(&f);
	for (i = 0; i < HOT; i++)
	{
		for (c = 0; c < copies[i]; c++)
			CHECK(amq_cuckoo_delete(&f.v, hot[i]));
		CHECK(amq_cuckoo_count(&f.v, hot[i]) == 0 || amq_cuckoo_count(&f.v, hot[i]) < 3);
	}
	CHECK(f.v.counted == 0 && f.v.counters_used == 0);
	CHECK(f.v.items == DISTINCT);
	cf_valid(&f);
	/* the distinct values are all still there */
	s = 77;
	for (i = 0; i < DISTINCT; i++)
		if (!amq_cuckoo_may_contain(&f.v, splitmix64(&s)))
		{
			CHECK(!"a distinct value was lost");
			break;
		}
	cf_free(&f);
}

/* ----------------------------------------------------------------
 * Deletion.
 * ----------------------------------------------------------------
 */

enum
{
	POOL = 5000
};

/*
 * Another value ever added whose fingerprint equals key x's and whose bucket
 * pair shares a bucket with x's in some table: the one way a correct
 * deletion can take x's copy.  -1 if none.
 */
static int
collision_partner(const amq_cuckoo_view *v, const uint64_t *pool,
				  const bool *ever, int x)
{
	uint32_t	fp = amq_cuckoo_fingerprint(pool[x], v->fp_bits);
	uint32_t	t;
	int			y;

	for (y = 0; y < POOL; y++)
	{
		if (y == x || !ever[y] || amq_cuckoo_fingerprint(pool[y], v->fp_bits) != fp)
			continue;
		for (t = 0; t < v->tables; t++)
		{
			amq_cuckoo_table tb;
			uint64_t	xp[2],
						yp[2];

			amq_cuckoo_table_at(v, t, &tb);
			core_pair(pool[x], v->fp_bits, tb.base, tb.level, xp);
			core_pair(pool[y], v->fp_bits, tb.base, tb.level, yp);
			if (pairs_overlap(xp, yp))
				return y;
		}
	}
	return -1;
}

/* The filter counts the true number of items; else says so, after op. */
static bool
items_are(const cf *f, uint64_t total, int op)
{
	if (f->v.items == total)
		return true;
	diag("op %d: items %llu, truth %llu", op,
		 (unsigned long long) f->v.items, (unsigned long long) total);
	current_failures++;
	return false;
}

/*
 * 200,000 random adds and deletes (deletes only of stored values) over a
 * pool of 5,000 values, against an exact multiset.  The first half leans
 * to adds (growth tables appear), the second to deletes (down to empty).
 */
static void
check_delete_random(double p, uint64_t seed)
{
	const int	ops = 200000;
	uint64_t   *pool = xmalloc(POOL * sizeof(uint64_t));
	uint32_t   *mult = xmalloc(POOL * sizeof(uint32_t));
	bool	   *ever = xmalloc(POOL * sizeof(bool));
	int		   *copies = xmalloc((size_t) ops * sizeof(int));
	uint64_t	total = 0;
	uint64_t	s = seed;
	uint64_t	absent = seed ^ ABSENT_SEED;
	cf			f;
	int			op,
				i;
	int			misses = 0,
				explained = 0,
				shown = 0;
	int			absent_tried = 0;
	int			undercounted_adds = 0,
				failed_deletes = 0;
	uint32_t	max_tables = 0;

	for (i = 0; i < POOL; i++)
	{
		pool[i] = splitmix64(&s);
		mult[i] = 0;
		ever[i] = false;
	}
	if (!cf_make(&f, 2000, p))
		goto out;

	for (op = 1; op <= ops; op++)
	{
		uint64_t	r = splitmix64(&s);
		bool		add_bias = op <= ops / 2;
		bool		do_add = total == 0 ||
			(r % 100) < (add_bias ? 65u : 33u);

		if (do_add)
		{
			int			k = (int) ((r >> 32) % POOL);

			if (!cf_add(&f, pool[k], FAMILY_A))
				break;
			copies[total++] = k;
			mult[k]++;
			ever[k] = true;
			if (amq_cuckoo_count(&f.v, pool[k]) < mult[k] &&
				undercounted_adds++ < 3)
				diag("op %d: value %d added, multiplicity %u, counted %llu",
					 op, k, mult[k],
					 (unsigned long long) amq_cuckoo_count(&f.v, pool[k]));
		}
		else
		{
			uint64_t	at = (r >> 32) % total;
			int			k = copies[at];

			copies[at] = copies[--total];
			mult[k]--;
			if (!amq_cuckoo_delete(&f.v, pool[k]))
			{
				if (failed_deletes++ < 3)
					diag("op %d: delete of value %d (multiplicity %u) failed",
						 op, k, mult[k] + 1);
				mult[k]++;
				copies[total++] = k;
			}
		}
		if (!items_are(&f, total, op))
			break;
		if (f.v.tables > max_tables)
			max_tables = f.v.tables;

		if (op % 1000 == 0 || op == ops)
		{
			amq_cuckoo_stats st;
			uint8_t    *snap;
			int			a;

			if (!cf_valid(&f))
				break;
			st = view_stats(&f.v, 4096);
			CHECK(st.occupied + f.v.counted == total);
			for (i = 0; i < POOL; i++)
			{
				if (mult[i] == 0)
					continue;
				if (!amq_cuckoo_may_contain(&f.v, pool[i]) ||
					amq_cuckoo_count(&f.v, pool[i]) < mult[i])
				{
					int			y = -1;

					if (misses++ < 20)
					{
						y = collision_partner(&f.v, pool, ever, i);
						explained += y >= 0;
					}
					if (shown++ < 5)
						diag("op %d: value %d (multiplicity %u) counted %llu, %s; "
							 "%s", op, i, mult[i],
							 (unsigned long long) amq_cuckoo_count(&f.v, pool[i]),
							 amq_cuckoo_may_contain(&f.v, pool[i]) ? "present" : "ABSENT",
							 y >= 0 ? "shares fingerprint and a bucket with another value in some table"
							 : "no colliding value: a lost fingerprint");
				}
			}

			/* deleting values the filter reports absent changes nothing */
			snap = xmalloc(f.v.bytes);
			memcpy(snap, f.buf, f.v.bytes);
			for (a = 0; a < 20; a++)
			{
				uint64_t	h = splitmix64(&absent);

				if (amq_cuckoo_may_contain(&f.v, h))
					continue;
				absent_tried++;
				CHECK(amq_cuckoo_count(&f.v, h) == 0);
				CHECK(!amq_cuckoo_delete(&f.v, h));
			}
			CHECK(memcmp(snap, f.buf, f.v.bytes) == 0);
			CHECK(f.v.items == total);
			free(snap);
		}
	}
	diag("p=%g: %d operations, at most %u tables, %llu values left; %d absent "
		 "deletes refused; %d under-counted at checkpoints (of the first 20, "
		 "%d with a colliding value), %d after an add, %d deletes of stored "
		 "values failed",
		 p, op - 1, max_tables, (unsigned long long) total, absent_tried,
		 misses, explained, undercounted_adds, failed_deletes);
	CHECK(misses == 0);
	CHECK(undercounted_adds == 0);
	CHECK(failed_deletes == 0);
	CHECK(max_tables > 1);
	cf_free(&f);
out:
	free(pool);
	free(mult);
	free(ever);
	free(copies);
}

static void
test_delete_random(void)
{
	check_delete_random(0.01, 99);
}

/* The same with 20-bit fingerprints, where values rarely collide. */
static void
test_delete_random_wide(void)
{
	check_delete_random(1e-5, 100);
}

/*
 * The property the nesting of tables guarantees, under stress: a filter
 * sized for n = 1,000 at p = 0.5 (4-bit fingerprints, 264 buckets, so values
 * share fingerprint and bucket pair all the time) grows to tables of several
 * levels; 200,000 random adds and deletes of values from a pool of 3,000,
 * deleting only stored values, against an exact multiset.  The number of
 * stored values follows a target that rises and falls twice, so that
 * deletions happen in a filter with tables of several levels, some of them
 * nearly empty and some full.
 *
 * After every operation: the item count is the truth, and the value just
 * added or deleted and every stored value with the same fingerprint (the
 * only values a deletion can rob) are found and counted at least their
 * multiplicity.  Every 50 operations every stored value is checked so, and
 * every 2,000 the filter validates and its slots add up.
 *
 * Each deletion is also checked against the documented rule, with the
 * reference mapping: exactly one copy in the value's pairs goes, from the
 * table of the highest level holding one (the last among equal levels).
 */
enum
{
	STRESS_POOL = 3000,
	STRESS_MAXL = 10			/* levels precomputed per value */
};

/* One piece of the target curve: from (op, target) to the next. */
static const struct
{
	int			op;
	int			target;
}			stress_curve[] = {
	{0, 0}, {40000, 6000}, {80000, 1000}, {120000, 8000}, {160000, 2500},
	{195000, 0}, {200000, 0},
};

static int
stress_target(int op)
{
	size_t		i;

	for (i = 1; i < lengthof(stress_curve); i++)
		if (op <= stress_curve[i].op)
		{
			int			a = stress_curve[i - 1].op,
						b = stress_curve[i].op;
			int			ta = stress_curve[i - 1].target,
						tb = stress_curve[i].target;

			return ta + (int) ((long) (tb - ta) * (op - a) / (b - a));
		}
	return 0;
}

/* Stored value k is found and counted at least mult times; else says so. */
static bool
stress_check_value(const cf *f, const uint64_t *pool, const uint32_t *mult,
				   int k, int op, int *shown)
{
	uint64_t	n = amq_cuckoo_count(&f->v, pool[k]);
	bool		found = amq_cuckoo_may_contain(&f->v, pool[k]);

	if (found && n >= mult[k])
		return true;
	if ((*shown)++ < 10)
		diag("op %d: value %d (hash %016llx, fingerprint %u) has multiplicity "
			 "%u, counted %llu, %s", op, k, (unsigned long long) pool[k],
			 ref_fingerprint(pool[k], f->v.fp_bits), mult[k],
			 (unsigned long long) n, found ? "present" : "ABSENT");
	return false;
}

/*
 * Fingerprints (as a bit mask) that left a slot or a victim position of one
 * of old's tables in now: a value's count can only fall if a position of its
 * pairs that held its fingerprint changed, so after an operation only the
 * values of these fingerprints (and the one whose multiplicity changed) can
 * have lost a copy.  Tables are found by offset; growth only appends.
 */
static uint32_t
removed_fps(const uint8_t *old, const uint8_t *now, uint32_t f)
{
	uint32_t	tables = peek_u32(old + OFF_TABLES);
	size_t		at = AMQ_CUCKOO_HEADER_SIZE;
	uint32_t	mask = 0;
	uint32_t	t;

	for (t = 0; t < tables; t++)
	{
		uint64_t	nb = peek_u64(old + at + TOFF_BUCKETS);
		size_t		bytes = (size_t) ref_table_bytes(nb, f);
		const uint8_t *ow = old + at + AMQ_CUCKOO_TABLE_HEADER_SIZE;
		const uint8_t *nw = now + at + AMQ_CUCKOO_TABLE_HEADER_SIZE;
		size_t		nbytes = bytes - AMQ_CUCKOO_TABLE_HEADER_SIZE;
		uint32_t	ovfp = peek_u32(old + at + TOFF_VFP);
		size_t		j;

		if (ovfp != 0 &&
			(ovfp != peek_u32(now + at + TOFF_VFP) ||
			 peek_u64(old + at + TOFF_VBUCKET) != peek_u64(now + at + TOFF_VBUCKET)))
			mask |= UINT32_C(1) << ovfp;
		for (j = 0; j < nbytes; j += 8)
		{
			size_t		b;

			if (memcmp(ow + j, nw + j, 8) == 0)
				continue;
			for (b = j; b < j + 8; b++)
			{
				uint64_t	slot;

				if (ow[b] == nw[b])
					continue;
				for (slot = 8 * b / f; slot <= (8 * b + 7) / f && slot < 4 * nb; slot++)
				{
					uint32_t	v = raw_slot(ow, slot / 4, (unsigned) (slot % 4), f);

					if (v != 0 && v != raw_slot(nw, slot / 4, (unsigned) (slot % 4), f))
						mask |= UINT32_C(1) << v;
				}
			}
		}
		at += bytes;
	}
	return mask;
}

static void
test_delete_stress(void)
{
	const int	ops = 200000;
	uint64_t   *pool = xmalloc(STRESS_POOL * sizeof(uint64_t));
	uint32_t   *mult = xmalloc(STRESS_POOL * sizeof(uint32_t));
	uint32_t   *fps = xmalloc(STRESS_POOL * sizeof(uint32_t));
	uint64_t   *pairs = xmalloc((size_t) STRESS_POOL * (STRESS_MAXL + 1) * 2 *
								sizeof(uint64_t));
	int		   *copies = xmalloc((size_t) ops * sizeof(int));
	int		   *class_of[16];
	int			class_len[16];
	uint64_t	total = 0;
	uint64_t	s = UINT64_C(0x5715e55);
	cf			f;
	int			op,
				i;
	uint32_t	levels_present = 1;	/* bit l: a table of level l exists */
	uint32_t	max_tables = 0;
	uint64_t	max_total = 0;
	uint8_t    *prev = NULL;
	uint64_t	prev_counted = 0;
	size_t		prev_room = 0;
	long		sweeps = 0,
				classes_rechecked = 0;
	int			shown = 0,
				lost = 0,
				failed_deletes = 0,
				wrong_table = 0,
				deletes = 0,
				risky_deletes = 0,
				beyond_maxl = 0;
	long		value_checks = 0;
	double		t0 = now_seconds();

	memset(class_len, 0, sizeof(class_len));
	for (i = 0; i < 16; i++)
		class_of[i] = xmalloc(STRESS_POOL * sizeof(int));
	if (!cf_make(&f, 1000, 0.5))
		goto out;
	CHECK(f.v.fp_bits == 4 && ref_base(&f.v) == 264);

	/* the pool, its fingerprint classes and its pairs at every level */
	for (i = 0; i < STRESS_POOL; i++)
	{
		int			l;

		pool[i] = splitmix64(&s);
		mult[i] = 0;
		fps[i] = ref_fingerprint(pool[i], 4);
		class_of[fps[i]][class_len[fps[i]]++] = i;
		for (l = 0; l <= STRESS_MAXL; l++)
		{
			uint64_t   *p = pairs + ((size_t) i * (STRESS_MAXL + 1) + l) * 2;

			p[0] = ref_index(pool[i], (uint64_t) 264 << l);
			p[1] = ref_alternate(p[0], fps[i], 264, (unsigned) l);
			sort_pair(p);
		}
	}

	for (op = 1; op <= ops; op++)
	{
		uint64_t	r = splitmix64(&s);
		bool		do_add = total == 0 ||
			(r % 100) < ((int64_t) total < stress_target(op) ? 80u : 20u);
		int			k;
		uint32_t	mask;

		/*
		 * Further copies of a stored fingerprint are counted rather than
		 * grown into, so growth comes from new fingerprints alone; tables of
		 * levels 1 to 3 are also appended at set moments, so that deletion
		 * across levels, counters included, is exercised whatever growth did.
		 */
		if (op % 20000 == 0 && op <= 60000)
		{
			unsigned	l = (unsigned) (op / 20000);

			if (!cf_grow_to(&f, (uint64_t) 264 << l))
				break;
			levels_present |= UINT32_C(1) << l;
		}

		/* the bytes before the operation, to see which slots it changes */
		if (prev_room < f.v.bytes)
		{
			free(prev);
			prev_room = 2 * f.v.bytes;
			prev = xmalloc(prev_room);
		}
		memcpy(prev, f.buf, f.v.bytes);
		prev_counted = f.v.counted;

		if (do_add)
		{
			uint32_t	tables = f.v.tables;

			k = (int) ((r >> 32) % STRESS_POOL);
			if (!cf_add(&f, pool[k], FAMILY_A))
				break;
			copies[total++] = (int) k;
			mult[k]++;
			if (f.v.tables != tables)
			{
				amq_cuckoo_table tb;

				amq_cuckoo_table_at(&f.v, f.v.tables - 1, &tb);
				levels_present |= UINT32_C(1) << tb.level;
				beyond_maxl += tb.level > STRESS_MAXL;
			}
		}
		else
		{
			uint64_t	at = (r >> 32) % total;
			bool		wrong;

			k = copies[at];
			deletes++;
			/* does the order matter: another stored value shares k's pair
			 * in a smaller table but not in the largest? */
			{
				int			c;
				unsigned	top = 0;

				while ((levels_present >> (top + 1)) != 0)
					top++;
				for (c = 0; c < class_len[fps[k]]; c++)
				{
					int			y = class_of[fps[k]][c];
					unsigned	l = 0;

					if (y == k || mult[y] == 0)
						continue;
					while (l <= STRESS_MAXL &&
						   pairs[((size_t) y * (STRESS_MAXL + 1) + l) * 2] ==
						   pairs[((size_t) k * (STRESS_MAXL + 1) + l) * 2] &&
						   pairs[((size_t) y * (STRESS_MAXL + 1) + l) * 2 + 1] ==
						   pairs[((size_t) k * (STRESS_MAXL + 1) + l) * 2 + 1])
						l++;
					/* shared at levels < l, present levels on both sides */
					if (l > 0 && l <= top)
					{
						risky_deletes++;
						break;
					}
				}
			}

			if (delete_checked(&f, pool[k], &wrong))
			{
				copies[at] = copies[--total];
				mult[k]--;
			}
			else if (failed_deletes++ < 5)
				diag("op %d: delete of value %d (multiplicity %u) failed",
					 op, k, mult[k]);
			if (wrong && wrong_table++ < 5)
				diag("op %d: that was the delete of value %d", op, k);
		}

		if (!items_are(&f, total, op))
			break;
		if (f.v.tables > max_tables)
			max_tables = f.v.tables;
		if (total > max_total)
			max_total = total;

		/*
		 * Every stored value, in effect: the value operated on, and every
		 * stored value of a fingerprint that left some position (the only
		 * ones that can have lost a copy; the others were checked before and
		 * their pairs hold what they held).  A deletion always removes one
		 * of k's fingerprint, so k's whole class is checked after each.
		 */
		mask = removed_fps(prev, f.buf, f.v.fp_bits);
		/* a counted copy that went changes no slot */
		if (f.v.counted < prev_counted)
			mask |= UINT32_C(1) << fps[k];
		if (mult[k] > 0)
		{
			lost += !stress_check_value(&f, pool, mult, k, op, &shown);
			value_checks++;
		}
		for (i = 1; i < 16; i++)
		{
			int			c;

			if (!(mask & (UINT32_C(1) << i)))
				continue;
			classes_rechecked++;
			for (c = 0; c < class_len[i]; c++)
			{
				int			y = class_of[i][c];

				if (y == k || mult[y] == 0)
					continue;
				lost += !stress_check_value(&f, pool, mult, y, op, &shown);
				value_checks++;
			}
		}
		if (!do_add)
			CHECK(mask & (UINT32_C(1) << fps[k]));
		/* and every stored value outright, as a check of that reasoning */
		if (op % 500 == 0)
		{
			sweeps++;
			for (i = 0; i < STRESS_POOL; i++)
				if (mult[i] > 0)
				{
					lost += !stress_check_value(&f, pool, mult, i, op, &shown);
					value_checks++;
				}
		}
		if (op % 2000 == 0 || op == ops)
		{
			if (!cf_valid(&f))
				break;
			CHECK(view_stats(&f.v, 1000).occupied + f.v.counted == total);
		}
		if (lost > 100 || failed_deletes > 100 || wrong_table > 100)
		{
			diag("op %d: giving up", op);
			break;
		}
	}
	{
		char		lv[64] = "";
		int			l;

		for (l = 0; l < (int) f.v.tables && strlen(lv) < sizeof(lv) - 4; l++)
		{
			amq_cuckoo_table tb;

			amq_cuckoo_table_at(&f.v, (uint32_t) l, &tb);
			snprintf(lv + strlen(lv), sizeof(lv) - strlen(lv), " %u", tb.level);
		}
		diag("%d operations (%d deletes, %d where another stored value shares "
			 "the pair in smaller tables only), at most %llu values in %u "
			 "tables of levels%s; %ld value checks (%ld fingerprint classes "
			 "after operations, %ld full sweeps): %d under-counted, %d "
			 "deletes failed, %d took the wrong copy (%.2f s)",
			 op - 1, deletes, risky_deletes, (unsigned long long) max_total,
			 max_tables, lv, value_checks, classes_rechecked, sweeps, lost,
			 failed_deletes, wrong_table, now_seconds() - t0);
	}
	CHECK(op == ops + 1);
	CHECK(total == 0 && f.v.items == 0);
	CHECK(lost == 0);
	CHECK(failed_deletes == 0);
	CHECK(wrong_table == 0);
	CHECK(beyond_maxl == 0);
	/* the scenario was there: several levels, deletions where order matters */
	CHECK(max_tables >= 4);
	CHECK((levels_present & 0x7) == 0x7);	/* levels 0, 1 and 2 at least */
	CHECK(risky_deletes >= 1000);
	cf_free(&f);
out:
	for (i = 0; i < 16; i++)
		free(class_of[i]);
	free(prev);
	free(pool);
	free(mult);
	free(fps);
	free(pairs);
	free(copies);
}

/*
 * Slots of h's bucket pair in table t holding fp (want_fp nonzero), or free
 * (want_fp 0); the victim counts as holding its fingerprint.
 */
static int
pair_slots(const amq_cuckoo_view *v, uint32_t t, uint64_t h, uint32_t want_fp)
{
	amq_cuckoo_table tb;
	uint64_t	pr[2];
	int			n = 0;
	int			k;
	unsigned	sl;

	amq_cuckoo_table_at(v, t, &tb);
	core_pair(h, v->fp_bits, tb.base, tb.level, pr);
	for (k = 0; k < 2; k++)
	{
		if (k == 1 && pr[1] == pr[0])
			break;
		for (sl = 0; sl < 4; sl++)
			n += amq_cuckoo_slot(v, &tb, pr[k], sl) == want_fp;
	}
	if (want_fp != 0 && tb.victim_fp == want_fp &&
		(tb.victim_bucket == pr[0] || tb.victim_bucket == pr[1]))
		n++;
	return n;
}

/*
 * A filter sized for 1,000 (264 buckets, then a 528-bucket growth table)
 * holding `older` in table 0 and `newer` in table 1: older is added first,
 * random fillers until the first AMQ_FULL, fillers aimed at newer's table-0
 * pair until it has no free slot, then the growth table and newer.  Fillers
 * never share older's fingerprint.
 */
static bool
build_two_tables(cf *f, uint64_t older, uint64_t newer)
{
	uint32_t	fb;
	uint32_t	fp_old;
	uint64_t	s = 777;
	uint64_t	np[2];
	int			i;

	if (!cf_make(f, 1000, 0.01))
		return false;
	fb = f->v.fp_bits;
	fp_old = amq_cuckoo_fingerprint(older, fb);
	CHECK_STATUS(amq_cuckoo_add(&f->v, older, FAMILY_A), AMQ_OK);
	for (i = 0; i < 4 * 264 + 1; i++)
	{
		uint64_t	h = splitmix64(&s);

		if (amq_cuckoo_fingerprint(h, fb) == fp_old)
			continue;
		if (amq_cuckoo_add(&f->v, h, FAMILY_A) == AMQ_FULL)
			break;
	}
	core_pair(newer, fb, 264, 0, np);
	for (i = 0; i < 1000000 && pair_slots(&f->v, 0, newer, 0) > 0; i++)
	{
		uint64_t	h = splitmix64(&s);

		if (amq_cuckoo_fingerprint(h, fb) == fp_old)
			continue;
		if (amq_cuckoo_index(h, 264) == np[0] || amq_cuckoo_index(h, 264) == np[1])
			(void) amq_cuckoo_add(&f->v, h, FAMILY_A);
	}
	if (pair_slots(&f->v, 0, newer, 0) > 0 || !cf_grow(f))
	{
		diag("scenario not reached: table 0 pair still has room");
		current_failures++;
		cf_free(f);
		return false;
	}
	{
		amq_cuckoo_table t1;

		amq_cuckoo_table_at(&f->v, 1, &t1);
		CHECK(t1.buckets == 528);
	}
	CHECK_STATUS(amq_cuckoo_add(&f->v, newer, FAMILY_A), AMQ_OK);
	CHECK(pair_slots(&f->v, 0, older, fp_old) == 1);
	CHECK(pair_slots(&f->v, 1, newer, amq_cuckoo_fingerprint(newer, fb)) == 1);
	return cf_valid(f);
}

/*
 * In build_two_tables' filter of older (table 0) and newer (table 1), which
 * share fingerprint fp: deleting the one in table `gone` leaves the other
 * found, counted and in its pair of its own table.
 */
static void
check_delete_keeps(uint64_t older, uint64_t newer, uint32_t gone, uint32_t fp)
{
	uint64_t	deleted = gone == 0 ? older : newer;
	uint64_t	kept = gone == 0 ? newer : older;
	cf			f;

	if (!build_two_tables(&f, older, newer))
		return;
	CHECK(amq_cuckoo_delete(&f.v, deleted));
	if (!amq_cuckoo_may_contain(&f.v, kept))
		diag("case 1: deleting the value in table %u removed the other's copy",
			 gone);
	CHECK(amq_cuckoo_may_contain(&f.v, kept));
	CHECK(amq_cuckoo_count(&f.v, kept) >= 1);
	CHECK(pair_slots(&f.v, 1 - gone, kept, fp) == 1);
	cf_free(&f);
}

/*
 * Deleting stored values must not lose other stored values, also when a
 * value's fingerprint and bucket pair collide with another's in one table
 * but not in the other (tables of 264 and 528 buckets, levels 0 and 1):
 *
 *	1. y in table 0, x in table 1, same fingerprint and table-0 pair, other
 *	   table-1 pairs: deleting x must leave y present, and so must deleting
 *	   y leave x present;
 *	2. the converse, values sharing the table-1 pair but not the table-0
 *	   one, cannot exist when tables nest: searched for among random hashes
 *	   and built on purpose, never found;
 *	3. y in table 0, w in table 1, same fingerprint and pair in both tables:
 *	   deleting y takes the copy in table 1 (the largest table holding one),
 *	   and w still finds y's copy in table 0.
 *
 * With unrelated mappings, a deletion that searches the tables oldest first
 * took y's copy in case 1, newest first the copy of a case-2 value.  Pairs
 * are found with the core's own mapping functions.
 */
static void
test_delete_across_tables(void)
{
	uint64_t	s = 4040;
	uint64_t	y = splitmix64(&s);
	uint64_t	x = 0,
				w = 0;
	bool		have_x = false,
				have_z = false,
				have_w = false;
	uint32_t	fb = 10;
	uint32_t	fp;
	uint64_t	y0[2],
				y1[2];
	long		i;
	long		same_fp = 0,
				share1 = 0,
				built = 0;
	cf			f;

	fp = amq_cuckoo_fingerprint(y, fb);
	core_pair(y, fb, 264, 0, y0);
	core_pair(y, fb, 264, 1, y1);
	for (i = 0; i < 8000000; i++)
	{
		uint64_t	h = splitmix64(&s);
		uint64_t	h0[2],
					h1[2];

		if (amq_cuckoo_fingerprint(h, fb) != fp)
			continue;
		same_fp++;
		core_pair(h, fb, 264, 0, h0);
		core_pair(h, fb, 264, 1, h1);
		share1 += pairs_overlap(h1, y1);
		if (!have_x && pairs_overlap(h0, y0) && !pairs_overlap(h1, y1))
		{
			x = h;
			have_x = true;
		}
		if (pairs_overlap(h1, y1) && !pairs_overlap(h0, y0))
			have_z = true;
	}
	/* built: the same fingerprint, the index in y's table-1 pair */
	for (i = 0; i < 2000; i++)
	{
		uint32_t	lo = (uint32_t) ref_fmix64(y) ^ (uint32_t) (i + 1);
		uint64_t	h = ref_hash_at(lo, 528, y1[i % 2], &s);
		uint64_t	h0[2],
					h1[2];

		if (amq_cuckoo_fingerprint(h, fb) != fp)
			continue;
		core_pair(h, fb, 264, 0, h0);
		core_pair(h, fb, 264, 1, h1);
		CHECK(pairs_overlap(h1, y1));
		built++;
		if (!pairs_overlap(h0, y0))
			have_z = true;
		if (!have_w && h != y)
		{
			w = h;
			have_w = true;
		}
	}
	diag("y %016llx: x %s; of %ld random hashes with y's fingerprint %ld share "
		 "its table-1 pair, %ld more built; one sharing only the table-1 pair %s",
		 (unsigned long long) y, have_x ? "found" : "none", same_fp, share1,
		 built, have_z ? "FOUND" : "none");
	CHECK(have_x && have_w);
	CHECK(share1 >= 10 && built >= 1000);
	CHECK(!have_z);

	/* case 1 */
	if (have_x)
	{
		check_delete_keeps(y, x, 1, fp);
		check_delete_keeps(y, x, 0, fp);
	}
	/* case 3 */
	if (have_w && build_two_tables(&f, y, w))
	{
		CHECK(amq_cuckoo_count(&f.v, y) == 2 && amq_cuckoo_count(&f.v, w) == 2);
		CHECK(amq_cuckoo_delete(&f.v, y));
		/* the copy in table 1 went, the one in table 0 stays for both */
		CHECK(pair_slots(&f.v, 1, w, fp) == 0);
		CHECK(pair_slots(&f.v, 0, y, fp) == 1);
		if (!amq_cuckoo_may_contain(&f.v, w))
			diag("case 3: deleting y removed w's copy");
		CHECK(amq_cuckoo_may_contain(&f.v, w));
		CHECK(amq_cuckoo_count(&f.v, w) == 1 && amq_cuckoo_count(&f.v, y) == 1);
		CHECK(amq_cuckoo_delete(&f.v, w));
		CHECK(amq_cuckoo_count(&f.v, w) == 0 && amq_cuckoo_count(&f.v, y) == 0);
		CHECK(!amq_cuckoo_delete(&f.v, y));
		cf_valid(&f);
		cf_free(&f);
	}
}

/* Makes (fp, bucket) the victim of table t, one more item; reopens. */
static void
poke_victim(cf *f, uint32_t t, uint32_t fp, uint64_t bucket)
{
	amq_cuckoo_table tb;
	uint8_t    *th;

	amq_cuckoo_table_at(&f->v, t, &tb);
	th = tb.header;
	CHECK(tb.victim_fp == 0);
	poke_u64(th + TOFF_VBUCKET, bucket);
	poke_u32(th + TOFF_VFP, fp);
	poke_u64(th + TOFF_ITEMS, peek_u64(th + TOFF_ITEMS) + 1);
	CHECK_STATUS(amq_cuckoo_open(f->buf, f->v.bytes, &f->v), AMQ_OK);
}

/*
 * Victims count as copies, for deletion too: a value stored once in table
 * 0 and once as the victim of a larger (or equal, later) table loses the
 * victim first; a victim in table 0 goes last.  The victims are written by
 * hand (the validator accepts any victim in range).
 */
static void
test_delete_victims(void)
{
	uint64_t	s = 6060;
	int			variant;

	for (variant = 0; variant < 5; variant++)
	{
		uint64_t	h = splitmix64(&s);
		uint32_t	fp = ref_fingerprint(h, 10);
		uint64_t	i0 = ref_index(h, 264);
		uint64_t	i1 = ref_index(h, 528);
		uint64_t	a1 = ref_alternate(i1, fp, 264, 1);
		bool		wrong;
		cf			f;
		int			copies = 0;

		if (!cf_make(&f, 1000, 0.01))
			return;
		CHECK(f.v.fp_bits == 10);
		CHECK_STATUS(amq_cuckoo_add(&f.v, h, FAMILY_A), AMQ_OK);
		copies++;
		switch (variant)
		{
			case 0:				/* victim at the index, larger table */
			case 1:				/* victim at the alternate, larger table */
				if (!cf_grow_to(&f, 528))
					break;
				poke_victim(&f, 1, fp, variant == 0 ? i1 : a1);
				copies++;
				break;
			case 2:				/* victim in a later table of the same size */
				if (!cf_grow_to(&f, 264))
					break;
				poke_victim(&f, 1, fp, ref_alternate(i0, fp, 264, 0));
				copies++;
				break;
			case 3:				/* victim in table 0, a copy in table 1 */
				poke_victim(&f, 0, fp, i0);
				copies++;
				if (!cf_grow_to(&f, 528))
					break;
				CHECK_STATUS(amq_cuckoo_add(&f.v, h, FAMILY_A), AMQ_OK);
				copies++;
				break;
			case 4:				/* victims in three tables, slots in two */
				poke_victim(&f, 0, fp, i0);
				if (!cf_grow_to(&f, 528) || !cf_grow_to(&f, 1056) ||
					!cf_grow_to(&f, 528))
					break;
				poke_victim(&f, 1, fp, a1);
				poke_victim(&f, 3, fp, i1);
				CHECK_STATUS(amq_cuckoo_add(&f.v, h, FAMILY_A), AMQ_OK);
				copies += 4;
				break;
		}
		cf_valid(&f);
		CHECK(amq_cuckoo_count(&f.v, h) == (uint64_t) copies);
		while (copies > 0)
		{
			CHECK(delete_checked(&f, h, &wrong));
			if (wrong)
				diag("variant %d, %d copies left", variant, copies);
			CHECK(!wrong);
			copies--;
			CHECK(amq_cuckoo_count(&f.v, h) == (uint64_t) copies);
			CHECK(copies == 0 || amq_cuckoo_may_contain(&f.v, h));
			cf_valid(&f);
		}
		CHECK(!amq_cuckoo_delete(&f.v, h));
		CHECK(f.v.items == 0);
		cf_free(&f);
	}
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

static const amq_test tests[] = {
	{"duplicates", test_duplicates},
	{"hot values at n = 1M", test_hot_values},
	{"delete across growth tables", test_delete_across_tables},
	{"delete victims", test_delete_victims},
	{"delete random p=0.01", test_delete_random},
	{"delete random p=1e-5", test_delete_random_wide},
	{"delete stress, 4-bit fingerprints", test_delete_stress},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo delete");
}
