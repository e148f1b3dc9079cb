/*
 * amq_cuckoo.c
 *		Cuckoo filter core: the design, the serialized format and its
 *		validator, sizing, construction, and tables decoded for callers.
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
 *	 near the design load (see place, in amq_cuckoo_internal.h).  Where a
 *	 value is stored is not part of the format; probes read both buckets
 *	 either way.
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
 *	 value (see add_to_full_pair, in amq_cuckoo_membership.c), so copies
 *	 cost a value at most its first slot and one entry, whatever shares its
 *	 buckets.
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
 *
 * This file owns the format: sizing, writing empty filters and appending
 * tables, the validator, and the mapping and the tables as callers see
 * them.  The work done on a filter is in files of its own, one job each,
 * built on the helpers amq_cuckoo_internal.h shares:
 *	amq_cuckoo_membership.c	adding values and probing for them
 *	amq_cuckoo_delete.c		deleting a value
 *	amq_cuckoo_counter.c	the counter section
 *	amq_cuckoo_merge.c		merging one filter into another
 *	amq_cuckoo_stats.c		fill statistics
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
 * Tables, decoded for callers.
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
 * Construction: empty filters and appended tables.
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

/* ----------------------------------------------------------------
 * Validation.
 * ----------------------------------------------------------------
 */

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
