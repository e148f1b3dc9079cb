/*
 * amq_base64.c
 *		Strict, canonical base64: the text form of every amqfilter value.
 *
 * Only the strings the encoder produces are accepted: the standard alphabet
 * (A-Z a-z 0-9 + /), '=' padding, a length that is a multiple of 4, padding
 * only at the very end, zero pad bits and no whitespace.  Lenient decoders
 * give one value several text forms, which breaks text -> value -> text
 * identity and lets malformed input hide behind "equivalent" spellings.
 *
 * Groups of 3 bytes / 4 characters are independent, so callers may encode
 * or decode a long value in slices that start on group boundaries.  Decoding
 * uses a 256-entry table so that any byte, including NUL and bytes >= 0x80,
 * is classified without branches on character ranges.
 */
#include <string.h>

#include "amq_base64.h"

static const char b64_alphabet[64] =
"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";

/* Marks bytes outside the alphabet in b64_value[] ('=' included). */
#define B64_INVALID 0xFF

/* Decoding table: sextet value per alphabet byte, B64_INVALID otherwise. */
#define XX B64_INVALID
static const uint8_t b64_value[256] = {
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0x00 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0x10 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, 62, XX, XX, XX, 63,	/* 0x20 */
	52, 53, 54, 55, 56, 57, 58, 59, 60, 61, XX, XX, XX, XX, XX, XX,	/* 0x30 */
	XX,  0,  1,  2,  3,  4,  5,  6,  7,  8,  9, 10, 11, 12, 13, 14,	/* 0x40 */
	15, 16, 17, 18, 19, 20, 21, 22, 23, 24, 25, XX, XX, XX, XX, XX,	/* 0x50 */
	XX, 26, 27, 28, 29, 30, 31, 32, 33, 34, 35, 36, 37, 38, 39, 40,	/* 0x60 */
	41, 42, 43, 44, 45, 46, 47, 48, 49, 50, 51, XX, XX, XX, XX, XX,	/* 0x70 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0x80 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0x90 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xA0 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xB0 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xC0 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xD0 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xE0 */
	XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX, XX,	/* 0xF0 */
};
#undef XX

#define B64_PAD '='

/* Characters needed for len bytes: 4 per started group of 3. */
size_t
amq_base64_encoded_len(size_t len)
{
	return (len / 3 + (len % 3 != 0)) * 4;
}

/* Encodes whole groups, then pads the last partial group with '='. */
void
amq_base64_encode(const uint8_t *src, size_t len, char *dst)
{
	size_t		i = 0;

	for (; i + 3 <= len; i += 3)
	{
		uint32_t	v = ((uint32_t) src[i] << 16) |
			((uint32_t) src[i + 1] << 8) | src[i + 2];

		*dst++ = b64_alphabet[(v >> 18) & 0x3F];
		*dst++ = b64_alphabet[(v >> 12) & 0x3F];
		*dst++ = b64_alphabet[(v >> 6) & 0x3F];
		*dst++ = b64_alphabet[v & 0x3F];
	}

	if (len - i == 1)
	{
		uint32_t	v = (uint32_t) src[i] << 16;

		*dst++ = b64_alphabet[(v >> 18) & 0x3F];
		*dst++ = b64_alphabet[(v >> 12) & 0x3F];
		*dst++ = B64_PAD;
		*dst++ = B64_PAD;
	}
	else if (len - i == 2)
	{
		uint32_t	v = ((uint32_t) src[i] << 16) | ((uint32_t) src[i + 1] << 8);

		*dst++ = b64_alphabet[(v >> 18) & 0x3F];
		*dst++ = b64_alphabet[(v >> 12) & 0x3F];
		*dst++ = b64_alphabet[(v >> 6) & 0x3F];
		*dst++ = B64_PAD;
	}
}

/*
 * Checks the shape (length, where '=' may stand) and returns the decoded
 * length, so that callers can allocate before decoding.  '=' anywhere but
 * the last group is rejected here even though amq_base64_decode would also
 * reject it, because a caller decoding in slices sees each slice's last
 * group as "the last group".
 */
amq_status
amq_base64_decoded_len(const char *src, size_t len, size_t *out_len)
{
	size_t		pad;

	if (len % 4 != 0)
		return AMQ_ERR_BASE64;
	if (len == 0)
	{
		*out_len = 0;
		return AMQ_OK;
	}
	if (memchr(src, B64_PAD, len - 4) != NULL)
		return AMQ_ERR_BASE64;

	/* the last group: "xxxx", "xxx=" or "xx==" */
	if (src[len - 4] == B64_PAD || src[len - 3] == B64_PAD)
		return AMQ_ERR_BASE64;
	if (src[len - 2] == B64_PAD)
	{
		if (src[len - 1] != B64_PAD)
			return AMQ_ERR_BASE64;
		pad = 2;
	}
	else
		pad = (src[len - 1] == B64_PAD) ? 1 : 0;

	*out_len = len / 4 * 3 - pad;
	return AMQ_OK;
}

/*
 * Decodes and checks every character; a padded last group must have zero
 * pad bits, otherwise two strings would decode to the same bytes.
 */
amq_status
amq_base64_decode(const char *src, size_t len, uint8_t *dst)
{
	const unsigned char *s = (const unsigned char *) src;
	size_t		i;

	if (len % 4 != 0)
		return AMQ_ERR_BASE64;

	for (i = 0; i < len; i += 4)
	{
		uint8_t		a = b64_value[s[i]];
		uint8_t		b = b64_value[s[i + 1]];
		uint8_t		c = b64_value[s[i + 2]];
		uint8_t		d = b64_value[s[i + 3]];

		/* every valid sextet is < 64; B64_INVALID has the top bits set */
		if (((a | b | c | d) & 0xC0) == 0)
		{
			uint32_t	v = ((uint32_t) a << 18) | ((uint32_t) b << 12) |
				((uint32_t) c << 6) | d;

			*dst++ = (uint8_t) (v >> 16);
			*dst++ = (uint8_t) (v >> 8);
			*dst++ = (uint8_t) v;
			continue;
		}

		/* something is not a sextet: only padding in the last group is fine */
		if (i + 4 != len || a == B64_INVALID || b == B64_INVALID)
			return AMQ_ERR_BASE64;

		if (s[i + 2] == B64_PAD && s[i + 3] == B64_PAD)
		{
			if (b & 0x0F)
				return AMQ_ERR_BASE64;	/* nonzero pad bits */
			*dst++ = (uint8_t) ((a << 2) | (b >> 4));
		}
		else if (c != B64_INVALID && s[i + 3] == B64_PAD)
		{
			if (c & 0x03)
				return AMQ_ERR_BASE64;	/* nonzero pad bits */
			*dst++ = (uint8_t) ((a << 2) | (b >> 4));
			*dst++ = (uint8_t) (((b & 0x0F) << 4) | (c >> 2));
		}
		else
			return AMQ_ERR_BASE64;
	}
	return AMQ_OK;
}
