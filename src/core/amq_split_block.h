/*
 * amq_split_block.h
 *		A split block Bloom filter, for filters that live in memory for one
 *		query and are never stored: runtime join filters.
 *
 * Putze, Sanders and Singler's blocked Bloom filter ("Cache-, hash- and
 * space-efficient Bloom filters", 2007) in the split form Impala and
 * Parquet use: blocks of 256 bits, eight 32-bit words; a key chooses its
 * block with the high half of its 64-bit hash and sets one bit in each of
 * the block's words, chosen by the low half multiplied by eight odd
 * constants.  A probe reads 32 bytes (half a cache line) and tests its
 * eight bits with no branch between them (in scalar instructions on plain
 * x86-64, which has no vector shift by a variable count before AVX2).  At
 * 12 bits a key its false-positive rate is about 0.55% (test_split_block.c);
 * the stored bloom type's layouts (docs/format.md) cost more per probe for
 * the sake of a format other versions must read, which this one does not
 * have.
 *
 * The caller allocates the words (amq_split_block_bytes, aligned to 32
 * bytes, zeroed) and hands the core 64-bit hashes of its keys.
 */
#ifndef AMQ_SPLIT_BLOCK_H
#define AMQ_SPLIT_BLOCK_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define AMQ_SPLIT_BLOCK_WORDS	8
#define AMQ_SPLIT_BLOCK_BYTES	32

typedef struct amq_split_block
{
	uint32_t   *words;			/* nblocks blocks of 8 words */
	uint64_t	nblocks;
} amq_split_block;

/* Blocks for n keys at bits_per_key bits each (at least one block). */
static inline uint64_t
amq_split_block_blocks(uint64_t n, double bits_per_key)
{
	double		blocks = (double) n * bits_per_key / 256.0;

	return blocks < 1.0 ? 1 : (uint64_t) blocks + 1;
}

/*
 * The bit of a key in word i of its block, as a mask: the top five bits of
 * the key times word i's odd constant.
 */
static inline uint32_t
amq_split_block_mask(uint32_t key, int i)
{
	static const uint32_t salt[AMQ_SPLIT_BLOCK_WORDS] = {
		0x47b6137bU, 0x44974d91U, 0x8824ad5bU, 0xa2b7289dU,
		0x705495c7U, 0x2df1424bU, 0x9efc4947U, 0x5c6bfb31U
	};

	return UINT32_C(1) << ((key * salt[i]) >> 27);
}

static inline uint32_t *
amq_split_block_block(const amq_split_block *f, uint64_t hash)
{
	/* the high half, mapped to [0, nblocks) without a division */
	return f->words + ((hash >> 32) * f->nblocks >> 32) * AMQ_SPLIT_BLOCK_WORDS;
}

static inline void
amq_split_block_add(amq_split_block *f, uint64_t hash)
{
	uint32_t   *block = amq_split_block_block(f, hash);
	int			i;

	for (i = 0; i < AMQ_SPLIT_BLOCK_WORDS; i++)
		block[i] |= amq_split_block_mask((uint32_t) hash, i);
}

/*
 * false means the key was certainly never added.  Each mask goes straight
 * into the test: without SIMD shifts by a variable count (AVX2) the masks
 * are computed one by one, and kept in an array first they were stored
 * word by word and read back as vectors, a stall on every probe.
 */
static inline bool
amq_split_block_may_contain(const amq_split_block *f, uint64_t hash)
{
	const uint32_t *block = amq_split_block_block(f, hash);
	uint32_t	missing = 0;
	int			i;

	for (i = 0; i < AMQ_SPLIT_BLOCK_WORDS; i++)
		missing |= amq_split_block_mask((uint32_t) hash, i) & ~block[i];
	return missing == 0;
}

#endif							/* AMQ_SPLIT_BLOCK_H */
