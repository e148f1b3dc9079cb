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
 * Visits the slots a key's entries can be in: its two buckets and the
 * stash.  Returns how many entries of fp there are; sets *exact if one is
 * (fp, range) or (fp, everywhere).
 */
static int
count_fp(const amq_rt_geom *g, const amq_rt_page *page, const uint32_t *slots,
		 amq_rt_key key, uint32_t range, bool *exact)
{
	uint32_t	b2 = alt_bucket(g, key.bucket, key.fp);
	uint32_t	everywhere = amq_rt_everywhere(g);
	bool		more = true;
	int			n = 0;
	int			i;

	*exact = false;
	for (i = 0; more; i++)
	{
		uint32_t	e = key_slot(g, page, slots, key, b2, i, &more);

		if (e == 0 || entry_fp(g, e) != key.fp)
			continue;
		n++;
		if (entry_range(g, e) == range || entry_range(g, e) == everywhere)
			*exact = true;
	}
	return n;
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

amq_rt_result
amq_rt_insert(const amq_rt_geom *g, amq_rt_page *page, uint32_t *slots,
			  amq_rt_key key, uint32_t range, int *delta)
{
	bool		exact;
	int			n;

	*delta = 0;
	if (page->flags & AMQ_RT_SATURATED)
		return AMQ_RT_PRESENT;
	n = count_fp(g, page, slots, key, range, &exact);
	if (exact)
		return AMQ_RT_PRESENT;
	if (n >= AMQ_RT_MAX_RANGES)
	{
		/* the freed slots are in the key's buckets, or the stash: room */
		int			removed = remove_fp(g, page, slots, key);

		if (!place(g, page, slots, key.bucket, make_entry(g, key.fp, amq_rt_everywhere(g))))
			return AMQ_RT_NOW_SATURATED;	/* cannot happen: removed >= 1 */
		page->nentries -= removed - 1;
		*delta = 1 - removed;
		return AMQ_RT_WIDENED;
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

int
amq_rt_lookup(const amq_rt_geom *g, const amq_rt_page *page,
			  const uint32_t *slots, amq_rt_key key, uint32_t *ranges, int max)
{
	uint32_t	b2 = alt_bucket(g, key.bucket, key.fp);
	uint32_t	everywhere = amq_rt_everywhere(g);
	bool		more = true;
	int			n = 0;
	int			i;

	if (page->flags & AMQ_RT_SATURATED)
		return -1;
	for (i = 0; more; i++)
	{
		uint32_t	e = key_slot(g, page, slots, key, b2, i, &more);

		if (e == 0 || entry_fp(g, e) != key.fp)
			continue;
		if (entry_range(g, e) == everywhere)
			return -1;
		if (n < max)
			ranges[n] = entry_range(g, e);
		n++;
	}
	return n;
}

bool
amq_rt_may_contain(const amq_rt_geom *g, const amq_rt_page *page,
				   const uint32_t *slots, amq_rt_key key)
{
	bool		exact;

	if (page->flags & AMQ_RT_SATURATED)
		return true;
	return count_fp(g, page, slots, key, 0, &exact) > 0;
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
