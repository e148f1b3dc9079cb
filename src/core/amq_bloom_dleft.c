/*
 * amq_bloom_dleft.c
 *		The d-left counting layout of the bloom format (Bonomi, Mitzenmacher,
 *		Panigrahy, Singh and Varghese, "An Improved Construction for Counting
 *		Bloom Filters", ESA 2006): about half the space of the counting
 *		layout at the same false-positive rate.
 *
 * Geometry.  d = 4 sub-tables of B buckets each; a bucket has 8 cells; a
 * cell holds a 2-bit counter (0 = empty) and an r-bit fingerprint.  A cell
 * is r + 2 bits, so a bucket is exactly r + 2 bytes and the array is
 * 4 * B * (r + 2) bytes: sub-table t's bucket b starts at byte
 * (t * B + b) * (r + 2).  Cell j of a bucket is the bits [j (r+2),
 * (j+1)(r+2)) of the bucket, least significant bit first (bit q of a bucket
 * is bit q & 7 of its byte q >> 3); its low 2 bits are the counter, the
 * high r bits the fingerprint.  An empty cell is all zero.  B is any
 * positive integer: no power-of-two rounding.
 *
 * Hashing.  With N = B * 2^r, the key's hash h is reduced to v =
 * fastrange(h, N) in [0, N), and sub-table t sees the permutation
 *	x_t = P_t(v) = a_t * v mod N,	bucket = x_t >> r, fingerprint = x_t mod 2^r
 * where a_t is a fixed 64-bit prime (reduced mod N).  Each a_t is larger
 * than any N the format allows, so it is coprime to N and P_t is a bijection
 * of [0, N).  Hence (t, bucket, fingerprint) determines v: two keys share a
 * cell's identity in a sub-table only if they share v, and then they share it
 * in every sub-table.  That is what makes deletion unambiguous: a key has at
 * most one cell anywhere, so "remove one copy" always finds the right one.
 * It also lets union and intersection recover v from a cell (by the inverse
 * of a_t mod N) and so merge filters whose keys sit in different sub-tables.
 *
 * Insertion first looks for the key's cell in all d buckets and increments
 * its counter; otherwise it takes an empty cell in the least loaded of its d
 * buckets, the leftmost sub-table on ties (d-left hashing).  Probing and
 * counting look at all d buckets.
 *
 * Limits, decided so that a key added and not deleted is never reported
 * absent:
 *	- a counter that reaches 3 sticks: it is never incremented past 3 nor
 *	  decremented again, so its cell is never freed.  bloom_count then
 *	  answers with the filter's count of stored copies, an upper bound.
 *	- a key with no cell whose d buckets are all full cannot be added:
 *	  AMQ_FULL, with nothing changed (the glue reports an error).  Sized at
 *	  an average of 6 cells of 8 per bucket at n keys, that does not happen
 *	  below n in practice; from about 1.2 n distinct keys on it does.
 *
 * False positives.  An absent key matches when one of the cells in its d
 * buckets has its fingerprint in that sub-table: at most cells used /
 * (B * 2^r), i.e. n / (B * 2^r) at n keys.  Sizing picks, over r = 1..32,
 * the smallest array with B >= n / 6 (average load at most 6 per bucket,
 * 4B buckets) and n / (B * 2^r) <= p.
 *
 * The order of insertions decides which sub-table a key lands in, so a
 * parallel build is not byte-identical to a serial one, but it holds the
 * same keys with the same counts.
 */
#include <math.h>
#include <string.h>

#include "amq_bloom_layout.h"
#include "amq_bytes.h"

#define TABLES		AMQ_BLOOM_DLEFT_TABLES
#define CELLS		AMQ_BLOOM_DLEFT_CELLS
#define DMAX		AMQ_BLOOM_DLEFT_COUNTER_MAX

/*
 * The permutation multipliers, primes above 2^62: larger than any N the
 * format allows (N < 2^62, see amq_dleft_geometry), hence coprime to it.
 * Part of the format.
 */
static const uint64_t perm_mult[TABLES] = {
	UINT64_C(0x65378c45424e619b),
	UINT64_C(0x746bcfa4af6d119d),
	UINT64_C(0x66a816a1af1ffe33),
	UINT64_C(0x71eb725cd96e18bf),
};

/* (a * b) mod n for a, b < n < 2^62. */
static inline uint64_t
mulmod(uint64_t a, uint64_t b, uint64_t n)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t) (((amq_uint128) a * b) % n);
#else
	uint64_t	r = 0;

	/* double and add: every intermediate stays below 2n < 2^63 */
	while (b)
	{
		if (b & 1)
		{
			r += a;
			if (r >= n)
				r -= n;
		}
		a += a;
		if (a >= n)
			a -= n;
		b >>= 1;
	}
	return r;
#endif
}

/* The inverse of a modulo n (gcd(a, n) = 1, n < 2^62), by extended Euclid. */
static uint64_t
invmod(uint64_t a, uint64_t n)
{
	int64_t		t = 0,
				newt = 1;
	uint64_t	r = n,
				newr = a;

	while (newr != 0)
	{
		uint64_t	q = r / newr;
		int64_t		tmp_t = t - (int64_t) q * newt;
		uint64_t	tmp_r = r - q * newr;

		t = newt;
		newt = tmp_t;
		r = newr;
		newr = tmp_r;
	}
	return t < 0 ? (uint64_t) (t + (int64_t) n) : (uint64_t) t;
}

/* The geometry of an opened view, with the per-table multipliers mod N. */
typedef struct dleft
{
	uint8_t    *bits;
	uint64_t	buckets;		/* B */
	unsigned	r;				/* fingerprint bits */
	unsigned	width;			/* cell bits = bucket bytes = r + 2 */
	uint64_t	n;				/* N = B * 2^r */
	uint64_t	mult[TABLES];	/* a_t mod N */
} dleft;

static void
dleft_begin(dleft *g, const amq_bloom_view *view)
{
	int			t;

	g->bits = view->bits;
	g->buckets = view->buckets;
	g->r = view->hashes;
	g->width = g->r + 2;
	g->n = view->buckets << g->r;
	for (t = 0; t < TABLES; t++)
		g->mult[t] = perm_mult[t] % g->n;
}

/* Where a key (by its v) lives in each sub-table. */
typedef struct dleft_key
{
	uint8_t    *bucket[TABLES];
	uint64_t	fp[TABLES];
} dleft_key;

static void
locate_v(const dleft *g, uint64_t v, dleft_key *key)
{
	uint64_t	mask = (UINT64_C(1) << g->r) - 1;
	int			t;

	for (t = 0; t < TABLES; t++)
	{
		uint64_t	x = mulmod(g->mult[t], v, g->n);

		key->bucket[t] = g->bits + ((uint64_t) t * g->buckets + (x >> g->r)) * g->width;
		key->fp[t] = x & mask;
	}
}

/* The cell (counter and fingerprint) j of a bucket. */
static inline uint64_t
get_cell(const dleft *g, const uint8_t *bucket, unsigned j)
{
	unsigned	bit = j * g->width;
	unsigned	first = bit >> 3;
	unsigned	nbytes = ((bit & 7) + g->width + 7) >> 3;
	uint64_t	w = 0;
	unsigned	i;

	for (i = 0; i < nbytes; i++)
		w |= (uint64_t) bucket[first + i] << (8 * i);
	return (w >> (bit & 7)) & ((UINT64_C(1) << g->width) - 1);
}

static inline void
set_cell(const dleft *g, uint8_t *bucket, unsigned j, uint64_t cell)
{
	unsigned	bit = j * g->width;
	unsigned	first = bit >> 3;
	unsigned	shift = bit & 7;
	unsigned	nbytes = (shift + g->width + 7) >> 3;
	uint64_t	mask = ((UINT64_C(1) << g->width) - 1) << shift;
	uint64_t	w = 0;
	unsigned	i;

	for (i = 0; i < nbytes; i++)
		w |= (uint64_t) bucket[first + i] << (8 * i);
	w = (w & ~mask) | (cell << shift);
	for (i = 0; i < nbytes; i++)
		bucket[first + i] = (uint8_t) (w >> (8 * i));
}

static inline uint64_t
make_cell(uint64_t fp, unsigned counter)
{
	return (fp << 2) | counter;
}

/* The key's cell: sets *bucket and *cell index, false if it has none. */
static bool
find_cell(const dleft *g, const dleft_key *key, uint8_t **bucket, unsigned *j)
{
	int			t;
	unsigned	c;

	for (t = 0; t < TABLES; t++)
		for (c = 0; c < CELLS; c++)
		{
			uint64_t	cell = get_cell(g, key->bucket[t], c);

			if ((cell & 3) != 0 && (cell >> 2) == key->fp[t])
			{
				*bucket = key->bucket[t];
				*j = c;
				return true;
			}
		}
	return false;
}

/*
 * Adds count (1..3) copies of a located key: to its cell, or to an empty
 * cell of its least loaded bucket, leftmost first.  AMQ_FULL if it has no
 * cell and all d buckets are full; nothing changes then.
 */
static amq_status
add_located(const dleft *g, const dleft_key *key, unsigned count)
{
	uint8_t    *bucket;
	unsigned	j;
	int			best = -1;
	unsigned	best_load = CELLS;
	unsigned	best_free = 0;
	int			t;

	if (find_cell(g, key, &bucket, &j))
	{
		uint64_t	cell = get_cell(g, bucket, j);
		unsigned	c = (unsigned) (cell & 3);

		if (c < DMAX)
			set_cell(g, bucket, j, (cell & ~UINT64_C(3)) |
					 (c + count > DMAX ? DMAX : c + count));
		return AMQ_OK;
	}

	for (t = 0; t < TABLES; t++)
	{
		unsigned	load = 0;
		unsigned	free_cell = 0;
		unsigned	c;

		for (c = CELLS; c-- > 0;)
		{
			if ((get_cell(g, key->bucket[t], c) & 3) != 0)
				load++;
			else
				free_cell = c;
		}
		if (load < best_load)
		{
			best = t;
			best_load = load;
			best_free = free_cell;
		}
	}
	if (best < 0)
		return AMQ_FULL;
	set_cell(g, key->bucket[best], best_free,
			 make_cell(key->fp[best], count > DMAX ? DMAX : count));
	return AMQ_OK;
}

/*
 * The array of a d-left filter with fingerprint width r and nbits bits:
 * true, with *buckets = B, if r is in range and nbits = 32 B (r + 2) with
 * B >= 1 and N = B 2^r < 2^62.
 */
bool
amq_dleft_geometry(uint32_t fp_bits, uint64_t nbits, uint64_t *buckets)
{
	uint64_t	per_bucket;
	uint64_t	b;

	if (fp_bits < 1 || fp_bits > AMQ_BLOOM_DLEFT_MAX_FP)
		return false;
	per_bucket = (uint64_t) TABLES * CELLS * (fp_bits + 2);
	if (nbits == 0 || nbits % per_bucket != 0)
		return false;
	b = nbits / per_bucket;
	if (b >= (UINT64_C(1) << (62 - fp_bits)))
		return false;
	*buckets = b;
	return true;
}

/* Sizing (see the file header); max_nbits is the format's size limit. */
amq_status
amq_dleft_size(double n, double p, uint64_t max_nbits, amq_bloom_params *out)
{
	double		best_bits = -1.0;
	double		best_b = 0.0;
	unsigned	best_r = 0;
	unsigned	r;

	for (r = 1; r <= AMQ_BLOOM_DLEFT_MAX_FP; r++)
	{
		double		slots = ldexp(1.0, (int) r);
		double		b = ceil(n / (AMQ_BLOOM_DLEFT_LOAD * TABLES));
		double		b_fpr = ceil(n / (p * slots));
		double		bits;

		if (b_fpr > b)
			b = b_fpr;
		/* n / (b 2^r) may land one ulp above p: one more bucket fixes it */
		if (n / (b * slots) > p)
			b += 1.0;
		bits = b * TABLES * CELLS * (r + 2);
		if (!(bits <= (double) max_nbits) || !(b * slots < ldexp(1.0, 62)))
			continue;
		if (best_bits < 0.0 || bits < best_bits)
		{
			best_bits = bits;
			best_b = b;
			best_r = r;
		}
	}
	if (best_bits < 0.0)
		return AMQ_ERR_TOO_LARGE;

	out->layout = AMQ_BLOOM_LAYOUT_DLEFT;
	out->nbits = (uint64_t) best_bits;
	out->hashes = best_r;
	out->expected_fpr = n / (best_b * ldexp(1.0, (int) best_r));
	return AMQ_OK;
}

/* Adds one copy of a key. */
amq_status
amq_dleft_add(const amq_bloom_view *view, uint64_t hash)
{
	dleft		g;
	dleft_key	key;

	dleft_begin(&g, view);
	locate_v(&g, fastrange64(hash, g.n), &key);
	return add_located(&g, &key, 1);
}

/* The counter of the key's cell, 0 if it has none. */
uint64_t
amq_dleft_counter(const amq_bloom_view *view, uint64_t hash)
{
	dleft		g;
	dleft_key	key;
	uint8_t    *bucket;
	unsigned	j;

	dleft_begin(&g, view);
	locate_v(&g, fastrange64(hash, g.n), &key);
	if (!find_cell(&g, &key, &bucket, &j))
		return 0;
	return get_cell(&g, bucket, j) & 3;
}

/* Removes one copy: a stuck counter stays, a counter reaching 0 frees the cell. */
bool
amq_dleft_delete(const amq_bloom_view *view, uint64_t hash)
{
	dleft		g;
	dleft_key	key;
	uint8_t    *bucket;
	unsigned	j;
	uint64_t	cell;
	unsigned	c;

	dleft_begin(&g, view);
	locate_v(&g, fastrange64(hash, g.n), &key);
	if (!find_cell(&g, &key, &bucket, &j))
		return false;
	cell = get_cell(&g, bucket, j);
	c = (unsigned) (cell & 3);
	if (c == DMAX)
		return true;
	set_cell(&g, bucket, j, c == 1 ? 0 : cell - 1);
	return true;
}

/* The buckets, over all sub-tables, that start in bytes [from, to). */
static void
bucket_range(const dleft *g, size_t from, size_t to, uint64_t *first,
			 uint64_t *end)
{
	uint64_t	total = (uint64_t) TABLES * g->buckets;

	*first = ((uint64_t) from + g->width - 1) / g->width;
	*end = ((uint64_t) to + g->width - 1) / g->width;
	if (*end > total)
		*end = total;
}

/*
 * Union adds each cell of src's buckets in the range to dst as its key's
 * copies; intersection leaves each cell of dst's buckets in the range with
 * the smaller of its count and the key's count in src (a stuck counter
 * counts as "3 or more", so min(3, c) = c and min(3, 3) stays stuck).
 */
amq_status
amq_dleft_merge(amq_bloom_view *dst, const amq_bloom_view *src,
				size_t from, size_t to, bool intersect)
{
	dleft		gd;
	dleft		gs;
	const dleft *walk;
	uint64_t	inv[TABLES];
	uint64_t	g_first;
	uint64_t	g_end;
	uint64_t	gi;
	int			t;

	dleft_begin(&gd, dst);
	dleft_begin(&gs, src);
	walk = intersect ? &gd : &gs;
	for (t = 0; t < TABLES; t++)
		inv[t] = invmod(walk->mult[t], walk->n);

	bucket_range(walk, from, to, &g_first, &g_end);
	for (gi = g_first; gi < g_end; gi++)
	{
		uint8_t    *bucket = walk->bits + gi * walk->width;
		uint64_t	t_of = gi / walk->buckets;
		uint64_t	b_of = gi % walk->buckets;
		unsigned	c;

		for (c = 0; c < CELLS; c++)
		{
			uint64_t	cell = get_cell(walk, bucket, c);
			unsigned	count = (unsigned) (cell & 3);
			uint64_t	v;
			dleft_key	key;

			if (count == 0)
				continue;
			v = mulmod(inv[t_of], (b_of << walk->r) | (cell >> 2), walk->n);
			if (!intersect)
			{
				amq_status	st;

				locate_v(&gd, v, &key);
				st = add_located(&gd, &key, count);
				if (st != AMQ_OK)
					return st;
			}
			else
			{
				uint8_t    *sb;
				unsigned	sj;
				unsigned	other = 0;

				locate_v(&gs, v, &key);
				if (find_cell(&gs, &key, &sb, &sj))
					other = (unsigned) (get_cell(&gs, sb, sj) & 3);
				if (other == 0)
					set_cell(&gd, bucket, c, 0);
				else if (other < count)
					set_cell(&gd, bucket, c, (cell & ~UINT64_C(3)) | other);
			}
		}
	}
	return AMQ_OK;
}

/* Counts used and stuck cells of the buckets that start in [from, to). */
void
amq_dleft_stats(const amq_bloom_view *view, amq_bloom_stats_acc *acc,
				size_t from, size_t to)
{
	dleft		g;
	uint64_t	g_first;
	uint64_t	g_end;
	uint64_t	gi;

	dleft_begin(&g, view);
	bucket_range(&g, from, to, &g_first, &g_end);
	for (gi = g_first; gi < g_end; gi++)
	{
		const uint8_t *bucket = g.bits + gi * g.width;
		unsigned	c;

		for (c = 0; c < CELLS; c++)
		{
			unsigned	count = (unsigned) (get_cell(&g, bucket, c) & 3);

			acc->cells_used += count != 0;
			acc->saturated += count == DMAX;
		}
	}
}

/* The false-positive rate with cells_used cells: cells_used / (B 2^r), at most 1. */
double
amq_dleft_fpr(const amq_bloom_view *view, uint64_t cells_used)
{
	double		f = (double) cells_used / ldexp((double) view->buckets, (int) view->hashes);

	return f > 1.0 ? 1.0 : f;
}
