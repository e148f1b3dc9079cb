/*
 * cuckoo_fixture.h
 *		A growable cuckoo filter for the tests, grown the way the PostgreSQL
 *		glue grows it, and the checks every cuckoo test program shares.
 *
 * A cf owns a malloc'd buffer exactly as long as its filter, so that ASan
 * sees any access past the end.  Adding goes through
 * amq_cuckoo_add_growing, the core's growth loop, with cf_reserve as its
 * reserve function: like the glue's, it gives the filter a fresh buffer of
 * exactly the size asked for (the old one freed, so a stale pointer is
 * caught), and it checks what the core promises at that moment: the growth
 * rule, and, on request, that the AMQ_FULL which led to it left every byte
 * unchanged.  Everything is static inline, so each test program takes what
 * it uses.  Depends on cuckoo_model.h and harness.h.
 */
#ifndef AMQ_TEST_CUCKOO_FIXTURE_H
#define AMQ_TEST_CUCKOO_FIXTURE_H

#include "amq_cuckoo.h"
#include "cuckoo_model.h"
#include "harness.h"

typedef struct cf
{
	uint8_t    *buf;			/* exactly len bytes (ASan sees overruns) */
	size_t		len;			/* v.bytes, checked after every growth */
	amq_cuckoo_params params;
	amq_cuckoo_view v;
	int			growths;
	int			counter_growths;	/* of the counter section */
	bool		check_full_unchanged;	/* cf_add: AMQ_FULL leaves every byte */
	uint8_t    *snap;			/* cf_add's bytes before the add, if checking */
	size_t		snap_len;
	uint64_t	snap_items;
} cf;

/* A filter with the given (possibly hand-made) parameters, opened. */
static inline bool
cf_make_params(cf *f, const amq_cuckoo_params *pr, uint64_t n, double p,
			   uint64_t seed)
{
	amq_status	st;

	memset(f, 0, sizeof(*f));
	f->params = *pr;
	f->buf = xmalloc(pr->bytes);
	f->len = pr->bytes;
	memset(f->buf, 0xA5, pr->bytes);	/* init must write every byte */
	amq_cuckoo_init(f->buf, pr, n, p, seed);
	st = amq_cuckoo_open(f->buf, pr->bytes, &f->v);
	if (st != AMQ_OK)
	{
		diag("fresh filter (buckets %llu, f %u) does not open: %s",
			 (unsigned long long) pr->buckets, pr->fp_bits,
			 amq_status_text(st));
		current_failures++;
		free(f->buf);
		f->buf = NULL;
		return false;
	}
	return true;
}

/* A filter sized for (n, p), default seed. */
static inline bool
cf_make(cf *f, uint64_t n, double p)
{
	amq_cuckoo_params pr;
	amq_status	st = amq_cuckoo_size(n, p, &pr);

	if (st != AMQ_OK)
	{
		diag("amq_cuckoo_size(%llu, %g): %s", (unsigned long long) n, p,
			 amq_status_text(st));
		current_failures++;
		memset(f, 0, sizeof(*f));
		return false;
	}
	return cf_make_params(f, &pr, n, p, AMQ_CUCKOO_DEFAULT_SEED);
}

/*
 * A filter of exactly this geometry: one table of `buckets` buckets of
 * f-bit fingerprints.  The n and p written to the header are ones that size
 * to this geometry (n = floor(3.8 buckets), p = 8 / 2^(f - 1/2)).
 */
static inline bool
cf_make_geom(cf *f, uint64_t buckets, uint32_t fp_bits)
{
	amq_cuckoo_params pr;
	uint64_t	n = 19 * buckets / 5;
	double		p = 8.0 / pow(2.0, fp_bits - 0.5);

	if (n == 0)
		n = 1;
	memset(&pr, 0, sizeof(pr));
	pr.buckets = buckets;
	pr.fp_bits = fp_bits;
	pr.bytes = AMQ_CUCKOO_HEADER_SIZE + amq_cuckoo_table_bytes(buckets, fp_bits);
	pr.bits_per_key = 8.0 * (double) pr.bytes / (double) n;
	pr.expected_fpr = p;
	return cf_make_params(f, &pr, n, p, AMQ_CUCKOO_DEFAULT_SEED);
}

/* Frees the buffer; the cf may be made again. */
static inline void
cf_free(cf *f)
{
	free(f->buf);
	f->buf = NULL;
}

/*
 * Moves the filter to a fresh buffer of exactly len >= v.bytes bytes, as the
 * glue's reallocation does: the bytes copied, the rest poisoned (whatever is
 * appended must write all of it), the old buffer freed (ASan then catches a
 * stale base) and the view reopened on the old length.
 */
static inline bool
cf_move(cf *f, size_t len)
{
	size_t		old = f->v.bytes;
	uint8_t    *nbuf = xmalloc(len);
	amq_status	st;

	memcpy(nbuf, f->buf, old);
	memset(nbuf + old, 0xA5, len - old);
	free(f->buf);
	f->buf = nbuf;
	f->len = len;
	st = amq_cuckoo_open(nbuf, old, &f->v);
	CHECK_STATUS(st, AMQ_OK);
	return st == AMQ_OK;
}

/*
 * After a growth from `tables` tables: one table more, filling the buffer
 * exactly, and bytes that validate and agree with the view.
 */
static inline bool
cf_grown(cf *f, uint32_t tables)
{
	amq_cuckoo_view chk;
	amq_status	st;

	/* a table growth reserves the exact result; a counter growth more */
	CHECK(f->v.bytes == f->len || (f->counter_growths && f->v.bytes < f->len));
	CHECK(f->v.tables == tables + 1);
	st = amq_cuckoo_open(f->buf, f->v.bytes, &chk);
	CHECK_STATUS(st, AMQ_OK);
	if (st != AMQ_OK || f->v.bytes > f->len)
		return false;
	CHECK(chk.tables == tables + 1 && chk.items == f->v.items &&
		  chk.slots == f->v.slots);
	f->growths++;
	return true;
}

/* nb, asked for by amq_cuckoo_growth_buckets, follows the documented rule. */
static inline void
cf_check_growth(const cf *f, uint64_t nb)
{
	amq_cuckoo_table last;

	amq_cuckoo_table_at(&f->v, f->v.tables - 1, &last);
	/* twice the last table's if at least half full, else the same */
	CHECK(nb == last.buckets || nb == 2 * last.buckets);
	if (2 * last.items > 4 * last.buckets + 2)
		CHECK(nb == 2 * last.buckets);
	if (2 * last.items + 2 < 4 * last.buckets)
		CHECK(nb == last.buckets);
}

/*
 * Appends a growth table of nb buckets outside the core's growth loop: a
 * fresh buffer (cf_move), then amq_cuckoo_append_table.  For tests that need
 * tables of a given size, or growth at a given moment.
 */
static inline bool
cf_grow_to(cf *f, uint64_t nb)
{
	uint32_t	tables = f->v.tables;
	size_t		newlen = f->v.bytes + amq_cuckoo_table_bytes(nb, f->v.fp_bits);

	if (newlen > AMQ_CUCKOO_MAX_BYTES)
	{
		diag("growth beyond the size limit");
		current_failures++;
		return false;
	}
	if (!cf_move(f, newlen))
		return false;
	amq_cuckoo_append_table(&f->v, nb);
	return cf_grown(f, tables);
}

/* Appends the table amq_cuckoo_growth_buckets asks for. */
static inline bool
cf_grow(cf *f)
{
	uint64_t	nb = amq_cuckoo_growth_buckets(&f->v);

	cf_check_growth(f, nb);
	return cf_grow_to(f, nb);
}

/*
 * The fixture's reserve function (amq_cuckoo_reserve_fn, ctx the cf): checks
 * the filter the core asks room for, then moves it to a fresh buffer of
 * exactly need bytes.
 */
static inline uint8_t *
cf_reserve(void *ctx, size_t need)
{
	cf		   *f = ctx;
	uint64_t	nb = amq_cuckoo_growth_buckets(&f->v);

	if (f->snap != NULL)
	{
		CHECK(f->v.bytes == f->snap_len &&
			  memcmp(f->snap, f->buf, f->snap_len) == 0);
		CHECK(f->v.items == f->snap_items);
	}
	CHECK(need == amq_cuckoo_growth_bytes(&f->v));
	if (f->v.grow_counters)
	{
		/* a larger counter section: room for the old one and the new one */
		uint64_t	n = f->v.counters ? 2 * (uint64_t) f->v.counters : AMQ_CUCKOO_MIN_COUNTERS;

		CHECK(need == f->v.tables_end +
			  (f->v.counters + n) * AMQ_CUCKOO_COUNTER_SIZE);
		f->counter_growths++;
	}
	else
	{
		cf_check_growth(f, nb);
		CHECK(need == f->v.bytes + amq_cuckoo_table_bytes(nb, f->v.fp_bits));
	}
	return cf_move(f, need) ? f->buf : NULL;
}

/* Adds a value, growing the filter when it is full. */
static inline bool
cf_add(cf *f, uint64_t hash, uint32_t family)
{
	uint64_t	items = f->v.items;
	uint32_t	tables = f->v.tables;
	size_t		done = 0;
	amq_status	st;

	if (f->check_full_unchanged)
	{
		f->snap = xmalloc(f->v.bytes);
		memcpy(f->snap, f->buf, f->v.bytes);
		f->snap_len = f->v.bytes;
		f->snap_items = items;
	}
	st = amq_cuckoo_add_growing(&f->v, &hash, 1, family, cf_reserve, f, &done);
	free(f->snap);
	f->snap = NULL;
	if (st != AMQ_OK || done != 1)
	{
		diag("add to %u tables: %s, %zu added", f->v.tables,
			 amq_status_text(st), done);
		current_failures++;
		return false;
	}
	if (f->v.tables != tables && !cf_grown(f, tables))
		return false;
	if (f->v.items != items + 1)
	{
		diag("add: items %llu -> %llu", (unsigned long long) items,
			 (unsigned long long) f->v.items);
		current_failures++;
	}
	return true;
}

/* Adds count keys of the stream seeded with seed (growing as needed). */
static inline bool
cf_add_keys(cf *f, uint64_t seed, uint64_t count, uint32_t family)
{
	uint64_t	s = seed;
	uint64_t	i;

	for (i = 0; i < count; i++)
		if (!cf_add(f, splitmix64(&s), family))
			return false;
	return true;
}

/* Number of the count keys of the stream seeded with seed reported present. */
static inline uint64_t
cf_count_present(const cf *f, uint64_t seed, uint64_t count)
{
	uint64_t	s = seed;
	uint64_t	i;
	uint64_t	hits = 0;

	for (i = 0; i < count; i++)
		hits += amq_cuckoo_may_contain(&f->v, splitmix64(&s));
	return hits;
}

/* The filter's bytes validate and say what the view says. */
static inline bool
cf_valid(const cf *f)
{
	amq_cuckoo_view chk;
	amq_status	st = amq_cuckoo_open(f->buf, f->v.bytes, &chk);

	if (st != AMQ_OK)
	{
		diag("filter no longer validates: %s", amq_status_text(st));
		current_failures++;
		return false;
	}
	if (chk.items != f->v.items || chk.tables != f->v.tables ||
		chk.slots != f->v.slots || chk.family != f->v.family)
	{
		diag("bytes and view disagree: items %llu/%llu tables %u/%u",
			 (unsigned long long) chk.items, (unsigned long long) f->v.items,
			 chk.tables, f->v.tables);
		current_failures++;
		return false;
	}
	return true;
}

/* Statistics over every table, accumulated chunk buckets at a time. */
static inline amq_cuckoo_stats
view_stats(const amq_cuckoo_view *v, uint64_t chunk)
{
	amq_cuckoo_stats_acc acc;
	amq_cuckoo_stats st;
	uint32_t	t;

	amq_cuckoo_stats_begin(&acc);
	for (t = 0; t < v->tables; t++)
	{
		amq_cuckoo_table tb;
		uint64_t	from;

		amq_cuckoo_table_at(v, t, &tb);
		for (from = 0; from < tb.buckets; from += chunk)
			amq_cuckoo_stats_accumulate(v, &tb, &acc, from,
										tb.buckets - from > chunk ? from + chunk : tb.buckets);
		amq_cuckoo_stats_table_done(v, &tb, &acc);
	}
	amq_cuckoo_stats_end(v, &acc, &st);
	return st;
}

/* Sum of the table sizes and item counts, read by offset; checks layout. */
static inline void
check_table_walk(const cf *f)
{
	size_t		at = AMQ_CUCKOO_HEADER_SIZE;
	uint64_t	items = 0,
				buckets = 0;
	uint32_t	t;

	CHECK(peek_u32(f->buf + OFF_TABLES) == f->v.tables);
	CHECK(f->v.base_buckets == ref_base(&f->v));
	for (t = 0; t < f->v.tables; t++)
	{
		amq_cuckoo_table tb;

		amq_cuckoo_table_at(&f->v, t, &tb);
		CHECK(tb.header == f->buf + at);
		/* base * 2^level, the level decoded from the bucket counts */
		CHECK(tb.base == ref_base(&f->v));
		CHECK(ref_level(tb.base, tb.buckets) == (int) tb.level);
		if (t == 0)
			CHECK(tb.level == 0);
		CHECK(tb.words == tb.header + AMQ_CUCKOO_TABLE_HEADER_SIZE);
		CHECK(peek_u64(tb.header + TOFF_BUCKETS) == tb.buckets);
		CHECK(peek_u64(tb.header + TOFF_ITEMS) == tb.items);
		CHECK(peek_u64(tb.header + TOFF_VBUCKET) == tb.victim_bucket);
		CHECK(peek_u32(tb.header + TOFF_VFP) == tb.victim_fp);
		CHECK(tb.bytes == ref_table_bytes(tb.buckets, f->v.fp_bits));
		CHECK(tb.bytes == amq_cuckoo_table_bytes(tb.buckets, f->v.fp_bits));
		at += tb.bytes;
		items += tb.items;
		buckets += tb.buckets;
	}
	CHECK(at == f->v.bytes);
	CHECK(items == f->v.items);
	CHECK(f->v.slots == 4 * buckets + f->v.tables);
}

/*
 * The bucket pair of h in a table of base * 2^level buckets, by the core's
 * mapping.
 */
static inline void
core_pair(uint64_t h, uint32_t f, uint64_t base, unsigned level,
		  uint64_t pair[2])
{
	pair[0] = amq_cuckoo_index(h, base << level);
	pair[1] = amq_cuckoo_alternate(pair[0], amq_cuckoo_fingerprint(h, f),
								   base, level);
}

static inline bool
pairs_overlap(const uint64_t a[2], const uint64_t b[2])
{
	return a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1];
}

/* Canonical form of a bucket pair: smaller bucket first. */
static inline void
sort_pair(uint64_t p[2])
{
	if (p[1] < p[0])
	{
		uint64_t	t = p[0];

		p[0] = p[1];
		p[1] = t;
	}
}

static inline bool
same_pair(const uint64_t a[2], const uint64_t b[2])
{
	return (a[0] == b[0] && a[1] == b[1]) || (a[0] == b[1] && a[1] == b[0]);
}

#endif							/* AMQ_TEST_CUCKOO_FIXTURE_H */
