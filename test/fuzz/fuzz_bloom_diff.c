/*
 * fuzz_bloom_diff.c
 *		libFuzzer harness: differential test of the bloom filter against the
 *		exact set of keys added (add and probe only).
 *
 * Input: byte 0 picks the layout (blocked or classic) and, with byte 1, the
 * capacity n (1..512); byte 2 the target rate p from a small table that
 * includes 0.5.  The rest is read as 8-byte little-endian hashes; the low two
 * bits of each choose the operation:
 *	0, 1  add the hash        2  probe the hash
 *	3     build a second filter from exactly the keys added so far (with
 *	      add_many), check its bytes equal the first's (the array does not
 *	      depend on the order of additions), then union and intersect the
 *	      two and check the bits did not change
 * Checked: no false negative ever (every added hash is reported present,
 * right after its addition and at the end); the filter keeps passing
 * amq_bloom_open; the count of additions is exact.
 *
 * Any violation traps (see fuzz_common.h).
 */
#include "fuzz_common.h"
#include "amq_bloom.h"

static const double rates[] = {0.5, 0.3, 0.1, 0.01, 0.001, 1e-6, 0.9, 0.05};

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	amq_bloom_params params;
	amq_bloom_view v;
	uint8_t    *buf;
	uint64_t   *added;
	size_t		nadded = 0;
	uint64_t	n;
	double		p;
	int			layout;
	size_t		i;

	if (size < 3)
		return 0;
	layout = (data[0] & 1) ? AMQ_BLOOM_LAYOUT_BLOCKED : AMQ_BLOOM_LAYOUT_CLASSIC;
	n = 1 + (((uint64_t) (data[0] >> 1) << 8 | data[1]) % 512);
	p = rates[data[2] % (sizeof(rates) / sizeof(rates[0]))];
	FUZZ_CHECK(amq_bloom_size(n, p, layout, &params) == AMQ_OK);
	FUZZ_CHECK(params.layout == layout);
	buf = fuzz_malloc(params.bytes);
	amq_bloom_init(buf, &params, n, p, AMQ_BLOOM_DEFAULT_SEED);
	FUZZ_CHECK(amq_bloom_open(buf, params.bytes, &v) == AMQ_OK);
	added = fuzz_malloc(sizeof(uint64_t) * (size / 8 + 1));

	for (i = 3; i + 8 <= size; i += 8)
	{
		uint64_t	h = 0;
		int			j;

		for (j = 7; j >= 0; j--)
			h = h << 8 | data[i + (size_t) j];

		switch (h & 3)
		{
			case 0:
			case 1:
				amq_bloom_add(&v, h, 42);
				added[nadded++] = h;
				FUZZ_CHECK(amq_bloom_may_contain(&v, h));
				FUZZ_CHECK(v.inserted == nadded);
				break;
			case 2:
				(void) amq_bloom_may_contain(&v, h);
				break;
			case 3:
				{
					uint8_t    *b = fuzz_malloc(params.bytes);
					amq_bloom_view vb;
					size_t		nbytes = amq_bloom_bits_bytes(&v);

					amq_bloom_init(b, &params, n, p, AMQ_BLOOM_DEFAULT_SEED);
					FUZZ_CHECK(amq_bloom_open(b, params.bytes, &vb) == AMQ_OK);
					amq_bloom_add_many(&vb, added, nadded, 42);
					FUZZ_CHECK(memcmp(b + AMQ_BLOOM_HEADER_SIZE,
									  buf + AMQ_BLOOM_HEADER_SIZE, nbytes) == 0);
					FUZZ_CHECK(amq_bloom_compatible(&v, &vb) == AMQ_OK);
					amq_bloom_merge_bits(&vb, &v, 0, nbytes, false);
					amq_bloom_merge_finish(&vb, &v, false);
					amq_bloom_merge_bits(&vb, &v, 0, nbytes, true);
					amq_bloom_merge_finish(&vb, &v, true);
					FUZZ_CHECK(memcmp(b + AMQ_BLOOM_HEADER_SIZE,
									  buf + AMQ_BLOOM_HEADER_SIZE, nbytes) == 0);
					FUZZ_CHECK(amq_bloom_open(b, params.bytes, &vb) == AMQ_OK);
					FUZZ_CHECK(vb.inserted == nadded);	/* min(2n, n) */
					free(b);
				}
				break;
		}
	}
	FUZZ_CHECK(amq_bloom_open(buf, params.bytes, &v) == AMQ_OK);
	FUZZ_CHECK(v.inserted == nadded);
	for (i = 0; i < nadded; i++)
		FUZZ_CHECK(amq_bloom_may_contain(&v, added[i]));
	free(added);
	free(buf);
	return 0;
}
