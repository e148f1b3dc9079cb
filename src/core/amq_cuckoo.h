/*
 * amq_cuckoo.h
 *		Cuckoo filter core: sizing, the serialized format, insertion with
 *		bounded eviction and growth, deletion, probing, merging, statistics.
 *
 * Plain C99, no PostgreSQL headers, like amq_bloom.h: the core never
 * allocates and never reports errors.  Operations that may need more memory
 * (adding to a full filter, merging) ask the caller's reserve function for
 * it (amq_cuckoo_add_growing, amq_cuckoo_merge_step) when they need it, so
 * that every caller grows a filter the same way and no more than it must;
 * amq_cuckoo_add alone says AMQ_FULL and leaves growing to its caller.
 *
 * A filter is one byte buffer (docs/format.md): a 64-byte little-endian header
 * followed by one or more tables.  Each table is a 32-byte table header and
 * an array of 64-bit little-endian words holding buckets of four
 * fingerprints of f bits each, bit-packed (4 <= f <= 32).  The first table
 * is sized for the capacity n and may have any number of buckets, base; the
 * others are growth tables, appended when the filter is full, each with
 * base * 2^level buckets for some level.  Every table
 * has a victim slot: the one fingerprint an insertion could not place after
 * AMQ_CUCKOO_MAX_KICKS evictions.  amq_cuckoo_open() is the one validator;
 * it reads the header, every table header and the last two words of each
 * table (their padding), O(number of tables), and fills an amq_cuckoo_view.
 *
 * Callers hash values to 64 bits themselves (the extension: the type's
 * default hash operator class, seeded with the filter's seed) and hand the
 * core that hash.  The fingerprint is the same in every table; each table
 * maps the hash to its own bucket pair.
 */
#ifndef AMQ_CUCKOO_H
#define AMQ_CUCKOO_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#include "amq_read.h"
#include "amq_status.h"

#define AMQ_CUCKOO_MAGIC			"AMQC"
#define AMQ_CUCKOO_VERSION			1	/* written while there are no counters */
#define AMQ_CUCKOO_VERSION_COUNTERS	2	/* written once a counter section exists */
#define AMQ_CUCKOO_HEADER_SIZE		64
#define AMQ_CUCKOO_TABLE_HEADER_SIZE 32
#define AMQ_CUCKOO_COUNTER_SIZE		24	/* one entry of the counter section */

/*
 * Entries of the counter section: a power of two between these bounds (the
 * largest, 384 MiB of entries, stays within AMQ_CUCKOO_MAX_BYTES).
 */
#define AMQ_CUCKOO_MIN_COUNTERS		16
#define AMQ_CUCKOO_MAX_COUNTERS		(UINT32_C(1) << 24)

#define AMQ_CUCKOO_BUCKET_SIZE		4	/* fingerprints per bucket */
#define AMQ_CUCKOO_MIN_FP_BITS		4
#define AMQ_CUCKOO_MAX_FP_BITS		32

/* evictions before an insertion gives up and parks a fingerprint as victim */
#define AMQ_CUCKOO_MAX_KICKS		500

/* load the first table is sized for: n fills it to at most this fraction */
#define AMQ_CUCKOO_DESIGN_LOAD		0.95

/*
 * Smallest target rate: f = ceil(log2(8 / p)) must not exceed 32 bits, so
 * p >= 8 / 2^32 = 2^-29.
 */
#define AMQ_CUCKOO_MIN_FPR			(1.0 / 536870912.0)

/* Largest serialized filter (header + tables), as for bloom. */
#define AMQ_CUCKOO_MAX_BYTES		((size_t) 0x3FFFFFFF - 128)

/* Seed of every filter built by this version (the format allows any). */
#define AMQ_CUCKOO_DEFAULT_SEED		UINT64_C(0x616d7166696c7472)	/* "amqfiltr" */

/* Result of sizing a filter for n values at false-positive rate p. */
typedef struct amq_cuckoo_params
{
	uint64_t	buckets;		/* of the first table */
	uint32_t	fp_bits;		/* f */
	size_t		bytes;			/* serialized size with one table */
	double		bits_per_key;	/* 8 * bytes / n */
	double		expected_fpr;	/* model rate at n values, <= p */
} amq_cuckoo_params;

/* Decoded header.  Tables are decoded on demand (amq_cuckoo_table_at). */
typedef struct amq_cuckoo_view
{
	uint8_t    *base;			/* start of the serialized bytes */
	size_t		bytes;			/* total serialized length */
	int			hash_scheme;
	uint32_t	fp_bits;		/* 0 for the sizeless empty filter */
	uint32_t	family;			/* element type family id, 0 = not bound yet */
	uint32_t	tables;			/* 0 for the sizeless empty filter */
	uint64_t	seed;
	uint64_t	capacity;		/* n the filter was sized for */
	double		target_fpr;		/* p the filter was sized for */
	uint64_t	items;			/* the tables' item counts plus counted copies */
	uint64_t	slots;			/* 4 * total buckets + one victim per table */
	uint64_t	base_buckets;	/* of the first table; 0 if there is none */
	size_t		last_offset;	/* of the last table from base; 0 if none */
	size_t		tables_end;		/* offset where the tables end */
	uint32_t	counters;		/* entries of the counter section, 0 if none */
	uint32_t	counters_used;	/* entries holding a count */
	uint64_t	counted;		/* copies the counters hold, saturating */
	bool		grow_counters;	/* the last AMQ_FULL wants more counters */
} amq_cuckoo_view;

/* One decoded table. */
typedef struct amq_cuckoo_table
{
	uint8_t    *header;			/* the table header inside the buffer */
	uint8_t    *words;			/* its fingerprint words */
	uint64_t	buckets;		/* base * 2^level */
	uint64_t	base;			/* buckets of the filter's first table */
	unsigned	level;
	uint64_t	items;			/* fingerprints stored, victim included */
	uint64_t	victim_bucket;
	uint32_t	victim_fp;		/* 0: no victim */
	size_t		bytes;			/* table header + words */
} amq_cuckoo_table;

/* Fill-derived statistics, for cuckoo_info(). */
typedef struct amq_cuckoo_stats
{
	uint64_t	occupied;		/* nonzero slots and victims */
	double		load_factor;	/* occupied / slots */
	double		est_fpr;		/* probability that a random absent value is reported */
} amq_cuckoo_stats;

typedef struct amq_cuckoo_stats_acc
{
	uint64_t	occupied;		/* over all tables so far */
	uint64_t	table_occupied; /* in the current table */
	double		miss;			/* product over finished tables of (1 - fpr) */
} amq_cuckoo_stats_acc;

/*
 * Tables of one size a merge tries for each fingerprint: the newest ones
 * (see amq_cuckoo_merge_step).
 */
#define AMQ_CUCKOO_MERGE_WINDOW		4

/* Levels (log2 of a table's buckets over the first table's) a filter can have. */
#define AMQ_CUCKOO_MAX_LEVELS		32

/*
 * Makes room for at least need bytes of filter in the buffer behind a view,
 * keeping its contents, and returns the buffer's (possibly moved) start, or
 * NULL when it cannot (the core then reports AMQ_ERR_TOO_LARGE).  Callers
 * inside PostgreSQL may raise an error instead of returning.
 */
typedef uint8_t *(*amq_cuckoo_reserve_fn) (void *ctx, size_t need);

/*
 * State of a merge in progress (see amq_cuckoo_merge_begin), held by the
 * caller.  The kick path is recorded so that a failed eviction walk can be
 * undone.
 */
typedef struct amq_cuckoo_merge
{
	amq_cuckoo_reserve_fn reserve;	/* asked for room before a table is added */
	void	   *reserve_ctx;
	uint64_t	work;			/* work units done so far */
	size_t		need;			/* bytes the last reservation asked for */
	size_t		index_offset;	/* next dst table to index by level */
	uint32_t	index_left;		/* dst tables not indexed yet */
	uint32_t	window_len[AMQ_CUCKOO_MAX_LEVELS];	/* tables in each window */
	/* offsets in dst of each level's newest tables, oldest first */
	size_t		window[AMQ_CUCKOO_MAX_LEVELS][AMQ_CUCKOO_MERGE_WINDOW];
	uint32_t	src_table;		/* index of the source table being merged */
	size_t		src_offset;		/* its offset in src */
	uint64_t	next_bucket;	/* next source bucket to fold */
	bool		folding;		/* the source table is being folded */
	bool		kicking;		/* evictions are still tried for it */
	size_t		spill_offset;	/* of its spill table in dst; 0 if none yet */
	uint32_t	src_counter;	/* next source counter entry to add */
	uint64_t	path_pos[AMQ_CUCKOO_MAX_KICKS + 2]; /* slot positions written */
	uint32_t	path_fp[AMQ_CUCKOO_MAX_KICKS + 2];	/* what they held */
} amq_cuckoo_merge;

/*
 * Sizing.  Validates n >= 1 (AMQ_ERR_PARAM_N) and 0 < p < 1
 * (AMQ_ERR_PARAM_P), p >= AMQ_CUCKOO_MIN_FPR (AMQ_ERR_PARAM_P_SMALL); then
 * f = max(4, ceil(log2(8 / p))) (raised further if the model rate at the
 * design load still exceeds p) and buckets = ceil(n / (4 * 0.95)).
 * AMQ_ERR_TOO_LARGE if the filter would exceed AMQ_CUCKOO_MAX_BYTES.
 */
extern amq_status amq_cuckoo_size(uint64_t n, double p, amq_cuckoo_params *out);

/* Serialized bytes of a table of the given geometry, header included. */
extern size_t amq_cuckoo_table_bytes(uint64_t buckets, uint32_t fp_bits);

/*
 * Writes an empty filter with one table into buf, exactly params->bytes
 * long.  The family starts unbound (0).
 */
extern void amq_cuckoo_init(uint8_t *buf, const amq_cuckoo_params *params,
							uint64_t n, double p, uint64_t seed);

/* Writes the sizeless empty filter (AMQ_CUCKOO_HEADER_SIZE bytes). */
extern void amq_cuckoo_init_empty(uint8_t *buf);

/*
 * The validator.  Checks, in order: length >= header (AMQ_ERR_TRUNCATED),
 * magic, version, hash scheme, flags and reserved bytes zero; then the
 * header's geometry (AMQ_ERR_GEOMETRY): with no tables, the sizeless empty
 * filter, every other field zero; else bucket size 4, fingerprint width
 * 4..32, capacity >= 1, 0 < p < 1.  Then each table in turn: its header fits
 * (AMQ_ERR_LENGTH); 1 <= buckets <= the size limit and buckets = base *
 * 2^level, base being the first table's (AMQ_ERR_GEOMETRY); the whole table
 * fits (AMQ_ERR_LENGTH); victim fingerprint within f bits, victim bucket in
 * range and no victim bucket without a fingerprint (AMQ_ERR_GEOMETRY); item
 * count at most its slots (AMQ_ERR_COUNT); reserved field and padding bits
 * zero (AMQ_ERR_RESERVED).  Finally family/count consistency
 * (AMQ_ERR_UNBOUND_COUNT), exact total length (AMQ_ERR_LENGTH) and the size
 * limit (AMQ_ERR_TOO_LARGE).  On success fills *view.
 */
extern amq_status amq_cuckoo_open(const uint8_t *buf, size_t len,
								  amq_cuckoo_view *view);

/*
 * The same validator over a value not in memory, read through read (see
 * amq_read.h), len being its length as recorded wherever it is stored: it
 * reads the header, each table header and the last two words of each
 * table, one read each (tables + 1 reads of at most 64 bytes), and checks
 * every rule, the exact total length included, so a view it accepts
 * describes tables that all lie inside the value.  The view's base is
 * NULL: probe it with amq_cuckoo_may_contain_read and amq_cuckoo_count_read.
 * amq_cuckoo_open is this with the bytes in memory.
 */
extern amq_status amq_cuckoo_open_read(amq_read_fn read, void *ctx,
									   size_t len, amq_cuckoo_view *view);

/*
 * Reads amq_cuckoo_open_read makes on a value with this header (its first
 * AMQ_CUCKOO_HEADER_SIZE bytes, not validated yet): the header, two per
 * table, one per counter entry.  A caller can choose not to validate
 * through reads when that costs more than reading the value whole.
 */
extern uint64_t amq_cuckoo_open_reads(const uint8_t *header);

/* Every cuckoo filter can be probed through reads (for the glue's symmetry with bloom). */
static inline bool
amq_cuckoo_probe_reads(const amq_cuckoo_view *view)
{
	(void) view;
	return true;
}

/*
 * The tables of an opened filter in order, each decoded once: first decodes
 * the first table (false for the sizeless empty filter, which has none),
 * next the one after *table (false after the last).  A loop over every table
 * uses these: amq_cuckoo_table_at decodes t tables to reach table t.
 */
extern bool amq_cuckoo_table_first(const amq_cuckoo_view *view,
								   amq_cuckoo_table *table);
extern bool amq_cuckoo_table_next(const amq_cuckoo_view *view,
								  amq_cuckoo_table *table);

/* Decodes table t (0-based, t < view->tables) of an opened filter: O(t). */
extern void amq_cuckoo_table_at(const amq_cuckoo_view *view, uint32_t t,
								amq_cuckoo_table *table);

/*
 * Adds a value.  Tries a free slot in the value's two buckets of the last
 * table, then of the others in order; then, when the value has a counter or
 * its pair in some table holds nothing but copies of its fingerprint,
 * counts one more copy there in the counter section; then evicts (at most
 * AMQ_CUCKOO_MAX_KICKS times) in the last table if its victim slot is free,
 * parking the last evicted fingerprint there if the walk does not end.  If
 * the victim slot is taken, the filter is full: the copy is counted if the
 * value's pair in some table holds a copy of its fingerprint, whatever else
 * it holds, or else one of at least three copies of another fingerprint in
 * its pair of the last table is counted and the value takes its slot.
 * Returns AMQ_OK, or
 * AMQ_FULL with the filter unchanged when it needs a new table or a larger
 * counter section: the caller then grows it (amq_cuckoo_growth_bytes,
 * amq_cuckoo_grow) and adds again, as amq_cuckoo_add_growing does.
 * Binds the family if unbound (family must be nonzero).  The view must not
 * be the sizeless empty filter.
 */
extern amq_status amq_cuckoo_add(amq_cuckoo_view *view, uint64_t hash,
								 uint32_t family);

/*
 * Adds hashes[0 .. count) in order, with the result count calls of
 * amq_cuckoo_add would give, overlapping their cache misses.  Stops at the
 * first AMQ_FULL; *done is the number added.
 */
extern amq_status amq_cuckoo_add_many(amq_cuckoo_view *view,
									  const uint64_t *hashes, size_t count,
									  uint32_t family, size_t *done);

/*
 * Buckets of the table to append when the filter is full: twice the last
 * table's if that table is at least half full, else the same.  Either way
 * base * 2^level.
 */
extern uint64_t amq_cuckoo_growth_buckets(const amq_cuckoo_view *view);

/*
 * Appends an empty table of the given buckets after the last one (moving
 * the counter section, if any, behind it).  The buffer behind view->base
 * must have room for view->bytes + amq_cuckoo_table_bytes(buckets, f); the
 * caller checks that the result stays within AMQ_CUCKOO_MAX_BYTES.
 */
extern void amq_cuckoo_append_table(amq_cuckoo_view *view, uint64_t buckets);

/*
 * What to do after amq_cuckoo_add said AMQ_FULL: the buffer size the growth
 * needs (more than AMQ_CUCKOO_MAX_BYTES when it cannot be), and the growth
 * itself, in a buffer of at least that size.  The growth is the table
 * amq_cuckoo_growth_buckets asks for, or, when the copy that did not fit is
 * to be counted and the counter section has no room for its entry, a
 * counter section twice as large (which needs room for the old one and the
 * new one while it is rebuilt).
 */
extern size_t amq_cuckoo_growth_bytes(const amq_cuckoo_view *view);
extern void amq_cuckoo_grow(amq_cuckoo_view *view);

/*
 * Adds hashes[0 .. count) like amq_cuckoo_add_many, appending the table
 * amq_cuckoo_growth_buckets asks for whenever the filter is full, after
 * asking reserve for room.  AMQ_OK, or AMQ_ERR_TOO_LARGE when a growth would
 * pass AMQ_CUCKOO_MAX_BYTES or reserve returned NULL; *done counts the hashes
 * added either way.  view->base follows the buffer when reserve moves it.
 *
 * Like amq_cuckoo_add_many, AMQ_ERR_NO_GEOMETRY for the sizeless empty
 * filter.  The filter is valid whenever reserve is called and after every
 * return.
 */
extern amq_status amq_cuckoo_add_growing(amq_cuckoo_view *view,
										 const uint64_t *hashes, size_t count,
										 uint32_t family,
										 amq_cuckoo_reserve_fn reserve,
										 void *ctx, size_t *done);

/*
 * Removes one stored copy of the value (from the largest table holding one);
 * false if none was found.
 */
extern bool amq_cuckoo_delete(amq_cuckoo_view *view, uint64_t hash);

/* false means the value is certainly not stored. */
extern bool amq_cuckoo_may_contain(const amq_cuckoo_view *view, uint64_t hash);

/* Copies of the value's fingerprint in its buckets: never below the truth. */
extern uint64_t amq_cuckoo_count(const amq_cuckoo_view *view, uint64_t hash);

/*
 * The same two answers for a value not in memory, read through read: each
 * table's header and the value's two buckets there (3 reads per table, at
 * most; a probe stops at the first copy).
 */
extern bool amq_cuckoo_may_contain_read(const amq_cuckoo_view *view,
										uint64_t hash, amq_read_fn read,
										void *ctx);
extern uint64_t amq_cuckoo_count_read(const amq_cuckoo_view *view,
									  uint64_t hash, amq_read_fn read,
									  void *ctx);

/*
 * Checks that src can be merged into dst: same fingerprint width, seed and
 * first-table buckets (AMQ_ERR_GEOMETRY_MISMATCH) and families equal or one
 * unbound (AMQ_ERR_FAMILY_MISMATCH).  The sizeless empty filter merges with
 * anything; callers handle it before merging.
 */
extern amq_status amq_cuckoo_compatible(const amq_cuckoo_view *dst,
										const amq_cuckoo_view *src);

/*
 * Merging src into dst, in steps so that callers can check for interrupts.
 * A source table whose size matches dst tables is folded into them
 * fingerprint by fingerprint (each keeps its bucket pair), trying the newest
 * AMQ_CUCKOO_MERGE_WINDOW tables of that size, and what does not fit goes to
 * a new table of that size; a source table without a match is appended
 * whole.  No fingerprint is ever lost.  A source bound to no family holds no
 * values and changes nothing.  src must not lie in dst's buffer.
 *
 * Begin checks compatibility and takes the reserve function that step calls,
 * like amq_cuckoo_add_growing, for room before it appends a table, so dst's
 * buffer needs room for the result only.  Step does about max_work units of
 * work (a bucket read, a table tried, a slot written by an eviction, a table
 * indexed; one per bucket of a table appended), at most a few thousand more,
 * and sets *done when the merge is complete; m->work counts the units so
 * far, linear in the tables and fingerprints of both filters.  It returns
 * AMQ_OK, or AMQ_ERR_TOO_LARGE when a table would take dst past
 * AMQ_CUCKOO_MAX_BYTES or reserve returned NULL, m->need then being the
 * size asked for; after that the merge cannot go on, and dst holds its own
 * values and some of src's.  dst is a valid filter after every step;
 * dst->base follows the buffer when reserve moves it.
 */
extern amq_status amq_cuckoo_merge_begin(amq_cuckoo_merge *m,
										 const amq_cuckoo_view *dst,
										 const amq_cuckoo_view *src,
										 amq_cuckoo_reserve_fn reserve,
										 void *ctx);
extern amq_status amq_cuckoo_merge_step(amq_cuckoo_merge *m,
										amq_cuckoo_view *dst,
										const amq_cuckoo_view *src,
										uint64_t max_work, bool *done);

/*
 * Statistics, table by table and bucket range by bucket range:
 *	begin; for each table: accumulate over [from, to) buckets, table_done;
 *	end.
 */
extern void amq_cuckoo_stats_begin(amq_cuckoo_stats_acc *acc);
extern void amq_cuckoo_stats_accumulate(const amq_cuckoo_view *view,
										const amq_cuckoo_table *table,
										amq_cuckoo_stats_acc *acc,
										uint64_t from, uint64_t to);
extern void amq_cuckoo_stats_table_done(const amq_cuckoo_view *view,
										const amq_cuckoo_table *table,
										amq_cuckoo_stats_acc *acc);
extern void amq_cuckoo_stats_end(const amq_cuckoo_view *view,
								 const amq_cuckoo_stats_acc *acc,
								 amq_cuckoo_stats *out);

/*
 * The hash-to-slot mapping, exposed for tests and for readers of
 * docs/format.md.
 * With x = fmix64(hash), in a table of B = base * 2^level buckets:
 * fingerprint: 1 + floor(lo32(x) * (2^f - 1) / 2^32), never 0.
 * index: floor(x * B / 2^64).
 * alternate of bucket i = (high, low) = (i >> level, i mod 2^level):
 *	((H(fp) - high) mod base) * 2^level + (low xor M(fp, level)), with
 *	H(fp) = floor(fmix64(fp) * base / 2^64) and M the top level bits of
 *	fmix64(fp + 0x9e3779b97f4a7c15).
 * It is an involution for any base (so alternate(alternate(i)) = i), and
 * tables nest: shifting an index or its alternate right by d gives the index
 * or alternate in the table of level - d.  Values that share a bucket pair in
 * a table share it in every smaller one, which deletion relies on.
 */
extern uint32_t amq_cuckoo_fingerprint(uint64_t hash, uint32_t fp_bits);
extern uint64_t amq_cuckoo_index(uint64_t hash, uint64_t buckets);
extern uint64_t amq_cuckoo_alternate(uint64_t bucket, uint32_t fp,
									 uint64_t base_buckets, unsigned level);

/* Fingerprint in slot s (0..3) of bucket b of a table. */
extern uint32_t amq_cuckoo_slot(const amq_cuckoo_view *view,
								const amq_cuckoo_table *table,
								uint64_t bucket, unsigned s);

#endif							/* AMQ_CUCKOO_H */
