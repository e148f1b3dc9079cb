/*
 * amq_range_table.c
 *		A page's table of (fingerprint, range) entries (amq_range_table.h).
 */
#include <math.h>

#include "amq_bytes.h"
#include "amq_hash.h"
#include "amq_range_table.h"

bool
amq_rt_geometry(uint32_t bytes, uint32_t fp_bits, amq_rt_geom *out)
{
	uint32_t	stash_bytes = AMQ_RT_STASH_SLOTS * sizeof(uint32_t);
	uint32_t	bucket_bytes = AMQ_RT_BUCKET_SLOTS * sizeof(uint32_t);

	if (fp_bits < AMQ_RT_MIN_FP_BITS || fp_bits > AMQ_RT_MAX_FP_BITS ||
		bytes < stash_bytes + bucket_bytes)
		return false;
	out->nbuckets = (bytes - stash_bytes) / bucket_bytes;
	out->fp_bits = fp_bits;
	out->spans = 0;
	out->lanes = 0;
	out->row_bits = 0;
	return true;
}

uint32_t
amq_rt_fp_bits_for(double p, unsigned gens)
{
	double		bits;

	if (!(p > 0.0) || gens < 1)
		return AMQ_RT_MAX_FP_BITS;
	/* 2 buckets of 4 entries compared per generation */
	bits = ceil(log2(2.0 * AMQ_RT_BUCKET_SLOTS * gens / p));
	if (bits < AMQ_RT_MIN_FP_BITS)
		return AMQ_RT_MIN_FP_BITS;
	if (bits > AMQ_RT_MAX_FP_BITS)
		return AMQ_RT_MAX_FP_BITS;
	return (uint32_t) bits;
}

amq_rt_key
amq_rt_place(const amq_rt_geom *g, uint64_t mixed)
{
	amq_rt_key	key;
	uint32_t	mask = (uint32_t) ((UINT64_C(1) << g->fp_bits) - 1);

	key.fp = (uint32_t) (mixed >> 40) & mask;
	if (key.fp == 0)
		key.fp = 1;				/* 0 is an empty slot */
	key.bucket = (uint32_t) (((uint64_t) (uint32_t) mixed * g->nbuckets) >> 32);
	return key;
}

/* The other bucket of an entry of fingerprint fp in bucket b. */
static inline uint32_t
alt_bucket(const amq_rt_geom *g, uint32_t b, uint32_t fp)
{
	uint32_t	t = (uint32_t) (amq_fmix64(fp) % g->nbuckets);

	return t >= b ? t - b : t + g->nbuckets - b;
}

static inline uint32_t
entry_fp(const amq_rt_geom *g, uint32_t e)
{
	return e >> (32 - g->fp_bits);
}

static inline uint32_t
entry_range(const amq_rt_geom *g, uint32_t e)
{
	return e & amq_rt_everywhere(g);
}

static inline uint32_t
make_entry(const amq_rt_geom *g, uint32_t fp, uint32_t range)
{
	return (fp << (32 - g->fp_bits)) | range;
}

/* The bit of a range that marks a span's end (0 in a table without spans). */
static inline uint32_t
span_bit(const amq_rt_geom *g)
{
	return g->spans ? (amq_rt_everywhere(g) >> 1) + 1 : 0;
}

/*
 * What a key's entries (those of its fingerprint) say: their number, its
 * plain ranges' least and greatest, its span, whether one is "everywhere",
 * and whether one answers range.
 */
typedef struct fp_entries
{
	int			n;
	int			nplain;
	uint32_t	plain[2 * AMQ_RT_BUCKET_SLOTS + AMQ_RT_STASH_SLOTS];
	uint32_t	lo;				/* over plain ranges and span ends */
	uint32_t	hi;
	amq_rt_span span;			/* lo > hi: no span end */
	bool		everywhere;
	bool		holds;			/* range: its entry, in its span, or everywhere */
} fp_entries;

/* Stores e in an empty slot of bucket b; false if it has none. */
static bool
put(uint32_t *slots, uint32_t b, uint32_t e)
{
	uint32_t   *s = slots + (size_t) b * AMQ_RT_BUCKET_SLOTS;
	int			i;

	for (i = 0; i < AMQ_RT_BUCKET_SLOTS; i++)
		if (s[i] == 0)
		{
			s[i] = e;
			return true;
		}
	return false;
}

/*
 * Places e, which belongs in bucket b (or its other one), moving entries
 * to their other buckets as cuckoo hashing does, then into the stash.
 * False if neither had room: the page is full.
 */
static bool
place(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots, uint32_t b,
	  uint32_t e)
{
	uint32_t   *stash = slots + (size_t) g->nbuckets * AMQ_RT_BUCKET_SLOTS;
	uint64_t	rng = amq_fmix64(((uint64_t) e << 32) | b);
	int			kick;

	if (put(slots, b, e) || put(slots, alt_bucket(g, b, entry_fp(g, e)), e))
		return true;
	for (kick = 0; kick < AMQ_RT_MAX_KICKS; kick++)
	{
		uint32_t	j;
		uint32_t	victim;

		rng = amq_fmix64(rng + UINT64_C(0x9E3779B97F4A7C15));
		j = (uint32_t) (rng % AMQ_RT_BUCKET_SLOTS);
		if (rng & UINT64_C(0x100000000))
			b = alt_bucket(g, b, entry_fp(g, e));
		victim = slots[(size_t) b * AMQ_RT_BUCKET_SLOTS + j];
		slots[(size_t) b * AMQ_RT_BUCKET_SLOTS + j] = e;
		e = victim;
		b = alt_bucket(g, b, entry_fp(g, e));
		if (put(slots, b, e))
			return true;
	}
	if (page->nstash < AMQ_RT_STASH_SLOTS)
	{
		stash[page->nstash++] = e;
		return true;
	}
	return false;
}

/*
 * The i-th of the slots a key's entries can be in: its first bucket's,
 * its second's (none when both are one), then the stash's entries; 0 for
 * an empty slot or none, and *more false past the last.
 */
static inline uint32_t
key_slot(const amq_rt_geom *g, const amq_rt_page *page, const uint32_t *slots,
		 amq_rt_key key, uint32_t b2, int i, bool *more)
{
	*more = i < 2 * AMQ_RT_BUCKET_SLOTS + page->nstash;
	if (!*more)
		return 0;
	if (i < AMQ_RT_BUCKET_SLOTS)
		return slots[(size_t) key.bucket * AMQ_RT_BUCKET_SLOTS + i];
	if (i < 2 * AMQ_RT_BUCKET_SLOTS)
		return b2 == key.bucket ? 0 :
			slots[(size_t) b2 * AMQ_RT_BUCKET_SLOTS + i - AMQ_RT_BUCKET_SLOTS];
	return slots[(size_t) g->nbuckets * AMQ_RT_BUCKET_SLOTS + i - 2 * AMQ_RT_BUCKET_SLOTS];
}

/*
 * Visits the slots a key's entries can be in (its two buckets and the
 * stash) and says what its entries hold (fp_entries), for range.
 */
static void
scan_fp(const amq_rt_geom *g, const amq_rt_page *page, const uint32_t *slots,
		amq_rt_key key, uint32_t range, fp_entries *out)
{
	uint32_t	b2 = alt_bucket(g, key.bucket, key.fp);
	uint32_t	everywhere = amq_rt_everywhere(g);
	uint32_t	sbit = span_bit(g);
	uint32_t	whole = range;
	bool		more = true;
	int			i;

	/* a row class is held by its whole range's entry too */
	if (g->lanes && g->row_bits > 0 && range < amq_rt_whole_bit(g))
		whole = amq_rt_whole_bit(g) | (range >> g->row_bits);
	out->n = 0;
	out->nplain = 0;
	out->lo = UINT32_MAX;
	out->hi = 0;
	out->span.lo = UINT32_MAX;
	out->span.hi = 0;
	out->everywhere = false;
	out->holds = false;
	for (i = 0; more; i++)
	{
		uint32_t	e = key_slot(g, page, slots, key, b2, i, &more);
		uint32_t	r;

		if (e == 0 || entry_fp(g, e) != key.fp)
			continue;
		out->n++;
		r = entry_range(g, e);
		if (r == everywhere)
		{
			out->everywhere = true;
			continue;
		}
		if (r & sbit)
		{
			r &= ~sbit;
			out->span.lo = r < out->span.lo ? r : out->span.lo;
			out->span.hi = r > out->span.hi ? r : out->span.hi;
		}
		else
		{
			if (r == range || r == whole)
				out->holds = true;
			out->plain[out->nplain++] = r;
		}
		out->lo = r < out->lo ? r : out->lo;
		out->hi = r > out->hi ? r : out->hi;
	}
	if (out->everywhere ||
		(out->span.lo <= out->span.hi && out->span.lo <= range && range <= out->span.hi))
		out->holds = true;
}

/* Empties every slot of fp among the key's buckets and the stash. */
static int
remove_fp(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots, amq_rt_key key)
{
	uint32_t	b[2];
	uint32_t   *stash = slots + (size_t) g->nbuckets * AMQ_RT_BUCKET_SLOTS;
	int			removed = 0;
	int			i,
				j;

	b[0] = key.bucket;
	b[1] = alt_bucket(g, key.bucket, key.fp);
	for (i = 0; i < 2; i++)
	{
		if (i == 1 && b[1] == b[0])
			break;
		for (j = 0; j < AMQ_RT_BUCKET_SLOTS; j++)
		{
			uint32_t   *s = &slots[(size_t) b[i] * AMQ_RT_BUCKET_SLOTS + j];

			if (*s != 0 && entry_fp(g, *s) == key.fp)
			{
				*s = 0;
				removed++;
			}
		}
	}
	/* the stash stays dense: its last entry fills each hole */
	for (j = 0; j < page->nstash;)
	{
		if (entry_fp(g, stash[j]) == key.fp)
		{
			stash[j] = stash[page->nstash - 1];
			stash[page->nstash - 1] = 0;
			page->nstash--;
			removed++;
		}
		else
			j++;
	}
	return removed;
}

/*
 * Replaces the key's entries by what they become: one (fp, everywhere), or
 * a span lo .. hi and the nout ranges out[] beside it.  The freed slots are
 * in the key's buckets or the stash, and at least as many as the entries
 * placed (the callers'): there is room, but a page that had none would
 * answer everything.
 */
static amq_rt_result
replace_fp(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots, amq_rt_key key,
		   bool everywhere, uint32_t lo, uint32_t hi, const uint32_t *out, int nout,
		   int *delta)
{
	int			removed = remove_fp(g, page, slots, key);
	int			placed = 0;
	int			want;
	int			i;

	page->nentries -= removed;
	*delta = -removed;
	if (everywhere)
	{
		want = 1;
		placed += place(g, page, slots, key.bucket, make_entry(g, key.fp, amq_rt_everywhere(g)));
	}
	else
	{
		want = 2 + nout;
		placed += place(g, page, slots, key.bucket, make_entry(g, key.fp, span_bit(g) | lo));
		placed += place(g, page, slots, key.bucket, make_entry(g, key.fp, span_bit(g) | hi));
		for (i = 0; i < nout; i++)
			placed += place(g, page, slots, key.bucket, make_entry(g, key.fp, out[i]));
	}
	page->nentries += placed;
	*delta += placed;
	if (placed != want)
	{
		page->flags |= AMQ_RT_SATURATED;
		return AMQ_RT_NOW_SATURATED;
	}
	return AMQ_RT_WIDENED;
}

/*
 * The span and the ranges beside it that cover a key's span (if any), its
 * ranges and range, reading the fewest ranges (the span's width and one a
 * range beside it), and of those the one of fewest entries: the ranges a
 * lookup reads, least; a range next to the span joins it.  The rest of the
 * points join the span.  Beside it: at most AMQ_RT_SPAN_BESIDE, or as many
 * as the key has beside its span already (a build keeps up to
 * AMQ_RT_MAX_RANGES beside a cluster's), so that a write never widens a
 * span more than the new range needs.
 */
static amq_rt_result
respan(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots, amq_rt_key key,
	   const fp_entries *fe, uint32_t range, int *delta)
{
	uint32_t	pts[AMQ_RT_MAX_RANGES + 1];
	int			npts = 0;
	bool		has_span = fe->span.lo <= fe->span.hi;
	uint64_t	best_cost = UINT64_MAX;
	uint32_t	best_lo = 0,
				best_hi = 0;
	uint32_t	out[AMQ_RT_MAX_RANGES];
	int			nout = 0;
	int			max_beside = AMQ_RT_SPAN_BESIDE;
	unsigned	mask,
				best_mask = 0;
	int			i;

	/* the key's ranges past AMQ_RT_MAX_RANGES (a page that holds more) join its span */
	for (i = 0; i < fe->nplain && npts < AMQ_RT_MAX_RANGES; i++)
		pts[npts++] = fe->plain[i];
	pts[npts++] = range;
	if (has_span && npts - 1 > max_beside)
		max_beside = npts - 1;
	for (mask = 0; mask < (1u << npts); mask++)
	{
		/* bits set: the points that join the span; the others stay beside it */
		uint32_t	lo = has_span ? fe->span.lo : UINT32_MAX;
		uint32_t	hi = has_span ? fe->span.hi : 0;
		int			beside = 0;
		uint64_t	cost;

		for (i = 0; i < npts; i++)
			if (mask & (1u << i))
			{
				lo = pts[i] < lo ? pts[i] : lo;
				hi = pts[i] > hi ? pts[i] : hi;
			}
			else
				beside++;
		if (beside > max_beside || lo > hi)
			continue;
		cost = ((uint64_t) hi - lo + 1 + beside) * 4 + beside;
		if (cost < best_cost)
		{
			best_cost = cost;
			best_mask = mask;
			best_lo = lo;
			best_hi = hi;
		}
	}
	/* the ranges of a page that held more than AMQ_RT_MAX_RANGES join too */
	for (i = AMQ_RT_MAX_RANGES; i < fe->nplain; i++)
	{
		best_lo = fe->plain[i] < best_lo ? fe->plain[i] : best_lo;
		best_hi = fe->plain[i] > best_hi ? fe->plain[i] : best_hi;
	}
	for (i = 0; i < npts; i++)
		if (!(best_mask & (1u << i)) && pts[i] >= best_lo && pts[i] <= best_hi)
			best_mask |= 1u << i;	/* inside the widened span after all */
	for (i = 0; i < npts; i++)
		if (!(best_mask & (1u << i)))
			out[nout++] = pts[i];
	return replace_fp(g, page, slots, key, false, best_lo, best_hi, out, nout, delta);
}

amq_rt_result
amq_rt_insert(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots,
			  amq_rt_key key, uint32_t range, int *delta)
{
	fp_entries	fe;

	*delta = 0;
	if (page->flags & AMQ_RT_SATURATED)
		return AMQ_RT_PRESENT;
	/* a range past those the table numbers (a caller's slip) is everywhere */
	if (range >= (g->lanes ? amq_rt_everywhere(g) : amq_rt_ranges(g)))
		range = amq_rt_everywhere(g);
	scan_fp(g, page, slots, key, range, &fe);
	if (fe.holds)
		return AMQ_RT_PRESENT;
	if (range == amq_rt_everywhere(g))
	{
		if (fe.n > 0)
			return replace_fp(g, page, slots, key, true, 0, 0, NULL, 0, delta);
	}
	else if (!g->lanes && (fe.span.lo <= fe.span.hi || fe.n >= AMQ_RT_MAX_RANGES))
	{
		/* a span and ranges beside it, or in a table without spans, everywhere */
		if (g->spans)
			return respan(g, page, slots, key, &fe, range, delta);
		return replace_fp(g, page, slots, key, true, 0, 0, NULL, 0, delta);
	}
	if (!place(g, page, slots, key.bucket, make_entry(g, key.fp, range)))
	{
		/* one entry (maybe another key's) has no slot: answer everything */
		page->flags |= AMQ_RT_SATURATED;
		return AMQ_RT_NOW_SATURATED;
	}
	page->nentries++;
	*delta = 1;
	return AMQ_RT_ADDED;
}

amq_rt_result
amq_rt_insert_span(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots,
				   amq_rt_key key, uint32_t lo, uint32_t hi,
				   const uint32_t *beside, int nbeside, int *delta)
{
	uint32_t	out[AMQ_RT_MAX_RANGES];
	int			nout = 0;
	fp_entries	fe;
	int			i;

	*delta = 0;
	if (!g->spans || lo > hi || hi >= amq_rt_ranges(g) || nbeside < 0 ||
		nbeside > AMQ_RT_MAX_RANGES)
		return amq_rt_insert(g, page, slots, key, amq_rt_everywhere(g), delta);
	if (page->flags & AMQ_RT_SATURATED)
		return AMQ_RT_PRESENT;
	scan_fp(g, page, slots, key, lo, &fe);
	if (fe.everywhere)
		return AMQ_RT_PRESENT;
	/* the key's entries, if any, join the span */
	if (fe.n > 0)
	{
		lo = fe.lo < lo ? fe.lo : lo;
		hi = fe.hi > hi ? fe.hi : hi;
	}
	for (i = 0; i < nbeside; i++)
	{
		if (beside[i] >= amq_rt_ranges(g))
			return amq_rt_insert(g, page, slots, key, amq_rt_everywhere(g), delta);
		if (beside[i] < lo || beside[i] > hi)
			out[nout++] = beside[i];
	}
	return replace_fp(g, page, slots, key, false, lo, hi, out, nout, delta);
}

int
amq_rt_lookup(const amq_rt_geom *g, const amq_rt_page *page,
			  const uint32_t *slots, amq_rt_key key, uint32_t *ranges, int max,
			  amq_rt_span *span)
{
	uint32_t	b2 = alt_bucket(g, key.bucket, key.fp);
	uint32_t	everywhere = amq_rt_everywhere(g);
	uint32_t	sbit = span_bit(g);
	bool		more = true;
	int			n = 0;
	int			i;

	span->lo = UINT32_MAX;
	span->hi = 0;
	if (page->flags & AMQ_RT_SATURATED)
		return -1;
	for (i = 0; more; i++)
	{
		uint32_t	e = key_slot(g, page, slots, key, b2, i, &more);
		uint32_t	r;

		if (e == 0 || entry_fp(g, e) != key.fp)
			continue;
		r = entry_range(g, e);
		if (r == everywhere)
			return -1;
		if (r & sbit)
		{
			r &= ~sbit;
			span->lo = r < span->lo ? r : span->lo;
			span->hi = r > span->hi ? r : span->hi;
			continue;
		}
		if (n < max)
			ranges[n] = r;
		n++;
	}
	return n;
}

bool
amq_rt_holds(const amq_rt_geom *g, const amq_rt_page *page,
			 const uint32_t *slots, amq_rt_key key, uint32_t range)
{
	fp_entries	fe;

	if (page->flags & AMQ_RT_SATURATED)
		return true;
	scan_fp(g, page, slots, key, range, &fe);
	return fe.holds;
}

bool
amq_rt_may_contain(const amq_rt_geom *g, const amq_rt_page *page,
				   const uint32_t *slots, amq_rt_key key)
{
	fp_entries	fe;

	if (page->flags & AMQ_RT_SATURATED)
		return true;
	scan_fp(g, page, slots, key, 0, &fe);
	return fe.n > 0;
}

bool
amq_rt_check(const amq_rt_geom *g, const amq_rt_page *page, const uint32_t *slots)
{
	uint32_t	nslots = g->nbuckets * AMQ_RT_BUCKET_SLOTS;
	const uint32_t *stash = slots + nslots;
	uint32_t	used = 0;
	uint32_t	i;

	if (!amq_rt_check_header(g, page))
		return false;
	for (i = 0; i < nslots; i++)
		used += slots[i] != 0;
	for (i = 0; i < AMQ_RT_STASH_SLOTS; i++)
	{
		if ((i < page->nstash) != (stash[i] != 0))
			return false;
		used += stash[i] != 0;
	}
	return used == page->nentries;
}

uint32_t
amq_rt_count_everywhere(const amq_rt_geom *g, const amq_rt_page *page,
						const uint32_t *slots)
{
	uint32_t	nslots = g->nbuckets * AMQ_RT_BUCKET_SLOTS + page->nstash;
	uint32_t	everywhere = amq_rt_everywhere(g);
	uint32_t	n = 0;
	uint32_t	i;

	for (i = 0; i < nslots; i++)
		n += slots[i] != 0 && (slots[i] & everywhere) == everywhere;
	return n;
}

double
amq_rt_false_match_rate(const amq_rt_geom *g, const amq_rt_page *page)
{
	double		in_buckets;
	double		compared;

	if (page->flags & AMQ_RT_SATURATED)
		return 1.0;
	in_buckets = (double) (page->nentries - page->nstash) /
		((double) g->nbuckets * AMQ_RT_BUCKET_SLOTS);
	compared = 2.0 * AMQ_RT_BUCKET_SLOTS * in_buckets + page->nstash;
	/* fingerprints are 1 .. 2^fp_bits - 1 */
	return 1.0 - pow(1.0 - 1.0 / (double) ((UINT64_C(1) << g->fp_bits) - 1), compared);
}
