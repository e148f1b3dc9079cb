/*
 * bloom_multiset_diff.h
 *		The body of the differential harnesses of the bloom layouts that
 *		count: fuzz_bloom_counting_diff.c and fuzz_bloom_dleft_diff.c include
 *		it with DIFF_LAYOUT set to their layout.
 *
 * Two filters A and B of the same geometry are driven beside the exact
 * multisets they should hold.  Input: bytes 0 and 1 give the capacity n
 * (1..512), byte 2 the target rate p from a small table; every further byte
 * is one operation, its low 3 bits the operation and its high 5 bits a key,
 * one of 32 fixed hashes:
 *	0, 1  add the key to A          2  delete the key from A
 *	3     add the key to B          4  delete the key from B
 *	5     A = A | B (in slices of a size the key picks)
 *	6     A = A & B (likewise)
 *	7     add to A the raw 64-bit hash in the next 8 bytes (never deleted)
 * A delete is of a key the multiset holds (deleting one it does not hold is
 * not a thing a correct caller does, see amq_bloom_delete); when the key is
 * certainly absent instead, the harness checks delete refuses and changes
 * nothing.  dleft may refuse an addition or a union with AMQ_FULL: an
 * addition then changes nothing and the truth is not updated; a union that
 * fails is thrown away.
 *
 * Checked after every merge, every 16 operations and at the end (and for
 * the key used after every operation): the filters pass
 * amq_bloom_open; their inserted count is the multiset's size (an
 * intersection keeps the smaller of the two sizes, an upper bound: the
 * excess is carried along from then on); for every key,
 * the count is never below its copies and a key with copies is never
 * reported absent (no false negative, counts never below the truth).
 *
 * Any violation traps (see fuzz_common.h).
 */
#ifndef AMQ_BLOOM_MULTISET_DIFF_H
#define AMQ_BLOOM_MULTISET_DIFF_H

#include "fuzz_common.h"
#include "amq_bloom.h"

#define NKEYS	32
#define MAXRAW	512

static const double diff_rates[] = {0.5, 0.3, 0.1, 0.01, 0.001, 1e-6, 0.9, 0.05};

/* A filter and the multiset it should hold. */
typedef struct diff_side
{
	uint8_t    *buf;
	amq_bloom_view v;
	uint64_t	copies[NKEYS];
	uint64_t	raw[MAXRAW];	/* A only: raw hashes added, one copy each */
	size_t		nraw;
	uint64_t	slack;			/* inserted above the truth since an intersection */
} diff_side;

static uint64_t diff_keys[NKEYS];

static void
diff_check(const diff_side *s, size_t bytes)
{
	amq_bloom_view chk;
	uint64_t	total = 0;
	int			i;

	FUZZ_CHECK(amq_bloom_open(s->buf, bytes, &chk) == AMQ_OK);
	for (i = 0; i < NKEYS; i++)
	{
		total += s->copies[i];
		FUZZ_CHECK(amq_bloom_count(&s->v, diff_keys[i]) >= s->copies[i]);
		if (s->copies[i] > 0)
			FUZZ_CHECK(amq_bloom_may_contain(&s->v, diff_keys[i]));
		/* the membership test has its own path: it agrees with the count */
		FUZZ_CHECK(amq_bloom_may_contain(&s->v, diff_keys[i]) ==
				   (amq_bloom_count(&s->v, diff_keys[i]) > 0));
	}
	for (i = 0; i < (int) s->nraw; i++)
	{
		FUZZ_CHECK(amq_bloom_may_contain(&s->v, s->raw[i]));
		FUZZ_CHECK(amq_bloom_count(&s->v, s->raw[i]) >= 1);
	}
	FUZZ_CHECK(chk.inserted == total + s->nraw + s->slack);
}

/* Adds a hash; false (and nothing changed) only for a full dleft filter. */
static bool
diff_add(diff_side *s, uint64_t h, size_t bytes)
{
	uint8_t    *before = fuzz_memdup(s->buf, bytes, bytes);
	amq_status	st = amq_bloom_add(&s->v, h, 42);

	if (st != AMQ_OK)
	{
		FUZZ_CHECK(st == AMQ_FULL && DIFF_LAYOUT == AMQ_BLOOM_LAYOUT_DLEFT);
		FUZZ_CHECK(memcmp(before, s->buf, bytes) == 0);
	}
	free(before);
	return st == AMQ_OK;
}

static void
diff_delete(diff_side *s, int k, size_t bytes)
{
	if (s->copies[k] > 0)
	{
		FUZZ_CHECK(amq_bloom_delete(&s->v, diff_keys[k]));
		s->copies[k]--;
	}
	else if (!amq_bloom_may_contain(&s->v, diff_keys[k]))
	{
		uint8_t    *before = fuzz_memdup(s->buf, bytes, bytes);

		FUZZ_CHECK(!amq_bloom_delete(&s->v, diff_keys[k]));
		FUZZ_CHECK(memcmp(before, s->buf, bytes) == 0);
		free(before);
	}
}

/* A = A | B or A & B, in slices of step bytes; false if a dleft union is full. */
static bool
diff_merge(diff_side *a, const diff_side *b, bool intersect, size_t step,
		   size_t bytes)
{
	uint8_t    *c = fuzz_memdup(a->buf, bytes, bytes);
	amq_bloom_view vc;
	size_t		nbytes = amq_bloom_bits_bytes(&a->v);
	size_t		from;
	int			i;

	FUZZ_CHECK(amq_bloom_open(c, bytes, &vc) == AMQ_OK);
	FUZZ_CHECK(amq_bloom_compatible(&vc, &b->v) == AMQ_OK);
	for (from = 0; from < nbytes; from += step)
	{
		amq_status	st = amq_bloom_merge_bits(&vc, &b->v, from, from + step, intersect);

		if (st != AMQ_OK)
		{
			FUZZ_CHECK(st == AMQ_FULL && !intersect &&
					   DIFF_LAYOUT == AMQ_BLOOM_LAYOUT_DLEFT);
			free(c);
			return false;
		}
	}
	amq_bloom_merge_finish(&vc, &b->v, intersect);
	memcpy(a->buf, c, bytes);
	free(c);
	FUZZ_CHECK(amq_bloom_open(a->buf, bytes, &a->v) == AMQ_OK);
	for (i = 0; i < NKEYS; i++)
	{
		if (!intersect)
			a->copies[i] += b->copies[i];
		else if (b->copies[i] < a->copies[i])
			a->copies[i] = b->copies[i];
	}
	if (intersect)
	{
		uint64_t	total = 0;

		/* B holds no raw hashes: an intersection may drop A's */
		a->nraw = 0;
		for (i = 0; i < NKEYS; i++)
			total += a->copies[i];
		FUZZ_CHECK(a->v.inserted >= total);
		a->slack = a->v.inserted - total;
	}
	else
		a->slack += b->slack;
	return true;
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	amq_bloom_params params;
	diff_side  *a;
	diff_side  *b;
	uint64_t	n;
	double		p;
	uint64_t	seed = 7;
	size_t		i;
	int			k;

	if (size < 3)
		return 0;
	for (k = 0; k < NKEYS; k++)
		diff_keys[k] = fuzz_splitmix(&seed);
	n = 1 + (((uint64_t) data[0] << 8 | data[1]) % 512);
	p = diff_rates[data[2] % (sizeof(diff_rates) / sizeof(diff_rates[0]))];
	FUZZ_CHECK(amq_bloom_size(n, p, DIFF_LAYOUT, &params) == AMQ_OK);
	FUZZ_CHECK(params.layout == DIFF_LAYOUT);

	a = calloc(1, sizeof(diff_side));
	b = calloc(1, sizeof(diff_side));
	FUZZ_CHECK(a != NULL && b != NULL);
	a->buf = fuzz_malloc(params.bytes);
	b->buf = fuzz_malloc(params.bytes);
	amq_bloom_init(a->buf, &params, n, p, AMQ_BLOOM_DEFAULT_SEED);
	amq_bloom_init(b->buf, &params, n, p, AMQ_BLOOM_DEFAULT_SEED);
	FUZZ_CHECK(amq_bloom_open(a->buf, params.bytes, &a->v) == AMQ_OK);
	FUZZ_CHECK(amq_bloom_open(b->buf, params.bytes, &b->v) == AMQ_OK);

	for (i = 3; i < size; i++)
	{
		int			op = data[i] & 7;

		k = data[i] >> 3;
		switch (op)
		{
			case 0:
			case 1:
				if (diff_add(a, diff_keys[k], params.bytes))
					a->copies[k]++;
				break;
			case 2:
				diff_delete(a, k, params.bytes);
				break;
			case 3:
				if (diff_add(b, diff_keys[k], params.bytes))
					b->copies[k]++;
				break;
			case 4:
				diff_delete(b, k, params.bytes);
				break;
			case 5:
			case 6:
				(void) diff_merge(a, b, op == 6, (size_t) k * 3 + 1, params.bytes);
				break;
			case 7:
				if (i + 8 < size && a->nraw < MAXRAW)
				{
					uint64_t	h = 0;
					int			j;

					for (j = 8; j >= 1; j--)
						h = h << 8 | data[i + (size_t) j];
					if (diff_add(a, h, params.bytes))
						a->raw[a->nraw++] = h;
					i += 8;
				}
				break;
		}
		/* every key after a merge and every 16 operations, else the one used */
		if (op == 5 || op == 6 || (i & 15) == 0)
		{
			diff_check(a, params.bytes);
			diff_check(b, params.bytes);
		}
		else
		{
			FUZZ_CHECK(amq_bloom_count(&a->v, diff_keys[k]) >= a->copies[k]);
			FUZZ_CHECK(amq_bloom_count(&b->v, diff_keys[k]) >= b->copies[k]);
		}
	}
	diff_check(a, params.bytes);
	diff_check(b, params.bytes);
	free(a->buf);
	free(b->buf);
	free(a);
	free(b);
	return 0;
}

#endif							/* AMQ_BLOOM_MULTISET_DIFF_H */
