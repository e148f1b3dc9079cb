/*
 * amq_cuckoo.c
 *		Cuckoo filter core: sizing, the serialized format and its validator,
 *		insertion with bounded eviction, growth, deletion, probing, merging
 *		and fill statistics.
 *
 * The design follows Fan, Andersen, Kaminsky and Mitzenmacher, "Cuckoo
 * Filter: Practically Better Than Bloom" (CoNEXT 2014): buckets of four
 * f-bit fingerprints, each value stored in one of two buckets, the second
 * computable from the first and the fingerprint alone ("partial-key cuckoo
 * hashing"), so fingerprints can move between buckets without the value.
 * Where it departs from the paper, and why:
 *
 * - Any number of buckets.  The paper's alternate bucket is i xor H(fp),
 *	 which needs a power-of-two table and wastes up to half the space when n
 *	 is just above one.  Here, in the first table, alternate(i) =
 *	 (H(fp) - i) mod buckets with H(fp) = fastrange(fmix64(fp), buckets).  It
 *	 is an involution for every bucket count (H - (H - i) = i), so a
 *	 fingerprint can always go back.
 *	 Index and H use fastrange (a 128-bit multiply), never a division.
 * - Fingerprints of any width from 4 to 32 bits, bit-packed: slot s of
 *	 bucket b is the f bits at bit (4b + s) * f of the table's word array.
 *	 One extra zero word at the end lets every slot be read with a single
 *	 unaligned 64-bit load.  A fingerprint is 1 + lo32(x) * (2^f - 1) / 2^32
 *	 with x = fmix64(hash): uniform over the 2^f - 1 nonzero values (0 marks
 *	 an empty slot).
 * - A value goes to the emptier of its two buckets (the first on ties), not
 *	 to the first one that has room: balanced buckets put off evictions to
 *	 near the design load (see place).  Where a value is stored is
 *	 not part of the format; probes read both buckets either way.
 * - Insertions that cannot finish within AMQ_CUCKOO_MAX_KICKS evictions park
 *	 the fingerprint in flight in the table's victim slot, as the authors'
 *	 reference code does: nothing is lost, and the table counts as full.
 * - Growth instead of failure, as RedisBloom does it: when every table is
 *	 full, the caller appends a table (twice the last one's size, or the same
 *	 size if the last one is less than half full, which means many copies of
 *	 one value rather than too little room) and the value goes there.  A
 *	 value's fingerprint is the same in every table, and each table maps the
 *	 hash to its own bucket pair, so lookups and deletions check every table.
 * - Tables nest.  Every table has base * 2^level buckets, base being the
 *	 first table's.  A value's index in a table of level L, shifted right by
 *	 d, is its index at level L - d (fastrange of the same mixed hash), and
 *	 the alternate bucket is built to commute with that shift: the high part
 *	 (i >> level) moves as in the first table, the low level bits are xored
 *	 with bits of the fingerprint's mix taken from the top, so a smaller
 *	 table sees a prefix of the same mask.  Hence two values that share a
 *	 bucket pair in some table share it in every smaller one.  Deletion needs
 *	 exactly that: it removes a copy from the largest table that has one
 *	 (see amq_cuckoo_delete).  With unrelated mappings, deleting a value
 *	 could remove, from a small table, the copy of another value whose pair
 *	 coincides there but not in the large table holding the deleted value's
 *	 own copy: a false negative.
 * - Merging never loses a fingerprint.  A fingerprint taken from bucket b of
 *	 a table can only go to b or alternate(b) of a table with the same
 *	 bucket count (the value's hash is gone), so merging folds each source
 *	 table into destination tables of its size (the newest few: see
 *	 "Merging" below); evictions during a fold are recorded and undone if
 *	 the walk fails, and whatever still does not fit goes to a new "spill"
 *	 table of that size, at the bucket it came from.  The spill bucket b only ever receives the at most four
 *	 fingerprints of source bucket b (plus the source victim, which takes
 *	 the spill table's victim slot), so the spill always succeeds.
 *
 * - Counters for values stored many times.  A value's copies live in its
 *	 bucket pair, eight slots and a victim in each table; past that, each
 *	 further copy used to take a new table of the filter's size, so a few
 *	 thousand copies of one value filled a gigabyte.  Further copies of a
 *	 value whose pair is full are counted instead, in a counter section
 *	 after the tables: an open-addressing table of (level, pair,
 *	 fingerprint, count) entries.  A pair holding nothing but the value's
 *	 fingerprint is counted at once; one that also holds other values'
 *	 fingerprints when the filter would otherwise grow, and then a copy
 *	 among many in a full pair may also be counted to make room for a new
 *	 value (see add_to_full_pair), so copies cost a value at most its first
 *	 slot and one entry, whatever shares its buckets.
 *	 A counter belongs to a bucket pair of a level, not to one table, and
 *	 behaves like one more slot of that pair in a table of that level: it
 *	 is what a fingerprint stored there would be, so probing, counting,
 *	 deleting (largest level first) and merging treat it so.  The counter
 *	 section is what version 2 of the format adds; a filter without one is
 *	 written as version 1, byte for byte what earlier versions wrote.
 *
 * Eviction choices come from a generator seeded with the value's hash, so
 * the same values added in the same order give the same bytes.
 *
 * Like amq_bloom.c, header fields are read and written byte by byte in
 * little-endian order, and operations write changed counts back to the
 * buffer at once, so it is a valid value at every moment.
 */
#include <math.h>
#include <string.h>

#include "amq_bytes.h"
#include "amq_cuckoo.h"
#include "amq_hash.h"

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

size_t
amq_cuckoo_table_bytes(uint64_t buckets, uint32_t fp_bits)
{
	if (buckets > MAX_BUCKETS || fp_bits > AMQ_CUCKOO_MAX_FP_BITS)
		return SIZE_MAX;
	return AMQ_CUCKOO_TABLE_HEADER_SIZE + (size_t) table_words(buckets, fp_bits) * 8;
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

uint32_t
amq_cuckoo_fingerprint(uint64_t hash, uint32_t fp_bits)
{
	return fingerprint_of_mixed(amq_fmix64(hash), fp_bits);
}

uint64_t
amq_cuckoo_index(uint64_t hash, uint64_t buckets)
{
	return fastrange64(amq_fmix64(hash), buckets);
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

uint64_t
amq_cuckoo_alternate(uint64_t bucket, uint32_t fp, uint64_t base_buckets,
					 unsigned level)
{
	return alternate(bucket, fp, base_buckets, level);
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

bool
amq_cuckoo_table_first(const amq_cuckoo_view *view, amq_cuckoo_table *table)
{
	if (view->tables == 0)
		return false;
	table_decode(first_table(view), view->fp_bits, view->base_buckets, table);
	return true;
}

bool
amq_cuckoo_table_next(const amq_cuckoo_view *view, amq_cuckoo_table *table)
{
	uint8_t    *p = table->header + table->bytes;

	/* the validator made the tables tile the bytes after the header */
	if (p >= view->base + view->tables_end)
		return false;
	table_decode(p, view->fp_bits, view->base_buckets, table);
	return true;
}

void
amq_cuckoo_table_at(const amq_cuckoo_view *view, uint32_t t,
					amq_cuckoo_table *table)
{
	uint32_t	i;

	amq_cuckoo_table_first(view, table);
	for (i = 0; i < t; i++)
		amq_cuckoo_table_next(view, table);
}

uint32_t
amq_cuckoo_slot(const amq_cuckoo_view *view, const amq_cuckoo_table *table,
				uint64_t bucket, unsigned s)
{
	return slot_get(table->words, 4 * bucket + s, view->fp_bits);
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

/*
 * Counts one more (delta = 1) or one fewer (delta = -1) item in a table and
 * in the view.  Table counts stay within [0, slots] whatever a crafted value
 * claimed, so the result always validates.
 */
static void
count_item(amq_cuckoo_view *view, amq_cuckoo_table *t, int delta)
{
	if (delta > 0 && t->items < TABLE_SLOTS(t->buckets))
	{
		t->items++;
		view->items = add_saturating(view->items, 1);
	}
	else if (delta < 0 && t->items > 0)
	{
		t->items--;
		if (view->items > 0)
			view->items--;
	}
	put_u64(t->header + T_ITEMS, t->items);
}

static void
set_victim(amq_cuckoo_table *t, uint32_t fp, uint64_t bucket)
{
	t->victim_fp = fp;
	t->victim_bucket = fp ? bucket : 0;
	put_u32(t->header + T_VICTIM_FP, t->victim_fp);
	put_u64(t->header + T_VICTIM_BUCKET, t->victim_bucket);
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
 * The entry for a key, or UINT32_MAX if there is none; *hole is where it
 * would go (the empty entry that ended the search).
 */
static uint32_t
counter_find(const amq_cuckoo_view *view, uint64_t bucket, uint32_t fp,
			 unsigned level, uint32_t *hole)
{
	uint32_t	n = view->counters;
	uint32_t	i;
	uint32_t	k;

	*hole = UINT32_MAX;
	if (n == 0)
		return UINT32_MAX;
	i = counter_home(bucket, fp, level, n);
	for (k = 0; k < n; k++, i = (i + 1) & (n - 1))
	{
		const uint8_t *e = counter_at(view, i);

		if (get_u64(e + C_COUNT) == 0)
		{
			*hole = i;
			return UINT32_MAX;
		}
		if (counter_is(e, bucket, fp, level))
			return i;
	}
	return UINT32_MAX;			/* not reached: the validator keeps a hole */
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

/*
 * Counts amount more copies of fp for the pair whose lower bucket is bucket
 * at level; false, changing nothing, when a new entry would fill the
 * section past half (the caller grows it first).
 */
static bool
counter_add(amq_cuckoo_view *view, unsigned level, uint64_t bucket,
			uint32_t fp, uint64_t amount)
{
	uint32_t	hole;
	uint32_t	i = counter_find(view, bucket, fp, level, &hole);
	uint8_t    *e;

	if (i == UINT32_MAX)
	{
		if (hole == UINT32_MAX || view->counters_used + 1 > view->counters / 2)
			return false;
		e = counter_at(view, hole);
		put_u64(e + C_BUCKET, bucket);
		put_u32(e + C_FP, fp);
		e[C_LEVEL] = (uint8_t) level;
		put_u64(e + C_COUNT, amount);
		view->counters_used++;
	}
	else
	{
		e = counter_at(view, i);
		put_u64(e + C_COUNT, add_saturating(get_u64(e + C_COUNT), amount));
	}
	view->counted = add_saturating(view->counted, amount);
	view->items = add_saturating(view->items, amount);
	return true;
}

/*
 * One copy fewer in entry i; an entry that reaches 0 is removed, moving the
 * entries after it back so that every search still finds its key.  A
 * counter at its saturated maximum stays there: the true count is unknown.
 */
static void
counter_remove_one(amq_cuckoo_view *view, uint32_t i)
{
	uint32_t	n = view->counters;
	uint8_t    *e = counter_at(view, i);
	uint64_t	count = get_u64(e + C_COUNT);
	uint32_t	j = i;

	if (view->counted > 0)
		view->counted--;
	if (view->items > 0)
		view->items--;
	if (count == UINT64_MAX)
		return;
	if (count > 1)
	{
		put_u64(e + C_COUNT, count - 1);
		return;
	}
	/* backward-shift deletion for linear probing */
	for (;;)
	{
		uint8_t    *f;
		uint32_t	home;

		j = (j + 1) & (n - 1);
		f = counter_at(view, j);
		if (get_u64(f + C_COUNT) == 0)
			break;
		home = counter_home(get_u64(f + C_BUCKET), get_u32(f + C_FP),
							f[C_LEVEL], n);
		/* f may fill the hole at i unless its home lies in (i, j] */
		if ((i < j) ? (home <= i || home > j) : (home <= i && home > j))
		{
			memcpy(counter_at(view, i), f, AMQ_CUCKOO_COUNTER_SIZE);
			i = j;
		}
	}
	memset(counter_at(view, i), 0, AMQ_CUCKOO_COUNTER_SIZE);
	view->counters_used--;
}

/* Entries of the next counter section: twice as many, or the smallest. */
static inline uint64_t
counters_next(const amq_cuckoo_view *view)
{
	return view->counters ? 2 * (uint64_t) view->counters : AMQ_CUCKOO_MIN_COUNTERS;
}

/*
 * Buffer size counters_grow needs (the old section and the new one side by
 * side while entries move), or SIZE_MAX past the limits.
 */
static size_t
counters_growth_bytes(const amq_cuckoo_view *view)
{
	uint64_t	n = counters_next(view);
	size_t		old = (size_t) view->counters * AMQ_CUCKOO_COUNTER_SIZE;
	size_t		new = (size_t) n * AMQ_CUCKOO_COUNTER_SIZE;

	if (n > AMQ_CUCKOO_MAX_COUNTERS)
		return SIZE_MAX;
	return view->tables_end + old + new;	/* all below 2^31: no overflow */
}

/*
 * Replaces the counter section by one twice as large (the first one: of
 * AMQ_CUCKOO_MIN_COUNTERS entries), marking the value version 2.  The
 * buffer has room for counters_growth_bytes.
 */
static void
counters_grow(amq_cuckoo_view *view)
{
	uint32_t	old_n = view->counters;
	uint32_t	new_n = (uint32_t) counters_next(view);
	size_t		old_bytes = (size_t) old_n * AMQ_CUCKOO_COUNTER_SIZE;
	size_t		new_bytes = (size_t) new_n * AMQ_CUCKOO_COUNTER_SIZE;
	uint8_t    *old = view->base + view->tables_end;
	uint8_t    *fresh = old + old_bytes;
	uint32_t	i;

	memset(fresh, 0, new_bytes);
	for (i = 0; i < old_n; i++)
	{
		const uint8_t *e = old + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE;
		uint32_t	j;

		if (get_u64(e + C_COUNT) == 0)
			continue;
		j = counter_home(get_u64(e + C_BUCKET), get_u32(e + C_FP), e[C_LEVEL], new_n);
		while (get_u64(fresh + (size_t) j * AMQ_CUCKOO_COUNTER_SIZE + C_COUNT) != 0)
			j = (j + 1) & (new_n - 1);
		memcpy(fresh + (size_t) j * AMQ_CUCKOO_COUNTER_SIZE, e, AMQ_CUCKOO_COUNTER_SIZE);
	}
	memmove(old, fresh, new_bytes);
	view->counters = new_n;
	view->bytes = view->tables_end + new_bytes;
	view->base[OFF_VERSION] = AMQ_CUCKOO_VERSION_COUNTERS;
	put_u32(view->base + OFF_COUNTERS, new_n);
}

/*
 * Makes a gap of bytes at the end of the tables, moving the counter section
 * behind it, and returns the gap.  The buffer has room for view->bytes +
 * bytes.
 */
static uint8_t *
open_table_gap(amq_cuckoo_view *view, size_t bytes)
{
	uint8_t    *gap = view->base + view->tables_end;

	if (view->counters)
		memmove(gap + bytes, gap, view->bytes - view->tables_end);
	view->tables_end += bytes;
	view->bytes += bytes;
	return gap;
}

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

/*
 * Whether the pair (b1, b2) of table t holds a copy of fp, in a slot or as
 * its victim.  When a value cannot be placed and the filter would have to
 * grow, a pair holding its fingerprint counts the copy instead, whatever
 * else shares the buckets: pair_all alone misses every value whose pair is
 * shared with another value's fingerprints, and such a pair, once full,
 * stays full, so each further copy took a table of the filter's full size.
 */
static inline bool
pair_holds(const amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1,
		   uint64_t b2)
{
	return bucket_find(t->words, b1, f, fp) >= 0 ||
		bucket_find(t->words, b2, f, fp) >= 0 ||
		victim_in_pair(t, fp, b1, b2);
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

/* Writes fp to slot position pos, recording the old content if logging. */
static inline void
write_logged(amq_cuckoo_table *t, uint32_t f, uint64_t pos, uint32_t fp,
			 amq_cuckoo_merge *log, int *nlog)
{
	if (log != NULL)
	{
		log->path_pos[*nlog] = pos;
		log->path_fp[*nlog] = slot_get(t->words, pos, f);
		(*nlog)++;
	}
	slot_set(t->words, pos, f, fp);
}

/*
 * Eviction walk for *fp, whose bucket *b (and its alternate) is full.  Each
 * step first looks one move ahead: if a fingerprint of the current bucket
 * can move to a free slot of its own alternate bucket, it moves and the
 * fingerprint in flight takes its place.  Otherwise a random one is evicted
 * and the walk continues from its alternate bucket.  The look-ahead reads
 * four buckets whose loads overlap, and it shortens walks at high load
 * several-fold compared to the plain random walk, each step of which waits
 * for one dependent cache miss.
 *
 * Returns true once every fingerprint has a slot; false after
 * AMQ_CUCKOO_MAX_KICKS evictions, with *fp and *b the fingerprint still in
 * flight and the bucket it belongs to.  With a log, every slot write is
 * recorded for undo (at most AMQ_CUCKOO_MAX_KICKS + 2 of them).
 */
static bool
kick_walk(amq_cuckoo_table *t, uint32_t f, uint32_t *fp_io, uint64_t *b_io,
		  uint64_t *rng, amq_cuckoo_merge *log, int *nlog)
{
	uint32_t	fp = *fp_io;
	uint64_t	b = *b_io;
	int			k;

	for (k = 0; k < AMQ_CUCKOO_MAX_KICKS; k++)
	{
		uint32_t	fps[4];
		uint64_t	alt[4];
		unsigned	s;

		bucket_read(t->words, b, f, fps);
		for (s = 0; s < 4; s++)
			alt[s] = alt_in(t, b, fps[s]);
		for (s = 0; s < 4; s++)
		{
			int			free_slot = bucket_find(t->words, alt[s], f, 0);

			if (free_slot >= 0)
			{
				write_logged(t, f, 4 * alt[s] + (unsigned) free_slot, fps[s], log, nlog);
				write_logged(t, f, 4 * b + s, fp, log, nlog);
				return true;
			}
		}
		s = (unsigned) (next_random(rng) >> 62);
		write_logged(t, f, 4 * b + s, fp, log, nlog);
		fp = fps[s];
		b = alt[s];
	}
	*fp_io = fp;
	*b_io = b;
	return false;
}

/*
 * Inserts fp, whose pair (b, alternate(b)) is full, by evicting; if the walk
 * does not end, the fingerprint left in flight becomes the victim, which
 * must be free.
 */
static void
kick_insert(amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b,
			uint64_t *rng)
{
	if (!kick_walk(t, f, &fp, &b, rng, NULL, NULL))
		set_victim(t, fp, b);
}

/* Requests bucket b of table t for writing. */
static inline void
prefetch_bucket(const amq_cuckoo_table *t, uint32_t f, uint64_t b)
{
	amq_prefetch_write(t->words + ((b * 4 * f) >> 3));
}

/*
 * The 8 fingerprints of the pair (b1, b2) into fps, and the bucket each
 * would move to into alts: the first level of short_path_insert's search.
 */
static inline void
pair_moves(const amq_cuckoo_table *t, uint32_t f, uint64_t b1, uint64_t b2,
		   uint32_t fps[8], uint64_t alts[8])
{
	int			i;

	bucket_read(t->words, b1, f, fps);
	bucket_read(t->words, b2, f, fps + 4);
	for (i = 0; i < 8; i++)
		alts[i] = alt_in(t, i < 4 ? b1 : b2, fps[i]);
}

/*
 * Inserts fp into its full pair (b1, b2) by the shortest sequence of at most
 * two moves that ends in a free slot, searched breadth first: first the
 * alternate buckets of the pair's 8 fingerprints, then the alternates of
 * the 32 fingerprints in those.  The buckets of each level are requested
 * together, so a level costs about one cache miss, where each step of the
 * eviction walk waits for its own.  Near the design load (95%) one of the
 * first 8 buckets nearly always has room, and the walk, which starts from
 * one bucket and moves at random, needed about 3.7 steps per insertion.
 * False, with nothing changed, if no such path exists; then the caller
 * evicts.  Every move puts a fingerprint into the other bucket of its own
 * pair, so nothing stored moves out of the places a probe looks in.
 */
static bool
short_path_insert(amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1,
				  uint64_t b2)
{
	uint64_t	from[2] = {b1, b2};
	uint32_t	fp1[8];			/* the pair's fingerprints */
	uint64_t	alt1[8];		/* and their alternate buckets */
	uint32_t	fp2[32];		/* the fingerprints of those buckets */
	uint64_t	alt2[32];		/* and their alternates */
	int			i,
				j,
				s;

	pair_moves(t, f, b1, b2, fp1, alt1);
	for (i = 0; i < 8; i++)
		prefetch_bucket(t, f, alt1[i]);
	for (i = 0; i < 8; i++)
	{
		if ((s = bucket_find(t->words, alt1[i], f, 0)) >= 0)
		{
			slot_set(t->words, 4 * alt1[i] + (unsigned) s, f, fp1[i]);
			slot_set(t->words, 4 * from[i >> 2] + (unsigned) (i & 3), f, fp);
			return true;
		}
	}

	/*
	 * Every bucket of level 1 is full.  The three slots a path writes are
	 * distinct: the last is free and the others are not, and the two others
	 * could coincide only if alt1[i] were the bucket fp1[i] sits in and j
	 * its slot, when fp2[j] = fp1[i] and alt2[j] = alt1[i], a full bucket.
	 */
	for (i = 0; i < 8; i++)
		bucket_read(t->words, alt1[i], f, fp2 + 4 * i);
	for (j = 0; j < 32; j++)
	{
		alt2[j] = alt_in(t, alt1[j >> 2], fp2[j]);
		prefetch_bucket(t, f, alt2[j]);
	}
	for (j = 0; j < 32; j++)
	{
		if ((s = bucket_find(t->words, alt2[j], f, 0)) >= 0)
		{
			i = j >> 2;
			slot_set(t->words, 4 * alt2[j] + (unsigned) s, f, fp2[j]);
			slot_set(t->words, 4 * alt1[i] + (unsigned) (j & 3), f, fp1[i]);
			slot_set(t->words, 4 * from[i >> 2] + (unsigned) (i & 3), f, fp);
			return true;
		}
	}
	return false;
}

/* ----------------------------------------------------------------
 * Sizing.
 * ----------------------------------------------------------------
 */

/*
 * False-positive rate of one table at load alpha: an absent value meets 8
 * slots (two buckets) holding 8 * alpha fingerprints on average, each equal
 * to its fingerprint with probability 1 / (2^f - 1).
 */
static double
table_fpr(uint32_t f, double alpha)
{
	double		q = 1.0 / (ldexp(1.0, (int) f) - 1.0);

	return 1.0 - pow(1.0 - q, 8.0 * alpha);
}

amq_status
amq_cuckoo_size(uint64_t n, double p, amq_cuckoo_params *out)
{
	uint64_t	buckets;
	uint32_t	f;
	double		alpha;
	size_t		bytes;

	if (n < 1)
		return AMQ_ERR_PARAM_N;
	if (!(p > 0.0 && p < 1.0))
		return AMQ_ERR_PARAM_P;
	if (p < AMQ_CUCKOO_MIN_FPR)
		return AMQ_ERR_PARAM_P_SMALL;
	if (n > MAX_BUCKETS * 4)
		return AMQ_ERR_TOO_LARGE;

	/* n / (4 * 0.95) = 5n / 19, rounded up, in integers */
	buckets = (5 * n + 18) / 19;
	alpha = (double) n / (4.0 * (double) buckets);

	f = (uint32_t) ceil(log2(8.0 / p));
	if (f < AMQ_CUCKOO_MIN_FP_BITS)
		f = AMQ_CUCKOO_MIN_FP_BITS;
	while (f < AMQ_CUCKOO_MAX_FP_BITS && table_fpr(f, alpha) > p)
		f++;

	bytes = amq_cuckoo_table_bytes(buckets, f);
	if (bytes > AMQ_CUCKOO_MAX_BYTES - AMQ_CUCKOO_HEADER_SIZE)
		return AMQ_ERR_TOO_LARGE;
	bytes += AMQ_CUCKOO_HEADER_SIZE;

	out->buckets = buckets;
	out->fp_bits = f;
	out->bytes = bytes;
	out->bits_per_key = 8.0 * (double) bytes / (double) n;
	out->expected_fpr = table_fpr(f, alpha);
	return AMQ_OK;
}

/* ----------------------------------------------------------------
 * Construction and validation.
 * ----------------------------------------------------------------
 */

static void
write_table_header(uint8_t *p, uint64_t buckets)
{
	memset(p, 0, AMQ_CUCKOO_TABLE_HEADER_SIZE);
	put_u64(p + T_BUCKETS, buckets);
}

void
amq_cuckoo_init(uint8_t *buf, const amq_cuckoo_params *params,
				uint64_t n, double p, uint64_t seed)
{
	memset(buf, 0, params->bytes);
	memcpy(buf + OFF_MAGIC, AMQ_CUCKOO_MAGIC, 4);
	buf[OFF_VERSION] = AMQ_CUCKOO_VERSION;
	buf[OFF_BUCKET_SIZE] = AMQ_CUCKOO_BUCKET_SIZE;
	buf[OFF_SCHEME] = HASH_SCHEME_PG_EXTENDED;
	buf[OFF_FP_BITS] = (uint8_t) params->fp_bits;
	put_u64(buf + OFF_SEED, seed);
	put_u64(buf + OFF_CAPACITY, n);
	put_f64(buf + OFF_TARGET_FPR, p);
	put_u32(buf + OFF_TABLES, 1);
	write_table_header(buf + AMQ_CUCKOO_HEADER_SIZE, params->buckets);
}

void
amq_cuckoo_init_empty(uint8_t *buf)
{
	memset(buf, 0, AMQ_CUCKOO_HEADER_SIZE);
	memcpy(buf + OFF_MAGIC, AMQ_CUCKOO_MAGIC, 4);
	buf[OFF_VERSION] = AMQ_CUCKOO_VERSION;
	buf[OFF_SCHEME] = HASH_SCHEME_PG_EXTENDED;
}

static bool
all_zero(const uint8_t *p, size_t len)
{
	size_t		i;

	for (i = 0; i < len; i++)
		if (p[i] != 0)
			return false;
	return true;
}

/*
 * Checks the table whose header starts at offset off of a value of len
 * bytes.  Reads only the table header and the last two words, through read.
 */
static amq_status
check_table(amq_read_fn read, void *ctx, size_t off, size_t len, uint32_t f,
			uint64_t *base, amq_cuckoo_table *t)
{
	const uint8_t *hdr;
	const uint8_t *tail;
	uint64_t	buckets;
	uint64_t	bits;
	uint64_t	words;

	if (len - off < AMQ_CUCKOO_TABLE_HEADER_SIZE)
		return AMQ_ERR_LENGTH;
	hdr = read(ctx, off, AMQ_CUCKOO_TABLE_HEADER_SIZE);
	buckets = get_u64(hdr + T_BUCKETS);
	if (buckets < 1 || buckets > MAX_BUCKETS)
		return AMQ_ERR_GEOMETRY;
	/* the first table sets the base; every table has base * 2^level buckets */
	if (*base == 0)
		*base = buckets;
	if (buckets % *base != 0 || ((buckets / *base) & (buckets / *base - 1)) != 0)
		return AMQ_ERR_GEOMETRY;
	table_fields(hdr, f, *base, t);
	if (t->bytes > len - off)
		return AMQ_ERR_LENGTH;
	if (t->victim_fp > fp_mask(f) || t->victim_bucket >= buckets ||
		(t->victim_fp == 0 && t->victim_bucket != 0))
		return AMQ_ERR_GEOMETRY;
	if (t->items > TABLE_SLOTS(buckets))
		return AMQ_ERR_COUNT;
	if (get_u32(hdr + T_RESERVED) != 0)
		return AMQ_ERR_RESERVED;

	/*
	 * padding: the last word, and the bits past the slots in the one before
	 * (a table has at least two words)
	 */
	bits = 4 * buckets * f;
	words = table_words(buckets, f);
	tail = read(ctx, off + AMQ_CUCKOO_TABLE_HEADER_SIZE + (size_t) (words - 2) * 8, 16);
	if (load_le64(tail + 8) != 0)
		return AMQ_ERR_RESERVED;
	if (bits % 64 != 0 && (load_le64(tail) >> (bits % 64)) != 0)
		return AMQ_ERR_RESERVED;
	return AMQ_OK;
}

amq_status
amq_cuckoo_open_read(amq_read_fn read, void *ctx, size_t len,
					 amq_cuckoo_view *view)
{
	uint8_t		head[AMQ_CUCKOO_HEADER_SIZE];
	uint32_t	f;
	uint32_t	tables;
	uint32_t	family;
	uint64_t	capacity;
	uint64_t	fpr_bits;
	double		target_fpr;
	uint64_t	items = 0;
	uint64_t	slots = 0;
	uint64_t	base_buckets = 0;
	size_t		off;
	size_t		last_offset = 0;
	size_t		tables_end = len;
	uint32_t	counters;
	uint32_t	used = 0;
	uint64_t	counted = 0;
	uint32_t	t;

	if (len < AMQ_CUCKOO_HEADER_SIZE)
		return AMQ_ERR_TRUNCATED;
	/* a copy: the table checks read on */
	memcpy(head, read(ctx, 0, AMQ_CUCKOO_HEADER_SIZE), AMQ_CUCKOO_HEADER_SIZE);
	if (memcmp(head + OFF_MAGIC, AMQ_CUCKOO_MAGIC, 4) != 0)
		return AMQ_ERR_MAGIC;
	if (head[OFF_VERSION] != AMQ_CUCKOO_VERSION &&
		head[OFF_VERSION] != AMQ_CUCKOO_VERSION_COUNTERS)
		return AMQ_ERR_VERSION;
	if (head[OFF_SCHEME] != HASH_SCHEME_PG_EXTENDED)
		return AMQ_ERR_HASH_SCHEME;
	counters = get_u32(head + OFF_COUNTERS);
	if (get_u32(head + OFF_FLAGS) != 0 ||
		!all_zero(head + OFF_RESERVED, AMQ_CUCKOO_HEADER_SIZE - OFF_RESERVED) ||
		(head[OFF_VERSION] == AMQ_CUCKOO_VERSION && counters != 0))
		return AMQ_ERR_RESERVED;

	f = head[OFF_FP_BITS];
	tables = get_u32(head + OFF_TABLES);
	family = get_u32(head + OFF_FAMILY);
	capacity = get_u64(head + OFF_CAPACITY);
	fpr_bits = get_u64(head + OFF_TARGET_FPR);
	target_fpr = get_f64(head + OFF_TARGET_FPR);

	if (tables == 0)
	{
		/* the sizeless empty filter: every other field zero */
		if (head[OFF_BUCKET_SIZE] != 0 || f != 0 || capacity != 0 ||
			fpr_bits != 0 || get_u64(head + OFF_SEED) != 0 || family != 0)
			return AMQ_ERR_GEOMETRY;
	}
	else if (head[OFF_BUCKET_SIZE] != AMQ_CUCKOO_BUCKET_SIZE ||
			 f < AMQ_CUCKOO_MIN_FP_BITS || f > AMQ_CUCKOO_MAX_FP_BITS ||
			 capacity < 1 || !(target_fpr > 0.0 && target_fpr < 1.0))
		return AMQ_ERR_GEOMETRY;

	/* version 2: a counter section of a power of two entries ends the value */
	if (head[OFF_VERSION] == AMQ_CUCKOO_VERSION_COUNTERS)
	{
		size_t		section = (size_t) counters * AMQ_CUCKOO_COUNTER_SIZE;

		if (tables == 0 || counters < AMQ_CUCKOO_MIN_COUNTERS ||
			counters > AMQ_CUCKOO_MAX_COUNTERS || (counters & (counters - 1)) != 0)
			return AMQ_ERR_GEOMETRY;
		if (len - AMQ_CUCKOO_HEADER_SIZE < section)
			return AMQ_ERR_LENGTH;
		tables_end = len - section;
	}

	off = AMQ_CUCKOO_HEADER_SIZE;
	for (t = 0; t < tables; t++)
	{
		amq_cuckoo_table table;
		amq_status	status = check_table(read, ctx, off, tables_end, f,
										 &base_buckets, &table);

		if (status != AMQ_OK)
			return status;
		last_offset = off;
		off += table.bytes;
		items = add_saturating(items, table.items);
		slots += TABLE_SLOTS(table.buckets);
	}
	if (off != tables_end)
		return AMQ_ERR_LENGTH;
	for (t = 0; t < counters; t++)
	{
		const uint8_t *e = read(ctx, tables_end + (size_t) t * AMQ_CUCKOO_COUNTER_SIZE,
								AMQ_CUCKOO_COUNTER_SIZE);
		uint64_t	count = get_u64(e + C_COUNT);
		unsigned	level = e[C_LEVEL];

		if (count == 0)
		{
			if (!all_zero(e, AMQ_CUCKOO_COUNTER_SIZE))
				return AMQ_ERR_RESERVED;
			continue;
		}
		if (!all_zero(e + C_RESERVED, AMQ_CUCKOO_COUNTER_SIZE - C_RESERVED))
			return AMQ_ERR_RESERVED;
		if (level >= AMQ_CUCKOO_MAX_LEVELS || (base_buckets << level) > MAX_BUCKETS ||
			get_u64(e + C_BUCKET) >= (base_buckets << level) ||
			get_u32(e + C_FP) == 0 || get_u32(e + C_FP) > fp_mask(f))
			return AMQ_ERR_GEOMETRY;
		used++;
		counted = add_saturating(counted, count);
	}
	/* searches end at an empty entry, so at most half may be used */
	if (used > counters / 2)
		return AMQ_ERR_COUNT;
	items = add_saturating(items, counted);
	if (family == 0 && items != 0)
		return AMQ_ERR_UNBOUND_COUNT;
	/* only reachable by a value that was not built here */
	if (len > AMQ_CUCKOO_MAX_BYTES)
		return AMQ_ERR_TOO_LARGE;

	view->base = NULL;
	view->bytes = len;
	view->hash_scheme = head[OFF_SCHEME];
	view->fp_bits = f;
	view->family = family;
	view->tables = tables;
	view->seed = get_u64(head + OFF_SEED);
	view->capacity = capacity;
	view->target_fpr = target_fpr;
	view->items = items;
	view->slots = slots;
	view->base_buckets = base_buckets;
	view->last_offset = last_offset;
	view->tables_end = tables_end;
	view->counters = counters;
	view->counters_used = used;
	view->counted = counted;
	view->grow_counters = false;
	return AMQ_OK;
}

uint64_t
amq_cuckoo_open_reads(const uint8_t *header)
{
	uint64_t	counters = header[OFF_VERSION] == AMQ_CUCKOO_VERSION_COUNTERS ?
		get_u32(header + OFF_COUNTERS) : 0;

	return 1 + 2 * (uint64_t) get_u32(header + OFF_TABLES) + counters;
}

amq_status
amq_cuckoo_open(const uint8_t *buf, size_t len, amq_cuckoo_view *view)
{
	amq_status	status = amq_cuckoo_open_read(amq_read_in_memory, (void *) buf,
											  len, view);

	if (status == AMQ_OK)
		view->base = (uint8_t *) buf;
	return status;
}

/* ----------------------------------------------------------------
 * Adding, growing, deleting, probing.
 * ----------------------------------------------------------------
 */

static void
bind_family(amq_cuckoo_view *view, uint32_t family)
{
	if (view->family == 0)
	{
		view->family = family;
		put_u32(view->base + OFF_FAMILY, family);
	}
}

typedef enum
{
	COPY_COUNTED,
	COPY_NEEDS_ROOM,			/* the counter section must grow first */
	COPY_NOT_COUNTED
} copy_outcome;

/*
 * Counts one more copy of a value whose pair is full in every table, if the
 * value already has a counter, or else if its pair in some table holds
 * nothing but its fingerprint (held_once false) or a copy of it (held_once
 * true), at the largest such table's level.  Only reached when no slot is
 * free, so it costs nothing on the common path.
 */
static copy_outcome
count_copy(amq_cuckoo_view *view, uint64_t hash, bool held_once)
{
	pair_walk	w;
	amq_cuckoo_table t;
	bool		found = false;
	unsigned	level = 0;
	uint64_t	bucket = 0;

	walk_begin(&w, view, hash);
	while (walk_next(&w, &t))
	{
		uint64_t	lower = w.b1 < w.b2 ? w.b1 : w.b2;
		uint32_t	hole;

		if (counter_find(view, lower, w.fp, t.level, &hole) != UINT32_MAX)
		{
			/* an existing counter: use it */
			found = true;
			level = t.level;
			bucket = lower;
			break;
		}
		if ((!found || t.level > level) &&
			(held_once ? pair_holds(&t, w.f, w.fp, w.b1, w.b2) :
			 pair_all(&t, w.f, w.fp, w.b1, w.b2)))
		{
			found = true;
			level = t.level;
			bucket = lower;
		}
	}
	if (!found)
		return COPY_NOT_COUNTED;
	return counter_add(view, level, bucket, w.fp, 1) ? COPY_COUNTED : COPY_NEEDS_ROOM;
}

/* What amq_cuckoo_add returns after count_copy said outcome. */
static amq_status
counted_status(amq_cuckoo_view *view, copy_outcome outcome, uint32_t family)
{
	if (outcome == COPY_NEEDS_ROOM)
	{
		view->grow_counters = true;
		return AMQ_FULL;
	}
	bind_family(view, family);
	return AMQ_OK;
}

/*
 * Fewest copies of a fingerprint in its own pair that compact_pair counts
 * one of to make room.  A pair holds three copies of one fingerprint when a
 * value was stored many times; a filter of distinct values meets that only
 * when three values share a fingerprint and a pair, about (8/2^f)^2 per
 * pair, so its bytes stay as they were.
 */
#define COMPACT_MIN_COPIES	3

/*
 * Makes room for fp in its full pair (b1, b2) of table t, where nothing
 * else has room: the first slot (b1's, then b2's) whose fingerprint fills
 * at least COMPACT_MIN_COPIES slots of its own pair in t has that copy
 * counted instead, in the counter of that pair at t's level, and fp takes
 * the slot.  The copy moves from a slot of its pair to the pair's counter
 * of the same level, which probes, counts and deletions treat as one more
 * slot there, so nothing they answer changes.  Without this, copies that
 * filled a table before their counters started (a value's copies arriving
 * together fill its pair first) made the next new value grow the filter.
 */
static copy_outcome
compact_pair(amq_cuckoo_view *view, amq_cuckoo_table *t, uint32_t fp,
			 uint64_t b1, uint64_t b2)
{
	uint32_t	f = view->fp_bits;
	uint32_t	s[8];
	unsigned	i;

	bucket_read(t->words, b1, f, s);
	bucket_read(t->words, b2, f, s + 4);
	for (i = 0; i < (b2 == b1 ? 4u : 8u); i++)
	{
		uint64_t	b = i < 4 ? b1 : b2;
		uint32_t	e = s[i];
		uint64_t	alt = alt_in(t, b, e);
		unsigned	copies = copies_of(s + (i & 4), e);

		if (alt != b)
		{
			uint32_t	other[4];

			bucket_read(t->words, alt, f, other);
			copies += copies_of(other, e);
		}
		if (copies < COMPACT_MIN_COPIES)
			continue;
		if (!counter_add(view, t->level, b < alt ? b : alt, e, 1))
			return COPY_NEEDS_ROOM;
		/* one copy out of the slot, fp in: the table's items stay */
		slot_set(t->words, 4 * b + (i & 3), f, fp);
		return COPY_COUNTED;
	}
	return COPY_NOT_COUNTED;
}

/*
 * The rest of amq_cuckoo_add for a value whose pair (b1, b2) is full in
 * every table, last being the last table: a counted copy, or eviction in
 * the last table.  add_many comes here straight from its own placement
 * when the filter has one table, where nothing comes between the two.
 *
 * Copies are counted at two points.  Before evicting, only those of a value
 * that has a counter or whose pair holds nothing but its fingerprint: a
 * pair that also holds other fingerprints makes room by evicting them, so a
 * filter of distinct values keeps the bytes it always had (a new value
 * meets its own fingerprint in its full pair, another value's, about once
 * in 2^f / 8 such adds at high load, and counting it would give most
 * filters filled to their design load a counter section).  And where the
 * filter is full and would grow: then a pair holding one copy of the
 * fingerprint is enough, whatever shares the buckets, and failing that a
 * copy among many in the pair makes room (compact_pair).  So a value's
 * copies cost at most its first slot and a counter, and a filter of values
 * with many copies grows only when its distinct values need room.  A
 * filter of distinct values that grows meets that point once or twice per
 * growth, and one in 2^f / 8 per table of them counts a colliding value:
 * measured at p = 1%, 7 of 200 builds of 3,000 values at n = 500 got a
 * counter section.
 */
static amq_status
add_to_full_pair(amq_cuckoo_view *view, amq_cuckoo_table *last, uint64_t hash,
				 uint32_t fp, uint64_t b1, uint64_t b2, uint32_t family)
{
	uint64_t	rng;
	copy_outcome outcome;

	/*
	 * A value stored many times: count the copy.  In one table without
	 * counters, count_copy would only find a pair of nothing but fp, so
	 * that is checked first, cheaply.
	 */
	if (view->tables > 1 || view->counters != 0 ||
		pair_all(last, view->fp_bits, fp, b1, b2))
	{
		outcome = count_copy(view, hash, false);
		if (outcome != COPY_NOT_COUNTED)
			return counted_status(view, outcome, family);
	}

	/*
	 * Evict in the last table, unless its victim slot is taken: full, and
	 * the filter grows unless the copy can be counted.
	 */
	view->grow_counters = false;
	if (last->victim_fp != 0)
	{
		/*
		 * Not where a new counter section would cost more than the growth:
		 * in a tiny filter of distinct values a new value meets an equal
		 * fingerprint in its full pair often (half the time at f = 4), and
		 * a table of a few buckets is smaller than the smallest section.
		 */
		if (view->counters == 0 &&
			amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(view), view->fp_bits) <
			(size_t) AMQ_CUCKOO_MIN_COUNTERS * AMQ_CUCKOO_COUNTER_SIZE)
			return AMQ_FULL;
		outcome = count_copy(view, hash, true);
		if (outcome == COPY_NOT_COUNTED)
			outcome = compact_pair(view, last, fp, b1, b2);
		if (outcome != COPY_NOT_COUNTED)
			return counted_status(view, outcome, family);
		return AMQ_FULL;
	}
	if (!short_path_insert(last, view->fp_bits, fp, b1, b2))
	{
		rng = hash;
		if (next_random(&rng) >> 63)
			b1 = b2;
		kick_insert(last, view->fp_bits, fp, b1, &rng);
	}
	bind_family(view, family);
	count_item(view, last, 1);
	return AMQ_OK;
}

amq_status
amq_cuckoo_add(amq_cuckoo_view *view, uint64_t hash, uint32_t family)
{
	uint32_t	f = view->fp_bits;
	pair_walk	w;
	amq_cuckoo_table t;
	amq_cuckoo_table last;
	uint64_t	b1;
	uint64_t	b2;

	if (view->tables == 0)
		return AMQ_ERR_NO_GEOMETRY;
	walk_begin(&w, view, hash);

	/*
	 * A free slot in the value's buckets: in the last table first, which has
	 * the most room (and where the copies of a value stored many times end
	 * up, so adding one more costs O(1) bucket reads, not one per table),
	 * then in the others.
	 */
	table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
	pair_in(&last, w.mixed, w.fp, &b1, &b2);
	if (place(&last, f, w.fp, b1, b2))
	{
		bind_family(view, family);
		count_item(view, &last, 1);
		return AMQ_OK;
	}
	while (w.left > 1 && walk_next(&w, &t)) /* all but the last */
	{
		if (place(&t, f, w.fp, w.b1, w.b2))
		{
			bind_family(view, family);
			count_item(view, &t, 1);
			return AMQ_OK;
		}
	}
	return add_to_full_pair(view, &last, hash, w.fp, b1, b2, family);
}

/*
 * Counts n values that place put into table t, as n calls of count_item and
 * bind_family would.  Like count_item it never counts past the table's
 * slots: a value read from outside may pass validation with a count above
 * its fingerprints, and then its free slots are not all uncounted.
 */
static void
count_placed(amq_cuckoo_view *view, amq_cuckoo_table *t, uint64_t n,
			 uint32_t family)
{
	uint64_t	room;

	if (n == 0)
		return;
	bind_family(view, family);
	room = TABLE_SLOTS(t->buckets) - t->items;	/* items <= slots: validated */
	if (n > room)
		n = room;
	t->items += n;
	view->items = add_saturating(view->items, n);
	put_u64(t->header + T_ITEMS, t->items);
}

/* How far ahead add_many requests a value's buckets, in values. */
#define PREFETCH_DISTANCE	8

/* A value add_many has located in the last table: its pair and fingerprint. */
typedef struct located
{
	uint64_t	b1;
	uint64_t	b2;
	uint32_t	fp;
} located;

/*
 * Locates a value in table t and requests both its buckets for writing:
 * place reads both.  Always inlined: GCC deletes calls to a function whose
 * only effect is a prefetch (see amq_prefetch_write; test/prefetch_check.sh).
 */
static AMQ_ALWAYS_INLINE void
locate_and_request(const amq_cuckoo_table *t, uint32_t f, uint64_t hash,
				   located *v)
{
	uint64_t	mixed = amq_fmix64(hash);

	v->fp = fingerprint_of_mixed(mixed, f);
	pair_in(t, mixed, v->fp, &v->b1, &v->b2);
	prefetch_bucket(t, f, v->b1);
	prefetch_bucket(t, f, v->b2);
}

/*
 * Adds hashes in order, each exactly as amq_cuckoo_add would: a value whose
 * pair in the last table has a free slot goes to place's bucket there,
 * which is what amq_cuckoo_add does first, without the walk over the
 * tables; only a value whose pair in the last table is full takes
 * amq_cuckoo_add's whole path (in a filter of one table, only its part
 * after the placement: add_to_full_pair).  Below the filter's design load
 * nearly every value takes the short one.  Each value is located once,
 * PREFETCH_DISTANCE values before its turn.  The short path's item counts
 * and family are written back once, before the whole path runs (it reads
 * them) and before returning, not once per value.
 */
amq_status
amq_cuckoo_add_many(amq_cuckoo_view *view, const uint64_t *hashes,
					size_t count, uint32_t family, size_t *done)
{
	uint32_t	f = view->fp_bits;
	amq_cuckoo_table last;
	located		ring[PREFETCH_DISTANCE];
	uint64_t	placed = 0;		/* by the short path, not yet counted */
	amq_status	status = AMQ_OK;
	size_t		i;

	*done = 0;
	if (view->tables == 0)
		return AMQ_ERR_NO_GEOMETRY;

	table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
	for (i = 0; i < count && i < PREFETCH_DISTANCE; i++)
		locate_and_request(&last, f, hashes[i], &ring[i]);
	for (i = 0; i < count; i++)
	{
		located    *v = &ring[i % PREFETCH_DISTANCE];

		if (place(&last, f, v->fp, v->b1, v->b2))
			placed++;
		else
		{
			count_placed(view, &last, placed, family);
			placed = 0;
			status = view->tables == 1 ?
				add_to_full_pair(view, &last, hashes[i], v->fp, v->b1, v->b2, family) :
				amq_cuckoo_add(view, hashes[i], family);
			if (status != AMQ_OK)
				break;
			/* that may have changed the last table's header */
			table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
		}
		if (i + PREFETCH_DISTANCE < count)
			locate_and_request(&last, f, hashes[i + PREFETCH_DISTANCE], v);
	}
	count_placed(view, &last, placed, family);
	*done = i;
	return status;
}

uint64_t
amq_cuckoo_growth_buckets(const amq_cuckoo_view *view)
{
	amq_cuckoo_table last;

	table_decode(view->base + view->last_offset, view->fp_bits, view->base_buckets, &last);
	if (last.items >= 2 * last.buckets && last.buckets <= MAX_BUCKETS / 2)
		return 2 * last.buckets;
	return last.buckets;
}

void
amq_cuckoo_append_table(amq_cuckoo_view *view, uint64_t buckets)
{
	size_t		bytes = amq_cuckoo_table_bytes(buckets, view->fp_bits);
	uint8_t    *p = open_table_gap(view, bytes);

	memset(p, 0, bytes);
	write_table_header(p, buckets);
	view->last_offset = (size_t) (p - view->base);
	view->tables++;
	view->slots += TABLE_SLOTS(buckets);
	put_u32(view->base + OFF_TABLES, view->tables);
}

size_t
amq_cuckoo_growth_bytes(const amq_cuckoo_view *view)
{
	size_t		table;

	if (view->grow_counters)
		return counters_growth_bytes(view);
	table = amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(view), view->fp_bits);
	return view->bytes > SIZE_MAX - table ? SIZE_MAX : view->bytes + table;
}

void
amq_cuckoo_grow(amq_cuckoo_view *view)
{
	if (view->grow_counters)
		counters_grow(view);
	else
		amq_cuckoo_append_table(view, amq_cuckoo_growth_buckets(view));
	view->grow_counters = false;
}

/*
 * Growth as every caller needs it: add until the filter is full, ask the
 * caller for room, grow as asked, go on.  Each growth leaves the next add an
 * empty table or a counter section with room, so every round adds at least
 * one hash and the loop ends.
 */
amq_status
amq_cuckoo_add_growing(amq_cuckoo_view *view, const uint64_t *hashes,
					   size_t count, uint32_t family,
					   amq_cuckoo_reserve_fn reserve, void *ctx, size_t *done)
{
	*done = 0;
	for (;;)
	{
		size_t		added;
		amq_status	status = amq_cuckoo_add_many(view, hashes + *done,
												 count - *done, family, &added);
		size_t		need;
		uint8_t    *base;
		bool		counters;

		*done += added;
		if (status != AMQ_FULL)
			return status;
		counters = view->grow_counters;
		need = amq_cuckoo_growth_bytes(view);
		if (need > AMQ_CUCKOO_MAX_BYTES)
			return AMQ_ERR_TOO_LARGE;
		base = reserve(ctx, need);
		if (base == NULL)
			return AMQ_ERR_TOO_LARGE;
		/* reserve may have opened the filter again, which forgets the wish */
		view->base = base;
		view->grow_counters = counters;
		amq_cuckoo_grow(view);
	}
}

/* After a slot of t was freed: try to move its victim back into a bucket. */
static void
rehome_victim(amq_cuckoo_table *t, uint32_t f, uint64_t seed)
{
	uint32_t	fp = t->victim_fp;
	uint64_t	b = t->victim_bucket;
	uint64_t	alt;
	uint64_t	rng = seed ^ fp;

	if (fp == 0)
		return;
	set_victim(t, 0, 0);
	alt = alt_in(t, b, fp);
	if (!place(t, f, fp, b, alt) && !short_path_insert(t, f, fp, b, alt))
		kick_insert(t, f, fp, b, &rng);
}

/*
 * Removes one copy of the value, from the largest table that holds its
 * fingerprint in the value's pair (the last such among tables of that size).
 *
 * The order matters once tables of different sizes exist.  The copy found
 * may belong to another value y with the same fingerprint and pair in that
 * table; then the value's own copy is in that table or a smaller one, since
 * no larger table matched.  Tables nest (see amq_cuckoo_alternate): values
 * that share a pair in a table share it in every smaller table, so y still
 * finds the copy left behind.  Searching smaller tables first would remove
 * y's copy from a small table while leaving the value's own copy in a large
 * one, where y does not look: a false negative for y.
 */
bool
amq_cuckoo_delete(amq_cuckoo_view *view, uint64_t hash)
{
	uint32_t	f = view->fp_bits;
	pair_walk	w;
	amq_cuckoo_table t;
	amq_cuckoo_table best = {0};
	bool		found = false;
	bool		best_is_victim = false;
	uint64_t	best_pos = 0;
	uint32_t	counter = UINT32_MAX;
	unsigned	counter_level = 0;

	walk_begin(&w, view, hash);
	while (walk_next(&w, &t))
	{
		uint64_t	b = w.b1;
		int			s;

		/* a counter is a slot of its level: at equal levels it goes first */
		if (view->counters && (counter == UINT32_MAX || t.level > counter_level))
		{
			uint32_t	hole;
			uint32_t	i = counter_find(view, w.b1 < w.b2 ? w.b1 : w.b2,
										 w.fp, t.level, &hole);

			if (i != UINT32_MAX)
			{
				counter = i;
				counter_level = t.level;
			}
		}
		if (found && t.level < best.level)
			continue;
		if ((s = bucket_find(t.words, b, f, w.fp)) < 0 &&
			(s = bucket_find(t.words, w.b2, f, w.fp)) >= 0)
			b = w.b2;
		if (s >= 0)
		{
			best = t;
			best_is_victim = false;
			best_pos = 4 * b + (unsigned) s;
			found = true;
		}
		else if (victim_in_pair(&t, w.fp, w.b1, w.b2))
		{
			best = t;
			best_is_victim = true;
			found = true;
		}
	}
	if (counter != UINT32_MAX && (!found || counter_level >= best.level))
	{
		counter_remove_one(view, counter);
		return true;
	}
	if (!found)
		return false;
	if (best_is_victim)
		set_victim(&best, 0, 0);
	else
	{
		slot_set(best.words, best_pos, f, 0);
		rehome_victim(&best, f, hash);
	}
	count_item(view, &best, -1);
	return true;
}

/*
 * Copies of fp among the four fingerprints of a bucket, or with count false
 * just whether there is one (fewer instructions on the probe's hot path).
 */
static inline unsigned
copies_or_any(const uint32_t s[4], uint32_t fp, bool count)
{
	if (!count)
		return s[0] == fp || s[1] == fp || s[2] == fp || s[3] == fp;
	return copies_of(s, fp);
}

/* The fingerprints of bucket b of the table whose words start at words_off. */
static AMQ_ALWAYS_INLINE void
bucket_read_via(amq_read_fn read, void *ctx, size_t words_off, uint64_t b,
				uint32_t f, uint32_t out[4])
{
	uint64_t	bit = b * 4 * f;
	size_t		first = (size_t) (bit >> 3);

	/*
	 * up to the 8-byte load of the last slot: inside the words
	 * (docs/format.md)
	 */
	bucket_read_at(read(ctx, words_off + first,
						(size_t) ((bit + 3 * f) >> 3) + 8 - first),
				   (unsigned) (bit & 7), f, out);
}

/*
 * The count of a value (every table: the slots of its pair holding its
 * fingerprint, and the victim), or with count false just whether it is
 * nonzero, stopping at the first copy.  Reads each table's header and the
 * value's two buckets there through read, so the same code probes a filter
 * in memory (inlined, the reads are loads) and one that is not
 * (amq_cuckoo_may_contain_read).
 */
static AMQ_ALWAYS_INLINE uint64_t
lookup(const amq_cuckoo_view *view, uint64_t hash, bool count,
	   amq_read_fn read, void *ctx)
{
	uint64_t	mixed = amq_fmix64(hash);
	uint32_t	f = view->fp_bits;
	uint32_t	fp;
	size_t		off = AMQ_CUCKOO_HEADER_SIZE;
	uint64_t	n = 0;
	uint32_t	left;
	uint32_t	levels_seen = 0;

	if (view->tables == 0)
		return 0;
	fp = fingerprint_of_mixed(mixed, f);
	for (left = view->tables; left > 0; left--)
	{
		amq_cuckoo_table t;
		size_t		words_off = off + AMQ_CUCKOO_TABLE_HEADER_SIZE;
		uint32_t	slots[4];
		uint64_t	b1;
		uint64_t	b2;

		table_fields(read(ctx, off, AMQ_CUCKOO_TABLE_HEADER_SIZE), f,
					 view->base_buckets, &t);
		pair_in(&t, mixed, fp, &b1, &b2);
		bucket_read_via(read, ctx, words_off, b1, f, slots);
		n += copies_or_any(slots, fp, count);
		if (b2 != b1)
		{
			if (n != 0 && !count)
				return n;
			bucket_read_via(read, ctx, words_off, b2, f, slots);
			n += copies_or_any(slots, fp, count);
		}
		if (victim_in_pair(&t, fp, b1, b2))
			n++;
		/* a level's counter once, however many tables share the level */
		if (view->counters_used && (count || n == 0) &&
			!(levels_seen & (UINT32_C(1) << t.level)))
		{
			levels_seen |= UINT32_C(1) << t.level;
			n = add_saturating(n, counted_via(view, read, ctx, t.level,
											  b1 < b2 ? b1 : b2, fp));
		}
		if (n != 0 && !count)
			return n;
		off += t.bytes;
	}
	return n;
}

bool
amq_cuckoo_may_contain(const amq_cuckoo_view *view, uint64_t hash)
{
	return lookup(view, hash, false, amq_read_in_memory, view->base) != 0;
}

uint64_t
amq_cuckoo_count(const amq_cuckoo_view *view, uint64_t hash)
{
	return lookup(view, hash, true, amq_read_in_memory, view->base);
}

bool
amq_cuckoo_may_contain_read(const amq_cuckoo_view *view, uint64_t hash,
							amq_read_fn read, void *ctx)
{
	return lookup(view, hash, false, read, ctx) != 0;
}

uint64_t
amq_cuckoo_count_read(const amq_cuckoo_view *view, uint64_t hash,
					  amq_read_fn read, void *ctx)
{
	return lookup(view, hash, true, read, ctx);
}

/* ----------------------------------------------------------------
 * Merging.
 *
 * A merge runs in steps, each doing about the work it is given, so that the
 * caller can check for interrupts in between: a unit is one bucket read, one
 * destination table tried, one slot written by an eviction walk or one table
 * header decoded, and zeroing or copying a table counts one unit per bucket.
 * First the destination's tables are indexed by level, once: for each level
 * the offsets of its last AMQ_CUCKOO_MERGE_WINDOW tables, its window.  Then
 * each source table in turn comes over whole, when the destination has no
 * table of its level, or is folded in, fingerprint by fingerprint (fold).
 *
 * A fingerprint is tried in the tables of its level's window only, oldest
 * first, not in every table of its level.  Trying them all costs each
 * fingerprint a pass over the destination's tables, which made a union of
 * many filters, or of a filter with thousands of same-size tables (many
 * copies of one value), quadratic: minutes, and no interrupt check.  With the
 * window a fingerprint costs at most AMQ_CUCKOO_MERGE_WINDOW tries, one
 * eviction walk and a write to the spill table.  The tables left out are the
 * oldest of their level, filled by the merges or insertions that came after
 * them; where a size has no more tables than the window, which is every
 * filter that only grew and every union of a few filters, the result is the
 * one trying every table gives.  No fingerprint is lost either way: every
 * one lands in a table of its own size at its own bucket pair, which is all
 * lookups and deletion need (see the file header).
 *
 * The spill table is appended when the first fingerprint of a source table
 * needs it, not before, and the merge asks the caller's reserve function for
 * the room then, so a merge needs memory for its result only.
 * ----------------------------------------------------------------
 */

/* A table has at most MAX_BUCKETS < 2^31 buckets: its level is below 32. */
typedef char amq_cuckoo_levels_fit[(MAX_BUCKETS >> (AMQ_CUCKOO_MAX_LEVELS - 1)) == 0 ? 1 : -1];

amq_status
amq_cuckoo_compatible(const amq_cuckoo_view *dst, const amq_cuckoo_view *src)
{
	amq_cuckoo_table a;
	amq_cuckoo_table b;

	if (dst->tables == 0 || src->tables == 0)
		return AMQ_OK;
	amq_cuckoo_table_first(dst, &a);
	amq_cuckoo_table_first(src, &b);
	if (dst->fp_bits != src->fp_bits || dst->seed != src->seed ||
		a.buckets != b.buckets)
		return AMQ_ERR_GEOMETRY_MISMATCH;
	if (dst->family != 0 && src->family != 0 && dst->family != src->family)
		return AMQ_ERR_FAMILY_MISMATCH;
	return AMQ_OK;
}

amq_status
amq_cuckoo_merge_begin(amq_cuckoo_merge *m, const amq_cuckoo_view *dst,
					   const amq_cuckoo_view *src,
					   amq_cuckoo_reserve_fn reserve, void *ctx)
{
	amq_status	status = amq_cuckoo_compatible(dst, src);

	if (status != AMQ_OK)
		return status;
	if (dst->tables == 0 && src->tables != 0)
		return AMQ_ERR_NO_GEOMETRY;
	m->reserve = reserve;
	m->reserve_ctx = ctx;
	m->work = 0;
	m->need = 0;
	m->index_offset = AMQ_CUCKOO_HEADER_SIZE;
	m->index_left = dst->tables;
	memset(m->window_len, 0, sizeof(m->window_len));
	m->src_table = 0;
	m->src_offset = AMQ_CUCKOO_HEADER_SIZE;
	m->next_bucket = 0;
	m->folding = false;
	m->kicking = false;
	m->spill_offset = 0;
	m->src_counter = 0;
	return AMQ_OK;
}

/* Makes the table at offset the newest of its level's window. */
static void
window_push(amq_cuckoo_merge *m, unsigned level, size_t offset)
{
	uint32_t	n = m->window_len[level];

	if (n == AMQ_CUCKOO_MERGE_WINDOW)
	{
		memmove(&m->window[level][0], &m->window[level][1],
				(n - 1) * sizeof(m->window[level][0]));
		n--;
	}
	m->window[level][n] = offset;
	m->window_len[level] = n + 1;
}

/* A buffer of need bytes for dst (SIZE_MAX: past the limit), from the caller. */
static amq_status
merge_reserve_total(amq_cuckoo_merge *m, amq_cuckoo_view *dst, size_t need)
{
	uint8_t    *base;

	m->need = need;
	if (need > AMQ_CUCKOO_MAX_BYTES)
		return AMQ_ERR_TOO_LARGE;
	base = m->reserve(m->reserve_ctx, need);
	if (base == NULL)
		return AMQ_ERR_TOO_LARGE;
	dst->base = base;
	return AMQ_OK;
}

/* Room for bytes more in dst, from the caller. */
static amq_status
merge_reserve(amq_cuckoo_merge *m, amq_cuckoo_view *dst, size_t bytes)
{
	if (dst->bytes > AMQ_CUCKOO_MAX_BYTES || bytes > AMQ_CUCKOO_MAX_BYTES - dst->bytes)
	{
		m->need = SIZE_MAX;
		return AMQ_ERR_TOO_LARGE;
	}
	return merge_reserve_total(m, dst, dst->bytes + bytes);
}

/*
 * Counts amount copies of fp for the pair with lower bucket at level in
 * dst, growing its counter section first if it must.
 */
static amq_status
merge_count(amq_cuckoo_merge *m, amq_cuckoo_view *dst, unsigned level,
			uint64_t bucket, uint32_t fp, uint64_t amount)
{
	while (!counter_add(dst, level, bucket, fp, amount))
	{
		amq_status	status = merge_reserve_total(m, dst, counters_growth_bytes(dst));

		if (status != AMQ_OK)
			return status;
		counters_grow(dst);
		m->work += dst->counters;
	}
	return AMQ_OK;
}

/*
 * Eviction walk in table t that is undone if it does not end, leaving t as
 * it was.  fp's pair (b, ...) is full.  *nlog counts the slots written.
 */
static bool
kick_or_undo(amq_cuckoo_merge *m, amq_cuckoo_table *t, uint32_t f,
			 uint32_t fp, uint64_t b, uint64_t *rng, int *nlog)
{
	int			n = 0;
	bool		done = kick_walk(t, f, &fp, &b, rng, m, &n);

	*nlog = n;
	if (done)
		return true;
	while (n-- > 0)
		slot_set(t->words, m->path_pos[n], f, m->path_fp[n]);
	*nlog *= 2;
	return false;
}

/*
 * Folds fingerprint fp of bucket b of source table st (its victim if
 * is_victim) into dst: a free slot of its pair in a table of the level's
 * window, oldest first; else an eviction walk in the newest of them, until
 * one walk fails; else the spill table's bucket b (or its victim slot, for
 * the source victim), appending the spill table first if this is its first
 * fingerprint.
 */
static amq_status
fold(amq_cuckoo_merge *m, amq_cuckoo_view *dst, const amq_cuckoo_table *st,
	 uint32_t fp, uint64_t b, bool is_victim)
{
	uint32_t	f = dst->fp_bits;
	unsigned	level = st->level;
	uint32_t	n = m->window_len[level];
	amq_cuckoo_table t = {0};
	amq_cuckoo_table spill;
	uint64_t	rng = ((uint64_t) fp << 32) ^ b;
	uint32_t	i;
	int			slot;

	for (i = 0; i < n; i++)
	{
		table_decode(dst->base + m->window[level][i], f, dst->base_buckets, &t);
		m->work++;
		if (place(&t, f, fp, b, alt_in(&t, b, fp)))
		{
			count_item(dst, &t, 1);
			return AMQ_OK;
		}
	}
	/*
	 * Many copies of one value: a counter for its pair, or a pair of nothing
	 * but this fingerprint, takes it, as when adding.
	 */
	{
		uint64_t	alt = alt_in(&t, b, fp);
		uint64_t	lower = b < alt ? b : alt;
		uint32_t	hole;
		bool		count = counter_find(dst, lower, fp, level, &hole) != UINT32_MAX;

		for (i = 0; i < n && !count; i++)
		{
			amq_cuckoo_table w;

			table_decode(dst->base + m->window[level][i], f, dst->base_buckets, &w);
			count = pair_all(&w, f, fp, b, alt);
		}
		m->work += n;
		if (count)
			return merge_count(m, dst, level, lower, fp, 1);
	}

	/* t is the newest table of the level now */
	if (m->kicking)
	{
		int			nlog;
		bool		placed = kick_or_undo(m, &t, f, fp, b, &rng, &nlog);

		m->work += (uint64_t) nlog;
		if (placed)
		{
			count_item(dst, &t, 1);
			return AMQ_OK;
		}
		/* this table is saturated: stop spending evictions on it */
		m->kicking = false;
	}
	if (m->spill_offset == 0)
	{
		amq_status	status = merge_reserve(m, dst,
										   amq_cuckoo_table_bytes(st->buckets, f));

		if (status != AMQ_OK)
			return status;
		amq_cuckoo_append_table(dst, st->buckets);
		m->spill_offset = dst->last_offset;
		m->work += st->buckets;
	}
	table_decode(dst->base + m->spill_offset, f, dst->base_buckets, &spill);
	m->work++;
	/*
	 * Bucket b itself, never its emptier alternate: the spill's bucket b must
	 * keep room for the fingerprints of source bucket b alone.
	 */
	if (is_victim && spill.victim_fp == 0)
		set_victim(&spill, fp, b);
	else if ((slot = bucket_find(spill.words, b, f, 0)) >= 0)
		slot_set(spill.words, 4 * b + (unsigned) slot, f, fp);
	else
		set_victim(&spill, fp, b);	/* cannot happen: see the file header */
	count_item(dst, &spill, 1);
	return AMQ_OK;
}

/* Appends a copy of source table st to dst: dst has no table of its size. */
static amq_status
copy_table(amq_cuckoo_merge *m, amq_cuckoo_view *dst,
		   const amq_cuckoo_table *st)
{
	amq_status	status = merge_reserve(m, dst, st->bytes);
	uint8_t    *p;

	if (status != AMQ_OK)
		return status;
	p = open_table_gap(dst, st->bytes);
	memcpy(p, st->header, st->bytes);
	dst->last_offset = (size_t) (p - dst->base);
	window_push(m, st->level, dst->last_offset);
	dst->tables++;
	dst->slots += TABLE_SLOTS(st->buckets);
	dst->items = add_saturating(dst->items, st->items);
	put_u32(dst->base + OFF_TABLES, dst->tables);
	m->work += st->buckets;
	return AMQ_OK;
}

amq_status
amq_cuckoo_merge_step(amq_cuckoo_merge *m, amq_cuckoo_view *dst,
					  const amq_cuckoo_view *src, uint64_t max_work,
					  bool *done)
{
	uint32_t	f = dst->fp_bits;
	uint64_t	stop = add_saturating(m->work, max_work ? max_work : 1);
	amq_status	status;

	*done = false;

	/*
	 * A filter bound to no family has had no value added: whatever its slots
	 * hold (only a value built elsewhere can hold anything), it is empty.
	 * Folding such slots into dst would also count items in a dst that may
	 * be unbound itself, which the validator rightly rejects.
	 */
	if (src->tables == 0 || src->family == 0)
	{
		*done = true;
		return AMQ_OK;
	}
	bind_family(dst, src->family);

	/* the destination's tables, by level */
	while (m->index_left > 0)
	{
		amq_cuckoo_table t;

		if (m->work >= stop)
			return AMQ_OK;
		table_decode(dst->base + m->index_offset, f, dst->base_buckets, &t);
		window_push(m, t.level, m->index_offset);
		m->index_offset += t.bytes;
		m->index_left--;
		m->work++;
	}

	while (m->src_table < src->tables)
	{
		amq_cuckoo_table st;

		if (m->work >= stop)
			return AMQ_OK;
		table_decode(src->base + m->src_offset, f, src->base_buckets, &st);
		if (!m->folding)
		{
			m->work++;
			if (m->window_len[st.level] == 0)
			{
				status = copy_table(m, dst, &st);
				if (status != AMQ_OK)
					return status;
				m->src_table++;
				m->src_offset += st.bytes;
				continue;
			}
			m->folding = true;
			m->kicking = true;
			m->spill_offset = 0;
			m->next_bucket = 0;
		}
		while (m->next_bucket < st.buckets)
		{
			uint32_t	fps[4];
			unsigned	s;

			if (m->work >= stop)
				return AMQ_OK;
			bucket_read(st.words, m->next_bucket, f, fps);
			for (s = 0; s < 4; s++)
			{
				if (fps[s] != 0 &&
					(status = fold(m, dst, &st, fps[s], m->next_bucket,
								   false)) != AMQ_OK)
					return status;
			}
			m->next_bucket++;
			m->work++;
		}
		if (st.victim_fp != 0 &&
			(status = fold(m, dst, &st, st.victim_fp, st.victim_bucket,
						   true)) != AMQ_OK)
			return status;
		/* a spill table is one more table of its level for what follows */
		if (m->spill_offset != 0)
			window_push(m, st.level, m->spill_offset);
		m->folding = false;
		m->src_table++;
		m->src_offset += st.bytes;
	}

	/* the source's counters add to the destination's */
	while (m->src_counter < src->counters)
	{
		const uint8_t *e = counter_at(src, m->src_counter);
		uint64_t	count = get_u64(e + C_COUNT);

		if (m->work >= stop)
			return AMQ_OK;
		if (count != 0 &&
			(status = merge_count(m, dst, e[C_LEVEL], get_u64(e + C_BUCKET),
								  get_u32(e + C_FP), count)) != AMQ_OK)
			return status;
		m->src_counter++;
		m->work++;
	}
	*done = true;
	return AMQ_OK;
}

/* ----------------------------------------------------------------
 * Statistics.
 * ----------------------------------------------------------------
 */

void
amq_cuckoo_stats_begin(amq_cuckoo_stats_acc *acc)
{
	acc->occupied = 0;
	acc->table_occupied = 0;
	acc->miss = 1.0;
}

void
amq_cuckoo_stats_accumulate(const amq_cuckoo_view *view,
							const amq_cuckoo_table *table,
							amq_cuckoo_stats_acc *acc,
							uint64_t from, uint64_t to)
{
	uint64_t	b;

	for (b = from; b < to; b++)
	{
		uint32_t	s[4];

		bucket_read(table->words, b, view->fp_bits, s);
		acc->table_occupied += (s[0] != 0) + (s[1] != 0) + (s[2] != 0) + (s[3] != 0);
	}
}

void
amq_cuckoo_stats_table_done(const amq_cuckoo_view *view,
							const amq_cuckoo_table *table,
							amq_cuckoo_stats_acc *acc)
{
	double		alpha = (double) acc->table_occupied / (4.0 * (double) table->buckets);
	double		fpr = table_fpr(view->fp_bits, alpha);

	/* the victim is one more slot an absent value may meet */
	if (table->victim_fp != 0)
	{
		acc->table_occupied++;
		fpr += 1.0 / (ldexp(1.0, (int) view->fp_bits) - 1.0) *
			2.0 / (double) table->buckets;
		if (fpr > 1.0)
			fpr = 1.0;
	}
	acc->miss *= 1.0 - fpr;
	acc->occupied += acc->table_occupied;
	acc->table_occupied = 0;
}

void
amq_cuckoo_stats_end(const amq_cuckoo_view *view,
					 const amq_cuckoo_stats_acc *acc, amq_cuckoo_stats *out)
{
	out->occupied = acc->occupied;
	out->load_factor = view->slots ? (double) acc->occupied / (double) view->slots : 0.0;
	out->est_fpr = view->tables ? 1.0 - acc->miss : 0.0;
}
