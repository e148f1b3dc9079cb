/*
 * bloom_fixture.h
 *		A bloom filter in a malloc'd buffer for the tests, and the key-stream
 *		helpers they share.
 *
 * A filter owns a buffer exactly as long as its serialized form, so that
 * ASan sees any access past the end.  Keys come from the harness's
 * splitmix64 stream.  Everything is static inline, so each test program
 * takes what it uses.  Depends on harness.h only.
 */
#ifndef AMQ_TEST_BLOOM_FIXTURE_H
#define AMQ_TEST_BLOOM_FIXTURE_H

#include "amq_bloom.h"
#include "harness.h"

/* A bloom filter in a buffer of exactly its serialized length. */
typedef struct filter
{
	uint8_t    *buf;
	size_t		len;
	amq_bloom_params params;
	amq_bloom_view view;
} filter;

/* A filter sized for (n, p) in a fresh malloc'd buffer, opened. */
static inline bool
filter_make(filter *f, uint64_t n, double p, int layout)
{
	amq_status	st = amq_bloom_size(n, p, layout, &f->params);

	if (st != AMQ_OK)
	{
		diag("amq_bloom_size(%llu, %g, %d): %s", (unsigned long long) n, p,
			 layout, amq_status_text(st));
		return false;
	}
	f->len = f->params.bytes;
	f->buf = xmalloc(f->len);
	amq_bloom_init(f->buf, &f->params, n, p, AMQ_BLOOM_DEFAULT_SEED);
	st = amq_bloom_open(f->buf, f->len, &f->view);
	if (st != AMQ_OK)
	{
		diag("fresh filter does not open: %s", amq_status_text(st));
		free(f->buf);
		return false;
	}
	return true;
}

/* Frees the buffer; the filter may be made again. */
static inline void
filter_free(filter *f)
{
	free(f->buf);
	f->buf = NULL;
}

/* Adds count keys of the stream seeded with seed. */
static inline void
add_keys(filter *f, uint64_t seed, uint64_t count, uint32_t family)
{
	uint64_t	s = seed;
	uint64_t	i;

	for (i = 0; i < count; i++)
		amq_bloom_add(&f->view, splitmix64(&s), family);
}

/* Number of the count keys of the stream seeded with seed reported present. */
static inline uint64_t
count_present(const filter *f, uint64_t seed, uint64_t count)
{
	uint64_t	s = seed;
	uint64_t	i;
	uint64_t	hits = 0;

	for (i = 0; i < count; i++)
		hits += amq_bloom_may_contain(&f->view, splitmix64(&s));
	return hits;
}

/* Statistics over the whole filter. */
static inline amq_bloom_stats
filter_stats(const filter *f)
{
	amq_bloom_stats_acc acc;
	amq_bloom_stats st;

	amq_bloom_stats_begin(&acc);
	amq_bloom_stats_accumulate(&f->view, &acc, 0, amq_bloom_bits_bytes(&f->view));
	amq_bloom_stats_end(&f->view, &acc, &st);
	return st;
}

#endif							/* AMQ_TEST_BLOOM_FIXTURE_H */
