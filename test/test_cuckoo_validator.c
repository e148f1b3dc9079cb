/*
 * test_cuckoo_validator.c
 *		Unit tests of the cuckoo core's validator.
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.
 *
 * What is tested, and why: the validator, amq_cuckoo_open, is the one
 * gate every stored, received or typed-in value passes, so every rule is
 * reached by corrupting one field of a valid filter; tables of other than
 * base * 2^level buckets are refused in any position; every truncation is
 * rejected without reading out of bounds (run under ASan by
 * "make unittest-asan"); the sizeless empty filter has one spelling only.
 *
 * Keys are splitmix64 outputs from fixed seeds, handed to the core as the
 * 64-bit hash a PostgreSQL hash function would produce, so every run sees
 * the same numbers.  The reference reading of the format is
 * test/cuckoo_model.h, the growable filter test/cuckoo_fixture.h.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core cuckoo validator: N passed, M failed"; exit
 * status 1 on failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <math.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_cuckoo.h"
#include "amq_status.h"
#include "cuckoo_fixture.h"
#include "cuckoo_model.h"
#include "harness.h"

/* ----------------------------------------------------------------
 * The validator.
 * ----------------------------------------------------------------
 */

/* Lengths 0 .. 63 in buffers of exactly that size: AMQ_ERR_TRUNCATED. */
static void
test_validator_truncated(void)
{
	cf			f;
	amq_cuckoo_view v;
	size_t		len;

	if (!cf_make(&f, 100, 0.01))
		return;
	for (len = 0; len < AMQ_CUCKOO_HEADER_SIZE; len++)
	{
		uint8_t    *c = xmalloc(len);

		memcpy(c, f.buf, len);
		CHECK_STATUS(amq_cuckoo_open(c, len, &v), AMQ_ERR_TRUNCATED);
		free(c);
	}
	cf_free(&f);
}

/* A copy of the valid bytes in a buffer of exactly len bytes. */
static uint8_t *
valid_copy(const cf *f, size_t len)
{
	uint8_t    *c = xmalloc(len);

	memset(c, 0, len);
	memcpy(c, f->buf, len < f->v.bytes ? len : f->v.bytes);
	return c;
}

#define BREAK(f, stmt, want) \
	do { \
		amq_cuckoo_view bv_; \
		c = valid_copy(f, (f)->v.bytes); \
		stmt; \
		CHECK_STATUS(amq_cuckoo_open(c, (f)->v.bytes, &bv_), want); \
		free(c); \
	} while (0)

/* Either of two statuses (a claim of a huge table: too big or too short). */
#define BREAK2(f, stmt, want1, want2) \
	do { \
		amq_cuckoo_view bv_; \
		amq_status st_; \
		c = valid_copy(f, (f)->v.bytes); \
		stmt; \
		st_ = amq_cuckoo_open(c, (f)->v.bytes, &bv_); \
		if (st_ != (want1) && st_ != (want2)) \
		{ \
			diag("%s:%d: %s gave %s", __FILE__, __LINE__, #stmt, \
				 amq_status_text(st_)); \
			current_failures++; \
		} \
		free(c); \
	} while (0)

/* One case per header rule; each starts from the valid bytes. */
static void
test_validator_header(void)
{
	cf			f;
	amq_cuckoo_view v;
	uint8_t    *c;

	if (!cf_make(&f, 1000, 0.01))
		return;
	cf_add_keys(&f, 3, 500, FAMILY_A);
	CHECK_STATUS(amq_cuckoo_open(f.buf, f.v.bytes, &v), AMQ_OK);

	BREAK(&f, c[0] = 'X', AMQ_ERR_MAGIC);
	BREAK(&f, c[3] = 'B', AMQ_ERR_MAGIC);	/* a bloom filter's magic */
	BREAK(&f, c[3] = 'c', AMQ_ERR_MAGIC);
	BREAK(&f, c[OFF_VERSION] = 0, AMQ_ERR_VERSION);
	BREAK(&f, c[OFF_VERSION] = 3, AMQ_ERR_VERSION);
	/* version 2 without its counter section */
	BREAK(&f, c[OFF_VERSION] = 2, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_HASH_SCHEME] = 0, AMQ_ERR_HASH_SCHEME);
	BREAK(&f, c[OFF_HASH_SCHEME] = 2, AMQ_ERR_HASH_SCHEME);
	BREAK(&f, c[OFF_FLAGS] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_FLAGS + 3] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED + 3] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_RESERVED2] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[56] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[63] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 0, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 2, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_BUCKET_SIZE] = 8, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 0, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 3, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 33, AMQ_ERR_GEOMETRY);
	BREAK(&f, c[OFF_FP_BITS] = 255, AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_u32(c + OFF_TABLES, 0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_u64(c + OFF_CAPACITY, 0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 0.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, -0.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 1.0), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, -0.5), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, NAN), AMQ_ERR_GEOMETRY);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, INFINITY), AMQ_ERR_GEOMETRY);
	/* more tables than the bytes hold */
	BREAK(&f, poke_u32(c + OFF_TABLES, 2), AMQ_ERR_LENGTH);
	BREAK(&f, poke_u32(c + OFF_TABLES, UINT32_MAX), AMQ_ERR_LENGTH);
	/* unbound family with items */
	BREAK(&f, poke_u32(c + OFF_FAMILY, 0), AMQ_ERR_UNBOUND_COUNT);

	/* rule order: version is checked before the hash scheme and geometry */
	BREAK(&f, (c[OFF_VERSION] = 9, c[OFF_HASH_SCHEME] = 9), AMQ_ERR_VERSION);
	BREAK(&f, (c[OFF_FLAGS] = 1, c[OFF_FP_BITS] = 40), AMQ_ERR_RESERVED);

	/* positive controls: any seed, an n and p of the same geometry */
	BREAK(&f, poke_u64(c + OFF_SEED, 0), AMQ_OK);
	BREAK(&f, poke_u64(c + OFF_CAPACITY, 1001), AMQ_OK);
	BREAK(&f, poke_f64(c + OFF_TARGET_FPR, 0.0099), AMQ_OK);

	/* total length one short and one long */
	c = valid_copy(&f, f.v.bytes + 1);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes - 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes + 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(c, f.v.bytes + 1 - 1, &v), AMQ_OK);
	free(c);
	cf_free(&f);
}

/* Table-header and padding rules, in the first and in a growth table. */
static void
check_validator_tables(cf *f, uint32_t t)
{
	amq_cuckoo_table tb;
	size_t		th;
	uint64_t	b;
	uint32_t	fb = f->v.fp_bits;
	uint64_t	datab,
				endb;
	uint8_t    *c;

	amq_cuckoo_table_at(&f->v, t, &tb);
	th = (size_t) (tb.header - f->buf);
	b = tb.buckets;
	datab = 4 * b * fb;
	endb = 64 * ref_words(b, fb);

	BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 0), AMQ_ERR_GEOMETRY);
	if (t == 0)
	{
		/*
		 * One bucket more in the first table: a new base, so the table runs
		 * past the end (one table) or the next table is no longer base *
		 * 2^level (or is misplaced).
		 */
		if (f->v.tables == 1)
		{
			if (ref_table_bytes(b + 1, fb) != ref_table_bytes(b, fb))
				BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + 1), AMQ_ERR_LENGTH);
		}
		else
		{
			amq_cuckoo_view bv;

			c = valid_copy(f, f->v.bytes);
			poke_u64(c + th + TOFF_BUCKETS, b + 1);
			CHECK(amq_cuckoo_open(c, f->v.bytes, &bv) != AMQ_OK);
			free(c);
		}
	}
	else
	{
		uint64_t	base = ref_base(&f->v);

		/* a growth table of other than base * 2^level buckets */
		CHECK(base > 1);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + 1), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b - 1), AMQ_ERR_GEOMETRY);
		if (ref_level(base, b + base) < 0)
			BREAK(f, poke_u64(c + th + TOFF_BUCKETS, b + base), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, base / 2), AMQ_ERR_GEOMETRY);
		BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 3 * base), AMQ_ERR_GEOMETRY);
		/* twice as many: the rule holds, the bytes do not */
		if (t == f->v.tables - 1)
			BREAK(f, poke_u64(c + th + TOFF_BUCKETS, 2 * b), AMQ_ERR_LENGTH);
	}
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_C(1) << 40),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_MAX),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);
	BREAK2(f, poke_u64(c + th + TOFF_BUCKETS, UINT64_MAX / fb / 4 + 1),
		   AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);

	/* the victim */
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, b), poke_u32(c + th + TOFF_VFP, 5)),
		  AMQ_ERR_GEOMETRY);
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, UINT64_MAX),
			  poke_u32(c + th + TOFF_VFP, 5)), AMQ_ERR_GEOMETRY);
	if (fb < 32)
		BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, 0),
				  poke_u32(c + th + TOFF_VFP, UINT32_C(1) << fb)), AMQ_ERR_GEOMETRY);
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, 3), poke_u32(c + th + TOFF_VFP, 0)),
		  AMQ_ERR_GEOMETRY);
	/* a victim in range is fine (the validator does not read fingerprints) */
	BREAK(f, (poke_u64(c + th + TOFF_VBUCKET, b - 1),
			  poke_u32(c + th + TOFF_VFP, (uint32_t) ((UINT64_C(1) << fb) - 1))),
		  AMQ_OK);

	/* reserved word of the table header */
	BREAK(f, c[th + TOFF_RESERVED] = 1, AMQ_ERR_RESERVED);
	BREAK(f, c[th + TOFF_RESERVED + 3] = 0x80, AMQ_ERR_RESERVED);

	/* padding: the first bit past the slots and the very last bit */
	BREAK(f, raw_set_bit(c + th + 32, datab), AMQ_ERR_RESERVED);
	BREAK(f, raw_set_bit(c + th + 32, endb - 1), AMQ_ERR_RESERVED);
	if (endb - 65 >= datab)
		BREAK(f, raw_set_bit(c + th + 32, endb - 65), AMQ_ERR_RESERVED);
	/* the last slot bit is data, not padding */
	BREAK(f, raw_set_bit(c + th + 32, datab - 1), AMQ_OK);

	/* item counts: at most 4 buckets + 1 */
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, 4 * b + 1), AMQ_OK);
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, 4 * b + 2), AMQ_ERR_COUNT);
	BREAK(f, poke_u64(c + th + TOFF_ITEMS, UINT64_MAX), AMQ_ERR_COUNT);
}

static void
test_validator_tables(void)
{
	cf			f;
	uint8_t    *c;
	uint32_t	t;

	/* one table, 264 buckets of 10 bits (the slots fill whole words) */
	if (cf_make(&f, 1000, 0.01))
	{
		cf_add_keys(&f, 3, 500, FAMILY_A);
		check_validator_tables(&f, 0);
		cf_free(&f);
	}
	/* 7 buckets of 7 bits (the last word is partly padding) */
	if (cf_make_geom(&f, 7, 7))
	{
		cf_add_keys(&f, 3, 10, FAMILY_A);
		check_validator_tables(&f, 0);
		cf_free(&f);
	}
	/* a grown filter of 13-bit fingerprints: every table */
	if (cf_make(&f, 100, 0.001))
	{
		cf_add_keys(&f, 3, 1000, FAMILY_A);
		CHECK(f.v.tables >= 3);
		for (t = 0; t < f.v.tables; t++)
			check_validator_tables(&f, t);
		/* family 0 with items only in later tables */
		BREAK(&f, (poke_u32(c + OFF_FAMILY, 0), poke_u64(c + 64 + TOFF_ITEMS, 0)),
			  AMQ_ERR_UNBOUND_COUNT);
		/* one table fewer in the header: bytes left over */
		BREAK(&f, poke_u32(c + OFF_TABLES, f.v.tables - 1), AMQ_ERR_LENGTH);
		BREAK(&f, poke_u32(c + OFF_TABLES, f.v.tables + 1), AMQ_ERR_LENGTH);
		cf_free(&f);
	}
	/* unbound with no items is valid */
	if (cf_make(&f, 100, 0.01))
	{
		BREAK(&f, (void) 0, AMQ_OK);
		CHECK(f.v.family == 0);
		cf_free(&f);
	}
}

/*
 * A filter whose first table is f's and whose further tables have the given
 * bucket counts (empty, zero fingerprints), in a buffer of exactly its
 * length; opened, with the status returned.
 */
static amq_status
open_with_tables(const cf *f, const uint64_t *buckets, int ntables,
				 amq_cuckoo_view *v, uint8_t **out)
{
	uint32_t	fb = f->v.fp_bits;
	size_t		first = AMQ_CUCKOO_HEADER_SIZE +
		(size_t) ref_table_bytes(ref_base(&f->v), fb);
	size_t		len = first;
	size_t		at;
	uint8_t    *c;
	amq_status	st;
	int			t;

	for (t = 0; t < ntables; t++)
		len += (size_t) ref_table_bytes(buckets[t], fb);
	c = xmalloc(len);
	memset(c, 0, len);
	memcpy(c, f->buf, first);
	poke_u32(c + OFF_TABLES, (uint32_t) (1 + ntables));
	at = first;
	for (t = 0; t < ntables; t++)
	{
		poke_u64(c + at + TOFF_BUCKETS, buckets[t]);
		at += (size_t) ref_table_bytes(buckets[t], fb);
	}
	st = amq_cuckoo_open(c, len, v);
	if (out)
		*out = c;
	else
		free(c);
	return st;
}

/*
 * Every table has base * 2^level buckets, base the first table's: other
 * sizes are AMQ_ERR_GEOMETRY, in any position, whatever the order of the
 * levels; valid ones decode with their base and level.
 */
static void
test_validator_nesting(void)
{
	static const struct
	{
		uint64_t	buckets[3];
		int			ntables;
		amq_status	want;
	}			cases[] = {
		/* base 264 (n = 1000) */
		{{528}, 1, AMQ_OK},
		{{264}, 1, AMQ_OK},
		{{264 * 4}, 1, AMQ_OK},
		{{264 * 64}, 1, AMQ_OK},
		{{500}, 1, AMQ_ERR_GEOMETRY},
		{{3 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{6 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{5 * 264}, 1, AMQ_ERR_GEOMETRY},
		{{132}, 1, AMQ_ERR_GEOMETRY},	/* level -1 */
		{{66}, 1, AMQ_ERR_GEOMETRY},
		{{263}, 1, AMQ_ERR_GEOMETRY},
		{{265}, 1, AMQ_ERR_GEOMETRY},
		{{527}, 1, AMQ_ERR_GEOMETRY},
		{{529}, 1, AMQ_ERR_GEOMETRY},
		{{1}, 1, AMQ_ERR_GEOMETRY},
		{{256}, 1, AMQ_ERR_GEOMETRY},
		{{512}, 1, AMQ_ERR_GEOMETRY},
		{{1024}, 1, AMQ_ERR_GEOMETRY},
		/* levels in any order (a union appends unmatched tables) */
		{{1056, 528}, 2, AMQ_OK},
		{{1056, 264, 2112}, 3, AMQ_OK},
		{{528, 528, 264}, 3, AMQ_OK},
		/* the bad one in the middle or at the end */
		{{528, 792}, 2, AMQ_ERR_GEOMETRY},
		{{1056, 500, 528}, 3, AMQ_ERR_GEOMETRY},
		{{528, 1056, 1584}, 3, AMQ_ERR_GEOMETRY},
	};
	cf			f;
	size_t		i;

	if (!cf_make(&f, 1000, 0.01))
		return;
	CHECK(ref_base(&f.v) == 264);
	cf_add_keys(&f, 3, 500, FAMILY_A);
	for (i = 0; i < lengthof(cases); i++)
	{
		amq_cuckoo_view v;
		uint8_t    *c;
		amq_status	st = open_with_tables(&f, cases[i].buckets, cases[i].ntables,
										  &v, &c);

		if (st != cases[i].want)
			diag("base 264 + tables of %llu, %llu, %llu buckets: %s, expected %s",
				 (unsigned long long) cases[i].buckets[0],
				 (unsigned long long) cases[i].buckets[1],
				 (unsigned long long) cases[i].buckets[2],
				 amq_status_text(st), amq_status_text(cases[i].want));
		CHECK_STATUS(st, cases[i].want);
		if (st == AMQ_OK)
		{
			int			t;

			CHECK(v.tables == (uint32_t) (1 + cases[i].ntables));
			CHECK(v.base_buckets == 264);
			CHECK(v.items == 500);
			for (t = 0; t <= cases[i].ntables; t++)
			{
				amq_cuckoo_table tb;
				uint64_t	want = t ? cases[i].buckets[t - 1] : 264;

				amq_cuckoo_table_at(&v, (uint32_t) t, &tb);
				CHECK(tb.buckets == want && tb.base == 264);
				CHECK((int) tb.level == ref_level(264, want));
				CHECK(tb.items == (t ? 0 : 500));
			}
			/* and it works: values go on being found and added */
			{
				uint64_t	s = 3;
				int			k;

				for (k = 0; k < 500; k++)
					CHECK(amq_cuckoo_may_contain(&v, splitmix64(&s)));
				CHECK_STATUS(amq_cuckoo_add(&v, 99, FAMILY_A), AMQ_OK);
				CHECK(amq_cuckoo_may_contain(&v, 99));
				CHECK(amq_cuckoo_delete(&v, 99));
			}
		}
		free(c);
	}
	cf_free(&f);

	/* an odd base, and base 1 */
	{
		static const struct
		{
			uint64_t	base;
			uint64_t	second;
			amq_status	want;
		}			odd[] = {
			{7, 14, AMQ_OK},
			{7, 7 << 10, AMQ_OK},
			{7, 21, AMQ_ERR_GEOMETRY},
			{7, 8, AMQ_ERR_GEOMETRY},
			{7, 16, AMQ_ERR_GEOMETRY},
			{1, 1, AMQ_OK},
			{1, 2, AMQ_OK},
			{1, 4096, AMQ_OK},
			{1, 3, AMQ_ERR_GEOMETRY},
			{1, 4095, AMQ_ERR_GEOMETRY},
			{3, 1, AMQ_ERR_GEOMETRY},
			{3, 3 << 12, AMQ_OK},
			{3, (3 << 12) + 3, AMQ_ERR_GEOMETRY},
		};

		for (i = 0; i < lengthof(odd); i++)
		{
			amq_cuckoo_view v;

			if (!cf_make_geom(&f, odd[i].base, 7))
				continue;
			CHECK_STATUS(open_with_tables(&f, &odd[i].second, 1, &v, NULL),
						 odd[i].want);
			cf_free(&f);
		}
	}
}

/*
 * Every proper prefix of a grown filter, in a buffer of exactly its length,
 * is rejected (ASan: without reading past it).
 */
static void
test_validator_prefixes(void)
{
	cf			f;
	size_t		len;
	int			bad = 0;

	if (!cf_make(&f, 100, 0.01))
		return;
	cf_add_keys(&f, 8, 1500, FAMILY_A);
	CHECK(f.v.tables >= 3);
	for (len = 0; len < f.v.bytes; len++)
	{
		uint8_t    *c = xmalloc(len);
		amq_cuckoo_view v;
		amq_status	st;
		amq_status	want = len < AMQ_CUCKOO_HEADER_SIZE ? AMQ_ERR_TRUNCATED : AMQ_ERR_LENGTH;

		memcpy(c, f.buf, len);
		st = amq_cuckoo_open(c, len, &v);
		if (st != want && bad++ < 5)
			diag("prefix of %zu of %zu bytes: %s", len, f.v.bytes, amq_status_text(st));
		CHECK(st != AMQ_OK);
		free(c);
	}
	CHECK(bad == 0);
	diag("%zu prefixes of a %u-table filter rejected", f.v.bytes, f.v.tables);
	cf_free(&f);
}

/* The sizeless empty filter: one spelling only, no tables. */
static void
test_validator_empty(void)
{
	uint8_t		e[AMQ_CUCKOO_HEADER_SIZE + 1];
	uint8_t		c[AMQ_CUCKOO_HEADER_SIZE];
	amq_cuckoo_view v;
	size_t		i;
	static const struct
	{
		int			off;
		uint8_t		val;
		const char *field;
		bool		geometry;	/* expect AMQ_ERR_GEOMETRY exactly */
	}			fields[] = {
		{OFF_BUCKET_SIZE, 4, "bucket size", true},
		{OFF_FP_BITS, 10, "fingerprint bits", true},
		{OFF_TABLES, 1, "tables", true},
		{OFF_CAPACITY, 1, "capacity", true},
		{OFF_TARGET_FPR + 7, 0x3f, "target_fpr", true},
		{OFF_FAMILY, 1, "family", false},
		{OFF_SEED, 1, "seed", false},
	};

	memset(e, 0x5A, sizeof(e));
	amq_cuckoo_init_empty(e);
	CHECK(memcmp(e, "AMQC\001\000\001\000", 8) == 0);
	for (i = 8; i < AMQ_CUCKOO_HEADER_SIZE; i++)
		CHECK(e[i] == 0);
	CHECK(e[AMQ_CUCKOO_HEADER_SIZE] == 0x5A);	/* nothing written past it */
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE, &v), AMQ_OK);
	CHECK(v.tables == 0 && v.fp_bits == 0 && v.items == 0 && v.slots == 0);
	CHECK(v.family == 0 && v.bytes == AMQ_CUCKOO_HEADER_SIZE);
	CHECK(!amq_cuckoo_may_contain(&v, 42));
	CHECK(amq_cuckoo_count(&v, 42) == 0);

	for (i = 0; i < lengthof(fields); i++)
	{
		amq_status	st;

		memcpy(c, e, AMQ_CUCKOO_HEADER_SIZE);
		c[fields[i].off] = fields[i].val;
		st = amq_cuckoo_open(c, AMQ_CUCKOO_HEADER_SIZE, &v);
		if (st == AMQ_OK || (fields[i].geometry && st != AMQ_ERR_GEOMETRY))
			diag("empty filter with nonzero %s: %s", fields[i].field,
				 amq_status_text(st));
		CHECK(st != AMQ_OK);
		if (fields[i].geometry)
			CHECK(st == AMQ_ERR_GEOMETRY);
	}
	/* no table may follow */
	e[AMQ_CUCKOO_HEADER_SIZE] = 0;
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE + 1, &v), AMQ_ERR_LENGTH);
	CHECK_STATUS(amq_cuckoo_open(e, AMQ_CUCKOO_HEADER_SIZE - 1, &v), AMQ_ERR_TRUNCATED);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

/*
 * One case per rule of the counter section (version 2): a filter whose
 * value was added 20 times holds one counter in a section of 16 entries.
 */
static void
test_validator_counters(void)
{
	cf			f;
	amq_cuckoo_view v;
	uint8_t    *c;
	size_t		end;
	size_t		e = 0;			/* the used entry */
	size_t		z = 0;			/* an empty entry */
	uint32_t	i;
	int			k;

	if (!cf_make(&f, 1000, 0.01))
		return;
	cf_add_keys(&f, 3, 500, FAMILY_A);
	for (k = 0; k < 20; k++)
		cf_add(&f, 99, FAMILY_A);
	CHECK_STATUS(amq_cuckoo_open(f.buf, f.v.bytes, &v), AMQ_OK);
	CHECK(v.counters == 16 && v.counters_used == 1 && v.counted == 12);
	CHECK(f.buf[OFF_VERSION] == 2 && peek_u32(f.buf + OFF_RESERVED) == 16);
	end = v.tables_end;
	CHECK(end + 16 * AMQ_CUCKOO_COUNTER_SIZE == v.bytes);
	for (i = 0; i < 16; i++)
	{
		size_t		at = end + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE;

		if (peek_u64(f.buf + at + 8) != 0)
			e = at;
		else
			z = at;
	}
	CHECK(e != 0 && z != 0 && peek_u64(f.buf + e + 8) == 12);

	/* the section's size */
	BREAK(&f, c[OFF_RESERVED] = 15, AMQ_ERR_GEOMETRY);	/* not a power of two */
	BREAK(&f, c[OFF_RESERVED] = 8, AMQ_ERR_GEOMETRY);	/* below the minimum */
	BREAK(&f, c[OFF_RESERVED + 3] = 2, AMQ_ERR_GEOMETRY);	/* above the maximum */
	BREAK(&f, c[OFF_RESERVED] = 32, AMQ_ERR_LENGTH);	/* tables end elsewhere */
	BREAK2(&f, c[OFF_RESERVED + 2] = 1, AMQ_ERR_LENGTH, AMQ_ERR_GEOMETRY);
	/* entries */
	BREAK(&f, c[z + 20] = 1, AMQ_ERR_RESERVED);	/* empty but not zero */
	BREAK(&f, c[e + 21] = 1, AMQ_ERR_RESERVED);
	BREAK(&f, c[e + 23] = 0x80, AMQ_ERR_RESERVED);
	BREAK(&f, memset(c + e + 16, 0, 4), AMQ_ERR_GEOMETRY);	/* fingerprint 0 */
	BREAK(&f, c[e + 19] = 0xff, AMQ_ERR_GEOMETRY);	/* wider than f */
	BREAK(&f, c[e + 20] = 32, AMQ_ERR_GEOMETRY);	/* level */
	BREAK(&f, c[e + 20] = 30, AMQ_ERR_GEOMETRY);	/* more buckets than allowed */
	BREAK(&f, c[e + 7] = 0x01, AMQ_ERR_GEOMETRY);	/* bucket past the table */
	/* more than half the entries used: a search might find no empty one */
	BREAK(&f,
		  for (i = 0; i < 9; i++)
		  {
			  uint8_t * x = c + end + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE;
			  memset(x, 0, AMQ_CUCKOO_COUNTER_SIZE);
			  x[8] = 1;
			  x[16] = 1;
		  },
		  AMQ_ERR_COUNT);
	/* counted copies in a filter bound to no family */
	BREAK(&f, memset(c + OFF_FAMILY, 0, 4); for (i = 0; i < v.tables; i++) {
		  amq_cuckoo_table tb;
		  amq_cuckoo_table_at(&v, i, &tb);
		  memset(c + (tb.header - f.buf) + 8, 0, 8);},
		  AMQ_ERR_UNBOUND_COUNT);
	/* the prefixes of the section */
	for (i = 1; i < 16 * AMQ_CUCKOO_COUNTER_SIZE; i += 7)
	{
		amq_cuckoo_view bv;

		c = valid_copy(&f, v.bytes - i);
		CHECK(amq_cuckoo_open(c, v.bytes - i, &bv) != AMQ_OK);
		free(c);
	}
	cf_free(&f);
}

static const amq_test tests[] = {
	{"validator truncated", test_validator_truncated},
	{"validator header", test_validator_header},
	{"validator tables", test_validator_tables},
	{"validator table nesting", test_validator_nesting},
	{"validator prefixes", test_validator_prefixes},
	{"validator empty filter", test_validator_empty},
	{"validator counter section", test_validator_counters},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core cuckoo validator");
}
