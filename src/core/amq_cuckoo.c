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
 *	 amq_cuckoo_merge.c); evictions during a fold are recorded and undone if
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

#include "amq_cuckoo_internal.h"

/* ----------------------------------------------------------------
 * Geometry and the hash-to-slot mapping, for callers.
 * ----------------------------------------------------------------
 */

size_t
amq_cuckoo_table_bytes(uint64_t buckets, uint32_t fp_bits)
{
	if (buckets > MAX_BUCKETS || fp_bits > AMQ_CUCKOO_MAX_FP_BITS)
		return SIZE_MAX;
	return AMQ_CUCKOO_TABLE_HEADER_SIZE + (size_t) table_words(buckets, fp_bits) * 8;
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

uint64_t
amq_cuckoo_alternate(uint64_t bucket, uint32_t fp, uint64_t base_buckets,
					 unsigned level)
{
	return alternate(bucket, fp, base_buckets, level);
}

/* ----------------------------------------------------------------
 * Tables.
 * ----------------------------------------------------------------
 */

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

/*
 * Counts one more (delta = 1) or one fewer (delta = -1) item in a table and
 * in the view.  Table counts stay within [0, slots] whatever a crafted value
 * claimed, so the result always validates.
 */
void
amq_cuckoo_count_item(amq_cuckoo_view *view, amq_cuckoo_table *t, int delta)
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

/* Parks fp, from bucket, in t's victim slot; fp = 0 empties the slot. */
void
amq_cuckoo_set_victim(amq_cuckoo_table *t, uint32_t fp, uint64_t bucket)
{
	t->victim_fp = fp;
	t->victim_bucket = fp ? bucket : 0;
	put_u32(t->header + T_VICTIM_FP, t->victim_fp);
	put_u64(t->header + T_VICTIM_BUCKET, t->victim_bucket);
}

/*
 * Makes a gap of bytes at the end of the tables, moving the counter section
 * behind it, and returns the gap.  The buffer has room for view->bytes +
 * bytes.
 */
uint8_t *
amq_cuckoo_open_table_gap(amq_cuckoo_view *view, size_t bytes)
{
	uint8_t    *gap = view->base + view->tables_end;

	if (view->counters)
		memmove(gap + bytes, gap, view->bytes - view->tables_end);
	view->tables_end += bytes;
	view->bytes += bytes;
	return gap;
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
		amq_cuckoo_set_victim(t, fp, b);
}

/*
 * Eviction walk in table t that is undone if it does not end, leaving t as
 * it was.  fp's pair (b, ...) is full.  *nlog counts the slots written.
 */
bool
amq_cuckoo_kick_or_undo(amq_cuckoo_merge *m, amq_cuckoo_table *t, uint32_t f,
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
double
amq_cuckoo_table_fpr(uint32_t f, double alpha)
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
	while (f < AMQ_CUCKOO_MAX_FP_BITS && amq_cuckoo_table_fpr(f, alpha) > p)
		f++;

	bytes = amq_cuckoo_table_bytes(buckets, f);
	if (bytes > AMQ_CUCKOO_MAX_BYTES - AMQ_CUCKOO_HEADER_SIZE)
		return AMQ_ERR_TOO_LARGE;
	bytes += AMQ_CUCKOO_HEADER_SIZE;

	out->buckets = buckets;
	out->fp_bits = f;
	out->bytes = bytes;
	out->bits_per_key = 8.0 * (double) bytes / (double) n;
	out->expected_fpr = amq_cuckoo_table_fpr(f, alpha);
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

		if (amq_cuckoo_counter_find(view, lower, w.fp, t.level,
									&hole) != UINT32_MAX)
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
	return amq_cuckoo_counter_add(view, level, bucket, w.fp, 1) ?
		COPY_COUNTED : COPY_NEEDS_ROOM;
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
		if (!amq_cuckoo_counter_add(view, t->level, b < alt ? b : alt, e, 1))
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
	amq_cuckoo_count_item(view, last, 1);
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
		amq_cuckoo_count_item(view, &last, 1);
		return AMQ_OK;
	}
	while (w.left > 1 && walk_next(&w, &t)) /* all but the last */
	{
		if (place(&t, f, w.fp, w.b1, w.b2))
		{
			bind_family(view, family);
			amq_cuckoo_count_item(view, &t, 1);
			return AMQ_OK;
		}
	}
	return add_to_full_pair(view, &last, hash, w.fp, b1, b2, family);
}

/*
 * Counts n values that place put into table t, as n calls of
 * amq_cuckoo_count_item and bind_family would.  Like amq_cuckoo_count_item
 * it never counts past the table's slots: a value read from outside may
 * pass validation with a count above its fingerprints, and then its free
 * slots are not all uncounted.
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
	uint8_t    *p = amq_cuckoo_open_table_gap(view, bytes);

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
		return amq_cuckoo_counters_growth_bytes(view);
	table = amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(view), view->fp_bits);
	return view->bytes > SIZE_MAX - table ? SIZE_MAX : view->bytes + table;
}

void
amq_cuckoo_grow(amq_cuckoo_view *view)
{
	if (view->grow_counters)
		amq_cuckoo_counters_grow(view);
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
	amq_cuckoo_set_victim(t, 0, 0);
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
			uint32_t	i = amq_cuckoo_counter_find(view,
													w.b1 < w.b2 ? w.b1 : w.b2,
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
		amq_cuckoo_counter_remove_one(view, counter);
		return true;
	}
	if (!found)
		return false;
	if (best_is_victim)
		amq_cuckoo_set_victim(&best, 0, 0);
	else
	{
		slot_set(best.words, best_pos, f, 0);
		rehome_victim(&best, f, hash);
	}
	amq_cuckoo_count_item(view, &best, -1);
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

	/* up to the 8-byte load of the last slot: inside the words (FORMAT.md) */
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
