/*
 * amq_bytes.h
 *		Byte-level helpers shared by the filter cores.
 *
 * Serialized filters are little-endian and PostgreSQL hands their payloads
 * over at arbitrary alignment, so every multi-byte field is read and written
 * byte by byte (get_*, put_*) and words through memcpy.  fastrange64 maps a
 * hash to an index without a division; it decides positions, so it is part
 * of both formats.
 */
#ifndef AMQ_BYTES_H
#define AMQ_BYTES_H

#include <stdint.h>
#include <string.h>

static inline uint16_t
get_u16(const uint8_t *p)
{
	return (uint16_t) (p[0] | (p[1] << 8));
}

static inline uint32_t
get_u32(const uint8_t *p)
{
	return (uint32_t) p[0] | ((uint32_t) p[1] << 8) |
		((uint32_t) p[2] << 16) | ((uint32_t) p[3] << 24);
}

static inline uint64_t
get_u64(const uint8_t *p)
{
	return (uint64_t) get_u32(p) | ((uint64_t) get_u32(p + 4) << 32);
}

/* The IEEE-754 binary64 whose bit pattern is stored at p. */
static inline double
get_f64(const uint8_t *p)
{
	uint64_t	u = get_u64(p);
	double		d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

static inline void
put_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static inline void
put_u32(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
	p[2] = (uint8_t) (v >> 16);
	p[3] = (uint8_t) (v >> 24);
}

static inline void
put_u64(uint8_t *p, uint64_t v)
{
	put_u32(p, (uint32_t) v);
	put_u32(p + 4, (uint32_t) (v >> 32));
}

static inline void
put_f64(uint8_t *p, double d)
{
	uint64_t	u;

	memcpy(&u, &d, sizeof(u));
	put_u64(p, u);
}

/* 8 bytes at p as one word, without alignment assumptions. */
static inline uint64_t
load_word(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
	return w;
}

static inline void
store_word(uint8_t *p, uint64_t w)
{
	memcpy(p, &w, sizeof(w));
}

/* A little-endian 64-bit word at p, without alignment assumptions. */
static inline uint64_t
load_le64(const uint8_t *p)
{
	uint64_t	w;

	memcpy(&w, p, sizeof(w));
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	return w;
}

static inline void
store_le64(uint8_t *p, uint64_t w)
{
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_BIG_ENDIAN__
	w = __builtin_bswap64(w);
#endif
	memcpy(p, &w, sizeof(w));
}

#ifdef __SIZEOF_INT128__
__extension__ typedef unsigned __int128 amq_uint128;
#endif

/*
 * Maps x to [0, n) as the high 64 bits of the 128-bit product x * n: no
 * division per probe.  Positions are part of the format, so the fallback
 * for compilers without a 128-bit type computes the same product from
 * 32-bit halves (x % n would give other positions, hence other filters).
 */
static inline uint64_t
fastrange64(uint64_t x, uint64_t n)
{
#ifdef __SIZEOF_INT128__
	return (uint64_t) (((amq_uint128) x * n) >> 64);
#else
	uint64_t	x_lo = x & 0xFFFFFFFF,
				x_hi = x >> 32,
				n_lo = n & 0xFFFFFFFF,
				n_hi = n >> 32;
	uint64_t	lo_lo = x_lo * n_lo,
				lo_hi = x_lo * n_hi,
				hi_lo = x_hi * n_lo,
				hi_hi = x_hi * n_hi;
	uint64_t	mid = (lo_lo >> 32) + (lo_hi & 0xFFFFFFFF) + (hi_lo & 0xFFFFFFFF);

	return hi_hi + (lo_hi >> 32) + (hi_lo >> 32) + (mid >> 32);
#endif
}

/*
 * The number of set bits of x.  Without a popcount instruction in the
 * target (the x86-64 baseline has none), __builtin_popcountll is a library
 * call: the word-parallel sum is faster.
 */
static inline unsigned
amq_popcount64(uint64_t x)
{
#if defined(__POPCNT__)
	return (unsigned) __builtin_popcountll(x);
#else
	x = x - ((x >> 1) & UINT64_C(0x5555555555555555));
	x = (x & UINT64_C(0x3333333333333333)) + ((x >> 2) & UINT64_C(0x3333333333333333));
	x = (x + (x >> 4)) & UINT64_C(0x0F0F0F0F0F0F0F0F);
	return (unsigned) ((x * UINT64_C(0x0101010101010101)) >> 56);
#endif
}

/*
 * Fields of equal width side by side in a word, rep with bit 0 of each
 * field set and top with its top bit: the top bit of each field of x that
 * is zero, the other bits clear.  Exact, with no carry between fields:
 * adding all ones below each top bit sets that bit unless the bits below
 * are zero, and or-ing the field itself in covers the top bit.
 */
static inline uint64_t
amq_zero_fields(uint64_t x, uint64_t rep, uint64_t top)
{
	uint64_t	low = top - rep;

	return ~(((x & low) + low) | x) & top;
}

/* The index of the lowest set bit of a nonzero word. */
static inline unsigned
amq_lowest_bit(uint64_t x)
{
#if defined(__GNUC__) || defined(__clang__)
	return (unsigned) __builtin_ctzll(x);
#else
	unsigned	i = 0;

	while (!(x & 1))
	{
		x >>= 1;
		i++;
	}
	return i;
#endif
}

/*
 * Hints that the cache line holding p will be read, or written, soon: the
 * cores request the lines of several independent accesses before using
 * any, so that their misses overlap.  A no-op where unsupported.
 *
 * Call them in the loop that will use the line, or from a helper small
 * enough to be inlined early: GCC 12 judges a function whose only effect
 * is a prefetch free of effects and deletes calls to it that it did not
 * inline (the cuckoo add loop lost its prefetches that way).
 */
static inline void
amq_prefetch_read(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(p, 0);
#else
	(void) p;
#endif
}

static inline void
amq_prefetch_write(const void *p)
{
#if defined(__GNUC__) || defined(__clang__)
	__builtin_prefetch(p, 1);
#else
	(void) p;
#endif
}

/*
 * Where a filter adds each key within one 64-byte line (the blocked bloom
 * layout): the key of hash h writes line base + fastrange64(h, count) * 64.
 * A caller that learns its keys one at a time, with other work between
 * them (an aggregate's rows), requests each key's line as it learns it, so
 * the line arrives while that other work runs rather than while the add
 * waits for it.
 */
typedef struct amq_key_lines
{
	const uint8_t *base;
	uint64_t	count;
} amq_key_lines;

#define AMQ_KEY_LINE_BYTES	64

static inline void
amq_prefetch_key_line(const amq_key_lines *lines, uint64_t hash)
{
	amq_prefetch_write(lines->base + fastrange64(hash, lines->count) * AMQ_KEY_LINE_BYTES);
}

#endif							/* AMQ_BYTES_H */
