/*
 * harness.h
 *		The tiny test harness shared by the core's standalone unit tests.
 *
 * Each test binary (test/test_<name>.c, built by "make unittest" from that
 * file, the headers of test/ and the core sources only, without PostgreSQL)
 * includes this header, directly or through a fixture header
 * (bloom_fixture.h, cuckoo_fixture.h).  It provides:
 *
 *	- diag(), CHECK() and CHECK_STATUS(): a failed check prints its file,
 *	  line and expression as a "#" diagnostic and counts one failure of the
 *	  current test; the test goes on, so one run reports every failed check;
 *	- splitmix64(), the fixed-seed key stream: keys are handed to the core as
 *	  the 64-bit hash a PostgreSQL hash function would produce, so every run
 *	  sees the same numbers; KEYS_SEED and ABSENT_SEED, the streams of the
 *	  values added and of the values probed as absent, and two element
 *	  families, the same in every test program;
 *	- xmalloc(), now_seconds();
 *	- poke_*()/peek_*(): little-endian field access by explicit offset,
 *	  written independently of the core's amq_bytes.h, so that a byte-order or
 *	  offset mistake in the core cannot cancel out against the tests;
 *	- amq_run_tests(): runs a table of {name, function} and prints "ok - name"
 *	  or "not ok - name" per test and a last line "<prefix>: N passed,
 *	  M failed"; its result is the process exit status (1 on failure).
 *
 * Everything is static (inline where a binary may not use it), so each
 * test binary gets its own copy and -Wunused stays quiet.
 */
#ifndef AMQ_TEST_HARNESS_H
#define AMQ_TEST_HARNESS_H

#include <stdarg.h>
#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amq_status.h"

#define lengthof(array) (sizeof(array) / sizeof((array)[0]))

/* Failed checks of the test being run; reset by amq_run_tests(). */
static int	current_failures;

#if defined(__GNUC__)
__attribute__((format(printf, 1, 2)))
#endif
static inline void
diag(const char *fmt,...)
{
	va_list		ap;

	printf("# ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
}

#define CHECK(cond) \
	do { \
		if (!(cond)) \
		{ \
			current_failures++; \
			diag("%s:%d: check failed: %s", __FILE__, __LINE__, #cond); \
		} \
	} while (0)

/* Checks a status, naming both codes on failure. */
#define CHECK_STATUS(got, want) \
	do { \
		amq_status g_ = (got); \
		amq_status w_ = (want); \
		if (g_ != w_) \
		{ \
			current_failures++; \
			diag("%s:%d: %s gave %d (%s), expected %d (%s)", __FILE__, \
				 __LINE__, #got, (int) g_, amq_status_text(g_), (int) w_, \
				 amq_status_text(w_)); \
		} \
	} while (0)

/* ----------------------------------------------------------------
 * Helpers.
 * ----------------------------------------------------------------
 */

/* Seeds of the key streams, and element families to bind filters to. */
#define KEYS_SEED	UINT64_C(1)
#define ABSENT_SEED	UINT64_C(0xabad1dea)
#define FAMILY_A	1976u
#define FAMILY_B	3123u

/* splitmix64: the fixed-seed key stream. */
static inline uint64_t
splitmix64(uint64_t *state)
{
	uint64_t	z = (*state += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

static inline void *
xmalloc(size_t n)
{
	void	   *p = malloc(n ? n : 1);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory\n");
		exit(2);
	}
	return p;
}

static inline double
now_seconds(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double) ts.tv_sec + (double) ts.tv_nsec * 1e-9;
}

static inline void
poke_u16(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t) v;
	p[1] = (uint8_t) (v >> 8);
}

static inline void
poke_u32(uint8_t *p, uint32_t v)
{
	int			i;

	for (i = 0; i < 4; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline void
poke_u64(uint8_t *p, uint64_t v)
{
	int			i;

	for (i = 0; i < 8; i++)
		p[i] = (uint8_t) (v >> (8 * i));
}

static inline void
poke_f64(uint8_t *p, double d)
{
	uint64_t	u;

	memcpy(&u, &d, sizeof(u));
	poke_u64(p, u);
}

static inline uint32_t
peek_u32(const uint8_t *p)
{
	uint32_t	v = 0;
	int			i;

	for (i = 3; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline uint64_t
peek_u64(const uint8_t *p)
{
	uint64_t	v = 0;
	int			i;

	for (i = 7; i >= 0; i--)
		v = (v << 8) | p[i];
	return v;
}

static inline double
peek_f64(const uint8_t *p)
{
	uint64_t	u = peek_u64(p);
	double		d;

	memcpy(&d, &u, sizeof(d));
	return d;
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

typedef struct amq_test
{
	const char *name;
	void		(*fn) (void);
} amq_test;

/*
 * Runs every test of the table in order and prints the summary line
 * "<prefix>: N passed, M failed".  Returns the exit status for main().
 */
static inline int
amq_run_tests(const amq_test *tests, size_t ntests, const char *prefix)
{
	size_t		i;
	int			passed = 0;
	int			failed = 0;

	for (i = 0; i < ntests; i++)
	{
		current_failures = 0;
		tests[i].fn();
		if (current_failures == 0)
		{
			printf("ok - %s\n", tests[i].name);
			passed++;
		}
		else
		{
			printf("not ok - %s\n", tests[i].name);
			failed++;
		}
		fflush(stdout);
	}
	printf("%s: %d passed, %d failed\n", prefix, passed, failed);
	return failed ? 1 : 0;
}

#endif							/* AMQ_TEST_HARNESS_H */
