/*
 * amq_cuckoo_internal.h
 *		What the cuckoo filter's files share (internal to the core): the
 *		format's field offsets, the hash-to-slot mapping, slot, bucket and
 *		table access, placement, and the functions one file calls in another.
 *
 * amq_cuckoo.c explains the design, owns the format and lists the other
 * amq_cuckoo_*.c files, each doing one job on it; amq_cuckoo.h is the
 * interface for everything outside them.
 *
 * The helpers below are static inline because the hot loops of adding and
 * probing are built from them: each file compiles them into its own loops,
 * as when the cuckoo core was one file (place() is always inlined; where
 * the others are is GCC's choice, which depends on what else a file holds:
 * see amq_cuckoo_membership.c).  The functions one file calls in another
 * are declared at the end.
 */
#ifndef AMQ_CUCKOO_INTERNAL_H
#define AMQ_CUCKOO_INTERNAL_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amq_bytes.h"
#include "amq_cuckoo.h"
#include "amq_hash.h"

/*
 * Inlines every call in a function's body, however the compiler would
 * judge each one (see amq_cuckoo_count).
 */
#if defined(__GNUC__) || defined(__clang__)
#define AMQ_FLATTEN			__attribute__((flatten))
#else
#define AMQ_FLATTEN
#endif

/* header field offsets; see docs/format.md */
#define OFF_MAGIC		0
#define OFF_VERSION		4
#define OFF_BUCKET_SIZE	5
#define OFF_SCHEME		6
#define OFF_FP_BITS		7
#define OFF_FLAGS		8
#define OFF_FAMILY		12
#define OFF_SEED		16
#define OFF_CAPACITY	24
#define OFF_TARGET_FPR	32
#define OFF_TABLES		40
#define OFF_COUNTERS	44		/* version 2; in version 1 part of the reserved bytes */
#define OFF_RESERVED	48		/* 16 bytes, up to the end of the header */

/* table header field offsets */
#define T_BUCKETS		0
#define T_ITEMS			8
#define T_VICTIM_BUCKET	16
#define T_VICTIM_FP		24
#define T_RESERVED		28

/* counter entry field offsets */
#define C_BUCKET		0		/* the lower bucket of the pair */
#define C_COUNT			8		/* copies counted; 0 marks an empty entry */
#define C_FP			16
#define C_LEVEL			20
#define C_RESERVED		21		/* 3 bytes */

#define HASH_SCHEME_PG_EXTENDED	1	/* as for bloom: see amq_bloom.h */

/*
 * Most buckets a table may have: its bits must fit the size limit even at
 * the narrowest fingerprint.  Keeps every size computation far from
 * overflow.
 */
#define MAX_BUCKETS		((uint64_t) AMQ_CUCKOO_MAX_BYTES * 8 / (4 * AMQ_CUCKOO_MIN_FP_BITS))

/* slots of a table: four per bucket plus the victim */
#define TABLE_SLOTS(buckets)	(4 * (buckets) + 1)

#define GOLDEN64		UINT64_C(0x9e3779b97f4a7c15)

/* ----------------------------------------------------------------
 * Small helpers.
 * ----------------------------------------------------------------
 */

static inline uint32_t
fp_mask(uint32_t f)
{
	return f >= 32 ? UINT32_MAX : (UINT32_C(1) << f) - 1;
}

static inline uint64_t
add_saturating(uint64_t a, uint64_t b)
{
	return (a > UINT64_MAX - b) ? UINT64_MAX : a + b;
}

/* The eviction generator: a 64-bit LCG (Knuth's MMIX constants). */
static inline uint64_t
next_random(uint64_t *state)
{
	*state = *state * UINT64_C(6364136223846793005) + UINT64_C(1442695040888963407);
	return *state;
}

/* Words in a table's array: its bits rounded up, plus one zero word. */
static inline uint64_t
table_words(uint64_t buckets, uint32_t f)
{
	return (4 * buckets * f + 63) / 64 + 1;
}

/* Binds an unbound filter to family, in the view and in the header. */
static inline void
bind_family(amq_cuckoo_view *view, uint32_t family)
{
	if (view->family == 0)
	{
		view->family = family;
		put_u32(view->base + OFF_FAMILY, family);
	}
}

/* ----------------------------------------------------------------
 * The hash-to-slot mapping (part of the format).
 * ----------------------------------------------------------------
 */

/*
 * Bucket index and fingerprint both come from fmix64 of the caller's hash:
 * the index from its high bits (fastrange), the fingerprint from its low 32.
 * Without the mix, two hashes that differ only in a few low bits would share
 * bucket and, nearly always, fingerprint, and so be indistinguishable.
 */
static inline uint32_t
fingerprint_of_mixed(uint64_t mixed, uint32_t f)
{
	uint64_t	range = ((uint64_t) 1 << f) - 1;

	return 1 + (uint32_t) (((mixed & 0xFFFFFFFF) * range) >> 32);
}

/* Inline for the core's own hot paths (adds, probes, evictions). */
static inline uint64_t
alternate(uint64_t bucket, uint32_t fp, uint64_t base_buckets, unsigned level)
{
	uint64_t	h = fastrange64(amq_fmix64(fp), base_buckets);
	uint64_t	high;
	uint64_t	low;
	uint64_t	alt_high;

	/* the first table, and the only one of most filters: no low part */
	if (level == 0)
		return h >= bucket ? h - bucket : h + base_buckets - bucket;
	high = bucket >> level;
	low = bucket & ((UINT64_C(1) << level) - 1);
	alt_high = h >= high ? h - high : h + base_buckets - high;
	return (alt_high << level) |
		(low ^ (amq_fmix64(fp + GOLDEN64) >> (64 - level)));
}

/* ----------------------------------------------------------------
 * Slots and buckets.
 * ----------------------------------------------------------------
 */

/* Fingerprint in slot number pos (4 * bucket + s) of a word array. */
static inline uint32_t
slot_get(const uint8_t *words, uint64_t pos, uint32_t f)
{
	uint64_t	bit = pos * f;

	return (uint32_t) (load_le64(words + (bit >> 3)) >> (bit & 7)) & fp_mask(f);
}

static inline void
slot_set(uint8_t *words, uint64_t pos, uint32_t f, uint32_t fp)
{
	uint64_t	bit = pos * f;
	uint8_t    *p = words + (bit >> 3);
	unsigned	shift = (unsigned) (bit & 7);
	uint64_t	mask = (uint64_t) fp_mask(f) << shift;
	uint64_t	w = load_le64(p);

	store_le64(p, (w & ~mask) | ((uint64_t) fp << shift));
}

/*
 * The four fingerprints of a bucket whose first bit is bit shift (0..7) of
 * the byte at p.  Reads up to ((shift + 3f) >> 3) + 8 bytes from p.
 */
static inline void
bucket_read_at(const uint8_t *p, unsigned shift, uint32_t f, uint32_t out[4])
{
	uint32_t	mask = fp_mask(f);

	if (f <= 14)
	{
		/* 4f + 7 <= 63: the whole bucket comes with one load */
		uint64_t	w = load_le64(p) >> shift;

		out[0] = (uint32_t) w & mask;
		out[1] = (uint32_t) (w >> f) & mask;
		out[2] = (uint32_t) (w >> (2 * f)) & mask;
		out[3] = (uint32_t) (w >> (3 * f)) & mask;
	}
	else
	{
		unsigned	s;

		for (s = 0; s < 4; s++)
		{
			unsigned	bit = shift + s * f;

			out[s] = (uint32_t) (load_le64(p + (bit >> 3)) >> (bit & 7)) & mask;
		}
	}
}

/* The four fingerprints of bucket b. */
static inline void
bucket_read(const uint8_t *words, uint64_t b, uint32_t f, uint32_t out[4])
{
	uint64_t	bit = b * 4 * f;

	bucket_read_at(words + (bit >> 3), (unsigned) (bit & 7), f, out);
}

/*
 * Word operations on a bucket, for f <= WORD_MAX_F, where one 64-bit load
 * holds all of it (4f + 7 <= 63): its four fields side by side, compared
 * all at once instead of extracted one by one.  rep has bit 0 of each field.
 */
#define WORD_MAX_F	14

static inline uint64_t
field_rep(uint32_t f)
{
	return 1 | (UINT64_C(1) << f) | (UINT64_C(1) << (2 * f)) |
		(UINT64_C(1) << (3 * f));
}

/* Bucket b's four fields, the bits above them zero. */
static inline uint64_t
bucket_word(const uint8_t *words, uint64_t b, uint32_t f, uint64_t rep)
{
	uint64_t	bit = b * 4 * f;

	return (load_le64(words + (bit >> 3)) >> (bit & 7)) &
		((rep << f) - rep);
}

/* The top bit of each zero field of a bucket word x (amq_zero_fields). */
static inline uint64_t
zero_fields(uint64_t x, uint32_t f, uint64_t rep)
{
	return amq_zero_fields(x, rep, rep << (f - 1));
}

/*
 * The number of fields zero_fields marked: multiplying bit 0 of each by rep
 * sums them into the top field, 3f, with no carry (the sums are at most 4
 * and f >= 4).  Baseline x86-64 has no population count.
 */
static inline unsigned
count_marked(uint64_t z, uint32_t f, uint64_t rep)
{
	return (unsigned) ((((z >> (f - 1)) * rep) >> (3 * f)) & 7);
}

/* The first field zero_fields marked, of a nonzero mask. */
static inline unsigned
first_marked(uint64_t z, uint32_t f)
{
	unsigned	top = amq_lowest_bit(z);

	return (unsigned) (top >= f) + (top >= 2 * f) + (top >= 3 * f);
}

/* Slot of bucket b holding fp (fp = 0: a free slot), or -1. */
static inline int
bucket_find(const uint8_t *words, uint64_t b, uint32_t f, uint32_t fp)
{
	uint32_t	s[4];

	if (f <= WORD_MAX_F)
	{
		uint64_t	rep = field_rep(f);
		uint64_t	z = zero_fields(bucket_word(words, b, f, rep) ^ (rep * fp),
									f, rep);

		return z != 0 ? (int) first_marked(z, f) : -1;
	}
	bucket_read(words, b, f, s);
	if (s[0] == fp)
		return 0;
	if (s[1] == fp)
		return 1;
	if (s[2] == fp)
		return 2;
	if (s[3] == fp)
		return 3;
	return -1;
}

/* ----------------------------------------------------------------
 * Tables.
 * ----------------------------------------------------------------
 */

/* Position of the highest set bit of x > 0. */
static inline unsigned
log2_floor(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
	return 63 - (unsigned) __builtin_clzll(x);
#else
	unsigned	r = 0;

	while (x >>= 1)
		r++;
	return r;
#endif
}

/*
 * Decodes the fields of a table from its header bytes hdr, in a filter whose
 * first table has base buckets (header and words are left alone).  Every
 * table has base * 2^level buckets (the validator checks it).
 */
static inline void
table_fields(const uint8_t *hdr, uint32_t f, uint64_t base, amq_cuckoo_table *t)
{
	t->buckets = get_u64(hdr + T_BUCKETS);
	t->base = base;
	t->level = log2_floor(t->buckets) - log2_floor(base);
	t->items = get_u64(hdr + T_ITEMS);
	t->victim_bucket = get_u64(hdr + T_VICTIM_BUCKET);
	t->victim_fp = get_u32(hdr + T_VICTIM_FP);
	t->bytes = AMQ_CUCKOO_TABLE_HEADER_SIZE + (size_t) table_words(t->buckets, f) * 8;
}

/* Decodes the table at p, in memory. */
static inline void
table_decode(uint8_t *p, uint32_t f, uint64_t base, amq_cuckoo_table *t)
{
	t->header = p;
	t->words = p + AMQ_CUCKOO_TABLE_HEADER_SIZE;
	table_fields(p, f, base, t);
}

static inline uint8_t *
first_table(const amq_cuckoo_view *view)
{
	return view->base + AMQ_CUCKOO_HEADER_SIZE;
}

/* The other bucket of fp's pair in table t. */
static inline uint64_t
alt_in(const amq_cuckoo_table *t, uint64_t bucket, uint32_t fp)
{
	return alternate(bucket, fp, t->base, t->level);
}

/* The bucket pair in table t of a value whose hash mixes to mixed. */
static inline void
pair_in(const amq_cuckoo_table *t, uint64_t mixed, uint32_t fp,
		uint64_t *b1, uint64_t *b2)
{
	*b1 = fastrange64(mixed, t->buckets);
	*b2 = alt_in(t, *b1, fp);
}

/* Whether t's victim slot holds fp parked in the pair (b1, b2). */
static inline bool
victim_in_pair(const amq_cuckoo_table *t, uint32_t fp, uint64_t b1, uint64_t b2)
{
	return t->victim_fp == fp && (t->victim_bucket == b1 || t->victim_bucket == b2);
}

/*
 * A value's bucket pair in each table of a filter, oldest table first: the
 * places adding, deleting, probing and counting all look in, visited one way
 * for all four.  It is inline and its state lives on the caller's stack, so
 * the probe, the hot path, compiles to the loop it would be if written out,
 * with no call per table.  The table visited is the caller's own variable,
 * not part of the walk: the decoder writes it through a pointer, and a walk
 * whose address is never taken stays in registers.
 */
typedef struct pair_walk
{
	uint8_t    *next;			/* header of the next table */
	uint32_t	left;			/* tables not visited yet */
	uint32_t	f;				/* fingerprint bits */
	uint64_t	base;			/* buckets of the first table */
	uint64_t	mixed;			/* fmix64 of the value's hash */
	uint32_t	fp;				/* its fingerprint, the same in every table */
	uint64_t	b1;				/* the value's pair in the table visited */
	uint64_t	b2;
} pair_walk;

/* Starts the walk for hash; the sizeless empty filter has no table to visit. */
static inline void
walk_begin(pair_walk *w, const amq_cuckoo_view *view, uint64_t hash)
{
	w->next = first_table(view);
	w->left = view->tables;
	w->f = view->fp_bits;
	w->base = view->base_buckets;
	w->mixed = amq_fmix64(hash);
	w->fp = fingerprint_of_mixed(w->mixed, w->f);
}

/*
 * Moves to the next table, decoded into *t, and the value's pair there;
 * false after the last.
 */
static inline bool
walk_next(pair_walk *w, amq_cuckoo_table *t)
{
	if (w->left == 0)
		return false;
	table_decode(w->next, w->f, w->base, t);
	w->next += t->bytes;
	w->left--;
	pair_in(t, w->mixed, w->fp, &w->b1, &w->b2);
	return true;
}

/* ----------------------------------------------------------------
 * The counter section.
 *
 * view->counters entries (a power of two) of AMQ_CUCKOO_COUNTER_SIZE bytes
 * after the last table, keyed by (level, lower bucket of the pair,
 * fingerprint), with linear probing from counter_home.  An entry whose
 * count is 0 is empty and all zero.  At most half the entries are used, so
 * every search meets an empty entry.
 * ----------------------------------------------------------------
 */

static inline uint8_t *
counter_at(const amq_cuckoo_view *view, uint32_t i)
{
	return view->base + view->tables_end + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE;
}

/* First entry a key's search looks at (docs/format.md specifies it). */
static inline uint32_t
counter_home(uint64_t bucket, uint32_t fp, unsigned level, uint32_t n)
{
	return (uint32_t) (amq_fmix64(amq_fmix64(((uint64_t) level << 32) | fp) ^ bucket) &
					   (n - 1));
}

static inline bool
counter_is(const uint8_t *e, uint64_t bucket, uint32_t fp, unsigned level)
{
	return get_u64(e + C_BUCKET) == bucket && get_u32(e + C_FP) == fp &&
		e[C_LEVEL] == level;
}

/*
 * Copies counted for fp's pair whose lower bucket is bucket at level, the
 * entries read through read (in memory or not, as lookup reads tables).
 */
static inline uint64_t
counted_via(const amq_cuckoo_view *view, amq_read_fn read, void *ctx,
			unsigned level, uint64_t bucket, uint32_t fp)
{
	uint32_t	n = view->counters;
	uint32_t	i = counter_home(bucket, fp, level, n);
	uint32_t	k;

	for (k = 0; k < n; k++, i = (i + 1) & (n - 1))
	{
		const uint8_t *e = read(ctx, view->tables_end + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE,
								AMQ_CUCKOO_COUNTER_SIZE);
		uint64_t	count = get_u64(e + C_COUNT);

		if (count == 0)
			return 0;
		if (counter_is(e, bucket, fp, level))
			return count;
	}
	return 0;
}

/* Entries of the next counter section: twice as many, or the smallest. */
static inline uint64_t
counters_next(const amq_cuckoo_view *view)
{
	return view->counters ? 2 * (uint64_t) view->counters : AMQ_CUCKOO_MIN_COUNTERS;
}

/* ----------------------------------------------------------------
 * Placement: a value's fingerprint into a free slot of its pair.
 * ----------------------------------------------------------------
 */

/* Copies of fp among the four fingerprints of a bucket. */
static inline unsigned
copies_of(const uint32_t s[4], uint32_t fp)
{
	return (unsigned) (s[0] == fp) + (s[1] == fp) + (s[2] == fp) + (s[3] == fp);
}

/*
 * Whether the pair (b1, b2) of table t holds nothing but copies of fp in
 * its buckets: then more copies of the value are counted instead.  (A pair
 * that also holds other fingerprints still makes room by evicting them, so
 * a filter without values stored many times keeps the bytes it always had.)
 */
static inline bool
pair_all(const amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1,
		 uint64_t b2)
{
	uint32_t	s1[4];
	uint32_t	s2[4];

	if (f <= WORD_MAX_F)
	{
		uint64_t	rep = field_rep(f);

		return bucket_word(t->words, b1, f, rep) == rep * fp &&
			bucket_word(t->words, b2, f, rep) == rep * fp;
	}
	bucket_read(t->words, b1, f, s1);
	bucket_read(t->words, b2, f, s2);
	return copies_of(s1, fp) == 4 && copies_of(s2, fp) == 4;
}

/* Free slots among the four fingerprints of a bucket. */
static inline unsigned
free_in(const uint32_t s[4])
{
	return (unsigned) (s[0] == 0) + (s[1] == 0) + (s[2] == 0) + (s[3] == 0);
}

/* The first free slot of a bucket that has one. */
static inline unsigned
first_free(const uint32_t s[4])
{
	return s[0] == 0 ? 0 : s[1] == 0 ? 1 : s[2] == 0 ? 2 : 3;
}

/*
 * Puts fp in the emptier bucket of the pair (b1, b2): the one with more
 * free slots, b1 on ties, at its first free slot; false if both are full.
 * Filling the emptier bucket (two-choice placement) keeps the loads of
 * buckets close to their mean, so pairs become full, and insertions must
 * evict, only near the design load; filling b1 first, as the paper does,
 * leaves some buckets full while others are empty and makes a quarter of
 * all insertions evict from half load on.  Measured on 10M adds at the
 * design load (95%): 50 -> 38 ns per add, though every add now reads both
 * buckets.  Always inlined: it is most of an add.
 */
static AMQ_ALWAYS_INLINE bool
place(amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1, uint64_t b2)
{
	uint32_t	s1[4];
	uint32_t	s2[4];
	unsigned	n1,
				n2;

	if (f <= WORD_MAX_F)
	{
		uint64_t	rep = field_rep(f);
		uint64_t	z1 = zero_fields(bucket_word(t->words, b1, f, rep), f, rep);
		uint64_t	z2 = zero_fields(bucket_word(t->words, b2, f, rep), f, rep);
		bool		second;

		if ((z1 | z2) == 0)
			return false;
		/* a choice as unpredictable as the keys: selected, not branched on */
		second = count_marked(z2, f, rep) > count_marked(z1, f, rep);
		slot_set(t->words, 4 * (second ? b2 : b1) +
				 first_marked(second ? z2 : z1, f), f, fp);
		return true;
	}
	bucket_read(t->words, b1, f, s1);
	bucket_read(t->words, b2, f, s2);
	n1 = free_in(s1);
	n2 = free_in(s2);
	if (n1 == 0 && n2 == 0)
		return false;
	if (n2 > n1)
		slot_set(t->words, 4 * b2 + first_free(s2), f, fp);
	else
		slot_set(t->words, 4 * b1 + first_free(s1), f, fp);
	return true;
}

/* ----------------------------------------------------------------
 * What one cuckoo file calls in another, by the file that has it.
 *
 * Hidden: the shared library calls them directly, as it did while they
 * were static functions of one file, rather than through its procedure
 * linkage table, and does not export them.
 * ----------------------------------------------------------------
 */
#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility push(hidden)
#endif

/* amq_cuckoo.c */
extern uint8_t *amq_cuckoo_open_table_gap(amq_cuckoo_view *view, size_t bytes);
extern double amq_cuckoo_table_fpr(uint32_t f, double alpha);

/* amq_cuckoo_membership.c */
extern void amq_cuckoo_count_item(amq_cuckoo_view *view, amq_cuckoo_table *t,
								  int delta);
extern void amq_cuckoo_set_victim(amq_cuckoo_table *t, uint32_t fp,
								  uint64_t bucket);
extern bool amq_cuckoo_kick_or_undo(amq_cuckoo_merge *m, amq_cuckoo_table *t,
									uint32_t f, uint32_t fp, uint64_t b,
									uint64_t *rng, int *nlog);
extern void amq_cuckoo_rehome_victim(amq_cuckoo_table *t, uint32_t f,
									 uint64_t seed);

/* amq_cuckoo_counter.c */
extern uint32_t amq_cuckoo_counter_find(const amq_cuckoo_view *view,
										uint64_t bucket, uint32_t fp,
										unsigned level, uint32_t *hole);
extern bool amq_cuckoo_counter_add(amq_cuckoo_view *view, unsigned level,
								   uint64_t bucket, uint32_t fp,
								   uint64_t amount);
extern void amq_cuckoo_counter_remove_one(amq_cuckoo_view *view, uint32_t i);
extern size_t amq_cuckoo_counters_growth_bytes(const amq_cuckoo_view *view);
extern void amq_cuckoo_counters_grow(amq_cuckoo_view *view);

#if defined(__GNUC__) || defined(__clang__)
#pragma GCC visibility pop
#endif

#endif							/* AMQ_CUCKOO_INTERNAL_H */
