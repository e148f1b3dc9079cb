/*
 * gen_seeds.c
 *		Writes the seed corpora of the fuzz harnesses (test/fuzz/corpus/).
 *
 *	cc -std=c99 -Isrc/core -o /tmp/gen_seeds test/fuzz/gen_seeds.c \
 *		src/core/amq_*.c -lm && /tmp/gen_seeds test/fuzz/corpus
 *
 * (`make fuzz-seeds` does exactly that.)  The seeds are small
 * valid values built with the core itself, every file under 4 KB:
 *	fuzz_bloom_open/   the sizeless empty filter, empty and filled classic
 *	                   and blocked filters, filled counting and dleft ones
 *	fuzz_cuckoo_open/  the sizeless empty filter, the docs/format.md worked
 *	                   example, empty and filled filters, a filter grown to
 *	                   three tables, one grown by copies of a single value,
 *	                   one with a victim
 *	fuzz_base64/       a few canonical strings and the text forms of some of
 *	                   the values above
 *	fuzz_cuckoo_diff/, fuzz_bloom_diff/  operation sequences
 *	fuzz_bloom_counting_diff/, fuzz_bloom_dleft_diff/  the same, with deletes
 * Everything is deterministic, so regenerating gives the same files.
 */
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "amq_base64.h"
#include "amq_bloom.h"
#include "amq_cuckoo.h"

static const char *outdir;

static void
write_file(const char *harness, const char *name, const void *p, size_t len)
{
	char		path[1024];
	FILE	   *f;

	if (len >= 4096)
	{
		fprintf(stderr, "seed %s/%s is %zu bytes, over 4 KB\n", harness, name, len);
		exit(1);
	}
	snprintf(path, sizeof(path), "%s/%s/%s", outdir, harness, name);
	f = fopen(path, "wb");
	if (f == NULL || fwrite(p, 1, len, f) != len || fclose(f) != 0)
	{
		perror(path);
		exit(1);
	}
}

static uint64_t
splitmix(uint64_t *s)
{
	uint64_t	z = (*s += UINT64_C(0x9e3779b97f4a7c15));

	z = (z ^ (z >> 30)) * UINT64_C(0xbf58476d1ce4e5b9);
	z = (z ^ (z >> 27)) * UINT64_C(0x94d049bb133111eb);
	return z ^ (z >> 31);
}

/* Also writes the text form into fuzz_base64/. */
static void
write_value(const char *harness, const char *name, const uint8_t *p, size_t len)
{
	size_t		tlen = amq_base64_encoded_len(len);
	char	   *text = malloc(tlen + 1);

	write_file(harness, name, p, len);
	amq_base64_encode(p, len, text);
	if (tlen < 4096)
	{
		char		bname[256];

		snprintf(bname, sizeof(bname), "%s.b64", name);
		write_file("fuzz_base64", bname, text, tlen);
	}
	free(text);
}

static void
bloom_seed(const char *name, int layout, uint64_t n, double p, int adds)
{
	amq_bloom_params params;
	amq_bloom_view v;
	uint8_t    *buf;
	uint64_t	s = n * 31 + (uint64_t) adds;
	int			i;

	if (amq_bloom_size(n, p, layout, &params) != AMQ_OK)
		exit(1);
	buf = malloc(params.bytes);
	amq_bloom_init(buf, &params, n, p, AMQ_BLOOM_DEFAULT_SEED);
	if (amq_bloom_open(buf, params.bytes, &v) != AMQ_OK)
		exit(1);
	for (i = 0; i < adds; i++)
		amq_bloom_add(&v, splitmix(&s), 0x1234);
	write_value("fuzz_bloom_open", name, buf, params.bytes);
	free(buf);
}

/* Growth within a seed's buffer of SEED_ROOM bytes, which never moves. */
#define SEED_ROOM	4096

static uint8_t *
reserve_seed_room(void *ctx, size_t need)
{
	return need <= SEED_ROOM ? ctx : NULL;
}

/* A cuckoo filter for n, p with adds values (repeat: all the same value). */
static void
cuckoo_seed(const char *name, uint64_t n, double p, int adds, int repeat,
			uint64_t seed)
{
	amq_cuckoo_params params;
	amq_cuckoo_view v;
	uint8_t    *buf;
	uint64_t	hashes[64];
	uint64_t	s = seed;
	uint64_t	one = splitmix(&s);
	size_t		done;
	int			i;

	if (amq_cuckoo_size(n, p, &params) != AMQ_OK || adds > 64)
		exit(1);
	buf = calloc(1, SEED_ROOM);
	amq_cuckoo_init(buf, &params, n, p, AMQ_CUCKOO_DEFAULT_SEED);
	if (amq_cuckoo_open(buf, params.bytes, &v) != AMQ_OK)
		exit(1);
	for (i = 0; i < adds; i++)
		hashes[i] = repeat ? one : splitmix(&s);
	if (amq_cuckoo_add_growing(&v, hashes, (size_t) adds, 0x5678,
							   reserve_seed_room, buf, &done) != AMQ_OK)
		exit(1);
	if (amq_cuckoo_open(buf, v.bytes, &v) != AMQ_OK)
		exit(1);
	printf("  %s: %zu bytes, %u tables, %llu items\n", name, v.bytes, v.tables,
		   (unsigned long long) v.items);
	write_value("fuzz_cuckoo_open", name, buf, v.bytes);
	free(buf);
}

int
main(int argc, char **argv)
{
	uint8_t		buf[AMQ_CUCKOO_HEADER_SIZE];

	if (argc != 2)
	{
		fprintf(stderr, "usage: %s CORPUS_DIR (with one subdirectory per harness)\n", argv[0]);
		return 2;
	}
	outdir = argv[1];

	/* bloom */
	amq_bloom_init_empty(buf);
	write_value("fuzz_bloom_open", "empty_sizeless", buf, AMQ_BLOOM_HEADER_SIZE);
	bloom_seed("classic_n10_p0.1_empty", AMQ_BLOOM_LAYOUT_CLASSIC, 10, 0.1, 0);
	bloom_seed("classic_n10_p0.1_5keys", AMQ_BLOOM_LAYOUT_CLASSIC, 10, 0.1, 5);
	bloom_seed("classic_n1_p0.5_1key", AMQ_BLOOM_LAYOUT_CLASSIC, 1, 0.5, 1);
	bloom_seed("classic_n100_p0.01_200keys", AMQ_BLOOM_LAYOUT_CLASSIC, 100, 0.01, 200);
	bloom_seed("blocked_n10_p0.1_empty", AMQ_BLOOM_LAYOUT_BLOCKED, 10, 0.1, 0);
	bloom_seed("blocked_n50_p0.01_20keys", AMQ_BLOOM_LAYOUT_BLOCKED, 50, 0.01, 20);
	bloom_seed("blocked_n1_p0.5_3keys", AMQ_BLOOM_LAYOUT_BLOCKED, 1, 0.5, 3);
	bloom_seed("counting_n10_p0.1_5keys", AMQ_BLOOM_LAYOUT_COUNTING, 10, 0.1, 5);
	bloom_seed("counting_n1_p0.5_40keys", AMQ_BLOOM_LAYOUT_COUNTING, 1, 0.5, 40);
	bloom_seed("dleft_n10_p0.1_5keys", AMQ_BLOOM_LAYOUT_DLEFT, 10, 0.1, 5);
	bloom_seed("dleft_n30_p0.01_30keys", AMQ_BLOOM_LAYOUT_DLEFT, 30, 0.01, 30);

	/* cuckoo */
	amq_cuckoo_init_empty(buf);
	write_value("fuzz_cuckoo_open", "empty_sizeless", buf, AMQ_CUCKOO_HEADER_SIZE);
	{
		/* the worked example of docs/format.md: n 10, p 0.1, hA and hB added */
		amq_cuckoo_params params;
		amq_cuckoo_view v;
		uint8_t		ex[256];

		if (amq_cuckoo_size(10, 0.1, &params) != AMQ_OK || params.bytes > sizeof(ex))
			return 1;
		amq_cuckoo_init(ex, &params, 10, 0.1, AMQ_CUCKOO_DEFAULT_SEED);
		if (amq_cuckoo_open(ex, params.bytes, &v) != AMQ_OK ||
			amq_cuckoo_add(&v, UINT64_C(0x510e527fade682d1), 0x12345678) != AMQ_OK ||
			amq_cuckoo_add(&v, UINT64_C(0x9b05688c2b3e6c1f), 0x12345678) != AMQ_OK)
			return 1;
		write_value("fuzz_cuckoo_open", "format_md_example", ex, v.bytes);
	}
	cuckoo_seed("n10_p0.1_empty", 10, 0.1, 0, 0, 1);
	cuckoo_seed("n20_p0.01_15values", 20, 0.01, 15, 0, 2);
	cuckoo_seed("n4_p0.5_grown_3tables", 4, 0.5, 30, 0, 3);
	cuckoo_seed("n4_p0.5_grown_2tables", 4, 0.5, 14, 0, 4);
	cuckoo_seed("n8_p0.5_copies_of_one", 8, 0.5, 20, 1, 5);
	cuckoo_seed("n1_p0.5_full", 1, 0.5, 5, 0, 6);
	cuckoo_seed("n30_p1e-6_25values", 30, 1e-6, 25, 0, 7);

	/* base64 */
	write_file("fuzz_base64", "empty", "", 0);
	write_file("fuzz_base64", "Zg", "Zg==", 4);
	write_file("fuzz_base64", "Zm8", "Zm8=", 4);
	write_file("fuzz_base64", "Zm9v", "Zm9vYmFy", 8);
	write_file("fuzz_base64", "bad_padbits", "Zh==", 4);

	/* operation sequences */
	{
		static const uint8_t c1[] = {4, 0, 1, 2, 3, 1, 1, 1, 0x41, 0x81, 0x82, 0xc0, 0x42, 0x83};
		static const uint8_t c2[] = {0, 1, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5, 5,
			0x45, 0x45, 0x85, 0xc1, 0x45, 0x85};
		static const uint8_t c3[] = {10, 4, 0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13,
			14, 15, 16, 17, 18, 19, 20, 0x40, 0x41, 0x42, 0xc2, 0x80, 0x90, 0x91};
		uint8_t		c4[600];
		uint64_t	s = 99;
		size_t		i;

		write_file("fuzz_cuckoo_diff", "ops_small", c1, sizeof(c1));
		write_file("fuzz_cuckoo_diff", "ops_copies", c2, sizeof(c2));
		write_file("fuzz_cuckoo_diff", "ops_grow", c3, sizeof(c3));
		c4[0] = 2;
		c4[1] = 0;
		for (i = 2; i < sizeof(c4); i++)
			c4[i] = (uint8_t) (splitmix(&s) % 3 == 0 ? 0x40 : 0) | (uint8_t) (splitmix(&s) & 63);
		write_file("fuzz_cuckoo_diff", "ops_random", c4, sizeof(c4));

		for (i = 0; i < 4; i++)
		{
			uint8_t		b[3 + 8 * 40];
			char		name[32];
			size_t		j;

			b[0] = (uint8_t) i;
			b[1] = (uint8_t) (i * 37);
			b[2] = (uint8_t) i;
			for (j = 3; j < sizeof(b); j++)
				b[j] = (uint8_t) splitmix(&s);
			/* one union/intersection near the end */
			b[3 + 8 * 35] |= 3;
			snprintf(name, sizeof(name), "ops_%zu", i);
			write_file("fuzz_bloom_diff", name, b, sizeof(b));
		}

		/* add/delete/merge streams over the 32 keys of the counting layouts */
		for (i = 0; i < 4; i++)
		{
			static const char *const harness[] = {"fuzz_bloom_counting_diff",
			"fuzz_bloom_dleft_diff"};
			uint8_t		b[3 + 300];
			char		name[32];
			size_t		j,
						h;

			for (h = 0; h < 2; h++)
			{
				b[0] = 0;
				b[1] = (uint8_t) (i * 60 + 1);	/* n = 1, 61, 121, 181 */
				b[2] = (uint8_t) i;
				for (j = 3; j < sizeof(b); j++)
				{
					/* mostly adds, a delete in four, a merge now and then */
					uint64_t	r = splitmix(&s);
					unsigned	op = (r % 16 < 8) ? 0 : (r % 16 < 11) ? 2 :
						(r % 16 < 13) ? 3 : (r % 16 < 14) ? 4 : (r % 16 < 15) ? 5 : 6;

					b[j] = (uint8_t) (((r >> 8) & 31) << 3 | op);
				}
				snprintf(name, sizeof(name), "ops_%zu", i);
				write_file(harness[h], name, b, sizeof(b));
			}
		}
	}
	return 0;
}
