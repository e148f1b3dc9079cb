/*
 * amq_read.h
 *		Reading a filter that is not in memory, a few bytes at a time.
 *
 * A filter stored out of line (a TOASTed value in PostgreSQL) can answer a
 * probe from its header and the handful of bytes the probe touches, without
 * being copied whole.  The core's probe and validation code is written once
 * against a read function: in memory it is pointer arithmetic that inlines
 * away; out of memory the caller fetches the range (a TOAST slice).
 */
#ifndef AMQ_READ_H
#define AMQ_READ_H

#include <stddef.h>
#include <stdint.h>

/*
 * Returns len bytes at offset of the value ctx stands for.  The core asks
 * only for ranges inside the value, as long as the header it validated
 * said (offset + len <= the value's length), at most AMQ_READ_MAX bytes at
 * a time, and uses the bytes before its next read.  A read function that
 * cannot deliver does not return (the extension raises an error).
 */
typedef const uint8_t *(*amq_read_fn) (void *ctx, size_t offset, size_t len);

/* The most bytes one read asks for: a cuckoo filter's header. */
#define AMQ_READ_MAX		64

/*
 * For the functions written once against a read function: they must be
 * inlined into their in-memory callers, or every probe would pay an indirect
 * call per read (GCC does not inline a large function called from several
 * places on its own).
 */
#if defined(__GNUC__) || defined(__clang__)
#define AMQ_ALWAYS_INLINE	inline __attribute__((always_inline))
#else
#define AMQ_ALWAYS_INLINE	inline
#endif

/* In memory: ctx is the value's first byte. */
static inline const uint8_t *
amq_read_in_memory(void *ctx, size_t offset, size_t len)
{
	(void) len;
	return (const uint8_t *) ctx + offset;
}

#endif							/* AMQ_READ_H */
