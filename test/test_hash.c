/*
 * test_hash.c
 *		Known answers for the core's copy of PostgreSQL's integer hash
 *		(amq_hash_uint32_pg in amq_hash.h).
 *
 * A filter built from integers must hash them exactly as PostgreSQL's
 * hashint2/4/8extended do, or filters stored before would miss their own
 * values.  The expected values were computed by PostgreSQL 15:
 * SELECT hashint4extended(k, seed).
 */
#define _POSIX_C_SOURCE 200809L

#include "harness.h"
#include "amq_hash.h"
#include "amq_bloom.h"

typedef struct
{
	int32_t		k;
	uint64_t	seed;
	int64_t		expected;		/* as SQL shows it, a signed bigint */
} known_hash;

static const known_hash known[] = {
	{0, 0, INT64_C(4154612158245552303)},
	{1, 0, INT64_C(-3670598878359251130)},
	{-1, 0, INT64_C(-1888257769727981238)},
	{42, 0, INT64_C(8010225493015854792)},
	{2147483647, 0, INT64_C(-9109110466470504941)},
	{INT32_MIN, 0, INT64_C(1977219185673256887)},
	{0, 1, INT64_C(434346878670890809)},
	{42, 42, INT64_C(826591455424871831)},
	{7, UINT64_MAX, INT64_C(5874088688735560945)},
	{123456, UINT64_C(8243313887238232109), INT64_C(7512769782411799412)},
	{-5, UINT64_C(9223372036854775807), INT64_C(5378926849715493443)},
	/* the seed every filter amqfilter builds uses */
	{0, AMQ_BLOOM_DEFAULT_SEED, INT64_C(684668155717813750)},
	{1, AMQ_BLOOM_DEFAULT_SEED, INT64_C(-1610244132834444867)},
	{-1, AMQ_BLOOM_DEFAULT_SEED, INT64_C(2806496555967207718)},
	{1000000, AMQ_BLOOM_DEFAULT_SEED, INT64_C(7780570497098154297)},
	{INT32_MIN, AMQ_BLOOM_DEFAULT_SEED, INT64_C(-7225455137898580552)},
};

static void
test_known_answers(void)
{
	size_t		i;

	for (i = 0; i < lengthof(known); i++)
	{
		uint64_t	got = amq_hash_uint32_pg((uint32_t) known[i].k, known[i].seed);

		if (got != (uint64_t) known[i].expected)
			diag("k = %d, seed = %llu: got %lld, want %lld", (int) known[i].k,
				 (unsigned long long) known[i].seed, (long long) got,
				 (long long) known[i].expected);
		CHECK(got == (uint64_t) known[i].expected);
	}
}

static const amq_test tests[] = {
	{"integer hash known answers", test_known_answers},
};

int
main(void)
{
	return amq_run_tests(tests, lengthof(tests), "core hash");
}
