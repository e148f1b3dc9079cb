/*
 * test_cuckoo.c
 *		Standalone unit tests of the cuckoo filter core (no PostgreSQL).
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file and the core sources only, with the harness of
 * test/harness.h.  What is tested, and why:
 *
 *	- sizing: the parameter errors, the fingerprint width and bucket count
 *	  formulas of amq_cuckoo.h, and the size limit (a filter that cannot be
 *	  stored must be refused quickly, before anything is allocated);
 *	- the hash-to-slot mapping and the bit packing, against this file's own
 *	  implementation of the formulas in amq_cuckoo.h and FORMAT.md: they
 *	  decide where fingerprints live, so they are part of the format and a
 *	  change breaks every stored filter;
 *	- the nesting of tables (every table has base * 2^level buckets): the
 *	  alternate bucket is an involution for any base and level, indexes and
 *	  alternates commute with shifting right, and values sharing fingerprint
 *	  and bucket pair at one level share the pair at every lower one, which
 *	  is what deletion relies on;
 *	- membership: no false negatives, ever, and the false-positive rate and
 *	  the load reached before growth, measured on fixed key streams;
 *	- growth, batched adds, duplicates and deletion against an exact
 *	  multiset (each deletion also checked against the documented rule: one
 *	  copy goes, from the largest table holding one), including a stress run
 *	  with 4-bit fingerprints and tables of several levels, and merging
 *	  (union) with and without growth tables, which are the operations where
 *	  a bookkeeping slip loses fingerprints;
 *	- the validator: every rule reached by corrupting one field of a valid
 *	  filter, tables of other than base * 2^level buckets, and every
 *	  truncation rejected without reading out of bounds (run under ASan by
 *	  "make unittest-asan");
 *	- the fill statistics against measured rates.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  Fields are read and poked by explicit offset with the
 * harness's own little-endian helpers, independently of the core's.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo: N passed, M failed"; exit status 1 on
 * failure.
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
#include "harness.h"

#define KEYS_SEED	UINT64_C(1)
#define ABSENT_SEED	UINT64_C(0xabad1dea)
#define FAMILY_A	1976u
#define FAMILY_B	3123u

/* Format offsets (FORMAT.md), used with the harness's poke/peek helpers. */
#define OFF_MAGIC		0
#define OFF_VERSION		4
#define OFF_BUCKET_SIZE	5
#define OFF_HASH_SCHEME	6
#define OFF_FP_BITS		7
#define OFF_FLAGS		8
#define OFF_FAMILY		12
#define OFF_SEED		16
#define OFF_CAPACITY	24
#define OFF_TARGET_FPR	32
#define OFF_TABLES		40
#define OFF_RESERVED	44
#define OFF_RESERVED2	48
#define TOFF_BUCKETS	0		/* in a table header */
#define TOFF_ITEMS		8
#define TOFF_VBUCKET	16
#define TOFF_VFP		24
#define TOFF_RESERVED	28

/* ----------------------------------------------------------------
 * Reference formulas, written from amq_cuckoo.h and FORMAT.md only.
 * ----------------------------------------------------------------
 */

__extension__ typedef unsigned __int128 ref_u128;

static uint64_t
ref_fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

/* The inverse of a 64-bit multiplication by odd a (Newton's iteration). */
static uint64_t
ref_mul_inverse(uint64_t a)
{
	uint64_t	x = a;
	int			i;

	for (i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/* The inverse of fmix64: the hash whose mix is x. */
static uint64_t
ref_unmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= ref_mul_inverse(UINT64_C(0xc4ceb9fe1a85ec53));
	x ^= x >> 33;
	x *= ref_mul_inverse(UINT64_C(0xff51afd7ed558ccd));
	x ^= x >> 33;
	return x;
}

/* floor(x * n / 2^64) */
static uint64_t
ref_range(uint64_t x, uint64_t n)
{
	return (uint64_t) (((ref_u128) x * n) >> 64);
}

/* With x = fmix64(hash): 1 + floor(lo32(x) * (2^f - 1) / 2^32) */
static uint32_t
ref_fingerprint(uint64_t hash, uint32_t f)
{
	uint64_t	lo = (uint32_t) ref_fmix64(hash);
	uint64_t	mask = (UINT64_C(1) << f) - 1;

	return (uint32_t) (1 + ((lo * mask) >> 32));
}

/* With x = fmix64(hash): floor(x * buckets / 2^64) */
static uint64_t
ref_index(uint64_t hash, uint64_t buckets)
{
	return ref_range(ref_fmix64(hash), buckets);
}

/* M(fp, level): the top `level` bits of fmix64(fp + 0x9e3779b97f4a7c15) */
static uint64_t
ref_low_mask(uint32_t fp, unsigned level)
{
	uint64_t	x = ref_fmix64((uint64_t) fp + UINT64_C(0x9e3779b97f4a7c15));
	uint64_t	m = 0;
	unsigned	k;

	/* bit by bit from the top, so that level 0 needs no special shift */
	for (k = 0; k < level; k++)
		m = (m << 1) | ((x >> (63 - k)) & 1);
	return m;
}

/*
 * In a table of base * 2^level buckets, with high = floor(i / 2^level) and
 * low = i mod 2^level: ((H(fp) - high) mod base) * 2^level + (low xor M),
 * H(fp) = floor(fmix64(fp) * base / 2^64).  Requires base * 2^level < 2^64.
 */
static uint64_t
ref_alternate(uint64_t i, uint32_t fp, uint64_t base, unsigned level)
{
	uint64_t	span = UINT64_C(1) << level;
	uint64_t	high = i / span;
	uint64_t	low = i % span;
	uint64_t	h = ref_range(ref_fmix64(fp), base);
	uint64_t	alt_high = (uint64_t) (((ref_u128) h + base - high) % base);

	return alt_high * span + (low ^ ref_low_mask(fp, level));
}

/* The level of a table of `buckets` buckets (base * 2^level), or -1. */
static int
ref_level(uint64_t base, uint64_t buckets)
{
	int			level;

	for (level = 0; level < 64; level++)
	{
		ref_u128	b = (ref_u128) base << level;

		if (b == buckets)
			return level;
		if (b > buckets)
			break;
	}
	return -1;
}

/* Buckets of the filter's first table, read by offset. */
static uint64_t
ref_base(const amq_cuckoo_view *v)
{
	return peek_u64(v->base + AMQ_CUCKOO_HEADER_SIZE + TOFF_BUCKETS);
}

/*
 * A hash whose mix x has low 32 bits lo and index floor(x * nb / 2^64) = b
 * (nb <= 2^30): x is picked at random among those of bucket b, then unmixed.
 */
static uint64_t
ref_hash_at(uint32_t lo, uint64_t nb, uint64_t b, uint64_t *state)
{
	/* bucket b holds the x in [ceil(b 2^64 / nb), ceil((b + 1) 2^64 / nb)) */
	uint64_t	start = (uint64_t) ((((ref_u128) b << 64) + nb - 1) / nb);
	uint64_t	width = (uint64_t) ((((ref_u128) 1 << 64) - 1) / nb);	/* at most */
	uint64_t	hi_first = (start >> 32) + 1;
	uint64_t	hi_count = (width >> 32) - 1;
	uint64_t	x = ((hi_first + splitmix64(state) % hi_count) << 32) | lo;

	return ref_unmix64(x);
}

/* Words of a table: ceil(4 * buckets * f / 64) + 1. */
static uint64_t
ref_words(uint64_t buckets, uint32_t f)
{
	return (4 * buckets * f + 63) / 64 + 1;
}

static uint64_t
ref_table_bytes(uint64_t buckets, uint32_t f)
{
	return AMQ_CUCKOO_TABLE_HEADER_SIZE + 8 * ref_words(buckets, f);
}

/* ceil(n / (4 * 0.95)) = ceil(5 n / 19), exactly */
static uint64_t
ref_buckets(uint64_t n)
{
	return (5 * n + 18) / 19;
}

/* max(4, ceil(log2(8 / p))), exactly: the smallest f >= 4 with p 2^f >= 8 */
static uint32_t
ref_fp_bits(double p)
{
	uint32_t	f = 4;

	while (ldexp(p, (int) f) < 8.0)
		f++;
	return f;
}

/* Bit j of a table's word array: a little-endian bit stream. */
static unsigned
raw_bit(const uint8_t *words, uint64_t j)
{
	return (words[j >> 3] >> (j & 7)) & 1;
}

static void
raw_set_bit(uint8_t *words, uint64_t j)
{
	words[j >> 3] |= (uint8_t) (1u << (j & 7));
}

/* Slot s of bucket b, bit by bit from the bytes. */
static uint32_t
raw_slot(const uint8_t *words, uint64_t b, unsigned s, uint32_t f)
{
	uint64_t	at = (4 * b + s) * f;
	uint32_t	v = 0;
	uint32_t	k;

	for (k = 0; k < f; k++)
		v |= (uint32_t) raw_bit(words, at + k) << k;
	return v;
}

/* ----------------------------------------------------------------
 * A growable filter, grown the way the PostgreSQL glue grows it.
 * ----------------------------------------------------------------
 */

typedef struct cf
{
	uint8_t    *buf;			/* exactly v.bytes long (ASan sees overruns) */
	amq_cuckoo_params params;
	amq_cuckoo_view v;
	int			growths;
} cf;

/* When set, cf_add checks that AMQ_FULL leaves every byte unchanged. */
static bool check_full_unchanged;

/* A filter with the given (possibly hand-made) parameters, opened. */
static bool
cf_make_params(cf *f, const amq_cuckoo_params *pr, uint64_t n, double p,
			   uint64_t seed)
{
	amq_status	st;

	memset(f, 0, sizeof(*f));
	f->params = *pr;
	f->buf = xmalloc(pr->bytes);
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
static bool
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
static bool
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

static void
cf_free(cf *f)
{
	free(f->buf);
	f->buf = NULL;
}

/*
 * Appends a growth table of nb buckets as the glue does: a new buffer of
 * view.bytes + amq_cuckoo_table_bytes(nb), the old bytes copied, opened on
 * the OLD length, then amq_cuckoo_append_table.
 */
static bool
cf_grow_to(cf *f, uint64_t nb)
{
	size_t		old = f->v.bytes;
	size_t		newlen;
	uint32_t	tables = f->v.tables;
	uint8_t    *nbuf;
	amq_cuckoo_view chk;
	amq_status	st;

	newlen = old + amq_cuckoo_table_bytes(nb, f->v.fp_bits);
	if (newlen > AMQ_CUCKOO_MAX_BYTES)
	{
		diag("growth beyond the size limit");
		current_failures++;
		return false;
	}
	nbuf = xmalloc(newlen);
	memcpy(nbuf, f->buf, old);
	memset(nbuf + old, 0xA5, newlen - old);	/* append must write it all */
	free(f->buf);
	f->buf = nbuf;
	st = amq_cuckoo_open(nbuf, old, &f->v);
	CHECK_STATUS(st, AMQ_OK);
	if (st != AMQ_OK)
		return false;
	amq_cuckoo_append_table(&f->v, nb);
	CHECK(f->v.bytes == newlen);
	CHECK(f->v.tables == tables + 1);
	st = amq_cuckoo_open(nbuf, newlen, &chk);
	CHECK_STATUS(st, AMQ_OK);
	if (st != AMQ_OK || f->v.bytes != newlen)
		return false;
	CHECK(chk.tables == tables + 1 && chk.items == f->v.items &&
		  chk.slots == f->v.slots);
	f->growths++;
	return true;
}

/* Appends the table amq_cuckoo_growth_buckets asks for. */
static bool
cf_grow(cf *f)
{
	amq_cuckoo_table last;
	uint64_t	nb = amq_cuckoo_growth_buckets(&f->v);

	amq_cuckoo_table_at(&f->v, f->v.tables - 1, &last);
	/* twice the last table's if at least half full, else the same */
	CHECK(nb == last.buckets || nb == 2 * last.buckets);
	if (2 * last.items > 4 * last.buckets + 2)
		CHECK(nb == 2 * last.buckets);
	if (2 * last.items + 2 < 4 * last.buckets)
		CHECK(nb == last.buckets);
	return cf_grow_to(f, nb);
}

/* Adds a value, growing the filter when it is full. */
static bool
cf_add(cf *f, uint64_t hash, uint32_t family)
{
	uint8_t    *snap = NULL;
	size_t		snap_len = f->v.bytes;
	uint64_t	items = f->v.items;
	amq_status	st;

	if (check_full_unchanged)
	{
		snap = xmalloc(snap_len);
		memcpy(snap, f->buf, snap_len);
	}
	st = amq_cuckoo_add(&f->v, hash, family);
	if (st == AMQ_FULL)
	{
		if (snap != NULL)
		{
			CHECK(f->v.bytes == snap_len && memcmp(snap, f->buf, snap_len) == 0);
			CHECK(f->v.items == items);
		}
		free(snap);
		if (!cf_grow(f))
			return false;
		st = amq_cuckoo_add(&f->v, hash, family);
		if (st != AMQ_OK)
		{
			diag("add after growth to %u tables: %s", f->v.tables,
				 amq_status_text(st));
			current_failures++;
			return false;
		}
	}
	else
		free(snap);
	if (st != AMQ_OK)
	{
		diag("add: %s", amq_status_text(st));
		current_failures++;
		return false;
	}
	if (f->v.items != items + 1)
	{
		diag("add: items %llu -> %llu", (unsigned long long) items,
			 (unsigned long long) f->v.items);
		current_failures++;
	}
	return true;
}

/* Adds count keys of the stream seeded with seed (growing as needed). */
static bool
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
static uint64_t
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
static bool
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
static amq_cuckoo_stats
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
static void
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
 * Copies of a hash's fingerprint in its bucket pair of table tb (slots and
 * victim), by the reference mapping, the level derived from the bucket
 * counts read by offset.
 */
static unsigned
raw_copies(const amq_cuckoo_view *v, const amq_cuckoo_table *tb, uint64_t hash)
{
	uint32_t	f = v->fp_bits;
	uint32_t	fp = ref_fingerprint(hash, f);
	uint64_t	base = ref_base(v);
	int			level = ref_level(base, tb->buckets);
	uint64_t	i1;
	uint64_t	i2;
	unsigned	copies = 0;
	unsigned	s;

	if (level < 0)
	{
		diag("table of %llu buckets is not base %llu * 2^level",
			 (unsigned long long) tb->buckets, (unsigned long long) base);
		current_failures++;
		return 0;
	}
	i1 = ref_index(hash, tb->buckets);
	i2 = ref_alternate(i1, fp, base, (unsigned) level);

	for (s = 0; s < 4; s++)
	{
		copies += raw_slot(tb->words, i1, s, f) == fp;
		if (i2 != i1)
			copies += raw_slot(tb->words, i2, s, f) == fp;
	}
	if (tb->victim_fp == fp && (tb->victim_bucket == i1 || tb->victim_bucket == i2))
		copies++;
	return copies;
}

/*
 * The bucket pair of h in a table of base * 2^level buckets, by the core's
 * mapping.
 */
static void
core_pair(uint64_t h, uint32_t f, uint64_t base, unsigned level,
		  uint64_t pair[2])
{
	pair[0] = amq_cuckoo_index(h, base << level);
	pair[1] = amq_cuckoo_alternate(pair[0], amq_cuckoo_fingerprint(h, f),
								   base, level);
}

static bool
pairs_overlap(const uint64_t a[2], const uint64_t b[2])
{
	return a[0] == b[0] || a[0] == b[1] || a[1] == b[0] || a[1] == b[1];
}

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

/* Canonical form of a bucket pair: smaller bucket first. */
static void
sort_pair(uint64_t p[2])
{
	if (p[1] < p[0])
	{
		uint64_t	t = p[0];

		p[0] = p[1];
		p[1] = t;
	}
}

static bool
same_pair(const uint64_t a[2], const uint64_t b[2])
{
	return (a[0] == b[0] && a[1] == b[1]) || (a[0] == b[1] && a[1] == b[0]);
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

/* amq_cuckoo_add_many is amq_cuckoo_add in a loop, across growth too. */
static void
test_add_many(void)
{
	enum
	{
		N = 20000
	};
	static const size_t sizes[] = {0, 1, 7, 8, 9, 255, 256, 3000};
	uint64_t   *keys = xmalloc(N * sizeof(uint64_t));
	uint64_t	s = 31337;
	cf			one,
				many;
	size_t		i,
				at = 0,
				next = 0;
	int			fulls = 0;

	for (i = 0; i < N; i++)
		keys[i] = splitmix64(&s);
	/* a few duplicates, so that some adds go to the same bucket pair */
	for (i = 100; i < N; i += 97)
		keys[i] = keys[i - 50];
	if (!cf_make(&one, 1000, 0.01) || !cf_make(&many, 1000, 0.01))
	{
		free(keys);
		return;
	}
	for (i = 0; i < N; i++)
		cf_add(&one, keys[i], FAMILY_A);

	while (at < N)
	{
		size_t		len = sizes[next++ % lengthof(sizes)];
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
	CHECK(one.v.bytes == many.v.bytes);
	CHECK(one.v.items == N && many.v.items == N);
	if (one.v.bytes == many.v.bytes)
		CHECK(memcmp(one.buf, many.buf, one.v.bytes) == 0);
	cf_valid(&many);
	cf_free(&one);
	cf_free(&many);
	free(keys);
}

/*
 * Deletes hash, checking the documented rule with this file's own mapping:
 * exactly one copy of its fingerprint in its bucket pairs goes (victims
 * count), from the table of the highest level holding one, the last such
 * among tables of that level; every other table keeps its copies.  Returns
 * amq_cuckoo_delete's result; *wrong is set when the rule was broken.
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
	if (deleted != (want != UINT32_MAX))
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
 * One value added 20 times (two bucket pairs and a victim per table, so
 * growth tables of the same size follow), counted, then deleted 20 times.
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
	check_full_unchanged = true;
	for (i = 1; i <= 20; i++)
	{
		cf_add(&f, h, FAMILY_A);
		CHECK(amq_cuckoo_count(&f.v, h) == (uint64_t) i);
	}
	diag("20 copies: %u tables, %zu bytes", f.v.tables, f.v.bytes);
	CHECK(f.v.tables >= 3);
	/* a half-empty table is full only because of one value: same size */
	{
		amq_cuckoo_table t0,
					t1;

		amq_cuckoo_table_at(&f.v, 0, &t0);
		amq_cuckoo_table_at(&f.v, 1, &t1);
		CHECK(t1.buckets == t0.buckets);
	}
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
	check_full_unchanged = false;
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
		if (f.v.items != total)
		{
			diag("op %d: items %llu, truth %llu", op,
				 (unsigned long long) f.v.items, (unsigned long long) total);
			current_failures++;
			break;
		}
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
			CHECK(st.occupied == total);
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
 * Each deletion is also checked against the documented rule, with this
 * file's own mapping: exactly one copy in the value's pairs goes, from the
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

		/* the bytes before the operation, to see which slots it changes */
		if (prev_room < f.v.bytes)
		{
			free(prev);
			prev_room = 2 * f.v.bytes;
			prev = xmalloc(prev_room);
		}
		memcpy(prev, f.buf, f.v.bytes);

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

		if (f.v.items != total)
		{
			diag("op %d: items %llu, truth %llu", op,
				 (unsigned long long) f.v.items, (unsigned long long) total);
			current_failures++;
			break;
		}
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
			CHECK(view_stats(&f.v, 1000).occupied == total);
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
	if (have_x && build_two_tables(&f, y, x))
	{
		CHECK(amq_cuckoo_delete(&f.v, x));
		if (!amq_cuckoo_may_contain(&f.v, y))
			diag("case 1: deleting x (table 1) removed y's copy (table 0)");
		CHECK(amq_cuckoo_may_contain(&f.v, y));
		CHECK(amq_cuckoo_count(&f.v, y) >= 1);
		CHECK(pair_slots(&f.v, 0, y, fp) == 1);
		cf_free(&f);
	}
	if (have_x && build_two_tables(&f, y, x))
	{
		CHECK(amq_cuckoo_delete(&f.v, y));
		if (!amq_cuckoo_may_contain(&f.v, x))
			diag("case 1: deleting y (table 0) removed x's copy (table 1)");
		CHECK(amq_cuckoo_may_contain(&f.v, x));
		CHECK(amq_cuckoo_count(&f.v, x) >= 1);
		CHECK(pair_slots(&f.v, 1, x, fp) == 1);
		cf_free(&f);
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
 * The validator.
 * ----------------------------------------------------------------
 */

/* Lengths 0 .. 63 in buffers of exactly that size: AMQ_ERR_TRUNCATED. */
static void
test_validator_truncated(void)
{
	cf			f;
	amq_cuckoo_view v;
	size_t		len;

	if (!cf_make(&f, 100, 0.01))
		return;
	for (len = 0; len < AMQ_CUCKOO_HEADER_SIZE; len++)
	{
		uint8_t    *c = xmalloc(len);

		memcpy(c, f.buf, len);
		CHECK_STATUS(amq_cuckoo_open(c, len, &v), AMQ_ERR_TRUNCATED);
		free(c);
	}
	cf_free(&f);
}

/* A copy of the valid bytes in a buffer of exactly len bytes. */
static uint8_t *
valid_copy(const cf *f, size_t len)
{
	uint8_t    *c = xmalloc(len);

	memset(c, 0, len);
	memcpy(c, f->buf, len < f->v.bytes ? len : f->v.bytes);
	return c;
}

#define BREAK(f, stmt, want) \
	do { \
		amq_cuckoo_view bv_; \
		c = valid_copy(f, (f)->v.bytes); \
		stmt; \
		CHECK_STATUS(amq_cuckoo_open(c, (f)->v.bytes, &bv_), want); \
		free(c); \
	} while (0)

/* Either of two statuses (a claim of a huge table: too big or too short). */
#define BREAK2(f, stmt, want1, want2) \
	do { \
		amq_cuckoo_view bv_; \
		amq_status st_; \
		c = valid_copy(f, (f)->v.bytes); \
		stmt; \
		st_ = amq_cuckoo_open(c, (f)->v.bytes, &bv_); \
		if (st_ != (want1) && st_ != (want2)) \
		{ \
			diag("%s:%d: %s gave %s", __FILE__, __LINE__, #stmt, \
				 amq_status_text(st_)); \
			current_failures++; \
		} \
		free(c); \
	} while (0)

/* One case per header rule; each starts from the valid bytes. */
static void
test_validator_header(void)
{
	cf			f;
	amq_cuckoo_view v;
	uint8_t    *c;

	if (!cf_make(&f, 1000, 0.01))
		return;
	cf_add_keys(&f, 3, 500, FAMILY_A);
	CHECK_STATUS(amq_cuckoo_open(f.buf, f.v.bytes, &v), AMQ_OK);

	BREAK(&f, c[0] = 'X', AMQ_ERR_MAGIC);
	BREAK(&f, c[3] = 'B', AMQ_ERR_MAGIC);	/* a bloom filter's magic */
	BREAK(&f, c[3] = 'c', AMQ_ERR_MAGIC);
	BREAK(&f, c[OFF_VERSION] = 0, AMQ_ERR_VERSION);
	BREAK(&f, c[OFF_VERSION] = 2, AMQ_ERR_VERSION);
	BREAK(&f, c[OFF_HASH_SCHEME] = 0, AMQ_ERR_HASH_SCHEME);
	BREAK(&f, c[OFF_HASH_SCHEME] = 2, AMQ_ERR_HASH_SCHEME);
	BREAK(&f, c[OFF_FLAGS] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_FLAGS + 3] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED + 3] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED2] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[56] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[63] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 0, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 2, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 8, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 0, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 3, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 33, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 255, AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_u32(c + OFF_TABLES, 0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_u64(c + OFF_CAPACITY, 0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 0.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, -0.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 1.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, -0.5), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, NAN), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, INFINITY), AMQ_ERR_GEOMETRY);
	/* more tables than the bytes hold */
	BREAK(&f, poke_u32(c + OFF_TABLES, 2), AMQ_ERR_LENGTH);
	BREAK(&f, poke_u32(c + OFF_TABLES, UINT32_MAX), AMQ_ERR_LENGTH);
	/* unbound family with items */
	BREAK(&f, poke_u32(c + OFF_FAMILY, 0), AMQ_ERR_UNBOUND_COUNT);

	/* rule order: version is checked before the hash scheme and geometry */
	BREAK(&f, (c[OFF_VERSION] = 9, c[OFF_HASH_SCHEME] = 9), AMQ_ERR_VERSION);
	BREAK(&f, (c[OFF_FLAGS] = 1, c[OFF_FP_BITS] = 40), AMQ_ERR_RESERVED);

	/* positive controls: any seed, an n and p of the same geometry */
	BREAK(&f, poke_u64(c + OFF_SEED, 0), AMQ_OK);
	BREAK(&f, poke_u64(c + OFF_CAPACITY, 1001), AMQ_OK);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 0.0099), AMQ_OK);

	/* total length one short and one long */
	c = valid_copy(&f, f.v.bytes + 1);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes - 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes + 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes + 1 - 1, &v), AMQ_OK);
	free(c);
	cf_free(&f);
}

/* Table-header and padding rules, in the first and in a growth table. */
static void
check_validator_tables(cf *f, uint32_t t)
{
	amq_cuckoo_table tb;
	size_t		th;
	uint64_t	b;
	uint32_t	fb = f->v.fp_bits;
	uint64_t	datab,
				endb;
	uint8_t    *c;

	amq_cuckoo_table_at(&f->v, t, &tb);
	th = (size_t) (tb.header - f->buf);
	b = tb.buckets;
	datab = 4 * b * fb;
	endb = 64 * ref_words(b, fb);

	BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 0), AMQ_ERR_GEOMETRY);
	if (t == 0)
	{
		/*
		 * One bucket more in the first table: a new base, so the table runs
		 * past the end (one table) or the next table is no longer base *
		 * 2^level (or is misplaced).
		 */
		if (f->v.tables == 1)
		{
			if (ref_table_bytes(b + 1, fb) != ref_table_bytes(b, fb))
				BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + 1), AMQ_ERR_LENGTH);
		}
		else
		{
			amq_cuckoo_view bv;

			c = valid_copy(f, f->v.bytes);
			poke_u64(c + th + TOFF_BUCKETS, b + 1);
			CHECK(amq_cuckoo_open(c, f->v.bytes, &bv) != AMQ_OK);
			free(c);
		}
	}
	else
	{
		uint64_t	base = ref_base(&f->v);

		/* a growth table of other than base * 2^level buckets */
		CHECK(base > 1);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + 1), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b - 1), AMQ_ERR_GEOMETRY);
		if (ref_level(base, b + base) < 0)
			BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + base), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, base / 2), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 3 * base), AMQ_ERR_GEOMETRY);
		/* twice as many: the rule holds, the bytes do not */
		if (t == f->v.tables - 1)
			BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 2 * b), AMQ_ERR_LENGTH);
	}
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_C(1) << 40),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_MAX),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_MAX / fb / 4 + 1),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);

	/* the victim */
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, b), poke_u32(c + th + TOFF_VFP, 5)),
		  AMQ_ERR_GEOMETRY);
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, UINT64_MAX),
			  poke_u32(c + th + TOFF_VFP, 5)), AMQ_ERR_GEOMETRY);
	if (fb < 32)
		BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, 0),
				  poke_u32(c + th + TOFF_VFP, UINT32_C(1) << fb)), AMQ_ERR_GEOMETRY);
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, 3), poke_u32(c + th + TOFF_VFP, 0)),
		  AMQ_ERR_GEOMETRY);
	/* a victim in range is fine (the validator does not read fingerprints) */
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, b - 1),
			  poke_u32(c + th + TOFF_VFP, (uint32_t) ((UINT64_C(1) << fb) - 1))),
		  AMQ_OK);

	/* reserved word of the table header */
	BREAK(f, c[th + TOFF_RESERVED] = 1, AMQ_ERR_RESERVED);
	BREAK(f, c[th + TOFF_RESERVED + 3] = 0x80, AMQ_ERR_RESERVED);

	/* padding: the first bit past the slots and the very last bit */
	BREAK(f, raw_set_bit(c + th + 32, datab), AMQ_ERR_RESERVED);
	BREAK(f, raw_set_bit(c + th + 32, endb - 1), AMQ_ERR_RESERVED);
	if (endb - 65 >= datab)
		BREAK(f, raw_set_bit(c + th + 32, endb - 65), AMQ_ERR_RESERVED);
	/* the last slot bit is data, not padding */
	BREAK(f, raw_set_bit(c + th + 32, datab - 1), AMQ_OK);

	/* item counts: at most 4 buckets + 1 */
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, 4 * b + 1), AMQ_OK);
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, 4 * b + 2), AMQ_ERR_COUNT);
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, UINT64_MAX), AMQ_ERR_COUNT);
}

static void
test_validator_tables(void)
{
	cf			f;
	uint8_t    *c;
	uint32_t	t;

	/* one table, 264 buckets of 10 bits (the slots fill whole words) */
	if (cf_make(&f, 1000, 0.01))
	{
		cf_add_keys(&f, 3, 500, FAMILY_A);
		check_validator_tables(&f, 0);
		cf_free(&f);
	}
	/* 7 buckets of 7 bits (the last word is partly padding) */
	if (cf_make_geom(&f, 7, 7))
	{
		cf_add_keys(&f, 3, 10, FAMILY_A);
		check_validator_tables(&f, 0);
		cf_free(&f);
	}
	/* a grown filter of 13-bit fingerprints: every table */
	if (cf_make(&f, 100, 0.001))
	{
		cf_add_keys(&f, 3, 1000, FAMILY_A);
		CHECK(f.v.tables >= 3);
		for (t = 0; t < f.v.tables; t++)
			check_validator_tables(&f, t);
		/* family 0 with items only in later tables */
		BREAK(&f, (poke_u32(c + OFF_FAMILY, 0), poke_u64(c + 64 + TOFF_ITEMS, 0)),
			  AMQ_ERR_UNBOUND_COUNT);
		/* one table fewer in the header: bytes left over */
		BREAK(&f, poke_u32(c + OFF_TABLES, f.v.tables - 1), AMQ_ERR_LENGTH);
		BREAK(&f, poke_u32(c + OFF_TABLES, f.v.tables + 1), AMQ_ERR_LENGTH);
		cf_free(&f);
	}
	/* unbound with no items is valid */
	if (cf_make(&f, 100, 0.01))
	{
		BREAK(&f, (void) 0, AMQ_OK);
		CHECK(f.v.family == 0);
		cf_free(&f);
	}
}

/*
 * A filter whose first table is f's and whose further tables have the given
 * bucket counts (empty, zero fingerprints), in a buffer of exactly its
 * length; opened, with the status returned.
 */
static amq_status
open_with_tables(const cf *f, const uint64_t *buckets, int ntables,
				 amq_cuckoo_view *v, uint8_t **out)
{
	uint32_t	fb = f->v.fp_bits;
	size_t		first = AMQ_CUCKOO_HEADER_SIZE +
		(size_t) ref_table_bytes(ref_base(&f->v), fb);
	size_t		len = first;
	size_t		at;
	uint8_t    *c;
	amq_status	st;
	int			t;

	for (t = 0; t < ntables; t++)
		len += (size_t) ref_table_bytes(buckets[t], fb);
	c = xmalloc(len);
	memset(c, 0, len);
	memcpy(c, f->buf, first);
	poke_u32(c + OFF_TABLES, (uint32_t) (1 + ntables));
	at = first;
	for (t = 0; t < ntables; t++)
	{
		poke_u64(c + at + TOFF_BUCKETS, buckets[t]);
		at += (size_t) ref_table_bytes(buckets[t], fb);
	}
	st = amq_cuckoo_open(c, len, v);
	if (out)
		*out = c;
	else
		free(c);
	return st;
}

/*
 * Every table has base * 2^level buckets, base the first table's: other
 * sizes are AMQ_ERR_GEOMETRY, in any position, whatever the order of the
 * levels; valid ones decode with their base and level.
 */
static void
test_validator_nesting(void)
{
	static const struct
	{
		uint64_t	buckets[3];
		int			ntables;
		amq_status	want;
	}			cases[] = {
		/* base 264 (n = 1000) */
		{{528}, 1, AMQ_OK},
		{{264}, 1, AMQ_OK},
		{{264 * 4}, 1, AMQ_OK},
		{{264 * 64}, 1, AMQ_OK},
		{{500}, 1, AMQ_ERR_GEOMETRY},
		{{3 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{6 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{5 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{132}, 1, AMQ_ERR_GEOMETRY},	/* level -1 */
		{{66}, 1, AMQ_ERR_GEOMETRY},
		{{263}, 1, AMQ_ERR_GEOMETRY},
		{{265}, 1, AMQ_ERR_GEOMETRY},
		{{527}, 1, AMQ_ERR_GEOMETRY},
		{{529}, 1, AMQ_ERR_GEOMETRY},
		{{1}, 1, AMQ_ERR_GEOMETRY},
		{{256}, 1, AMQ_ERR_GEOMETRY},
		{{512}, 1, AMQ_ERR_GEOMETRY},
		{{1024}, 1, AMQ_ERR_GEOMETRY},
		/* levels in any order (a union appends unmatched tables) */
		{{1056, 528}, 2, AMQ_OK},
		{{1056, 264, 2112}, 3, AMQ_OK},
		{{528, 528, 264}, 3, AMQ_OK},
		/* the bad one in the middle or at the end */
		{{528, 792}, 2, AMQ_ERR_GEOMETRY},
		{{1056, 500, 528}, 3, AMQ_ERR_GEOMETRY},
		{{528, 1056, 1584}, 3, AMQ_ERR_GEOMETRY},
	};
	cf			f;
	size_t		i;

	if (!cf_make(&f, 1000, 0.01))
		return;
	CHECK(ref_base(&f.v) == 264);
	cf_add_keys(&f, 3, 500, FAMILY_A);
	for (i = 0; i < lengthof(cases); i++)
	{
		amq_cuckoo_view v;
		uint8_t    *c;
		amq_status	st = open_with_tables(&f, cases[i].buckets, cases[i].ntables,
										  &v, &c);

		if (st != cases[i].want)
			diag("base 264 + tables of %llu, %llu, %llu buckets: %s, expected %s",
				 (unsigned long long) cases[i].buckets[0],
				 (unsigned long long) cases[i].buckets[1],
				 (unsigned long long) cases[i].buckets[2],
				 amq_status_text(st), amq_status_text(cases[i].want));
		CHECK_STATUS(st, cases[i].want);
		if (st == AMQ_OK)
		{
			int			t;

			CHECK(v.tables == (uint32_t) (1 + cases[i].ntables));
			CHECK(v.base_buckets == 264);
			CHECK(v.items == 500);
			for (t = 0; t <= cases[i].ntables; t++)
			{
				amq_cuckoo_table tb;
				uint64_t	want = t ? cases[i].buckets[t - 1] : 264;

				amq_cuckoo_table_at(&v, (uint32_t) t, &tb);
				CHECK(tb.buckets == want && tb.base == 264);
				CHECK((int) tb.level == ref_level(264, want));
				CHECK(tb.items == (t ? 0 : 500));
			}
			/* and it works: values go on being found and added */
			{
				uint64_t	s = 3;
				int			k;

				for (k = 0; k < 500; k++)
					CHECK(amq_cuckoo_may_contain(&v, splitmix64(&s)));
				CHECK_STATUS(amq_cuckoo_add(&v, 99, FAMILY_A), AMQ_OK);
				CHECK(amq_cuckoo_may_contain(&v, 99));
				CHECK(amq_cuckoo_delete(&v, 99));
			}
		}
		free(c);
	}
	cf_free(&f);

	/* an odd base, and base 1 */
	{
		static const struct
		{
			uint64_t	base;
			uint64_t	second;
			amq_status	want;
		}			odd[] = {
			{7, 14, AMQ_OK},
			{7, 7 << 10, AMQ_OK},
			{7, 21, AMQ_ERR_GEOMETRY},
			{7, 8, AMQ_ERR_GEOMETRY},
			{7, 16, AMQ_ERR_GEOMETRY},
			{1, 1, AMQ_OK},
			{1, 2, AMQ_OK},
			{1, 4096, AMQ_OK},
			{1, 3, AMQ_ERR_GEOMETRY},
			{1, 4095, AMQ_ERR_GEOMETRY},
			{3, 1, AMQ_ERR_GEOMETRY},
			{3, 3 << 12, AMQ_OK},
			{3, (3 << 12) + 3, AMQ_ERR_GEOMETRY},
		};

		for (i = 0; i < lengthof(odd); i++)
		{
			amq_cuckoo_view v;

			if (!cf_make_geom(&f, odd[i].base, 7))
				continue;
			CHECK_STATUS(open_with_tables(&f, &odd[i].second, 1, &v, NULL),
						 odd[i].want);
			cf_free(&f);
		}
	}
}

/*
 * Every proper prefix of a grown filter, in a buffer of exactly its length,
 * is rejected (ASan: without reading past it).
 */
static void
test_validator_prefixes(void)
{
	cf			f;
	size_t		len;
	int			bad = 0;

	if (!cf_make(&f, 100, 0.01))
		return;
	cf_add_keys(&f, 8, 1500, FAMILY_A);
	CHECK(f.v.tables >= 3);
	for (len = 0; len < f.v.bytes; len++)
	{
		uint8_t    *c = xmalloc(len);
		amq_cuckoo_view v;
		amq_status	st;
		amq_status	want = len < AMQ_CUCKOO_HEADER_SIZE ? AMQ_ERR_TRUNCATED : AMQ_ERR_LENGTH;

		memcpy(c, f.buf, len);
		st = amq_cuckoo_open(c, len, &v);
		if (st != want && bad++ < 5)
			diag("prefix of %zu of %zu bytes: %s", len, f.v.bytes, amq_status_text(st));
		CHECK(st != AMQ_OK);
		free(c);
	}
	CHECK(bad == 0);
	diag("%zu prefixes of a %u-table filter rejected", f.v.bytes, f.v.tables);
	cf_free(&f);
}

/* The sizeless empty filter: one spelling only, no tables. */
static void
test_validator_empty(void)
{
	uint8_t		e[AMQ_CUCKOO_HEADER_SIZE + 1];
	uint8_t		c[AMQ_CUCKOO_HEADER_SIZE];
	amq_cuckoo_view v;
	size_t		i;
	static const struct
	{
		int			off;
		uint8_t		val;
		const char *field;
		bool		geometry;	/* expect AMQ_ERR_GEOMETRY exactly */
	}			fields[] = {
		{OFF_BUCKET_SIZE, 4, "bucket size", true},
		{OFF_FP_BITS, 10, "fingerprint bits", true},
		{OFF_TABLES, 1, "tables", true},
		{OFF_CAPACITY, 1, "capacity", true},
		{OFF_TARGET_FPR + 7, 0x3f, "target_fpr", true},
		{OFF_FAMILY, 1, "family", false},
		{OFF_SEED, 1, "seed", false},
	};

	memset(e, 0x5A, sizeof(e));
	amq_cuckoo_init_empty(e);
	CHECK(memcmp(e, "AMQC\001\000\001\000", 8) == 0);
	for (i = 8; i < AMQ_CUCKOO_HEADER_SIZE; i++)
		CHECK(e[i] == 0);
	CHECK(e[AMQ_CUCKOO_HEADER_SIZE] == 0x5A);	/* nothing written past it */
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE, &v), AMQ_OK);
	CHECK(v.tables == 0 && v.fp_bits == 0 && v.items == 0 && v.slots == 0);
	CHECK(v.family == 0 && v.bytes == AMQ_CUCKOO_HEADER_SIZE);
	CHECK(!amq_cuckoo_may_contain(&v, 42));
	CHECK(amq_cuckoo_count(&v, 42) == 0);

	for (i = 0; i < lengthof(fields); i++)
	{
		amq_status	st;

		memcpy(c, e, AMQ_CUCKOO_HEADER_SIZE);
		c[fields[i].off] = fields[i].val;
		st = amq_cuckoo_open(c, AMQ_CUCKOO_HEADER_SIZE, &v);
		if (st == AMQ_OK || (fields[i].geometry && st != AMQ_ERR_GEOMETRY))
			diag("empty filter with nonzero %s: %s", fields[i].field,
				 amq_status_text(st));
		CHECK(st != AMQ_OK);
		if (fields[i].geometry)
			CHECK(st == AMQ_ERR_GEOMETRY);
	}
	/* no table may follow */
	e[AMQ_CUCKOO_HEADER_SIZE] = 0;
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE + 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE - 1, &v), AMQ_ERR_TRUNCATED);
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
	{"no false negatives", test_no_false_negatives},
	{"load before growth f=10", test_load_f10},
	{"load before growth f=16", test_load_f16},
	{"load narrow fingerprints", test_load_narrow},
	{"growth", test_growth},
	{"add_many", test_add_many},
	{"duplicates", test_duplicates},
	{"delete across growth tables", test_delete_across_tables},
	{"delete victims", test_delete_victims},
	{"delete random p=0.01", test_delete_random},
	{"delete random p=1e-5", test_delete_random_wide},
	{"delete stress, 4-bit fingerprints", test_delete_stress},
	{"union disjoint", test_union_disjoint},
	{"union with itself", test_union_self},
	{"union with growth tables", test_union_growth},
	{"merge geometry mismatch", test_merge_geometry_mismatch},
	{"merge family", test_merge_family},
	{"validator truncated", test_validator_truncated},
	{"validator header", test_validator_header},
	{"validator tables", test_validator_tables},
	{"validator table nesting", test_validator_nesting},
	{"validator prefixes", test_validator_prefixes},
	{"validator empty filter", test_validator_empty},
	{"stats empty", test_stats_empty},
	{"stats estimates", test_stats_estimates},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo");
}
