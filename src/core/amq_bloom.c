/*
 * amq_bloom.c
 *		Bloom filter core: the serialized format and its validator, adding,
 *		probing, merging and fill statistics.
 *
 * A filter is one byte buffer: a 56-byte little-endian header followed by
 * the bit array (docs/format.md has the byte-level spec).  Every multi-byte
 * field is read and written byte by byte, so the code is independent of host
 * endianness and of the buffer's alignment (PostgreSQL hands us varlena
 * payloads at arbitrary offsets).  amq_bloom_open() decodes the header into
 * an amq_bloom_view; operations use the view and, whenever they change the
 * family or the count, write the header bytes back at once, so that the
 * buffer is a valid value at every moment.
 *
 * Probe positions come from the caller's one 64-bit hash h:
 *	h1 = h, h2 = fmix64(h) (MurmurHash3's finalizer, a bijection, so h2 is as
 *	well mixed as the caller's hash even when that hash is weak in low bits).
 *	- classic: position i is fastrange(h1 + i*h2, nbits).  fastrange maps a
 *	  64-bit value to [0, nbits) by a 128-bit multiply, using the high bits,
 *	  which avoids a division per probe.
 *	- blocked: the key picks one 512-bit block (one cache line) with
 *	  fastrange(h1, nblocks) and sets k bits inside it.  A probe then costs
 *	  one cache miss instead of k, at the price of a few more bits per key.
 *	  The bits inside the block are 9-bit fields cut from the top of h2 and,
 *	  past the seventh, of fmix64(h2 + j * 0x9e3779b97f4a7c15), j = 1, 2...
 *	  Double hashing (h2 + i*h3) is NOT used inside a block: in a space of
 *	  only 512 positions its step is close to 0 or to 512/2, 512/3, ... for
 *	  about 1% of keys, whose k probes then collapse onto a few bits; that
 *	  measured 1.5x the target FPR at p = 0.001 and 4x at p = 0.0001.
 *	  Independent fields match the sizing model's assumption instead.
 * The positions depend only on h, k and nbits, never on insertion order, so
 * a filter built by parallel workers and merged with OR is byte-identical to
 * one built serially.
 *
 * The counting and d-left layouts (3 and 4) share this header and
 * validator; what they store in the array, and how they size, probe, merge
 * and count it, is in their own files, amq_bloom_counting.c and
 * amq_bloom_dleft.c, to which the entry points below dispatch.  Sizing a
 * filter for n and p is amq_bloom_size.c's.
 */
#include <math.h>
#include <string.h>

#include "amq_bloom.h"
#include "amq_bloom_block.h"
#include "amq_bloom_layout.h"
#include "amq_bytes.h"
#include "amq_hash.h"

/* header field offsets; see docs/format.md */
#define OFF_MAGIC		0
#define OFF_VERSION		4
#define OFF_LAYOUT		5
#define OFF_SCHEME		6
#define OFF_FLAGS		7
#define OFF_FAMILY		8
#define OFF_HASHES		12
#define OFF_RESERVED	14
#define OFF_SEED		16
#define OFF_NBITS		24
#define OFF_CAPACITY	32
#define OFF_TARGET_FPR	40
#define OFF_INSERTED	48

#define BLOCK_BYTES		(AMQ_BLOOM_BLOCK_BITS / 8)

/* ----------------------------------------------------------------
 * Hashing and bit helpers.
 * ----------------------------------------------------------------
 */

/*
 * MurmurHash3's 64-bit finalizer (shared with the value hashing in
 * amq_hash.h): a bijection with full avalanche.  It is part of the format:
 * test_bloom.c's known-answer positions catch any change to it.
 */
#define fmix64(k) amq_fmix64(k)

/* Blocked probes: which bits of its block a key sets is amq_bloom_block.h's. */

/* Bits set in bytes [from, to). */
static uint64_t
popcount_range(const uint8_t *bits, size_t from, size_t to)
{
	uint64_t	n = 0;
	size_t		i = from;

	for (; i + 8 <= to; i += 8)
		n += (uint64_t) amq_popcount64(load_word(bits + i));
	for (; i < to; i++)
		n += (uint64_t) amq_popcount64(bits[i]);
	return n;
}

static inline uint64_t
add_saturating(uint64_t a, uint64_t b)
{
	return (a > UINT64_MAX - b) ? UINT64_MAX : a + b;
}

/* ----------------------------------------------------------------
 * Construction and validation.
 * ----------------------------------------------------------------
 */

/* Writes a full header; the one place that knows the field order. */
static void
write_header(uint8_t *buf, int layout, uint32_t family, uint32_t hashes,
			 uint64_t seed, uint64_t nbits, uint64_t capacity,
			 double target_fpr, uint64_t inserted)
{
	memcpy(buf + OFF_MAGIC, AMQ_BLOOM_MAGIC, 4);
	buf[OFF_VERSION] = AMQ_BLOOM_VERSION;
	buf[OFF_LAYOUT] = (uint8_t) layout;
	buf[OFF_SCHEME] = AMQ_HASH_SCHEME_PG_EXTENDED;
	buf[OFF_FLAGS] = 0;
	put_u32(buf + OFF_FAMILY, family);
	put_u16(buf + OFF_HASHES, (uint16_t) hashes);
	put_u16(buf + OFF_RESERVED, 0);
	put_u64(buf + OFF_SEED, seed);
	put_u64(buf + OFF_NBITS, nbits);
	put_u64(buf + OFF_CAPACITY, capacity);
	put_f64(buf + OFF_TARGET_FPR, target_fpr);
	put_u64(buf + OFF_INSERTED, inserted);
}

/* Writes an empty, unbound filter of the sized geometry. */
void
amq_bloom_init(uint8_t *buf, const amq_bloom_params *params,
			   uint64_t n, double p, uint64_t seed)
{
	write_header(buf, params->layout, 0, params->hashes, seed,
				 params->nbits, n, p, 0);
	memset(buf + AMQ_BLOOM_HEADER_SIZE, 0, (size_t) (params->nbits / 8));
}

/* Writes the sizeless empty filter: a header with every field zero. */
void
amq_bloom_init_empty(uint8_t *buf)
{
	write_header(buf, AMQ_BLOOM_LAYOUT_EMPTY, 0, 0, 0, 0, 0, 0.0, 0);
	/* 0.0 is all-zero bits in IEEE-754, but say so explicitly */
	memset(buf + OFF_TARGET_FPR, 0, 8);
}

/*
 * The validator: every check depends on the header and len only, in the
 * order of the status codes, so the first broken rule is the one reported.
 * Nothing past the header is read, and no header byte is read before len
 * is known to cover the header.  header holds the first bytes of a value
 * of len bytes, at least AMQ_BLOOM_HEADER_SIZE of them when len allows;
 * the view it fills points nowhere (amq_bloom_open points it at the
 * bytes).
 */
amq_status
amq_bloom_open_header(const uint8_t *header, size_t len, amq_bloom_view *view)
{
	const uint8_t *buf = header;
	int			layout;
	uint32_t	family;
	uint32_t	hashes;
	uint64_t	seed;
	uint64_t	nbits;
	uint64_t	capacity;
	uint64_t	fpr_bits;
	double		target_fpr;
	uint64_t	inserted;
	uint64_t	buckets = 0;

	if (len < AMQ_BLOOM_HEADER_SIZE)
		return AMQ_ERR_TRUNCATED;
	if (memcmp(buf + OFF_MAGIC, AMQ_BLOOM_MAGIC, 4) != 0)
		return AMQ_ERR_MAGIC;
	if (buf[OFF_VERSION] != AMQ_BLOOM_VERSION)
		return AMQ_ERR_VERSION;
	layout = buf[OFF_LAYOUT];
	if (layout != AMQ_BLOOM_LAYOUT_EMPTY &&
		layout != AMQ_BLOOM_LAYOUT_BLOCKED &&
		layout != AMQ_BLOOM_LAYOUT_CLASSIC &&
		layout != AMQ_BLOOM_LAYOUT_COUNTING &&
		layout != AMQ_BLOOM_LAYOUT_DLEFT)
		return AMQ_ERR_LAYOUT;
	if (buf[OFF_SCHEME] != AMQ_HASH_SCHEME_PG_EXTENDED)
		return AMQ_ERR_HASH_SCHEME;
	if (buf[OFF_FLAGS] != 0 || get_u16(buf + OFF_RESERVED) != 0)
		return AMQ_ERR_RESERVED;

	family = get_u32(buf + OFF_FAMILY);
	hashes = get_u16(buf + OFF_HASHES);
	seed = get_u64(buf + OFF_SEED);
	nbits = get_u64(buf + OFF_NBITS);
	capacity = get_u64(buf + OFF_CAPACITY);
	fpr_bits = get_u64(buf + OFF_TARGET_FPR);
	target_fpr = get_f64(buf + OFF_TARGET_FPR);
	inserted = get_u64(buf + OFF_INSERTED);

	if (layout == AMQ_BLOOM_LAYOUT_EMPTY)
	{
		/* one spelling only: every field zero (not even -0.0 for p) */
		if (nbits != 0 || hashes != 0 || capacity != 0 || inserted != 0 ||
			family != 0 || seed != 0 || fpr_bits != 0)
			return AMQ_ERR_GEOMETRY;
	}
	else
	{
		uint64_t	align = (layout == AMQ_BLOOM_LAYOUT_BLOCKED) ?
			AMQ_BLOOM_BLOCK_BITS : 64;

		if (layout == AMQ_BLOOM_LAYOUT_DLEFT)
		{
			/* hashes is r; nbits = 32 B (r + 2) */
			if (!amq_dleft_geometry(hashes, nbits, &buckets))
				return AMQ_ERR_GEOMETRY;
		}
		else if (hashes < 1 || hashes > AMQ_BLOOM_MAX_HASHES)
			return AMQ_ERR_GEOMETRY;
		else if (nbits == 0 || nbits % align != 0)
			return AMQ_ERR_GEOMETRY;
		if (nbits > AMQ_BLOOM_MAX_NBITS)
			return AMQ_ERR_GEOMETRY;
		if (capacity < 1)
			return AMQ_ERR_GEOMETRY;
		/* written so that NaN fails too */
		if (!(target_fpr > 0.0 && target_fpr < 1.0))
			return AMQ_ERR_GEOMETRY;
	}

	if (family == 0 && inserted != 0)
		return AMQ_ERR_UNBOUND_COUNT;

	/* nbits <= AMQ_BLOOM_MAX_NBITS, so this cannot overflow */
	if (len != AMQ_BLOOM_HEADER_SIZE + (size_t) (nbits / 8))
		return AMQ_ERR_LENGTH;

	view->base = NULL;
	view->bits = NULL;
	view->layout = layout;
	view->hash_scheme = buf[OFF_SCHEME];
	view->family = family;
	view->hashes = hashes;
	view->seed = seed;
	view->nbits = nbits;
	view->nblocks = (layout == AMQ_BLOOM_LAYOUT_BLOCKED) ?
		nbits / AMQ_BLOOM_BLOCK_BITS : 0;
	view->cells = (layout == AMQ_BLOOM_LAYOUT_COUNTING) ?
		nbits / AMQ_BLOOM_COUNTER_BITS :
		buckets * AMQ_BLOOM_DLEFT_TABLES * AMQ_BLOOM_DLEFT_CELLS;
	view->buckets = buckets;
	if (layout == AMQ_BLOOM_LAYOUT_DLEFT)
		amq_dleft_consts_init(&view->dleft, buckets, hashes);
	else
		memset(&view->dleft, 0, sizeof(view->dleft));
	view->capacity = capacity;
	view->target_fpr = target_fpr;
	view->inserted = inserted;
	return AMQ_OK;
}

amq_status
amq_bloom_open_read(amq_read_fn read, void *ctx, size_t len,
					amq_bloom_view *view)
{
	/* a value too short for a header is refused before anything is read */
	if (len < AMQ_BLOOM_HEADER_SIZE)
		return AMQ_ERR_TRUNCATED;
	return amq_bloom_open_header(read(ctx, 0, AMQ_BLOOM_HEADER_SIZE), len, view);
}

/* The validator over a whole value in memory. */
amq_status
amq_bloom_open(const uint8_t *buf, size_t len, amq_bloom_view *view)
{
	amq_status	status = amq_bloom_open_header(buf, len, view);

	if (status != AMQ_OK)
		return status;
	view->base = (uint8_t *) buf;
	view->bits = (uint8_t *) buf + AMQ_BLOOM_HEADER_SIZE;
	return AMQ_OK;
}

/* ----------------------------------------------------------------
 * Adding and probing.
 * ----------------------------------------------------------------
 */

/* Keeps the header's family and count in step with the view. */
static void
sync_header(amq_bloom_view *view)
{
	put_u32(view->base + OFF_FAMILY, view->family);
	put_u64(view->base + OFF_INSERTED, view->inserted);
}

/* Sets the key's k bits (the filter must have bits). */
static inline void
set_bits(const amq_bloom_view *view, uint64_t hash)
{
	uint8_t    *bits = view->bits;
	uint64_t	h1 = hash;
	uint64_t	h2 = fmix64(hash);
	uint32_t	k = view->hashes;
	uint32_t	i;

	if (view->layout == AMQ_BLOOM_LAYOUT_BLOCKED)
	{
		amq_block_or(bits + fastrange64(h1, view->nblocks) * BLOCK_BYTES, h2, k);
	}
	else
	{
		uint64_t	x = h1;

		for (i = 0; i < k; i++, x += h2)
		{
			uint64_t	pos = fastrange64(x, view->nbits);

			bits[pos >> 3] |= (uint8_t) (1u << (pos & 7));
		}
	}

}

/* Stores one copy of a key in the array of any layout. */
static inline amq_status
store_key(const amq_bloom_view *view, uint64_t hash)
{
	switch (view->layout)
	{
		case AMQ_BLOOM_LAYOUT_COUNTING:
			amq_counting_add(view, hash);
			return AMQ_OK;
		case AMQ_BLOOM_LAYOUT_DLEFT:
			return amq_dleft_add(view, hash);
		default:
			set_bits(view, hash);
			return AMQ_OK;
	}
}

/* Binds an unbound filter to the family and counts added copies. */
static void
count_added(amq_bloom_view *view, uint64_t added, uint32_t family)
{
	if (added == 0)
		return;
	if (view->family == 0)
		view->family = family;
	view->inserted = add_saturating(view->inserted, added);
	sync_header(view);
}

void
amq_bloom_count_duplicates(amq_bloom_view *view, uint64_t count)
{
	/* a filter with no key yet has no duplicates, and no family to keep */
	if (view->family == 0 || amq_bloom_layout_counts(view->layout))
		return;
	count_added(view, count, view->family);
}

/*
 * Stores the key, binds an unbound filter to the family, counts the
 * addition.  The sizeless empty filter has no bits: callers must not add to
 * it (AMQ_ERR_NO_GEOMETRY is theirs to report); here it is a no-op rather
 * than a division by zero.
 */
amq_status
amq_bloom_add(amq_bloom_view *view, uint64_t hash, uint32_t family)
{
	amq_status	status;

	if (view->nbits == 0)
		return AMQ_OK;
	status = store_key(view, hash);
	if (status == AMQ_OK)
		count_added(view, 1, family);
	return status;
}

/* Hints the cache line(s) a key will touch; a no-op where unsupported. */
static inline void
prefetch_key(const amq_bloom_view *view, uint64_t hash)
{
	if (view->layout == AMQ_BLOOM_LAYOUT_BLOCKED)
		amq_prefetch_write(view->bits + fastrange64(hash, view->nblocks) * BLOCK_BYTES);
	else
	{
		uint64_t	h2 = fmix64(hash);
		uint64_t	x = hash;
		uint32_t	i;
		/* counting: counter j is in byte j / 2 */
		uint64_t	slots = view->cells ? view->cells : view->nbits;
		unsigned	shift = view->cells ? 1 : 3;

		for (i = 0; i < view->hashes; i++, x += h2)
			amq_prefetch_write(view->bits + (fastrange64(x, slots) >> shift));
	}
}

/*
 * Adds count keys: the same bits, family and count as count calls of
 * amq_bloom_add, but with the cache lines of keys ADD_PREFETCH_DISTANCE
 * ahead requested in advance.  Adding one key to a filter larger than the
 * cache is one memory round trip; issuing several at once overlaps them.
 * 8 measured as good as 16 or 32 on a 12 MB filter on an AMD EPYC; on an
 * Intel Xeon with a 2 MB L2, once the blocked add was down to about 7 ns a
 * key, 8 keys ahead no longer covered the miss (perf: half of
 * amq_bloom_add_many on the first store to the block), and 16 took
 * bloom_agg over 10M rows from 1.07x to 1.02x-1.05x hll_add_agg.
 */
#define ADD_PREFETCH_DISTANCE 16

/*
 * Adds the keys of a blocked filter, one line each, k bits a key.  The loop
 * specialized, the view's fields in locals (a store through the bytes may
 * alias them, so the compiler would read them again for every key); with
 * request, the lines of keys ADD_PREFETCH_DISTANCE ahead are requested
 * first.
 */
static AMQ_ALWAYS_INLINE void
add_blocked_k(const amq_bloom_view *view, const uint64_t *hashes, size_t count,
			  bool request, unsigned k)
{
	uint8_t    *bits = view->bits;
	uint64_t	nblocks = view->nblocks;
	size_t		i;

	for (i = 0; request && i < count && i < ADD_PREFETCH_DISTANCE; i++)
		amq_prefetch_write(bits + fastrange64(hashes[i], nblocks) * BLOCK_BYTES);
	for (i = 0; i < count; i++)
	{
		uint64_t	hash = hashes[i];

		if (request && i + ADD_PREFETCH_DISTANCE < count)
			amq_prefetch_write(bits + fastrange64(hashes[i + ADD_PREFETCH_DISTANCE], nblocks) * BLOCK_BYTES);
		amq_block_or(bits + fastrange64(hash, nblocks) * BLOCK_BYTES, fmix64(hash), k);
	}
}

/*
 * add_blocked_k with k a constant for the k the sizing gives from p = 0.1
 * to 0.01 (then the unrolled bits have no jump per key), any other k as it
 * comes.
 */
static AMQ_ALWAYS_INLINE void
add_blocked(const amq_bloom_view *view, const uint64_t *hashes, size_t count,
			bool request)
{
	switch (view->hashes)
	{
		case 3:
			add_blocked_k(view, hashes, count, request, 3);
			break;
		case 4:
			add_blocked_k(view, hashes, count, request, 4);
			break;
		case 5:
			add_blocked_k(view, hashes, count, request, 5);
			break;
		case 6:
			add_blocked_k(view, hashes, count, request, 6);
			break;
		case 7:
			add_blocked_k(view, hashes, count, request, 7);
			break;
		default:
			add_blocked_k(view, hashes, count, request, view->hashes);
			break;
	}
}

amq_status
amq_bloom_add_many(amq_bloom_view *view, const uint64_t *hashes, size_t count,
				   uint32_t family)
{
	size_t		i;

	if (view->nbits == 0 || count == 0)
		return AMQ_OK;
	if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
	{
		/* its buckets depend on the loads: stored in order, up to a full one */
		size_t		done;
		amq_status	status = amq_dleft_add_many(view, hashes, count, &done);

		count_added(view, done, family);
		return status;
	}
	if (view->layout == AMQ_BLOOM_LAYOUT_BLOCKED)
	{
		add_blocked(view, hashes, count, true);
		count_added(view, count, family);
		return AMQ_OK;
	}
	for (i = 0; i < count && i < ADD_PREFETCH_DISTANCE; i++)
		prefetch_key(view, hashes[i]);
	for (i = 0; i < count; i++)
	{
		if (i + ADD_PREFETCH_DISTANCE < count)
			prefetch_key(view, hashes[i + ADD_PREFETCH_DISTANCE]);
		(void) store_key(view, hashes[i]);
	}
	count_added(view, count, family);
	return AMQ_OK;
}

bool
amq_bloom_key_lines(const amq_bloom_view *view, amq_key_lines *lines)
{
	if (view->layout != AMQ_BLOOM_LAYOUT_BLOCKED || view->nblocks == 0)
		return false;
	lines->base = view->bits;
	lines->count = view->nblocks;
	return true;
}

void
amq_bloom_add_requested(amq_bloom_view *view, const uint64_t *hashes,
						size_t count, uint32_t family)
{
	if (count == 0)
		return;
	add_blocked(view, hashes, count, false);
	count_added(view, count, family);
}

/*
 * true if all k bits are set, reading the bits through read (offsets from
 * the value's first byte).  Stops at the first clear bit: most probes of
 * absent keys end after one or two bits.  A blocked probe reads its one
 * block; a classic probe reads one byte per bit it tests.  Inlined into
 * both callers, so in memory the reads are plain loads.
 */
static AMQ_ALWAYS_INLINE bool
may_contain(const amq_bloom_view *view, uint64_t hash, amq_read_fn read,
			void *ctx)
{
	uint64_t	h1 = hash;
	uint64_t	h2 = fmix64(hash);
	uint32_t	k = view->hashes;
	uint32_t	i;

	if (view->nbits == 0)
		return false;

	/* in memory only: amq_bloom_probe_reads refuses these layouts */
	if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
		return amq_dleft_contains(view, hash);
	if (view->layout == AMQ_BLOOM_LAYOUT_COUNTING)
		return amq_counting_min(view, hash) > 0;
	if (view->layout == AMQ_BLOOM_LAYOUT_BLOCKED)
	{
		const uint8_t *block = read(ctx, AMQ_BLOOM_HEADER_SIZE +
									fastrange64(h1, view->nblocks) * BLOCK_BYTES,
									BLOCK_BYTES);

		return amq_block_test(block, h2, k);
	}
	else
	{
		uint64_t	x = h1;

		for (i = 0; i < k; i++, x += h2)
		{
			uint64_t	pos = fastrange64(x, view->nbits);
			const uint8_t *byte = read(ctx, AMQ_BLOOM_HEADER_SIZE + (pos >> 3), 1);

			if ((*byte & (1u << (pos & 7))) == 0)
				return false;
		}
	}
	return true;
}

bool
amq_bloom_may_contain(const amq_bloom_view *view, uint64_t hash)
{
	return may_contain(view, hash, amq_read_in_memory, view->base);
}

bool
amq_bloom_probe_reads(const amq_bloom_view *view)
{
	return view->layout == AMQ_BLOOM_LAYOUT_BLOCKED ||
		view->layout == AMQ_BLOOM_LAYOUT_CLASSIC;
}

bool
amq_bloom_may_contain_read(const amq_bloom_view *view, uint64_t hash,
						   amq_read_fn read, void *ctx)
{
	return may_contain(view, hash, read, ctx);
}

/* Removes one copy (see amq_bloom.h); the header counts the removal. */
bool
amq_bloom_delete(amq_bloom_view *view, uint64_t hash)
{
	bool		found;

	if (view->layout == AMQ_BLOOM_LAYOUT_COUNTING)
		found = amq_counting_delete(view, hash);
	else if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
		found = amq_dleft_delete(view, hash);
	else
		return false;
	/* a saturated count stays: it no longer knows how many there are */
	if (found && view->inserted > 0 && view->inserted < UINT64_MAX)
	{
		view->inserted--;
		sync_header(view);
	}
	return found;
}

/* Copies of a key (see amq_bloom.h). */
uint64_t
amq_bloom_count(const amq_bloom_view *view, uint64_t hash)
{
	uint64_t	c;
	uint64_t	stuck;

	if (view->layout == AMQ_BLOOM_LAYOUT_COUNTING)
	{
		c = amq_counting_min(view, hash);
		stuck = AMQ_BLOOM_COUNTER_MAX;
	}
	else if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
	{
		c = amq_dleft_counter(view, hash);
		stuck = AMQ_BLOOM_DLEFT_COUNTER_MAX;
	}
	else
		return amq_bloom_may_contain(view, hash) ? 1 : 0;
	if (c == stuck && view->inserted > c)
		return view->inserted;
	return c;
}

/* ----------------------------------------------------------------
 * Merging.
 * ----------------------------------------------------------------
 */

/*
 * Two filters merge only if every key maps to the same bits in both, and
 * their hashes mean the same equality (same family, or one still unbound).
 */
amq_status
amq_bloom_compatible(const amq_bloom_view *dst, const amq_bloom_view *src)
{
	if (dst->layout == AMQ_BLOOM_LAYOUT_EMPTY ||
		src->layout == AMQ_BLOOM_LAYOUT_EMPTY)
		return AMQ_OK;

	/* hash_scheme has one value today; comparing it costs nothing */
	if (dst->layout != src->layout || dst->nbits != src->nbits ||
		dst->hashes != src->hashes || dst->seed != src->seed ||
		dst->hash_scheme != src->hash_scheme)
		return AMQ_ERR_GEOMETRY_MISMATCH;

	if (dst->family != src->family && dst->family != 0 && src->family != 0)
		return AMQ_ERR_FAMILY_MISMATCH;
	return AMQ_OK;
}

/* Clamps a byte range to the bit array; false if nothing is left. */
static inline bool
clamp_range(const amq_bloom_view *view, size_t *from, size_t *to)
{
	size_t		nbytes = amq_bloom_bits_bytes(view);

	if (*to > nbytes)
		*to = nbytes;
	return *from < *to;
}

/*
 * ORs (or, intersecting, ANDs) src's bytes [from, to) into dst's, a word at
 * a time; the counting and dleft layouts merge their own way.
 */
amq_status
amq_bloom_merge_bits(amq_bloom_view *dst, const amq_bloom_view *src,
					 size_t from, size_t to, bool intersect)
{
	uint8_t    *d = dst->bits;
	const uint8_t *s = src->bits;
	size_t		i = from;

	if (!clamp_range(dst, &from, &to))
		return AMQ_OK;
	if (dst->layout == AMQ_BLOOM_LAYOUT_COUNTING)
		amq_counting_merge(dst, src, from, to, intersect);
	else if (dst->layout == AMQ_BLOOM_LAYOUT_DLEFT)
		return amq_dleft_merge(dst, src, from, to, intersect);
	else if (intersect)
	{
		for (; i + 8 <= to; i += 8)
			store_word(d + i, load_word(d + i) & load_word(s + i));
		for (; i < to; i++)
			d[i] &= s[i];
	}
	else
	{
		for (; i + 8 <= to; i += 8)
			store_word(d + i, load_word(d + i) | load_word(s + i));
		for (; i < to; i++)
			d[i] |= s[i];
	}
	return AMQ_OK;
}

/*
 * After all slices: bind the family; a union adds the counts, an
 * intersection keeps the smaller, an upper bound on the keys both sides saw.
 */
void
amq_bloom_merge_finish(amq_bloom_view *dst, const amq_bloom_view *src,
					   bool intersect)
{
	if (dst->family == 0)
		dst->family = src->family;
	if (!intersect)
		dst->inserted = add_saturating(dst->inserted, src->inserted);
	else if (src->inserted < dst->inserted)
		dst->inserted = src->inserted;
	sync_header(dst);
}

/* ----------------------------------------------------------------
 * Statistics.
 * ----------------------------------------------------------------
 */

void
amq_bloom_stats_begin(amq_bloom_stats_acc *acc)
{
	acc->bits_set = 0;
	acc->cells_used = 0;
	acc->saturated = 0;
	acc->fpr_sum = 0.0;
}

/*
 * Counts set bits in bytes [from, to).  The blocked layout also sums each
 * block's own fill^k, because its FPR is the mean over blocks, which the
 * global fill underestimates when blocks fill unevenly.
 */
void
amq_bloom_stats_accumulate(const amq_bloom_view *view,
						   amq_bloom_stats_acc *acc,
						   size_t from, size_t to)
{
	const uint8_t *bits = view->bits;
	size_t		i;

	if (!clamp_range(view, &from, &to))
		return;

	if (view->layout == AMQ_BLOOM_LAYOUT_COUNTING)
	{
		amq_counting_stats(view, acc, from, to);
		return;
	}
	if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
	{
		amq_dleft_stats(view, acc, from, to);
		return;
	}
	if (view->layout != AMQ_BLOOM_LAYOUT_BLOCKED)
	{
		acc->bits_set += popcount_range(bits, from, to);
		return;
	}

	for (i = from; i < to; i += BLOCK_BYTES)
	{
		size_t		end = (i + BLOCK_BYTES < to) ? i + BLOCK_BYTES : to;
		uint64_t	c = popcount_range(bits, i, end);

		acc->bits_set += c;
		acc->fpr_sum += amq_ipow((double) c / AMQ_BLOOM_BLOCK_BITS, view->hashes);
	}
}

/*
 * Turns the counts into estimates.  The distinct-key estimate inverts the
 * expected fill 1 - e^(-kn/m) (Swamidass and Baldi); a full filter carries
 * no information about n, hence +inf.
 */
void
amq_bloom_stats_end(const amq_bloom_view *view,
					const amq_bloom_stats_acc *acc,
					amq_bloom_stats *out)
{
	double		m = (double) view->nbits;
	double		fill;

	out->bits_set = acc->bits_set;
	out->cells_used = acc->cells_used;
	out->saturated = acc->saturated;
	out->est_distinct = 0.0;
	out->est_fpr = 0.0;
	if (view->nbits == 0 || view->hashes == 0)
		return;

	if (view->layout == AMQ_BLOOM_LAYOUT_DLEFT)
	{
		/* a distinct key (up to collisions of v) holds one cell */
		out->est_distinct = (double) acc->cells_used;
		out->est_fpr = amq_dleft_fpr(view, acc->cells_used);
		return;
	}
	if (view->layout == AMQ_BLOOM_LAYOUT_COUNTING)
	{
		/* a nonzero counter is a set bit of the classic filter */
		out->bits_set = acc->cells_used;
		m = (double) view->cells;
	}

	fill = (double) out->bits_set / m;
	if (view->layout == AMQ_BLOOM_LAYOUT_BLOCKED)
		out->est_fpr = acc->fpr_sum / (double) view->nblocks;
	else
		out->est_fpr = amq_ipow(fill, view->hashes);

	if (out->bits_set == 0)
		out->est_distinct = 0.0;
	else if ((double) out->bits_set >= m)
		out->est_distinct = INFINITY;
	else
		out->est_distinct = -(m / (double) view->hashes) * log1p(-fill);
}
