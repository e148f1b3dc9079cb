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

#endif							/* AMQ_HASH_H */
