/*
 * test_read.c
 *		Unit tests of probing and validating filters that are not in memory
 *		(amq_read.h): the paths the extension uses for TOAST slices.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why: a read-driven probe must give exactly the answer
 * the in-memory probe gives, for every layout it accepts (bloom blocked and
 * classic, cuckoo with several tables), and read only what it says it
 * reads: the test's read function serves each request from a fresh buffer
 * of exactly the requested size (ASan sees any use past it, and the
 * previous buffer is freed, so bytes used after the next read are caught),
 * counts the reads, and fails on any request outside the value or larger
 * than AMQ_READ_MAX.  The header-only validators must reject a value whose
 * recorded length differs from what its header implies, by one byte either
 * way or wildly, without reading outside the recorded length.
 *
 * Keys are splitmix64 outputs from fixed seeds.  Output as in the other
 * core tests: "ok - name" per test, a last line "core read: N passed, M
 * failed", exit status 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_bloom.h"
#include "amq_cuckoo.h"
#include "amq_status.h"
#include "bloom_fixture.h"
#include "cuckoo_fixture.h"
#include "harness.h"

/* A value "out of memory": served one requested range at a time. */
typedef struct reader
{
	const uint8_t *value;		/* the bytes behind the reads */
	size_t		len;			/* the length the reads must stay within */
	uint8_t    *last;			/* the buffer handed out last */
	uint64_t	reads;
	bool		out_of_bounds;
} reader;

static const uint8_t *
test_read(void *ctx, size_t offset, size_t len)
{
	reader	   *r = ctx;

	free(r->last);
	r->reads++;
	r->last = xmalloc(len ? len : 1);
	if (len > AMQ_READ_MAX || offset > r->len || len > r->len - offset)
	{
		diag("read of %zu bytes at %zu outside a value of %zu bytes",
			 len, offset, r->len);
		r->out_of_bounds = true;
		memset(r->last, 0, len ? len : 1);
		return r->last;
	}
	memcpy(r->last, r->value + offset, len);
	return r->last;
}

static void
reader_init(reader *r, const uint8_t *value, size_t len)
{
	r->value = value;
	r->len = len;
	r->last = NULL;
	r->reads = 0;
	r->out_of_bounds = false;
}

static void
reader_done(reader *r)
{
	free(r->last);
	r->last = NULL;
	CHECK(!r->out_of_bounds);
}

/* Both layouts: same answers as in memory, at most 1 (blocked) or k reads. */
static void
bloom_layout(int layout)
{
	filter		f;
	amq_bloom_view hv;
	reader		r;
	uint64_t	s = 99;
	uint64_t	i;
	uint64_t	agree = 0;
	uint64_t	max_reads = 0;

	if (!filter_make(&f, 20000, 0.01, layout))
	{
		current_failures++;
		return;
	}
	add_keys(&f, 7, 20000, FAMILY_A);
	/* the header alone, and the length a TOAST pointer would record */
	CHECK_STATUS(amq_bloom_open_header(f.buf, f.len, &hv), AMQ_OK);
	CHECK(hv.base == NULL && hv.nbits == f.view.nbits);
	CHECK(amq_bloom_probe_reads(&hv));
	reader_init(&r, f.buf, f.len);
	for (i = 0; i < 100000; i++)
	{
		/* the first 20,000 keys of this stream are members, then not */
		uint64_t	h = i < 20000 ? 0 : splitmix64(&s);
		uint64_t	before = r.reads;

		if (i < 20000)
		{
			uint64_t	t = 7;
			uint64_t	j;

			for (j = 0; j <= i % 50; j++)
				h = splitmix64(&t);
		}
		agree += amq_bloom_may_contain_read(&hv, h, test_read, &r) ==
			amq_bloom_may_contain(&f.view, h);
		if (r.reads - before > max_reads)
			max_reads = r.reads - before;
	}
	CHECK(agree == 100000);
	CHECK(max_reads == (layout == AMQ_BLOOM_LAYOUT_BLOCKED ? 1 : f.view.hashes));
	diag("%s: %llu reads for 100000 probes, at most %llu each",
		 layout == AMQ_BLOOM_LAYOUT_BLOCKED ? "blocked" : "classic",
		 (unsigned long long) r.reads, (unsigned long long) max_reads);
	reader_done(&r);
	filter_free(&f);
}

static void
test_bloom_blocked(void)
{
	bloom_layout(AMQ_BLOOM_LAYOUT_BLOCKED);
}

static void
test_bloom_classic(void)
{
	bloom_layout(AMQ_BLOOM_LAYOUT_CLASSIC);
}

/* A header whose size disagrees with the recorded length fails, whatever it claims. */
static void
test_bloom_header_length(void)
{
	filter		f;
	amq_bloom_view hv;
	uint8_t		hdr[AMQ_BLOOM_HEADER_SIZE];

	if (!filter_make(&f, 1000, 0.01, AMQ_BLOOM_LAYOUT_BLOCKED))
	{
		current_failures++;
		return;
	}
	memcpy(hdr, f.buf, sizeof(hdr));
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len, &hv), AMQ_OK);
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len - 1, &hv), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len + 1, &hv), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len + 64, &hv), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_bloom_open_header(hdr, 55, &hv), AMQ_ERR_TRUNCATED);
	/* 2^32 bits (512 MB) claimed over the same recorded length */
	poke_u64(hdr + 24, UINT64_C(1) << 32);
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len, &hv), AMQ_ERR_LENGTH);
	/* every other rule still applies */
	memcpy(hdr, f.buf, sizeof(hdr));
	hdr[7] = 1;
	CHECK_STATUS(amq_bloom_open_header(hdr, f.len, &hv), AMQ_ERR_RESERVED);
	filter_free(&f);
}

/* A grown cuckoo filter: same answers and counts, 3 reads a table at most. */
static void
test_cuckoo_tables(void)
{
	cf			f;
	amq_cuckoo_view rv;
	reader		r;
	uint64_t	s = 5;
	uint64_t	i;
	uint64_t	agree = 0;
	uint64_t	max_reads = 0;

	if (!cf_make(&f, 2000, 0.01))
		return;
	cf_add_keys(&f, 11, 12000, FAMILY_A);
	CHECK(f.v.tables >= 3);
	reader_init(&r, f.buf, f.len);
	CHECK_STATUS(amq_cuckoo_open_read(test_read, &r, f.len, &rv), AMQ_OK);
	CHECK(r.reads == 1 + 2 * (uint64_t) f.v.tables);
	CHECK(rv.base == NULL && rv.tables == f.v.tables && rv.items == f.v.items);
	for (i = 0; i < 100000; i++)
	{
		uint64_t	h;
		uint64_t	before = r.reads;

		if (i % 2 == 0)
		{
			uint64_t	t = 11;
			uint64_t	j;

			h = 0;
			for (j = 0; j <= (i / 2) % 12000 && j < 40; j++)
				h = splitmix64(&t);
		}
		else
			h = splitmix64(&s);
		agree += amq_cuckoo_may_contain_read(&rv, h, test_read, &r) ==
			amq_cuckoo_may_contain(&f.v, h);
		agree += amq_cuckoo_count_read(&rv, h, test_read, &r) ==
			amq_cuckoo_count(&f.v, h);
		if (r.reads - before > max_reads)
			max_reads = r.reads - before;
	}
	CHECK(agree == 200000);
	/* a count reads 3 per table; a probe no more */
	CHECK(max_reads <= 2 * 3 * (uint64_t) f.v.tables);
	diag("cuckoo, %u tables: %llu reads for 100000 probes and counts",
		 f.v.tables, (unsigned long long) r.reads);
	reader_done(&r);
	cf_free(&f);
}

/*
 * Recorded lengths that disagree with the tables: every one fails as in
 * memory, and no read leaves the recorded length.
 */
static void
test_cuckoo_recorded_length(void)
{
	cf			f;
	amq_cuckoo_view rv;
	amq_cuckoo_view mv;
	reader		r;
	size_t		len;
	uint8_t    *longer;

	if (!cf_make(&f, 500, 0.01))
		return;
	cf_add_keys(&f, 13, 3000, FAMILY_A);
	CHECK(f.v.tables >= 2);
	longer = xmalloc(f.len + 100);
	memcpy(longer, f.buf, f.len);
	memset(longer + f.len, 0, 100);
	for (len = 0; len < f.len + 100; len++)
	{
		amq_status	want = amq_cuckoo_open(longer, len, &mv);

		reader_init(&r, longer, len);
		CHECK_STATUS(amq_cuckoo_open_read(test_read, &r, len, &rv), want);
		CHECK((want == AMQ_OK) == (len == f.len));
		reader_done(&r);
	}
	free(longer);
	cf_free(&f);
}

int
main(void)
{
	static const amq_test tests[] = {
		{"bloom blocked through reads", test_bloom_blocked},
		{"bloom classic through reads", test_bloom_classic},
		{"bloom header against recorded length", test_bloom_header_length},
		{"cuckoo tables through reads", test_cuckoo_tables},
		{"cuckoo recorded length", test_cuckoo_recorded_length},
	};

	return amq_run_tests(tests, sizeof(tests) / sizeof(tests[0]), "core read");
}
