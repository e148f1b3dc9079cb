/*
 * amq_hash.h
 *		Mixing functions shared by the filters and the value hashing.
 *
 * fmix64 is MurmurHash3's 64-bit finalizer: a bijection on 64-bit words that
 * spreads every input bit over every output bit.
 *
 * amq_hash_wide_int64 is the hash of an int8 value outside the int4 range.
 * PostgreSQL's int8 hash folds the high half into the low half before
 * hashing, so that int8 values equal to int4 values hash alike; the price is
 * that all 2^64 int8 values share 2^32 hashes, and two large keys collide
 * with probability 2^-32 regardless of the filter's size (a floor of about
 * n / 2^32 under the false-positive rate: 0.2% at ten million keys).  Values
 * in the int4 range keep PostgreSQL's hash, so cross-width equality still
 * holds; values outside it cannot equal any int2 or int4, so they are free
 * to use a full 64-bit hash: fmix64 of the value xor the seed, itself a
 * bijection, so distinct wide values never collide.
 *
 * amq_hash_uint32_pg is PostgreSQL's hash_bytes_uint32_extended (Bob
 * Jenkins' lookup3 on one 32-bit word, common/hashfn.c), bit for bit: what
 * hashint2extended, hashint4extended and hashint8extended compute for a
 * value in the int4 range.  A copy here lets the aggregates hash integer
 * keys without a call into the server per value; test/test_hash.c checks
 * it against values PostgreSQL computed.
 */
#ifndef AMQ_HASH_H
#define AMQ_HASH_H

#include <stdint.h>

static inline uint64_t
amq_fmix64(uint64_t k)
{
	k ^= k >> 33;
	k *= UINT64_C(0xff51afd7ed558ccd);
	k ^= k >> 33;
	k *= UINT64_C(0xc4ceb9fe1a85ec53);
	k ^= k >> 33;
	return k;
}

/* The hash of an int8 value v that lies outside [-2^31, 2^31 - 1]. */
static inline uint64_t
amq_hash_wide_int64(int64_t v, uint64_t seed)
{
	return amq_fmix64((uint64_t) v ^ seed);
}

static inline uint32_t
amq_rotl32(uint32_t x, int k)
{
	return (x << k) | (x >> (32 - k));
}

/* lookup3's mix() and final() */
#define AMQ_LOOKUP3_MIX(a, b, c) \
do { \
	a -= c; a ^= amq_rotl32(c, 4); c += b; \
	b -= a; b ^= amq_rotl32(a, 6); a += c; \
	c -= b; c ^= amq_rotl32(b, 8); b += a; \
	a -= c; a ^= amq_rotl32(c, 16); c += b; \
	b -= a; b ^= amq_rotl32(a, 19); a += c; \
	c -= b; c ^= amq_rotl32(b, 4); b += a; \
} while (0)

#define AMQ_LOOKUP3_FINAL(a, b, c) \
do { \
	c ^= b; c -= amq_rotl32(b, 14); \
	a ^= c; a -= amq_rotl32(c, 11); \
	b ^= a; b -= amq_rotl32(a, 25); \
	c ^= b; c -= amq_rotl32(b, 16); \
	a ^= c; a -= amq_rotl32(c, 4); \
	b ^= a; b -= amq_rotl32(a, 14); \
	c ^= b; c -= amq_rotl32(b, 24); \
} while (0)

/*
 * lookup3's state once the seed is mixed in, before the key is: the same
 * for every key hashed with one seed, so a batch computes it once.
 */
typedef struct amq_lookup3_seeded
{
	uint32_t	a;
	uint32_t	b;
	uint32_t	c;
} amq_lookup3_seeded;

static inline amq_lookup3_seeded
amq_hash_uint32_pg_seed(uint64_t seed)
{
	amq_lookup3_seeded s;

	s.a = s.b = s.c = UINT32_C(0x9e3779b9) + (uint32_t) sizeof(uint32_t) + 3923095;
	if (seed != 0)
	{
		s.a += (uint32_t) (seed >> 32);
		s.b += (uint32_t) seed;
		AMQ_LOOKUP3_MIX(s.a, s.b, s.c);
	}
	return s;
}

/* hash_bytes_uint32_extended(k, seed), the seed's part given. */
static inline uint64_t
amq_hash_uint32_pg_seeded(amq_lookup3_seeded s, uint32_t k)
{
	uint32_t	a = s.a + k,
				b = s.b,
				c = s.c;

	AMQ_LOOKUP3_FINAL(a, b, c);
	return ((uint64_t) b << 32) | c;
}

/* PostgreSQL's hash_bytes_uint32_extended(k, seed). */
static inline uint64_t
amq_hash_uint32_pg(uint32_t k, uint64_t seed)
{
	return amq_hash_uint32_pg_seeded(amq_hash_uint32_pg_seed(seed), k);
}

#endif							/* AMQ_HASH_H */
