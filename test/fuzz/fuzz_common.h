/*
 * fuzz_common.h
 *		Helpers shared by the libFuzzer harnesses in test/fuzz/.
 *
 * The harnesses are built from the plain-C core only (CORE_SRCS in the
 * Makefile), with clang's -fsanitize=fuzzer,address,undefined: see the
 * "fuzz" section of the Makefile and test/fuzz/run.sh.  A property
 * violation prints what failed and calls __builtin_trap(), which libFuzzer
 * reports as a crash and saves as a reproducer.
 */
#ifndef AMQ_FUZZ_COMMON_H
#define AMQ_FUZZ_COMMON_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_base64.h"
#include "amq_hash.h"
#include "amq_status.h"

/* A property violation: say which, then trap (libFuzzer saves the input). */
#define FUZZ_CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			fprintf(stderr, "fuzz property violated at %s:%d: %s\n", \
					__FILE__, __LINE__, #cond); \
			__builtin_trap(); \
		} \
	} while (0)

static inline void *
fuzz_malloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
		abort();
	return p;
}

static inline uint8_t *
fuzz_memdup(const uint8_t *src, size_t n, size_t room)
{
	uint8_t    *p = fuzz_malloc(room < n ? n : room);

	if (n)
		memcpy(p, src, n);
	return p;
}

/* A deterministic hash stream seeded from the input. */
static inline uint64_t
fuzz_splitmix(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline uint64_t
fuzz_fnv(const uint8_t *data, size_t size)
{
	uint64_t	h = UINT64_C(0xcbf29ce484222325);
	size_t		i;

	for (i = 0; i < size; i++)
		h = (h ^ data[i]) * UINT64_C(0x100000001b3);
	return h;
}

/*
 * The bytes are their own serialization: base64-encode them, check the text
 * decodes (shape and content) back to exactly the same bytes.
 */
static inline void
fuzz_check_base64_roundtrip(const uint8_t *bytes, size_t len)
{
	size_t		tlen = amq_base64_encoded_len(len);
	char	   *text = fuzz_malloc(tlen);
	size_t		dlen = 0;
	uint8_t    *back;

	amq_base64_encode(bytes, len, text);
	FUZZ_CHECK(amq_base64_decoded_len(text, tlen, &dlen) == AMQ_OK);
	FUZZ_CHECK(dlen == len);
	back = fuzz_malloc(dlen);
	FUZZ_CHECK(amq_base64_decode(text, tlen, back) == AMQ_OK);
	FUZZ_CHECK(len == 0 || memcmp(back, bytes, len) == 0);
	free(back);
	free(text);
}

#endif							/* AMQ_FUZZ_COMMON_H */
