/*
 * test_base64.c
 *		Standalone unit tests of the core's base64 text form (no PostgreSQL).
 *
 * Built by "make unittest" (and with ASan/UBSan by "make unittest-asan")
 * from this file, the headers of test/ and the core sources only.  The
 * text form is how filters are typed in and printed, so it must be
 * canonical: every byte string has one encoding, and every other spelling
 * (wrong length, characters outside the alphabet, misplaced or excess
 * padding, nonzero pad bits, whitespace) is refused.  Checked by round
 * trips of random bytes, the RFC 4648 test vectors, a list of rejects, and
 * a serialized bloom filter (bloom_fixture.h) surviving the text form byte
 * for byte.
 *
 * Output: "ok - name" / "not ok - name" per test, diagnostics prefixed with
 * "#", and a last line "core base64: N passed, M failed"; exit status 1 on
 * failure.
 */
#define _POSIX_C_SOURCE 200809L

#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_base64.h"
#include "amq_bloom.h"
#include "amq_status.h"
#include "bloom_fixture.h"
#include "harness.h"

/* Whether s passes both the length check and the decoder. */
static bool
b64_decodes(const char *s)
{
	size_t		len = strlen(s);
	size_t		dlen;
	uint8_t		buf[64];

	if (amq_base64_decoded_len(s, len, &dlen) != AMQ_OK)
		return false;
	if (dlen > sizeof(buf))
		return false;
	return amq_base64_decode(s, len, buf) == AMQ_OK;
}

static void
test_base64_round_trip(void)
{
	uint64_t	s = 99;
	size_t		len;

	for (len = 0; len <= 100; len++)
	{
		uint8_t    *src = xmalloc(len);
		size_t		elen = amq_base64_encoded_len(len);
		char	   *enc = xmalloc(elen);
		uint8_t    *dec;
		size_t		dlen = (size_t) -1;
		size_t		i;

		for (i = 0; i < len; i++)
			src[i] = (uint8_t) splitmix64(&s);
		CHECK(elen % 4 == 0 && elen >= len * 4 / 3);
		amq_base64_encode(src, len, enc);
		CHECK_STATUS(amq_base64_decoded_len(enc, elen, &dlen), AMQ_OK);
		CHECK(dlen == len);
		dec = xmalloc(len);
		CHECK_STATUS(amq_base64_decode(enc, elen, dec), AMQ_OK);
		CHECK(memcmp(src, dec, len) == 0);
		free(src);
		free(enc);
		free(dec);
	}
}

static void
test_base64_vectors(void)
{
	static const struct
	{
		const char *plain;
		const char *b64;
	}			v[] = {
		{"", ""}, {"f", "Zg=="}, {"fo", "Zm8="}, {"foo", "Zm9v"},
		{"foob", "Zm9vYg=="}, {"fooba", "Zm9vYmE="}, {"foobar", "Zm9vYmFy"}
	};
	size_t		i;
	char		enc[16];
	uint8_t		dec[16];
	uint8_t		hi[3] = {0xFB, 0xFF, 0xBF};

	for (i = 0; i < sizeof(v) / sizeof(v[0]); i++)
	{
		size_t		len = strlen(v[i].plain);
		size_t		elen = amq_base64_encoded_len(len);
		size_t		dlen;

		CHECK(elen == strlen(v[i].b64));
		amq_base64_encode((const uint8_t *) v[i].plain, len, enc);
		CHECK(memcmp(enc, v[i].b64, elen) == 0);
		CHECK_STATUS(amq_base64_decoded_len(v[i].b64, elen, &dlen), AMQ_OK);
		CHECK(dlen == len);
		CHECK_STATUS(amq_base64_decode(v[i].b64, elen, dec), AMQ_OK);
		CHECK(memcmp(dec, v[i].plain, len) == 0);
	}
	/* the two non-alphanumeric characters */
	amq_base64_encode(hi, 3, enc);
	CHECK(memcmp(enc, "+/+/", 4) == 0);
}

static void
test_base64_rejects(void)
{
	static const char *bad[] = {
		"Zg=",					/* length not a multiple of 4 */
		"Zg",
		"Z",
		"Zm9vY",
		"Zm9v!mFy",				/* character outside the alphabet */
		"Zm9v-mFy",				/* base64url characters */
		"Zm9v_mFy",
		"Zm\x80v",				/* high byte */
		"Zg==Zm9v",				/* '=' in the middle */
		"Zm=v",
		"Z=9v",
		"=m9v",
		"Zh==",					/* nonzero pad bits (one byte) */
		"Zm9=",					/* nonzero pad bits (two bytes) */
		"Z===",					/* too much padding */
		"====",
		"Zg=a",					/* padding then data */
		"Zm9v ",				/* whitespace */
		" Zm9v",
		"Zm9v\n",
		"Zm9\tv",
		"Zm 9",
		"Zm9vYmFy\r\n",
	};
	size_t		i;

	for (i = 0; i < sizeof(bad) / sizeof(bad[0]); i++)
	{
		if (b64_decodes(bad[i]))
			diag("accepted bad base64 \"%s\"", bad[i]);
		CHECK(!b64_decodes(bad[i]));
	}

	/* a NUL byte inside the counted length is just a bad character */
	CHECK(amq_base64_decode("Zm\0v", 4, (uint8_t[3]) {0}) == AMQ_ERR_BASE64);
	/* decode on its own also rejects a wrong length */
	CHECK(amq_base64_decode("Zg=", 3, (uint8_t[3]) {0}) == AMQ_ERR_BASE64);
}

/* A serialized filter survives the text form byte for byte. */
static void
test_base64_filter(void)
{
	filter		f;
	char	   *enc;
	uint8_t    *dec;
	size_t		elen,
				dlen = 0;
	amq_bloom_view v;

	if (!filter_make(&f, 300, 0.05, AMQ_BLOOM_LAYOUT_BLOCKED))
	{
		current_failures++;
		return;
	}
	add_keys(&f, 1, 300, FAMILY_A);
	elen = amq_base64_encoded_len(f.len);
	enc = xmalloc(elen);
	amq_base64_encode(f.buf, f.len, enc);
	CHECK(memcmp(enc, "QU1RQgEB", 8) == 0);		/* "AMQB", 1, 1 */
	CHECK_STATUS(amq_base64_decoded_len(enc, elen, &dlen), AMQ_OK);
	CHECK(dlen == f.len);
	dec = xmalloc(dlen);
	CHECK_STATUS(amq_base64_decode(enc, elen, dec), AMQ_OK);
	CHECK(memcmp(dec, f.buf, f.len) == 0);
	CHECK_STATUS(amq_bloom_open(dec, dlen, &v), AMQ_OK);
	CHECK(count_present(&f, 1, 300) == 300);
	free(enc);
	free(dec);
	filter_free(&f);
}

/* ----------------------------------------------------------------
 * Driver.
 * ----------------------------------------------------------------
 */

static const amq_test tests[] = {
	{"base64 round trip", test_base64_round_trip},
	{"base64 vectors", test_base64_vectors},
	{"base64 rejects", test_base64_rejects},
	{"base64 filter", test_base64_filter},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core base64");
}
