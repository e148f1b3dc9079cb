/*
 * cuckoo_model.h
 *		The cuckoo filter's format as the tests read it: field offsets and
 *		the hash-to-slot mapping, written from amq_cuckoo.h and
 *		docs/format.md only.
 *
 * The core's own mapping decides where fingerprints live, so it is part of
 * the format; these reference formulas are a second, independent reading of
 * the documents, so a change in the core shows up as a disagreement instead
 * of cancelling out.  Slots are read bit by bit from the bytes (raw_*), not
 * through the core's word loads.  Everything is static inline, so each test
 * program takes what it uses.  Depends on harness.h only (and the core's
 * public header for its types).
 */
#ifndef AMQ_TEST_CUCKOO_MODEL_H
#define AMQ_TEST_CUCKOO_MODEL_H

#include <math.h>

#include "amq_cuckoo.h"
#include "harness.h"

/* Format offsets (docs/format.md), for the harness's poke/peek helpers. */
#define OFF_MAGIC		0
#define OFF_VERSION		4
#define OFF_BUCKET_SIZE	5
#define OFF_HASH_SCHEME	6
#define OFF_FP_BITS		7
#define OFF_FLAGS		8
#define OFF_FAMILY		12
#define OFF_SEED		16
#define OFF_CAPACITY	24
#define OFF_TARGET_FPR	32
#define OFF_TABLES		40
#define OFF_RESERVED	44
#define OFF_RESERVED2	48
#define TOFF_BUCKETS	0		/* in a table header */
#define TOFF_ITEMS		8
#define TOFF_VBUCKET	16
#define TOFF_VFP		24
#define TOFF_RESERVED	28

/* ----------------------------------------------------------------
 * Reference formulas, written from amq_cuckoo.h and docs/format.md only.
 * ----------------------------------------------------------------
 */

__extension__ typedef unsigned __int128 ref_u128;

static inline uint64_t
ref_fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

/* The inverse of a 64-bit multiplication by odd a (Newton's iteration). */
static inline uint64_t
ref_mul_inverse(uint64_t a)
{
	uint64_t	x = a;
	int			i;

	for (i = 0; i < 6; i++)
		x *= 2 - a * x;
	return x;
}

/* The inverse of fmix64: the hash whose mix is x. */
static inline uint64_t
ref_unmix64(uint64_t x)
{
	x ^= x >> 33;
	x *= ref_mul_inverse(UINT64_C(0xc4ceb9fe1a85ec53));
	x ^= x >> 33;
	x *= ref_mul_inverse(UINT64_C(0xff51afd7ed558ccd));
	x ^= x >> 33;
	return x;
}

/* floor(x * n / 2^64) */
static inline uint64_t
ref_range(uint64_t x, uint64_t n)
{
	return (uint64_t) (((ref_u128) x * n) >> 64);
}

/* With x = fmix64(hash): 1 + floor(lo32(x) * (2^f - 1) / 2^32) */
static inline uint32_t
ref_fingerprint(uint64_t hash, uint32_t f)
{
	uint64_t	lo = (uint32_t) ref_fmix64(hash);
	uint64_t	mask = (UINT64_C(1) << f) - 1;

	return (uint32_t) (1 + ((lo * mask) >> 32));
}

/* With x = fmix64(hash): floor(x * buckets / 2^64) */
static inline uint64_t
ref_index(uint64_t hash, uint64_t buckets)
{
	return ref_range(ref_fmix64(hash), buckets);
}

/* M(fp, level): the top `level` bits of fmix64(fp + 0x9e3779b97f4a7c15) */
static inline uint64_t
ref_low_mask(uint32_t fp, unsigned level)
{
	uint64_t	x = ref_fmix64((uint64_t) fp + UINT64_C(0x9e3779b97f4a7c15));
	uint64_t	m = 0;
	unsigned	k;

	/* bit by bit from the top, so that level 0 needs no special shift */
	for (k = 0; k < level; k++)
		m = (m << 1) | ((x >> (63 - k)) & 1);
	return m;
}

/*
 * In a table of base * 2^level buckets, with high = floor(i / 2^level) and
 * low = i mod 2^level: ((H(fp) - high) mod base) * 2^level + (low xor M),
 * H(fp) = floor(fmix64(fp) * base / 2^64).  Requires base * 2^level < 2^64.
 */
static inline uint64_t
ref_alternate(uint64_t i, uint32_t fp, uint64_t base, unsigned level)
{
	uint64_t	span = UINT64_C(1) << level;
	uint64_t	high = i / span;
	uint64_t	low = i % span;
	uint64_t	h = ref_range(ref_fmix64(fp), base);
	uint64_t	alt_high = (uint64_t) (((ref_u128) h + base - high) % base);

	return alt_high * span + (low ^ ref_low_mask(fp, level));
}

/* The level of a table of `buckets` buckets (base * 2^level), or -1. */
static inline int
ref_level(uint64_t base, uint64_t buckets)
{
	int			level;

	for (level = 0; level < 64; level++)
	{
		ref_u128	b = (ref_u128) base << level;

		if (b == buckets)
			return level;
		if (b > buckets)
			break;
	}
	return -1;
}

/* Buckets of the filter's first table, read by offset. */
static inline uint64_t
ref_base(const amq_cuckoo_view *v)
{
	return peek_u64(v->base + AMQ_CUCKOO_HEADER_SIZE + TOFF_BUCKETS);
}

/*
 * A hash whose mix x has low 32 bits lo and index floor(x * nb / 2^64) = b
 * (nb <= 2^30): x is picked at random among those of bucket b, then unmixed.
 */
static inline uint64_t
ref_hash_at(uint32_t lo, uint64_t nb, uint64_t b, uint64_t *state)
{
	/* bucket b holds the x in [ceil(b 2^64 / nb), ceil((b + 1) 2^64 / nb)) */
	uint64_t	start = (uint64_t) ((((ref_u128) b << 64) + nb - 1) / nb);
	uint64_t	width = (uint64_t) ((((ref_u128) 1 << 64) - 1) / nb);	/* at most */
	uint64_t	hi_first = (start >> 32) + 1;
	uint64_t	hi_count = (width >> 32) - 1;
	uint64_t	x = ((hi_first + splitmix64(state) % hi_count) << 32) | lo;

	return ref_unmix64(x);
}

/* Words of a table: ceil(4 * buckets * f / 64) + 1. */
static inline uint64_t
ref_words(uint64_t buckets, uint32_t f)
{
	return (4 * buckets * f + 63) / 64 + 1;
}

static inline uint64_t
ref_table_bytes(uint64_t buckets, uint32_t f)
{
	return AMQ_CUCKOO_TABLE_HEADER_SIZE + 8 * ref_words(buckets, f);
}

/* ceil(n / (4 * 0.95)) = ceil(5 n / 19), exactly */
static inline uint64_t
ref_buckets(uint64_t n)
{
	return (5 * n + 18) / 19;
}

/* max(4, ceil(log2(8 / p))), exactly: the smallest f >= 4 with p 2^f >= 8 */
static inline uint32_t
ref_fp_bits(double p)
{
	uint32_t	f = 4;

	while (ldexp(p, (int) f) < 8.0)
		f++;
	return f;
}

/* Bit j of a table's word array: a little-endian bit stream. */
static inline unsigned
raw_bit(const uint8_t *words, uint64_t j)
{
	return (words[j >> 3] >> (j & 7)) & 1;
}

static inline void
raw_set_bit(uint8_t *words, uint64_t j)
{
	words[j >> 3] |= (uint8_t) (1u << (j & 7));
}

/* Writes v to slot s of bucket b, bit by bit. */
static inline void
raw_put_slot(uint8_t *words, uint64_t b, unsigned s, uint32_t f, uint32_t v)
{
	uint64_t	at = (4 * b + s) * f;
	uint32_t	k;

	for (k = 0; k < f; k++)
	{
		uint64_t	j = at + k;

		words[j >> 3] = (uint8_t) ((words[j >> 3] & ~(1u << (j & 7))) |
								   (((v >> k) & 1u) << (j & 7)));
	}
}

/* Slot s of bucket b, bit by bit from the bytes. */
static inline uint32_t
raw_slot(const uint8_t *words, uint64_t b, unsigned s, uint32_t f)
{
	uint64_t	at = (4 * b + s) * f;
	uint32_t	v = 0;
	uint32_t	k;

	for (k = 0; k < f; k++)
		v |= (uint32_t) raw_bit(words, at + k) << k;
	return v;
}

/*
 * Copies of a hash's fingerprint in its bucket pair of table tb (slots and
 * victim), by the reference mapping, the level derived from the bucket
 * counts read by offset.
 */
static inline unsigned
raw_copies(const amq_cuckoo_view *v, const amq_cuckoo_table *tb, uint64_t hash)
{
	uint32_t	f = v->fp_bits;
	uint32_t	fp = ref_fingerprint(hash, f);
	uint64_t	base = ref_base(v);
	int			level = ref_level(base, tb->buckets);
	uint64_t	i1;
	uint64_t	i2;
	unsigned	copies = 0;
	unsigned	s;

	if (level < 0)
	{
		diag("table of %llu buckets is not base %llu * 2^level",
			 (unsigned long long) tb->buckets, (unsigned long long) base);
		current_failures++;
		return 0;
	}
	i1 = ref_index(hash, tb->buckets);
	i2 = ref_alternate(i1, fp, base, (unsigned) level);

	for (s = 0; s < 4; s++)
	{
		copies += raw_slot(tb->words, i1, s, f) == fp;
		if (i2 != i1)
			copies += raw_slot(tb->words, i2, s, f) == fp;
	}
	if (tb->victim_fp == fp && (tb->victim_bucket == i1 || tb->victim_bucket == i2))
		copies++;
	return copies;
}

#endif							/* AMQ_TEST_CUCKOO_MODEL_H */
