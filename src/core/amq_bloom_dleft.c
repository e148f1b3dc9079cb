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
 * The arithmetic modulo N is done without division instructions: the
 * validator derives, once per opened filter, each a_t mod N, Shoup's
 * fraction floor(a_t 2^64 / N) for P_t, and N's reciprocal for the other
 * products a merge needs (amq_dleft_consts), and the masks that let a
 * bucket's cells be compared several at a time (scan_bucket).  Adding many
 * keys locates each a few keys ahead and requests its d buckets, so that
 * their cache misses overlap.
 *
 * Insertion first looks for the key's cell in all d buckets and increments
 * its counter; otherwise it takes an empty cell in the least loaded of its d
 * buckets, the leftmost sub-table on ties (d-left hashing).  Counting
 * stops at the first sub-table that holds the key; the membership test
 * reads all d buckets and tests them without a branch between them.
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

/*
 * (a * b) mod N for a, b < N < 2^62, without a division instruction: the
 * 128-bit product is divided by N through N's precomputed reciprocal
 * (Moeller and Granlund, "Improved division by invariant integers", IEEE
 * Transactions on Computers 60(2), 2011, algorithm 4, on N shifted until
 * its top bit is set).  Three multiplications instead of a 128-by-64-bit
 * division: an operation does four of these, one per sub-table.
 */
static inline uint64_t
mulmod(const amq_dleft_consts *c, uint64_t a, uint64_t b)
{
#ifdef __SIZEOF_INT128__
	amq_uint128 x = (amq_uint128) a * b;
	uint64_t	u1 = (uint64_t) (x >> 64);
	uint64_t	u0 = (uint64_t) x;
	amq_uint128 q;
	uint64_t	q0;
	uint64_t	r;

	if (c->shift != 0)
	{
		u1 = (u1 << c->shift) | (u0 >> (64 - c->shift));
		u0 <<= c->shift;
	}
	/* a * b < N * 2^64, so u1 < norm: the quotient fits one word */
	q = (amq_uint128) c->recip * u1 + (((amq_uint128) (u1 + 1) << 64) | u0);
	q0 = (uint64_t) q;
	r = u0 - (uint64_t) (q >> 64) * c->norm;
	if (r > q0)
		r += c->norm;
	if (r >= c->norm)
		r -= c->norm;
	return r >> c->shift;
#else
	uint64_t	n = c->n;
	uint64_t	r = 0;

	/* double and add: every intermediate stays below 2N < 2^63 */
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

uint64_t
amq_dleft_mulmod(const amq_dleft_consts *c, uint64_t a, uint64_t b)
{
	return mulmod(c, a, b);
}

/*
 * P_t(v) = a_t * v mod N for v < N, the multiplier being fixed: with
 * mult_frac = floor(a_t 2^64 / N) precomputed, q = floor(mult_frac v / 2^64)
 * is the quotient or one less (Shoup's multiplication by a constant), so
 * a_t v - q N, computed modulo 2^64, lies in [0, 2N) (N < 2^62) and one
 * subtraction finishes.  Two multiplications and a high product.
 */
static inline uint64_t
permute(const amq_dleft_consts *c, int t, uint64_t v)
{
#ifdef __SIZEOF_INT128__
	uint64_t	q = (uint64_t) (((amq_uint128) c->mult_frac[t] * v) >> 64);
	uint64_t	r = c->mult[t] * v - q * c->n;

	return r >= c->n ? r - c->n : r;
#else
	return mulmod(c, c->mult[t], v);
#endif
}

uint64_t
amq_dleft_permute(const amq_dleft_consts *c, int t, uint64_t v)
{
	return permute(c, t, v);
}

/* The constants of a geometry (B >= 1, r in range, N < 2^62: validated). */
void
amq_dleft_consts_init(amq_dleft_consts *c, uint64_t buckets, uint32_t fp_bits)
{
	int			t;
	unsigned	w = fp_bits + 2;
	unsigned	q = 57 / w;		/* cells per group */
	unsigned	i;

	c->n = buckets << fp_bits;
	for (t = 0; t < TABLES; t++)
		c->mult[t] = perm_mult[t] % c->n;
	c->group_rep = 0;
	for (i = 0; i < q; i++)
		c->group_rep |= UINT64_C(1) << (i * w);
	c->group_top = c->group_rep << (w - 1);
	memset(c->cell_of_bit, 0, sizeof(c->cell_of_bit));
	for (i = 0; i < q; i++)
		c->cell_of_bit[i * w] = (uint8_t) i;
	c->table_bytes = buckets * w;
	/* fields of 4 bits and more hold any partial count of 8 cells */
	c->sum_shift = w >= 4 ? (q - 1) * w : 0;
	c->groups = 0;
	for (i = 0; i < CELLS; i += q)
	{
		unsigned	cells = CELLS - i < q ? CELLS - i : q;

		c->group_byte[c->groups] = (uint8_t) ((i * w) >> 3);
		c->group_shift[c->groups] = (uint8_t) ((i * w) & 7);
		c->group_first[c->groups] = (uint8_t) i;
		c->group_mask[c->groups] = (UINT64_C(1) << (cells * w)) - 1;
		c->groups++;
	}
#ifdef __SIZEOF_INT128__
	for (t = 0; t < TABLES; t++)
		c->mult_frac[t] = (uint64_t) (((amq_uint128) c->mult[t] << 64) / c->n);
	c->shift = (unsigned) __builtin_clzll(c->n);
	c->norm = c->n << c->shift;
	/* floor((2^128 - 1) / norm) lies in [2^64, 2^65): keep the low word */
	c->recip = (uint64_t) (~(amq_uint128) 0 / c->norm);
#else
	for (t = 0; t < TABLES; t++)
		c->mult_frac[t] = 0;
	c->shift = 0;
	c->norm = c->n;
	c->recip = 0;
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

/*
 * Bytes a bucket's decoding may read: cell 7 starts in byte (7 w) >> 3 and
 * is read as 8 bytes from there; w <= AMQ_BLOOM_DLEFT_MAX_FP + 2.
 */
#define BUCKET_READ_BYTES	((7 * (AMQ_BLOOM_DLEFT_MAX_FP + 2)) / 8 + 8)

/* The geometry of an opened view. */
typedef struct dleft
{
	uint8_t    *bits;
	const uint8_t *direct_end;	/* buckets starting before this decode in place */
	uint64_t	buckets;		/* B */
	unsigned	r;				/* fingerprint bits */
	unsigned	width;			/* cell bits = bucket bytes = r + 2 */
	const amq_dleft_consts *c;	/* N, a_t mod N, N's reciprocal */
} dleft;

static void
dleft_begin(dleft *g, const amq_bloom_view *view)
{
	uint64_t	bytes = view->nbits / 8;

	g->bits = view->bits;
	g->direct_end = bytes >= BUCKET_READ_BYTES ?
		view->bits + (bytes - BUCKET_READ_BYTES) : view->bits;
	g->buckets = view->buckets;
	g->r = view->hashes;
	g->width = g->r + 2;
	g->c = &view->dleft;
}

/* Where a key (by its v) lives in each sub-table. */
typedef struct dleft_key
{
	uint8_t    *bucket[TABLES];
	uint64_t	fp[TABLES];
} dleft_key;

static inline void
locate_in(const dleft *g, int t, uint64_t v, dleft_key *key)
{
	uint64_t	x = permute(g->c, t, v);

	key->bucket[t] = g->bits + t * g->c->table_bytes + (x >> g->r) * g->width;
	key->fp[t] = x & ((UINT64_C(1) << g->r) - 1);
}

/* Written out per sub-table: a loop of four is not unrolled by every compiler. */
#if AMQ_BLOOM_DLEFT_TABLES != 4
#error "locate_v places four sub-tables"
#endif
static AMQ_ALWAYS_INLINE void
locate_v(const dleft *g, uint64_t v, dleft_key *key)
{
	locate_in(g, 0, v, key);
	locate_in(g, 1, v, key);
	locate_in(g, 2, v, key);
	locate_in(g, 3, v, key);
}

static AMQ_ALWAYS_INLINE void
locate(const dleft *g, uint64_t hash, dleft_key *key)
{
	locate_v(g, fastrange64(hash, g->c->n), key);
}

/*
 * A bucket's bytes where its cells can be read as 8-byte words: in place,
 * or, near the end of the array where such a read would run past it, a
 * padded copy in pad.
 */
static inline const uint8_t *
readable_bucket(const dleft *g, const uint8_t *bucket,
				uint8_t pad[BUCKET_READ_BYTES])
{
	if (bucket < g->direct_end)
		return bucket;
	memset(pad, 0, BUCKET_READ_BYTES);
	memcpy(pad, bucket, g->width);
	return pad;
}

/* Cell j (counter and fingerprint) of readable bucket bytes. */
static inline uint64_t
cell_at(const dleft *g, const uint8_t *bytes, unsigned j)
{
	unsigned	bit = j * g->width;

	return (load_le64(bytes + (bit >> 3)) >> (bit & 7)) &
		((UINT64_C(1) << g->width) - 1);
}

/*
 * Group i of a bucket's readable bytes (see amq_dleft_consts): its cells in
 * consecutive fields of a word, the bits above them zero.
 */
static inline uint64_t
group_at(const amq_dleft_consts *c, const uint8_t *bytes, unsigned i)
{
	return (load_le64(bytes + c->group_byte[i]) >> c->group_shift[i]) &
		c->group_mask[i];
}

/* Bit 0 of each field of a group word whose cell is used (counter > 0). */
static inline uint64_t
used_cells(const amq_dleft_consts *c, uint64_t x)
{
	return (x | (x >> 1)) & c->group_rep;
}

/*
 * The number of fields with bit 0 set in a mask that has no other bits (as
 * used_cells gives): multiplying by group_rep adds every field's bit into
 * the top field, (q - 1) w, and each field's partial sum, at most 8, fits
 * its w >= 4 bits, so nothing carries into the top field.  Three
 * instructions where a population count without the instruction (not in
 * baseline x86-64) takes about twelve.  Fields of 3 bits count bit by bit.
 */
static inline unsigned
count_fields(const amq_dleft_consts *c, uint64_t m)
{
	if (c->sum_shift == 0)
		return amq_popcount64(m);
	return (unsigned) ((m * c->group_rep) >> c->sum_shift) & 15;
}

/*
 * The cells of a group word (bit 0 of each field) that are used and hold
 * the fingerprint in want (fp << 2 in each of the q fields).  In x =
 * cells ^ want, field by field, a cell matches when its fingerprint bits
 * are zero and its counter bits are not.  A last group of fewer than q
 * cells needs no mask on want: its missing cells read as empty (the group
 * word is masked), and an empty cell never matches.  Without branches on
 * the cells: whether one is used or matches is as unpredictable as the
 * keys.
 */
static inline uint64_t
group_matches(const dleft *g, uint64_t cells, uint64_t want)
{
	const amq_dleft_consts *c = g->c;
	uint64_t	fps = (cells ^ want) & ~(c->group_rep * 3);
	uint64_t	zero = amq_zero_fields(fps, c->group_rep, c->group_top);

	return (zero >> (g->width - 1)) & used_cells(c, cells);
}

/*
 * The cell of a bucket that is used and holds fp (a bucket has at most one:
 * a key has at most one cell), or -1; *cell gets its bits (counter and
 * fingerprint) when there is one, and with load, the number of used cells
 * when there is none.  Scanned several cells at a time: a word read from
 * the bucket's bytes holds q = floor(57 / w) whole cells after the shift to
 * the first one's bit (at most 7), q w <= 57 bits, so a bucket is
 * ceil(8 / q) words (two at p = 1%, where w = 12), each costing about what
 * one cell did read alone.  Inlined, so a caller that passes no load
 * compiles to the match alone.
 */
static AMQ_ALWAYS_INLINE int
scan_bucket(const dleft *g, const uint8_t *bucket, uint64_t fp, unsigned *load,
			uint64_t *cell)
{
	uint8_t		pad[BUCKET_READ_BYTES];
	const uint8_t *bytes = readable_bucket(g, bucket, pad);
	const amq_dleft_consts *c = g->c;
	uint64_t	want = (fp << 2) * c->group_rep;
	unsigned	used = 0;
	unsigned	i;

	for (i = 0; i < c->groups; i++)
	{
		uint64_t	cells = group_at(c, bytes, i);
		uint64_t	m = group_matches(g, cells, want);

		if (m != 0)
		{
			unsigned	bit = amq_lowest_bit(m);

			*cell = (cells >> bit) & ((UINT64_C(1) << g->width) - 1);
			return (int) (c->group_first[i] + c->cell_of_bit[bit]);
		}
		if (load != NULL)
			used += count_fields(c, used_cells(c, cells));
	}
	if (load != NULL)
		*load = used;
	return -1;
}

/*
 * Nonzero if a bucket has a used cell holding fp: scan_bucket's question
 * without the loop exit, whose direction is as unpredictable as the keys.
 * groups is the geometry's c->groups, given as a constant by the callers
 * that specialize on it, so that the loop unrolls.
 */
static AMQ_ALWAYS_INLINE uint64_t
bucket_holds(const dleft *g, const uint8_t *bucket, uint64_t fp, unsigned groups)
{
	uint8_t		pad[BUCKET_READ_BYTES];
	const uint8_t *bytes = readable_bucket(g, bucket, pad);
	const amq_dleft_consts *c = g->c;
	uint64_t	want = (fp << 2) * c->group_rep;
	uint64_t	any = 0;
	unsigned	i;

	for (i = 0; i < groups; i++)
		any |= group_matches(g, group_at(c, bytes, i), want);
	return any;
}

/* scan_bucket of a bucket of an opened view, for the unit tests. */
int
amq_dleft_scan_bucket(const amq_bloom_view *view, const uint8_t *bucket,
					  uint64_t fp, unsigned *load)
{
	dleft		g;
	uint64_t	cell;

	dleft_begin(&g, view);
	return scan_bucket(&g, bucket, fp, load, &cell);
}

/* The lowest empty cell of a bucket that has one. */
static inline unsigned
lowest_empty(const dleft *g, const uint8_t *bucket)
{
	uint8_t		pad[BUCKET_READ_BYTES];
	const uint8_t *bytes = readable_bucket(g, bucket, pad);
	const amq_dleft_consts *c = g->c;
	unsigned	i;

	for (i = 0; i < c->groups; i++)
	{
		uint64_t	empty = ~used_cells(c, group_at(c, bytes, i)) &
			c->group_rep & c->group_mask[i];

		if (empty != 0)
			return c->group_first[i] + c->cell_of_bit[amq_lowest_bit(empty)];
	}
	return CELLS;				/* not reached: the caller saw a free cell */
}

/* Cell j of a bucket. */
static inline uint64_t
get_cell(const dleft *g, const uint8_t *bucket, unsigned j)
{
	uint8_t		pad[BUCKET_READ_BYTES];

	return cell_at(g, readable_bucket(g, bucket, pad), j);
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

	if (bucket < g->direct_end)
	{
		/* the 8 bytes from the cell's first lie inside the array */
		w = load_le64(bucket + first);
		store_le64(bucket + first, (w & ~mask) | (cell << shift));
		return;
	}
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

/*
 * Hints the cache lines of a located key's buckets, to be written (adds,
 * deletes) or only read (the membership test: a line requested for writing
 * is fetched for ownership, which a reader does not need; make micro-bench,
 * 2M keys: present probes 45 -> 42 ns).  Always inlined: a call to a
 * function that only prefetches is deleted by GCC (see amq_bytes.h).
 */
static AMQ_ALWAYS_INLINE void
prefetch_located(const dleft *g, const dleft_key *key, bool for_write)
{
	int			t;

	for (t = 0; t < TABLES; t++)
	{
		if (for_write)
		{
			amq_prefetch_write(key->bucket[t]);
			amq_prefetch_write(key->bucket[t] + g->width - 1);
		}
		else
		{
			amq_prefetch_read(key->bucket[t]);
			amq_prefetch_read(key->bucket[t] + g->width - 1);
		}
	}
}

/*
 * The key's cell: sets *bucket, *j and *cell, false if it has none.  Stops
 * at the first sub-table that has it.  Inlined: it is most of a probe.
 */
static AMQ_ALWAYS_INLINE bool
find_cell(const dleft *g, const dleft_key *key, uint8_t **bucket, unsigned *j,
		  uint64_t *cell)
{
	int			t;

	/* an absent key reads all d buckets: request them together */
	prefetch_located(g, key, true);
	for (t = 0; t < TABLES; t++)
	{
		int			match = scan_bucket(g, key->bucket[t], key->fp[t], NULL, cell);

		if (match >= 0)
		{
			*bucket = key->bucket[t];
			*j = (unsigned) match;
			return true;
		}
	}
	return false;
}

/*
 * Adds count (1..3) copies of a located key: to its cell, or to an empty
 * cell of its least loaded bucket, leftmost first.  AMQ_FULL if it has no
 * cell and all d buckets are full; nothing changes then.  Each bucket is
 * decoded once for both questions.
 */
static amq_status
add_located(const dleft *g, const dleft_key *key, unsigned count)
{
	unsigned	load[TABLES];
	int			best = -1;
	unsigned	best_load = CELLS;
	int			t;

	for (t = 0; t < TABLES; t++)
	{
		uint64_t	cell;
		int			match = scan_bucket(g, key->bucket[t], key->fp[t], &load[t],
										&cell);

		if (match >= 0)
		{
			unsigned	n = (unsigned) (cell & 3);

			if (n < DMAX)
				set_cell(g, key->bucket[t], (unsigned) match, (cell & ~UINT64_C(3)) |
						 (n + count > DMAX ? DMAX : n + count));
			return AMQ_OK;
		}
	}

	for (t = 0; t < TABLES; t++)
	{
		if (load[t] < best_load)
		{
			best = t;
			best_load = load[t];
		}
	}
	if (best < 0)
		return AMQ_FULL;
	set_cell(g, key->bucket[best], lowest_empty(g, key->bucket[best]),
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
	locate(&g, hash, &key);
	return add_located(&g, &key, 1);
}

/*
 * Keys located ahead of the one being added: each key touches a bucket in
 * every sub-table, and locating it is most of its arithmetic, so a key is
 * located once, its buckets requested, and added ADD_AHEAD keys later.
 */
#define ADD_AHEAD 8

/*
 * Adds hashes[0 .. count) in order, as count calls of amq_dleft_add would,
 * overlapping their cache misses.  Stops at the first key that does not
 * fit (AMQ_FULL); *done is the number added.
 */
amq_status
amq_dleft_add_many(const amq_bloom_view *view, const uint64_t *hashes,
				   size_t count, size_t *done)
{
	dleft		g;
	dleft_key	ring[ADD_AHEAD];
	size_t		i;

	dleft_begin(&g, view);
	for (i = 0; i < count && i < ADD_AHEAD; i++)
	{
		locate(&g, hashes[i], &ring[i]);
		prefetch_located(&g, &ring[i], true);
	}
	for (i = 0; i < count; i++)
	{
		amq_status	status = add_located(&g, &ring[i % ADD_AHEAD], 1);

		if (status != AMQ_OK)
		{
			*done = i;
			return status;
		}
		if (i + ADD_AHEAD < count)
		{
			locate(&g, hashes[i + ADD_AHEAD], &ring[i % ADD_AHEAD]);
			prefetch_located(&g, &ring[i % ADD_AHEAD], true);
		}
	}
	*done = count;
	return AMQ_OK;
}

/*
 * Whether the key has a cell: the membership test.  All d buckets are
 * read, requested together, and tested without a branch between them: a
 * stored key sits in any of the sub-tables, so stopping at the first match
 * (as counting does) mispredicts where it stops, which costs more than
 * scanning the rest of buckets already in cache.
 */
static AMQ_ALWAYS_INLINE bool
contains_groups(const dleft *g, const dleft_key *key, unsigned groups)
{
	/* written out per sub-table, as locate_v is */
	return (bucket_holds(g, key->bucket[0], key->fp[0], groups) |
			bucket_holds(g, key->bucket[1], key->fp[1], groups) |
			bucket_holds(g, key->bucket[2], key->fp[2], groups) |
			bucket_holds(g, key->bucket[3], key->fp[3], groups)) != 0;
}

/*
 * Specialized for the groups of the fingerprints p = 1% to 1e-4 gives
 * (2 groups at r = 10, 3 at r = 13 and 16), any other as it comes.
 */
bool
amq_dleft_contains(const amq_bloom_view *view, uint64_t hash)
{
	dleft		g;
	dleft_key	key;

	dleft_begin(&g, view);
	locate(&g, hash, &key);
	prefetch_located(&g, &key, false);
	switch (g.c->groups)
	{
		case 2:
			return contains_groups(&g, &key, 2);
		case 3:
			return contains_groups(&g, &key, 3);
		default:
			return contains_groups(&g, &key, g.c->groups);
	}
}

/* The counter of the key's cell, 0 if it has none. */
uint64_t
amq_dleft_counter(const amq_bloom_view *view, uint64_t hash)
{
	dleft		g;
	dleft_key	key;
	uint8_t    *bucket;
	unsigned	j;
	uint64_t	cell;

	dleft_begin(&g, view);
	locate(&g, hash, &key);
	if (!find_cell(&g, &key, &bucket, &j, &cell))
		return 0;
	return cell & 3;
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
	locate(&g, hash, &key);
	if (!find_cell(&g, &key, &bucket, &j, &cell))
		return false;
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
		inv[t] = invmod(walk->c->mult[t], walk->c->n);

	bucket_range(walk, from, to, &g_first, &g_end);
	for (gi = g_first; gi < g_end; gi++)
	{
		uint8_t    *bucket = walk->bits + gi * walk->width;
		uint64_t	t_of = gi / walk->buckets;
		uint64_t	b_of = gi % walk->buckets;
		uint64_t	cells[CELLS];
		unsigned	c;

		/* read before the loop writes: an intersection updates this bucket */
		for (c = 0; c < CELLS; c++)
			cells[c] = get_cell(walk, bucket, c);
		for (c = 0; c < CELLS; c++)
		{
			uint64_t	cell = cells[c];
			unsigned	count = (unsigned) (cell & 3);
			uint64_t	v;
			dleft_key	key;

			if (count == 0)
				continue;
			v = mulmod(walk->c, inv[t_of], (b_of << walk->r) | (cell >> 2));
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
				uint64_t	scell;
				unsigned	other = 0;

				locate_v(&gs, v, &key);
				if (find_cell(&gs, &key, &sb, &sj, &scell))
					other = (unsigned) (scell & 3);
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
