/*
 * fuzz_bloom_open.c
 *		libFuzzer harness: arbitrary bytes -> amq_bloom_open().
 *
 * Checks that the validator never reads out of bounds, and that whenever it
 * accepts a value every operation on it is memory-safe and sane:
 *
 *	- the view describes exactly the input (total bytes = input length) and
 *	  the bytes survive base64 encode/decode unchanged (the input is its own
 *	  serialization, so serialize(parse(x)) == x);
 *	- may_contain on arbitrary hashes;
 *	- stats begin/accumulate/end over the whole array in one slice and in
 *	  two slices (split on a multiple of 64 bytes, as the blocked layout
 *	  requires) give the same bit count, a count within nbits and an
 *	  estimated rate within [0, 1];
 *	- add on a copy (non-empty layouts only, nonzero family): every added
 *	  hash is then reported present, the copy still validates with the same
 *	  geometry and a bound family; add_many on another copy gives the very
 *	  same bytes;
 *	- counting and dleft: add may find a dleft filter full (then nothing
 *	  changed); every key added can be deleted again, and the copy then
 *	  still validates;
 *	- union and intersection of the value with itself: compatible is OK,
 *	  amq_bloom_merge_bits/finish (union and intersection) over the whole range in
 *	  slices leave the bits unchanged (but where a union adds counters, and
 *	  for a dleft intersection, which crafted duplicate cells may change),
 *	  the result validates, and the counts are the saturating sum / the
 *	  minimum.
 *
 * Any violation traps (see fuzz_common.h).
 */
#include "fuzz_common.h"
#include "amq_bloom.h"

#define NPROBES	16
#define NADDS	8

static uint64_t
sat_add(uint64_t a, uint64_t b)
{
	return a > UINT64_MAX - b ? UINT64_MAX : a + b;
}

/* bits_set of [0, nbytes) in two slices split at cut (a multiple of 64) */
static void
check_stats(const amq_bloom_view *v, size_t cut)
{
	size_t		nbytes = amq_bloom_bits_bytes(v);
	amq_bloom_stats_acc one;
	amq_bloom_stats_acc two;
	amq_bloom_stats st1;
	amq_bloom_stats st2;

	amq_bloom_stats_begin(&one);
	amq_bloom_stats_accumulate(v, &one, 0, nbytes);
	amq_bloom_stats_end(v, &one, &st1);

	cut = nbytes ? (cut % (nbytes + 1)) / 64 * 64 : 0;
	amq_bloom_stats_begin(&two);
	amq_bloom_stats_accumulate(v, &two, 0, cut);
	amq_bloom_stats_accumulate(v, &two, cut, nbytes);
	amq_bloom_stats_end(v, &two, &st2);

	FUZZ_CHECK(st1.bits_set == st2.bits_set);
	FUZZ_CHECK(st1.bits_set <= v->nbits);
	FUZZ_CHECK(st1.est_fpr >= 0.0 && st1.est_fpr <= 1.0);
	FUZZ_CHECK(st2.est_fpr >= 0.0 && st2.est_fpr <= 1.0);
	FUZZ_CHECK(!(st1.est_distinct < 0.0) && st1.est_distinct == st1.est_distinct);
	if (v->nbits == 0)
		FUZZ_CHECK(st1.bits_set == 0);
}

/* merge the value with itself (union or intersection) in slices of step bytes */
static void
check_self_merge(const uint8_t *orig, size_t size, const amq_bloom_view *src,
				 bool intersect, size_t step)
{
	uint8_t    *buf = fuzz_memdup(orig, size, size);
	amq_bloom_view dst;
	amq_bloom_view again;
	size_t		nbytes = amq_bloom_bits_bytes(src);
	size_t		from;

	FUZZ_CHECK(amq_bloom_open(buf, size, &dst) == AMQ_OK);
	FUZZ_CHECK(amq_bloom_compatible(&dst, src) == AMQ_OK);
	step = (step % 8 + 1) * 64;
	for (from = 0; from < nbytes; from += step)
	{
		size_t		to = from + step < nbytes ? from + step : nbytes;

		amq_bloom_merge_bits(&dst, src, from, to, intersect);
	}
	amq_bloom_merge_finish(&dst, src, intersect);

	/* the bits are unchanged, the header differs only in the count */
	if (!amq_bloom_layout_counts(src->layout) ||
		(intersect && src->layout == AMQ_BLOOM_LAYOUT_COUNTING))
		FUZZ_CHECK(memcmp(buf + AMQ_BLOOM_HEADER_SIZE, orig + AMQ_BLOOM_HEADER_SIZE,
						  nbytes) == 0);
	FUZZ_CHECK(memcmp(buf, orig, 48) == 0);
	FUZZ_CHECK(amq_bloom_open(buf, size, &again) == AMQ_OK);
	FUZZ_CHECK(again.inserted == (intersect ? src->inserted
								  : sat_add(src->inserted, src->inserted)));
	FUZZ_CHECK(again.family == src->family);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *orig = fuzz_memdup(data, size, size);
	amq_bloom_view v;
	uint64_t	rng = fuzz_fnv(data, size);
	uint64_t	hashes[NADDS];
	int			i;

	if (amq_bloom_open(orig, size, &v) != AMQ_OK)
	{
		free(orig);
		return 0;
	}

	/* the view is the input, and the input is its own serialization */
	FUZZ_CHECK(v.base == orig);
	FUZZ_CHECK(amq_bloom_total_bytes(&v) == size);
	FUZZ_CHECK(size <= AMQ_BLOOM_MAX_BYTES);
	FUZZ_CHECK(v.layout == AMQ_BLOOM_LAYOUT_EMPTY ||
			   v.layout == AMQ_BLOOM_LAYOUT_BLOCKED ||
			   v.layout == AMQ_BLOOM_LAYOUT_CLASSIC ||
			   v.layout == AMQ_BLOOM_LAYOUT_COUNTING ||
			   v.layout == AMQ_BLOOM_LAYOUT_DLEFT);
	FUZZ_CHECK(v.layout != AMQ_BLOOM_LAYOUT_BLOCKED ||
			   v.nblocks * AMQ_BLOOM_BLOCK_BITS == v.nbits);
	fuzz_check_base64_roundtrip(orig, size);

	for (i = 0; i < NPROBES; i++)
	{
		bool		present = amq_bloom_may_contain(&v, fuzz_splitmix(&rng));

		if (v.nbits == 0)
			FUZZ_CHECK(!present);
	}
	check_stats(&v, (size_t) fuzz_splitmix(&rng));

	/* the sizeless empty filter merges with anything, itself included */
	FUZZ_CHECK(amq_bloom_compatible(&v, &v) == AMQ_OK);
	if (v.layout == AMQ_BLOOM_LAYOUT_EMPTY)
	{
		/* probing did not write; nothing else applies */
		FUZZ_CHECK(memcmp(orig, data, size) == 0);
		free(orig);
		return 0;
	}

	/* add on a copy, then add_many on another: same bytes */
	{
		uint8_t    *a = fuzz_memdup(orig, size, size);
		uint8_t    *b = fuzz_memdup(orig, size, size);
		uint32_t	family = v.family ? v.family : 1 + (uint32_t) (rng % 1000);
		amq_bloom_view va;
		amq_bloom_view vb;
		amq_bloom_view chk;
		int			added = 0;

		FUZZ_CHECK(amq_bloom_open(a, size, &va) == AMQ_OK);
		FUZZ_CHECK(amq_bloom_open(b, size, &vb) == AMQ_OK);
		/* a dleft filter may be full: add the keys that fit, in order */
		for (i = 0; i < NADDS; i++)
		{
			hashes[added] = fuzz_splitmix(&rng);
			if (amq_bloom_add(&va, hashes[added], family) != AMQ_OK)
			{
				FUZZ_CHECK(v.layout == AMQ_BLOOM_LAYOUT_DLEFT);
				continue;
			}
			FUZZ_CHECK(amq_bloom_may_contain(&va, hashes[added]));
			added++;
		}
		for (i = 0; i < added; i++)
			FUZZ_CHECK(amq_bloom_may_contain(&va, hashes[i]));
		FUZZ_CHECK(amq_bloom_open(a, size, &chk) == AMQ_OK);
		FUZZ_CHECK(added == 0 || chk.family == family);
		FUZZ_CHECK(chk.nbits == v.nbits && chk.hashes == v.hashes &&
				   chk.layout == v.layout && chk.seed == v.seed);
		FUZZ_CHECK(chk.inserted == sat_add(v.inserted, added));
		check_stats(&chk, (size_t) fuzz_splitmix(&rng));

		FUZZ_CHECK(amq_bloom_add_many(&vb, hashes, added, family) == AMQ_OK);
		FUZZ_CHECK(memcmp(a, b, size) == 0);

		if (amq_bloom_layout_counts(v.layout))
		{
			for (i = 0; i < added; i++)
				FUZZ_CHECK(amq_bloom_delete(&vb, hashes[i]));
			FUZZ_CHECK(amq_bloom_open(b, size, &chk) == AMQ_OK);
			check_stats(&chk, (size_t) fuzz_splitmix(&rng));
		}
		free(a);
		free(b);
	}

	check_self_merge(orig, size, &v, false, (size_t) fuzz_splitmix(&rng));
	check_self_merge(orig, size, &v, true, (size_t) fuzz_splitmix(&rng));

	/* nothing above wrote to the value it only read */
	FUZZ_CHECK(memcmp(orig, data, size) == 0);
	free(orig);
	return 0;
}
