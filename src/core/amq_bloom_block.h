/*
 * amq_bloom_block.h
 *		One 512-bit block of the blocked bloom layout: which k bits of it a
 *		key sets (internal to the core).
 *
 * The blocked layout of the bloom format (docs/format.md) and the filter index
 * (amq_bloom_paged.h), which spreads blocks over pages, share this one
 * definition: a key's k bit indexes in its block are 9-bit fields from the
 * top of h2 = fmix64(hash) and, past the seventh, of fmix64(h2 + j *
 * 0x9e3779b97f4a7c15), j = 1, 2, ... (splitmix64 seeded with h2), seven per
 * word.  test_bloom.c's known-answer positions catch any change to it.
 */
#ifndef AMQ_BLOOM_BLOCK_H
#define AMQ_BLOOM_BLOCK_H

#include <stdbool.h>
#include <stdint.h>

#include "amq_hash.h"

#define AMQ_BLOCK_BYTES			64
#define AMQ_BLOCK_GOLDEN64		UINT64_C(0x9e3779b97f4a7c15)
#define AMQ_BLOCK_BITS_PER_WORD	7

typedef struct amq_block_bits
{
	uint64_t	h2;
	uint64_t	word;
	uint64_t	salt;
	unsigned	left;			/* fields left in word */
} amq_block_bits;

static inline void
amq_block_bits_start(amq_block_bits *s, uint64_t h2)
{
	s->h2 = h2;
	s->word = h2;
	s->salt = 0;
	s->left = AMQ_BLOCK_BITS_PER_WORD;
}

static inline unsigned
amq_block_bits_next(amq_block_bits *s)
{
	unsigned	bit;

	if (s->left == 0)
	{
		s->salt += AMQ_BLOCK_GOLDEN64;
		s->word = amq_fmix64(s->h2 + s->salt);
		s->left = AMQ_BLOCK_BITS_PER_WORD;
	}
	bit = (unsigned) (s->word >> 55);
	s->word <<= 9;
	s->left--;
	return bit;
}

/*
 * Sets the k bits of the key whose h2 is given in block; returns how many
 * of them were clear before (0: the block already said "maybe").
 */
static inline unsigned
amq_block_set(uint8_t *block, uint64_t h2, unsigned k)
{
	amq_block_bits stream;
	unsigned	added = 0;
	unsigned	i;

	amq_block_bits_start(&stream, h2);
	for (i = 0; i < k; i++)
	{
		unsigned	bit = amq_block_bits_next(&stream);
		uint8_t		mask = (uint8_t) (1u << (bit & 7));

		added += (block[bit >> 3] & mask) == 0;
		block[bit >> 3] |= mask;
	}
	return added;
}

/* True if all k bits of the key whose h2 is given are set in block. */
static inline bool
amq_block_test(const uint8_t *block, uint64_t h2, unsigned k)
{
	amq_block_bits stream;
	unsigned	i;

	amq_block_bits_start(&stream, h2);
	for (i = 0; i < k; i++)
	{
		unsigned	bit = amq_block_bits_next(&stream);

		if ((block[bit >> 3] & (1u << (bit & 7))) == 0)
			return false;
	}
	return true;
}

#endif							/* AMQ_BLOOM_BLOCK_H */
