/*
 * fuzz_base64.c
 *		libFuzzer harness: arbitrary text -> amq_base64_decoded_len /
 *		amq_base64_decode, and arbitrary bytes -> amq_base64_encode.
 *
 * Checks:
 *	- decoding never reads or writes out of bounds (the text and the output
 *	  buffer are exactly sized heap blocks, so ASan sees any overrun);
 *	- the decoder accepts only canonical text: if it accepts x, then
 *	  encode(decode(x)) == x, and the decoded length agrees with
 *	  amq_base64_encoded_len;
 *	- the empty text has a valid shape (it is the empty value's encoding);
 *	- decode(encode(b)) == b for the input taken as bytes, and the encoded
 *	  text has the announced length and only alphabet and padding
 *	  characters.
 *
 * Any violation traps (see fuzz_common.h).
 */
#include "fuzz_common.h"

static bool
is_b64_char(char c)
{
	return (c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') ||
		(c >= '0' && c <= '9') || c == '+' || c == '/' || c == '=';
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	char	   *text = fuzz_malloc(size);
	size_t		dlen = 0;
	size_t		i;

	if (size)
		memcpy(text, data, size);

	/* 1. the input as text */
	if (amq_base64_decoded_len(text, size, &dlen) == AMQ_OK)
	{
		uint8_t    *out = fuzz_malloc(dlen);

		FUZZ_CHECK(dlen <= size / 4 * 3);
		FUZZ_CHECK(amq_base64_encoded_len(dlen) == size);
		if (amq_base64_decode(text, size, out) == AMQ_OK)
		{
			char	   *again = fuzz_malloc(size);

			amq_base64_encode(out, dlen, again);
			FUZZ_CHECK(size == 0 || memcmp(again, text, size) == 0);
			free(again);
		}
		free(out);
	}
	else
		FUZZ_CHECK(size != 0);

	/* 2. the input as bytes */
	{
		size_t		tlen = amq_base64_encoded_len(size);
		char	   *enc = fuzz_malloc(tlen);
		uint8_t    *back;
		size_t		blen = 0;

		FUZZ_CHECK(tlen == (size + 2) / 3 * 4);
		amq_base64_encode(data, size, enc);
		for (i = 0; i < tlen; i++)
			FUZZ_CHECK(is_b64_char(enc[i]));
		FUZZ_CHECK(amq_base64_decoded_len(enc, tlen, &blen) == AMQ_OK);
		FUZZ_CHECK(blen == size);
		back = fuzz_malloc(blen);
		FUZZ_CHECK(amq_base64_decode(enc, tlen, back) == AMQ_OK);
		FUZZ_CHECK(size == 0 || memcmp(back, data, size) == 0);
		free(back);
		free(enc);
	}

	FUZZ_CHECK(size == 0 || memcmp(text, data, size) == 0);
	free(text);
	return 0;
}
