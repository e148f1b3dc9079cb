/*
 * amq_bloom_block.h
 *		One 512-bit block of the blocked bloom layout: which k bits of it a
 *		key sets (internal to the core).
 *
 * The blocked layout of the bloom format (docs/format.md) has this one
 * definition: a key's k bit indexes in its block are 9-bit fields from the
 * top of h2 = fmix64(hash) and, past the seventh, of fmix64(h2 + j *
 * 0x9e3779b97f4a7c15), j = 1, 2, ... (splitmix64 seeded with h2), seven per
 * word.  test_bloom.c's known-answer positions catch any change to it.
 */
#ifndef AMQ_BLOOM_BLOCK_H
#define AMQ_BLOOM_BLOCK_H

#include <stdbool.h>
#include <stdint.h>
#include <string.h>

#include "amq_hash.h"
#include "amq_read.h"

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

/*
 * Sets bit b of a block, through its 64-bit words where the host is
 * little-endian: bit b % 64 of word b / 64 is bit b % 8 of byte b / 8.
 */
static inline void
amq_block_or_bit(uint8_t *block, unsigned bit)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
	uint64_t	word;

	memcpy(&word, block + (bit >> 6) * 8, 8);
	word |= UINT64_C(1) << (bit & 63);
	memcpy(block + (bit >> 6) * 8, &word, 8);
#else
	block[bit >> 3] |= (uint8_t) (1u << (bit & 7));
#endif
}

/* Field i of h2 (i < 7): bits [55 - 9i, 64 - 9i), the stream's field i. */
#define AMQ_BLOCK_FIELD(h2, i)	((unsigned) ((h2) >> (55 - 9 * (i))) & 511u)

#if defined(__has_attribute)
#if __has_attribute(fallthrough)
#define AMQ_FALLTHROUGH __attribute__((fallthrough))
#endif
#endif
#ifndef AMQ_FALLTHROUGH
#define AMQ_FALLTHROUGH ((void) 0)
#endif

/*
 * STEP(bit) for each of the first k fields of h2, k from 1 to 7, unrolled:
 * a switch on k whose cases fall through (k is the same for every key of a
 * filter, so its jump is predicted).  Any other k does nothing.
 */
#define AMQ_BLOCK_UNROLLED(k, h2, STEP) \
	switch (k) \
	{ \
		case 7: STEP(AMQ_BLOCK_FIELD(h2, 6)); AMQ_FALLTHROUGH; \
		case 6: STEP(AMQ_BLOCK_FIELD(h2, 5)); AMQ_FALLTHROUGH; \
		case 5: STEP(AMQ_BLOCK_FIELD(h2, 4)); AMQ_FALLTHROUGH; \
		case 4: STEP(AMQ_BLOCK_FIELD(h2, 3)); AMQ_FALLTHROUGH; \
		case 3: STEP(AMQ_BLOCK_FIELD(h2, 2)); AMQ_FALLTHROUGH; \
		case 2: STEP(AMQ_BLOCK_FIELD(h2, 1)); AMQ_FALLTHROUGH; \
		case 1: STEP(AMQ_BLOCK_FIELD(h2, 0)); break; \
		default: break; \
	}

/*
 * Sets the k bits of the key whose h2 is given in block, as amq_block_set
 * does, without counting them: the add of the bloom format's blocked
 * layout, once per key of an aggregate.  Up to seven bits, all cut from h2
 * itself, set unrolled; more, seven from each later word of the stream.
 * make micro-bench, 20k keys (the filter in cache): 9.2 -> 7.0 ns per add.  Always inlined, as amq_block_test is:
 * GCC keeps the unrolled switch out of line, a call per key.
 */
static AMQ_ALWAYS_INLINE void
amq_block_or(uint8_t *block, uint64_t h2, unsigned k)
{
	uint64_t	word = h2;
	uint64_t	salt = 0;

#define AMQ_BLOCK_OR_STEP(bit) amq_block_or_bit(block, (bit))
	/* past seven bits, the stream's later words, seven bits from each */
	while (k > AMQ_BLOCK_BITS_PER_WORD)
	{
		AMQ_BLOCK_UNROLLED(AMQ_BLOCK_BITS_PER_WORD, word, AMQ_BLOCK_OR_STEP);
		k -= AMQ_BLOCK_BITS_PER_WORD;
		salt += AMQ_BLOCK_GOLDEN64;
		word = amq_fmix64(h2 + salt);
	}
	AMQ_BLOCK_UNROLLED(k, word, AMQ_BLOCK_OR_STEP);
#undef AMQ_BLOCK_OR_STEP
}

/*
 * True if all k bits of the key whose h2 is given are set in block.  All k
 * are read, with no branch on any of them: the block is one cache line, so
 * the bits after the first clear one cost a few instructions, where a loop
 * that stopped there would branch on each bit it loaded.  Such a branch
 * goes the way of keys the predictor cannot know, and its mispredictions
 * wait for the block's cache miss; without it, the only branch on the
 * answer is the caller's, which in a scan that rejects most rows is
 * predicted, so the CPU runs on into the next rows while the miss is
 * outstanding.  Up to seven bits, unrolled as in amq_block_or.
 */
static inline unsigned
amq_block_clear(const uint8_t *block, unsigned bit)
{
	return ~((unsigned) block[bit >> 3] >> (bit & 7)) & 1u;
}

static AMQ_ALWAYS_INLINE bool
amq_block_test(const uint8_t *block, uint64_t h2, unsigned k)
{
	amq_block_bits stream;
	unsigned	missing = 0;
	unsigned	i;

#define AMQ_BLOCK_TEST_STEP(bit) (missing |= amq_block_clear(block, (bit)))
	if (k <= AMQ_BLOCK_BITS_PER_WORD)
	{
		AMQ_BLOCK_UNROLLED(k, h2, AMQ_BLOCK_TEST_STEP);
		return missing == 0;
	}
#undef AMQ_BLOCK_TEST_STEP
	amq_block_bits_start(&stream, h2);
	for (i = 0; i < k; i++)
		missing |= amq_block_clear(block, amq_block_bits_next(&stream));
	return missing == 0;
}

#endif							/* AMQ_BLOOM_BLOCK_H */
