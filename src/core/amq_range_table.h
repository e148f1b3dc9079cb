/*
 * amq_range_table.h
 *		A table of (fingerprint, range) entries in one page: where the
 *		amqfilter index keeps which block ranges of a table may hold a key.
 *
 * Plain C99, no PostgreSQL headers.  A key's 64-bit hash picks a page (the
 * caller's fastrange) and, within it, two buckets of AMQ_RT_BUCKET_SLOTS
 * 32-bit entries (partial-key cuckoo hashing, Fan et al. 2014): an entry is
 * a fingerprint of fp_bits bits over a range number of range_bits = 32 -
 * fp_bits bits.  A lookup compares the 2 x 4 entries of the key's buckets
 * (and the page's stash, when it has any): it costs the same whatever the
 * number of ranges the table has, and returns the ranges of the entries
 * whose fingerprint is the key's (those of the key, and of another key
 * with the same fingerprint, about 8 x load / 2^fp_bits of a lookup).
 *
 * Buckets are not a power of two in number (504 fill an 8 kB page), so a
 * key's second bucket is b2 = (t - b1) mod nbuckets, t from its
 * fingerprint: an involution, which an entry moved between its buckets
 * needs (only its fingerprint travels with it).
 *
 * What an insert does with a key that is already there, or in too many
 * ranges, or that does not fit:
 *	- (fp, range) or (fp, everywhere) present, or a span of fp that covers
 *	  range: nothing;
 *	- AMQ_RT_MAX_RANGES entries of fp already, or a span: in a table with
 *	  spans, the key keeps a span, two entries (fp, first) and (fp, last)
 *	  marked as a span's ends, whose lookup answers the ranges first ..
 *	  last, and up to AMQ_RT_SPAN_BESIDE ranges beside it: of the ways to
 *	  cover its ranges so, the one whose lookups read fewest ranges (a key
 *	  whose rows cluster, with a row or two elsewhere, reads its cluster
 *	  and those); the span widens to take in what does not fit beside it.
 *	  In a table without spans, they are replaced by one entry (fp,
 *	  everywhere), whose lookup answers "the whole table" (a key in many
 *	  ranges costs one entry, not one per range);
 *	- no room in either bucket: entries are moved to their other bucket
 *	  (at most AMQ_RT_MAX_KICKS moves), then the one left over goes to the
 *	  page's stash of AMQ_RT_STASH_SLOTS entries;
 *	- the stash full: the page is saturated (a flag): every lookup on it
 *	  answers "the whole table", so that no entry the page drops is ever a
 *	  false "no".
 */
#ifndef AMQ_RANGE_TABLE_H
#define AMQ_RANGE_TABLE_H

#include <stdbool.h>
#include <stdint.h>

#define AMQ_RT_BUCKET_SLOTS		4
#define AMQ_RT_STASH_SLOTS		16
#define AMQ_RT_MAX_RANGES		4
#define AMQ_RT_SPAN_BESIDE		2
#define AMQ_RT_MAX_KICKS		500
#define AMQ_RT_MIN_FP_BITS		8
#define AMQ_RT_MAX_FP_BITS		24

/* the page's header flag: every lookup answers "everywhere" */
#define AMQ_RT_SATURATED		0x0001

/* The header of a page's table; its slots follow, as the caller lays them. */
typedef struct amq_rt_page
{
	uint32_t	nentries;		/* entries in the buckets and the stash */
	uint16_t	nstash;			/* entries in the stash */
	uint16_t	flags;			/* AMQ_RT_SATURATED */
} amq_rt_page;

/*
 * A table's geometry: the same for every page of a generation.  With
 * spans, the top bit of an entry's range marks a span's end, and ranges
 * are numbered with the bits below it.
 *
 * With lanes, a page never turns a key's entries into a span or
 * "everywhere" on its own: the caller decides how many of a key's entries
 * a page keeps and puts the rest in the key's next lane (another place, in
 * another page, that the caller derives from the key), and adds
 * "everywhere" itself.  The top bit of a range (amq_rt_whole_bit)
 * then marks a whole range, and a range without it is, with row_bits
 * above 0, a range's row class: (range << row_bits) | class, where a
 * row's class is the caller's (a run of line pointer offsets).  A whole
 * range's entry holds every class of it.
 */
typedef struct amq_rt_geom
{
	uint32_t	nbuckets;		/* buckets in a page */
	uint32_t	fp_bits;		/* AMQ_RT_MIN_FP_BITS .. AMQ_RT_MAX_FP_BITS */
	uint32_t	spans;			/* 1: a key in many ranges becomes a span */
	uint32_t	lanes;			/* 1: a key keeps every range it is given */
	uint32_t	row_bits;		/* with lanes: row classes (below) */
} amq_rt_geom;

/* The ranges a lookup's span covers, lo .. hi; none when lo > hi. */
typedef struct amq_rt_span
{
	uint32_t	lo;
	uint32_t	hi;
} amq_rt_span;

/* Where a key goes in its page: its fingerprint and first bucket. */
typedef struct amq_rt_key
{
	uint32_t	fp;				/* 1 .. 2^fp_bits - 1 */
	uint32_t	bucket;
} amq_rt_key;

/* what amq_rt_insert did */
typedef enum amq_rt_result
{
	AMQ_RT_ADDED,				/* a new entry */
	AMQ_RT_PRESENT,				/* there already (or the page answers all) */
	AMQ_RT_WIDENED,				/* the key's entries became one "everywhere" */
	AMQ_RT_NOW_SATURATED		/* no room: the page answers everything now */
} amq_rt_result;

/* The slots of a page: nbuckets * AMQ_RT_BUCKET_SLOTS, then the stash. */
static inline uint32_t
amq_rt_slots(const amq_rt_geom *g)
{
	return g->nbuckets * AMQ_RT_BUCKET_SLOTS + AMQ_RT_STASH_SLOTS;
}

/* The range number that means "everywhere": the largest range_bits holds. */
static inline uint32_t
amq_rt_everywhere(const amq_rt_geom *g)
{
	return (uint32_t) ((UINT64_C(1) << (32 - g->fp_bits)) - 1);
}

/*
 * The number of ranges a table numbers, 0 .. amq_rt_ranges() - 1: a block
 * past them is "everywhere".  With spans, half as many (less the one whose
 * span end would read as "everywhere").
 */
static inline uint32_t
amq_rt_ranges(const amq_rt_geom *g)
{
	return (g->spans || g->lanes) ? (amq_rt_everywhere(g) >> 1) : amq_rt_everywhere(g);
}

/* With lanes, the bit of a range that marks a whole range (not a class). */
static inline uint32_t
amq_rt_whole_bit(const amq_rt_geom *g)
{
	return (amq_rt_everywhere(g) >> 1) + 1;
}

/*
 * The geometry of a page with room for bytes of slots, at a fingerprint of
 * fp_bits bits, without spans (the caller sets spans); false if they do
 * not fit.
 */
extern bool amq_rt_geometry(uint32_t bytes, uint32_t fp_bits, amq_rt_geom *out);

/*
 * The fingerprint bits that keep a lookup's false matches under p at full
 * load in each of gens generations (8 entries compared in each).
 */
extern uint32_t amq_rt_fp_bits_for(double p, unsigned gens);

/*
 * A key's place in its page, from its hash mixed (the caller's fmix64 of
 * the hash that chose the page): independent bits of it.
 */
extern amq_rt_key amq_rt_place(const amq_rt_geom *g, uint64_t mixed);

/*
 * Adds (key, range) to a page; range < amq_rt_ranges(g), or
 * amq_rt_everywhere(g) (which adds an "everywhere" entry); with lanes,
 * any range below amq_rt_everywhere(g) (a class, or a whole range), and
 * the key's entries are never widened but by an "everywhere".  *delta is
 * the change in the page's entries.
 */
extern amq_rt_result amq_rt_insert(const amq_rt_geom *g, amq_rt_page *page,
								   uint32_t *slots, amq_rt_key key,
								   uint32_t range, int *delta);

/*
 * Adds the ranges lo .. hi (lo <= hi < amq_rt_ranges(g)) to a page as a
 * key's span, folding its entries into it, and nbeside ranges beside it
 * (at most AMQ_RT_MAX_RANGES, outside lo .. hi; a build's choice, which
 * may keep more than an insert would); in a table without spans, an
 * "everywhere" entry.
 */
extern amq_rt_result amq_rt_insert_span(const amq_rt_geom *g, amq_rt_page *page,
										uint32_t *slots, amq_rt_key key,
										uint32_t lo, uint32_t hi,
										const uint32_t *beside, int nbeside, int *delta);

/*
 * The ranges a page holds for a key: up to max of them into ranges[], and
 * their number, and in *span the ranges its span covers (lo > hi: none);
 * -1 if the answer is "everywhere" (an entry says so, or the page is
 * saturated).  0 with no span is "no".
 */
extern int	amq_rt_lookup(const amq_rt_geom *g, const amq_rt_page *page,
						  const uint32_t *slots, amq_rt_key key,
						  uint32_t *ranges, int max, amq_rt_span *span);

/*
 * True if a lookup of the key answers range (its entry, its span, or
 * "everywhere"; with lanes and row classes, for a class, the whole
 * range's entry too): an insert of (key, range) would change nothing.
 */
extern bool amq_rt_holds(const amq_rt_geom *g, const amq_rt_page *page,
						 const uint32_t *slots, amq_rt_key key, uint32_t range);

/* True if the page holds some entry of the key's fingerprint (or answers all). */
extern bool amq_rt_may_contain(const amq_rt_geom *g, const amq_rt_page *page,
							   const uint32_t *slots, amq_rt_key key);

/* Entries of the page that say "everywhere". */
extern uint32_t amq_rt_count_everywhere(const amq_rt_geom *g, const amq_rt_page *page,
										const uint32_t *slots);

/*
 * The chance that a lookup of an absent key in the page matches some entry
 * (1 for a saturated page): a key's buckets hold 8 x load entries on
 * average, and the stash's are all compared.
 */
extern double amq_rt_false_match_rate(const amq_rt_geom *g, const amq_rt_page *page);

/*
 * Checks a page's header read back from disk: what lookups and inserts
 * index by (the stash's count) is in range.  O(1): every page read does it.
 */
static inline bool
amq_rt_check_header(const amq_rt_geom *g, const amq_rt_page *page)
{
	return page->nstash <= AMQ_RT_STASH_SLOTS &&
		page->nentries <= amq_rt_slots(g) &&
		(page->flags & ~AMQ_RT_SATURATED) == 0;
}

/*
 * Checks a whole page: its header, and that its counts agree with its
 * slots (the stash's entries first, none empty).  O(slots).
 */
extern bool amq_rt_check(const amq_rt_geom *g, const amq_rt_page *page,
						 const uint32_t *slots);

#endif							/* AMQ_RANGE_TABLE_H */
