/*
 * amq_bloom.h
 *		Bloom filter core: sizing, layout, probing and the serialized format.
 *
 * Plain C99, no PostgreSQL headers: compiled into the extension and into the
 * standalone unit tests, fuzzers and benchmarks.  The core never allocates
 * memory and never reports errors; callers ask for sizes, provide buffers and
 * map amq_status codes to their own error reporting.
 *
 * A filter lives in one contiguous byte buffer whose layout docs/format.md
 * specifies: a 56-byte little-endian header followed by the bit array.  The
 * same bytes are the on-disk value (after the varlena header), the binary
 * send/recv payload and the result of a cast to bytea.  amq_bloom_open()
 * is the one validator: it checks a buffer and decodes its header into an
 * amq_bloom_view, which every other operation uses.  All validation rules
 * depend on the header and the length only, so opening is O(1).
 *
 * Callers hash values to 64 bits themselves (in the extension: the type's
 * default hash operator class, seeded with the filter's seed) and hand the
 * core that 64-bit hash.
 */
#ifndef AMQ_BLOOM_H
#define AMQ_BLOOM_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amq_bytes.h"
#include "amq_read.h"
#include "amq_status.h"

#define AMQ_BLOOM_MAGIC			"AMQB"
#define AMQ_BLOOM_VERSION		1
#define AMQ_BLOOM_HEADER_SIZE	56

/* layout codes, as stored in byte 5 of the header */
#define AMQ_BLOOM_LAYOUT_EMPTY		0	/* sizeless empty filter */
#define AMQ_BLOOM_LAYOUT_BLOCKED	1	/* all k bits of a key in one 512-bit block */
#define AMQ_BLOOM_LAYOUT_CLASSIC	2	/* k positions over the whole array */
#define AMQ_BLOOM_LAYOUT_COUNTING	3	/* 4-bit counters at classic positions */
#define AMQ_BLOOM_LAYOUT_DLEFT		4	/* d-left counting: fingerprint cells */

/* hash scheme codes, byte 6: how the 64-bit key hash was produced */
#define AMQ_HASH_SCHEME_PG_EXTENDED	1	/* default hash opclass, extended (64-bit), seeded */

#define AMQ_BLOOM_BLOCK_BITS	512		/* one 64-byte cache line */
#define AMQ_BLOOM_MAX_HASHES	64

/* counting layout: 4-bit counters; one that reaches the maximum sticks */
#define AMQ_BLOOM_COUNTER_BITS	4
#define AMQ_BLOOM_COUNTER_MAX	15

/*
 * d-left layout: AMQ_BLOOM_DLEFT_TABLES sub-tables of buckets of
 * AMQ_BLOOM_DLEFT_CELLS cells; a cell is a 2-bit counter (0 = empty, the
 * maximum sticks) and an r-bit fingerprint, 1 <= r <= AMQ_BLOOM_DLEFT_MAX_FP.
 * The header's hashes field holds r.
 */
#define AMQ_BLOOM_DLEFT_TABLES	4
#define AMQ_BLOOM_DLEFT_CELLS	8
#define AMQ_BLOOM_DLEFT_COUNTER_MAX 3
#define AMQ_BLOOM_DLEFT_MAX_FP	32
/* the sizing's average cells used per bucket, as in Bonomi et al. (6 of 8) */
#define AMQ_BLOOM_DLEFT_LOAD	6

/*
 * Largest serialized filter (header + bits), in bytes.  It keeps a filter,
 * its varlena header and up to 64 bytes of alignment padding under
 * PostgreSQL's 1 GB allocation limit.
 */
#define AMQ_BLOOM_MAX_BYTES		((size_t) 0x3FFFFFFF - 128)

/* Seed of every filter built by this version (the format allows any). */
#define AMQ_BLOOM_DEFAULT_SEED	UINT64_C(0x616d7166696c7472)	/* "amqfiltr" */

/* Result of sizing a filter for n distinct keys at false-positive rate p. */
typedef struct amq_bloom_params
{
	int			layout;			/* AMQ_BLOOM_LAYOUT_BLOCKED .. _DLEFT */
	uint64_t	nbits;			/* bits of the array (see amq_bloom_open) */
	uint32_t	hashes;			/* k, 1..AMQ_BLOOM_MAX_HASHES; dleft: r */
	size_t		bytes;			/* serialized size: header + nbits / 8 */
	double		bits_per_key;	/* nbits / n */
	double		expected_fpr;	/* model false-positive rate at n keys, <= p */
} amq_bloom_params;

/*
 * What every d-left operation needs and only the geometry decides: N, each
 * sub-table's multiplier a_t mod N, and the constants that reduce a product
 * modulo N without a division instruction (see amq_bloom_dleft.c).  The
 * validator derives them.
 */
typedef struct amq_dleft_consts
{
	uint64_t	n;				/* N = B * 2^r */
	uint64_t	mult[AMQ_BLOOM_DLEFT_TABLES];	/* a_t mod N */
	uint64_t	mult_frac[AMQ_BLOOM_DLEFT_TABLES];	/* floor(mult * 2^64 / N) */
	uint64_t	norm;			/* N << shift: its top bit set */
	uint64_t	recip;			/* floor((2^128 - 1) / norm) - 2^64 */
	unsigned	shift;
	/*
	 * A probe's bucket scan reads the 8 cells as groups of up to q =
	 * floor(57 / (r + 2)) cells, one 8-byte word each: group i is the
	 * word at byte group_byte[i] of the bucket shifted right by
	 * group_shift[i], masked with group_mask[i].
	 */
	unsigned	groups;			/* ceil(8 / q), 1..8 */
	uint8_t		group_byte[AMQ_BLOOM_DLEFT_CELLS];
	uint8_t		group_shift[AMQ_BLOOM_DLEFT_CELLS];
	uint8_t		group_first[AMQ_BLOOM_DLEFT_CELLS]; /* its first cell */
	uint64_t	group_mask[AMQ_BLOOM_DLEFT_CELLS];
	uint64_t	group_rep;		/* bit 0 of each of q cells */
	uint64_t	group_top;		/* the top bit of each of q cells */
	uint8_t		cell_of_bit[64];	/* a cell's bit 0 in a group -> its index
									 * there (no division by r + 2) */
	uint64_t	table_bytes;	/* B * (r + 2): one sub-table's bytes */
	unsigned	sum_shift;		/* (q - 1)(r + 2); 0: count fields bit by bit */
} amq_dleft_consts;

/* Decoded header plus pointers into the buffer it was decoded from. */
typedef struct amq_bloom_view
{
	uint8_t    *base;			/* start of the serialized bytes */
	uint8_t    *bits;			/* base + AMQ_BLOOM_HEADER_SIZE */
	int			layout;
	int			hash_scheme;
	uint32_t	family;			/* element type family id, 0 = not bound yet */
	uint32_t	hashes;
	uint64_t	seed;
	uint64_t	nbits;
	uint64_t	nblocks;		/* nbits / 512 for the blocked layout, else 0 */
	uint64_t	cells;			/* counting: counters; dleft: cells; else 0 */
	uint64_t	buckets;		/* dleft: buckets per sub-table, else 0 */
	uint64_t	capacity;		/* n the filter was sized for */
	double		target_fpr;		/* p the filter was sized for */
	uint64_t	inserted;		/* additions, duplicates included (saturating) */
	amq_dleft_consts dleft;		/* dleft only */
} amq_bloom_view;

/* Fill-derived statistics, for bloom_info(). */
typedef struct amq_bloom_stats
{
	uint64_t	bits_set;		/* counting: nonzero counters; dleft: 0 */
	uint64_t	cells_used;		/* counting, dleft: nonzero counters or cells */
	uint64_t	saturated;		/* counting, dleft: counters stuck at the maximum */
	double		est_distinct;	/* Swamidass-Baldi estimate; +inf when full */
	double		est_fpr;		/* probability that a random absent key is reported */
} amq_bloom_stats;

/*
 * Sizing.  Validates n >= 1 and 0 < p < 1 (AMQ_ERR_PARAM_N / _P), then
 * computes the smallest geometry whose model false-positive rate at n keys is
 * at most p; AMQ_ERR_TOO_LARGE if that exceeds AMQ_BLOOM_MAX_BYTES.  The
 * classic layout uses k = round(log2(1/p)) and the exact inverse of
 * (1 - e^(-kn/m))^k = p; the blocked layout searches the block count and k
 * with the Poisson-weighted per-block model.
 */
extern amq_status amq_bloom_size(uint64_t n, double p, int layout,
								 amq_bloom_params *out);

/*
 * Writes an empty filter with the given geometry into buf, which must be
 * exactly params->bytes long.  The family starts unbound (0).
 */
extern void amq_bloom_init(uint8_t *buf, const amq_bloom_params *params,
						   uint64_t n, double p, uint64_t seed);

/* Writes the sizeless empty filter (AMQ_BLOOM_HEADER_SIZE bytes). */
extern void amq_bloom_init_empty(uint8_t *buf);

/*
 * The validator.  Checks, in order: length >= header, magic, version, layout,
 * hash scheme, flags and reserved bytes zero, geometry, family/count
 * consistency, exact total length.  On success fills *view.
 */
extern amq_status amq_bloom_open(const uint8_t *buf, size_t len,
								 amq_bloom_view *view);

/*
 * The same validator given only the value's header: header holds its first
 * AMQ_BLOOM_HEADER_SIZE bytes (or all of them, when len is smaller) and len
 * is the length of the whole value, as recorded wherever it is stored.
 * Every rule is checked, the exact total length included, so a view it
 * accepts describes bits that all lie inside the value.  The view's base
 * and bits are NULL: probe it with amq_bloom_may_contain_read.
 */
extern amq_status amq_bloom_open_header(const uint8_t *header, size_t len,
										amq_bloom_view *view);

/* amq_bloom_open_header over a header read through read (see amq_read.h). */
extern amq_status amq_bloom_open_read(amq_read_fn read, void *ctx, size_t len,
									  amq_bloom_view *view);

/*
 * Sets the key's bits (counting: increments its counters; dleft: counts it
 * in its cell); binds the family if unbound; counts the addition.  family
 * must be nonzero (an unbound filter with a count fails validation), and the
 * view must not be the sizeless empty filter (a no-op there).  AMQ_FULL only
 * for dleft, when the key has no cell and all its buckets are full: then
 * nothing changed.
 */
extern amq_status amq_bloom_add(amq_bloom_view *view, uint64_t hash,
								uint32_t family);

/*
 * Adds count keys with the same result as count calls of amq_bloom_add, but
 * overlapping their cache misses (for aggregates that buffer hashes).  On
 * AMQ_FULL the keys before the one that did not fit are added and counted.
 */
extern amq_status amq_bloom_add_many(amq_bloom_view *view, const uint64_t *hashes,
									 size_t count, uint32_t family);

/*
 * True, with lines set, when each key's add writes one 64-byte line of the
 * view's bits (the blocked layout): see amq_key_lines.  The lines stay
 * where they are for the view's life.
 */
extern bool amq_bloom_key_lines(const amq_bloom_view *view, amq_key_lines *lines);

/*
 * amq_bloom_add_many for a view amq_bloom_key_lines accepted, whose keys'
 * lines the caller has requested already: the same bits and count.
 */
extern void amq_bloom_add_requested(amq_bloom_view *view, const uint64_t *hashes,
									size_t count, uint32_t family);

/*
 * Counts count more additions of keys already added, without touching the
 * bits: for a caller that removed duplicate keys before adding them to a
 * blocked or classic filter (a set: the bits are those the duplicates would
 * set), so its count of additions is that of adding every copy.  Not for the
 * layouts that count copies.
 */
extern void amq_bloom_count_duplicates(amq_bloom_view *view, uint64_t count);

/* false means the key was certainly never added. */
extern bool amq_bloom_may_contain(const amq_bloom_view *view, uint64_t hash);

/* true for the layouts that count copies and can delete them. */
static inline bool
amq_bloom_layout_counts(int layout)
{
	return layout == AMQ_BLOOM_LAYOUT_COUNTING || layout == AMQ_BLOOM_LAYOUT_DLEFT;
}

/*
 * Removes one copy of the key from a counting or dleft filter and counts the
 * removal; false (and nothing changed) if the key is certainly absent.
 * Counters at their maximum stay there.  Deleting a key that was never added
 * but is reported present may make other keys absent, as in every counting
 * Bloom filter.  Other layouts: false.
 */
extern bool amq_bloom_delete(amq_bloom_view *view, uint64_t hash);

/*
 * Copies of the key: never fewer than were added and not deleted.  counting:
 * the smallest of its counters; dleft: its cell's counter; when that is
 * stuck at the maximum, the filter's count of stored copies (inserted), an
 * upper bound for every key.  Other layouts: 1 if may_contain, else 0.
 */
extern uint64_t amq_bloom_count(const amq_bloom_view *view, uint64_t hash);

/*
 * The same answer for a value not in memory, read through read (see
 * amq_read.h): one 64-byte block (blocked), or one byte per bit tested
 * (classic, at most k).  Only for layouts amq_bloom_probe_reads accepts;
 * others are probed in memory.
 */
extern bool amq_bloom_probe_reads(const amq_bloom_view *view);

/* Reads amq_bloom_open_read makes: the header, once. */
static inline uint64_t
amq_bloom_open_reads(const uint8_t *header)
{
	(void) header;
	return 1;
}
extern bool amq_bloom_may_contain_read(const amq_bloom_view *view,
									   uint64_t hash, amq_read_fn read,
									   void *ctx);

/*
 * Checks that src can be merged into dst: same layout, bits, hashes, seed
 * (AMQ_ERR_GEOMETRY_MISMATCH) and families equal or one unbound
 * (AMQ_ERR_FAMILY_MISMATCH).  The sizeless empty filter merges with anything;
 * callers handle it before merging bits.
 */
extern amq_status amq_bloom_compatible(const amq_bloom_view *dst,
									   const amq_bloom_view *src);

/*
 * Merging, for compatible non-empty filters: union (OR), or intersection
 * (AND) when intersect is set.  amq_bloom_merge_bits merges bits [from, to)
 * of src's bit array into dst's, so that callers can process a large filter
 * in slices; amq_bloom_merge_finish updates the header (family, count) once
 * all slices are done.  Union count is the saturating sum; intersection
 * count is the smaller count, an upper bound.  counting: counters add
 * (saturating) or take the smaller; dleft: the slice is the buckets that
 * start in [from, to), src's cells are added to dst (AMQ_FULL if one finds
 * no room: dst then holds part of the union) or dst's cells keep the smaller
 * of the two counts.
 */
extern amq_status amq_bloom_merge_bits(amq_bloom_view *dst, const amq_bloom_view *src,
									   size_t from, size_t to, bool intersect);
extern void amq_bloom_merge_finish(amq_bloom_view *dst, const amq_bloom_view *src,
								   bool intersect);

/*
 * Statistics over a filter.  amq_bloom_stats_accumulate() scans the bytes
 * [from, to) of the bit array (for the blocked layout, from and to must be
 * multiples of 64; for dleft, buckets are counted where they start) into an accumulator started with amq_bloom_stats_begin();
 * amq_bloom_stats_end() computes the estimates.
 */
typedef struct amq_bloom_stats_acc
{
	uint64_t	bits_set;
	uint64_t	cells_used;
	uint64_t	saturated;
	double		fpr_sum;		/* blocked: sum over blocks of fill^k */
} amq_bloom_stats_acc;

extern void amq_bloom_stats_begin(amq_bloom_stats_acc *acc);
extern void amq_bloom_stats_accumulate(const amq_bloom_view *view,
									   amq_bloom_stats_acc *acc,
									   size_t from, size_t to);
extern void amq_bloom_stats_end(const amq_bloom_view *view,
								const amq_bloom_stats_acc *acc,
								amq_bloom_stats *out);

/* Number of bytes in the bit array. */
static inline size_t
amq_bloom_bits_bytes(const amq_bloom_view *view)
{
	return (size_t) (view->nbits / 8);
}

/* Serialized size of a view's filter. */
static inline size_t
amq_bloom_total_bytes(const amq_bloom_view *view)
{
	return AMQ_BLOOM_HEADER_SIZE + amq_bloom_bits_bytes(view);
}

#endif							/* AMQ_BLOOM_H */
