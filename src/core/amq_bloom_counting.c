/*
 * amq_bloom_counting.c
 *		The counting layout of the bloom format: 4-bit counters instead of
 *		bits, so that values can be deleted and their copies counted.
 *
 * The array holds nbits / 4 counters, two to a byte, counter j in the low
 * nibble of byte j / 2 when j is even, in the high nibble when odd.  A key's
 * k counters are at the classic layout's positions over the counters:
 * fastrange(h1 + i*h2, counters) with h1 = h, h2 = fmix64(h).  Sizing is the
 * classic layout's, counter for bit, so a counting filter is exactly four
 * times the classic one at the same n and p and has its false-positive rate.
 *
 * Why counters at classic positions, not in blocks.  A blocked variant
 * would put a key's k counters in one 64-byte line, as the blocked layout
 * does its bits, and probe a present key with one cache miss instead of k.
 * But a line holds only 128 counters, and keys per block vary (Poisson):
 * with the model that sizes the blocked layout (whose measured rates match
 * it, bench/LAYOUTS.md), 128-counter blocks at this layout's space give
 * 1.62%, 0.39% and 0.14% at p = 1%, 0.1% and 0.01% (1.6, 3.9 and 14 times
 * p), and reaching p takes 1.15, 1.35 and 1.6 times the space, 4.6 to 6.4
 * times the classic layout's.  Splitting a key's counters over two lines
 * still needs 1.05 to 1.15 times.  A counting filter is chosen for deletion
 * and counts at a known rate, and it already costs 4 times the classic
 * space; the probe it would save is measured beside the other layouts'
 * (bench/LAYOUTS.md, make micro-bench: k lines requested together, one
 * probe at a time).
 *
 * Four bits suffice (the counter of a position follows Poisson(ln 2) in an
 * optimally loaded filter; P(> 15) < 1e-15 per counter).  A counter that
 * reaches 15 sticks: it is never incremented past 15 nor decremented again,
 * so no deletion can take a key's counter to zero while the key is still
 * present.  The price is that such a key stays "maybe present" forever.
 *
 * Counters only ever go up by adding and down by deleting a key reported
 * present, so a key's smallest counter is never below its copies: that is
 * bloom_count.  Union adds counters (saturating at 15), intersection keeps
 * the smaller: both are per-byte nibble operations, independent of order,
 * so parallel builds give the bytes of a serial build.
 */
#include "amq_bloom_layout.h"
#include "amq_bytes.h"
#include "amq_hash.h"

#define CMAX	AMQ_BLOOM_COUNTER_MAX

static inline unsigned
get_counter(const uint8_t *a, uint64_t j)
{
	return (a[j >> 1] >> ((j & 1) * 4)) & 0xF;
}

static inline void
set_counter(uint8_t *a, uint64_t j, unsigned c)
{
	unsigned	shift = (unsigned) (j & 1) * 4;

	a[j >> 1] = (uint8_t) ((a[j >> 1] & ~(0xFu << shift)) | (c << shift));
}

/* Increments the key's k counters; a counter at the maximum stays there. */
void
amq_counting_add(const amq_bloom_view *view, uint64_t hash)
{
	uint64_t	h2 = amq_fmix64(hash);
	uint64_t	x = hash;
	uint32_t	i;

	for (i = 0; i < view->hashes; i++, x += h2)
	{
		uint64_t	j = fastrange64(x, view->cells);
		unsigned	c = get_counter(view->bits, j);

		if (c < CMAX)
			set_counter(view->bits, j, c + 1);
	}
}

/*
 * The smallest of the key's counters: 0 means certainly absent.  A present
 * key reads all k counters, each in its own cache line of an array four
 * times the classic one's: their positions are computed and requested
 * first, so that the k misses overlap, then all k are read and their
 * minimum taken without a branch on any of them.  Stopping at a zero, as
 * this did, saved nothing (the lines were requested anyway) and branched
 * on loaded counters the way of the keys: each misprediction waited for
 * the misses and threw away the caller's work after them (see
 * amq_block_test).
 */
uint64_t
amq_counting_min(const amq_bloom_view *view, uint64_t hash)
{
	uint64_t	h2 = amq_fmix64(hash);
	uint64_t	x = hash;
	uint64_t	pos[AMQ_BLOOM_MAX_HASHES];
	unsigned	min = CMAX;
	uint32_t	i;

	for (i = 0; i < view->hashes; i++, x += h2)
	{
		pos[i] = fastrange64(x, view->cells);
		amq_prefetch_read(view->bits + (pos[i] >> 1));
	}
	for (i = 0; i < view->hashes; i++)
	{
		unsigned	c = get_counter(view->bits, pos[i]);

		min = c < min ? c : min;
	}
	return min;
}

/*
 * Decrements the key's counters if all are nonzero.  A counter at the
 * maximum stays; none goes below zero (a key whose probes repeat a position
 * counted it twice when added).
 */
bool
amq_counting_delete(const amq_bloom_view *view, uint64_t hash)
{
	uint64_t	h2 = amq_fmix64(hash);
	uint64_t	x = hash;
	uint32_t	i;

	if (amq_counting_min(view, hash) == 0)
		return false;
	for (i = 0; i < view->hashes; i++, x += h2)
	{
		uint64_t	j = fastrange64(x, view->cells);
		unsigned	c = get_counter(view->bits, j);

		if (c > 0 && c < CMAX)
			set_counter(view->bits, j, c - 1);
	}
	return true;
}

/* Sum of two nibbles, saturating, or the smaller one. */
static inline unsigned
merge_nibble(unsigned a, unsigned b, bool intersect)
{
	if (intersect)
		return a < b ? a : b;
	return a + b > CMAX ? CMAX : a + b;
}

/* Merges bytes [from, to) of the counter arrays (the caller clamped them). */
void
amq_counting_merge(amq_bloom_view *dst, const amq_bloom_view *src,
				   size_t from, size_t to, bool intersect)
{
	uint8_t    *d = dst->bits;
	const uint8_t *s = src->bits;
	size_t		i;

	for (i = from; i < to; i++)
	{
		if (s[i] == 0 && !intersect)
			continue;
		d[i] = (uint8_t) (merge_nibble(d[i] & 0xF, s[i] & 0xF, intersect) |
						  (merge_nibble(d[i] >> 4, s[i] >> 4, intersect) << 4));
	}
}

/* Counts nonzero and stuck counters in bytes [from, to). */
void
amq_counting_stats(const amq_bloom_view *view, amq_bloom_stats_acc *acc,
				   size_t from, size_t to)
{
	const uint8_t *a = view->bits;
	size_t		i;

	for (i = from; i < to; i++)
	{
		unsigned	lo = a[i] & 0xF;
		unsigned	hi = a[i] >> 4;

		acc->cells_used += (lo != 0) + (hi != 0);
		acc->saturated += (lo == CMAX) + (hi == CMAX);
	}
}
