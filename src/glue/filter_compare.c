/*
 * filter_compare.c
 *		Equality, a total order and hashing of whole filter values, of both
 *		filter types: what "=", DISTINCT, GROUP BY, UNION, unique
 *		constraints and hash and merge joins need.
 *
 * Two filters are equal when their serialized bytes are (docs/format.md).  So
 * filters of the same values built with a different n, p or layout are not
 * equal, nor are cuckoo filters whose fingerprints landed in other slots
 * (the same values added in another order, a parallel build).  Comparing
 * never interprets the bytes, so it needs no validation: a value that fails
 * the structural check still equals itself.
 *
 * The order exists because a btree operator class needs all five strategies
 * and a merge join a btree family.  It is that of bytea with the length
 * first: a shorter value sorts first, values of one length in memcmp order.
 * It is total and stable, and means nothing else.
 *
 * The lengths are read without detoasting (toast_raw_datum_size, as texteq
 * does), so filters of different sizes compare without reading either.
 * Values of one length are detoasted whole; they are compared and hashed in
 * slices of AMQ_SLICE_BYTES with an interrupt check between slices, since a
 * filter may be 800 MB.  The hash is chained over the slices, each hashed
 * by hash_bytes_extended seeded with the hash so far: a value of one slice
 * hashes as a bytea of its bytes does.  The 32-bit hash is the low half of
 * the 64-bit one under seed 0, as hash operator classes require.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "common/hashfn.h"
#include "miscadmin.h"

#include "glue/amqfilter.h"

/* memcmp of two byte ranges of one length, in slices that can be cancelled */
static int
compare_bytes(const char *a, const char *b, Size len)
{
	Size		from;
	int			c;

	for (from = 0; from < len; from += AMQ_SLICE_BYTES)
	{
		if (from > 0)
			CHECK_FOR_INTERRUPTS();
		c = memcmp(a + from, b + from, Min(len - from, (Size) AMQ_SLICE_BYTES));
		if (c != 0)
			return c;
	}
	return 0;
}

/* Compares filter arguments 0 and 1: by length, then by bytes. */
static int
compare_args(FunctionCallInfo fcinfo)
{
	Datum		a = PG_GETARG_DATUM(0);
	Datum		b = PG_GETARG_DATUM(1);
	Size		alen = toast_raw_datum_size(a);
	Size		blen = toast_raw_datum_size(b);
	struct varlena *va;
	struct varlena *vb;
	int			result;

	if (alen != blen)
		return alen < blen ? -1 : 1;
	va = PG_DETOAST_DATUM_PACKED(a);
	vb = PG_DETOAST_DATUM_PACKED(b);
	Assert(VARSIZE_ANY_EXHDR(va) == VARSIZE_ANY_EXHDR(vb));
	result = compare_bytes(VARDATA_ANY(va), VARDATA_ANY(vb),
						   VARSIZE_ANY_EXHDR(va));
	/* btree and sorts call this per pair: keep no copies */
	PG_FREE_IF_COPY(va, 0);
	PG_FREE_IF_COPY(vb, 1);
	return result;
}

/* The 64-bit hash of the filter argument 0 under a seed, slice by slice. */
static uint64
hash_arg(FunctionCallInfo fcinfo, uint64 seed)
{
	struct varlena *value = PG_DETOAST_DATUM_PACKED(PG_GETARG_DATUM(0));
	const unsigned char *data = (const unsigned char *) VARDATA_ANY(value);
	Size		len = VARSIZE_ANY_EXHDR(value);
	Size		from = 0;
	Size		slice;
	uint64		hash = seed;

	do
	{
		if (from > 0)
			CHECK_FOR_INTERRUPTS();
		slice = Min(len - from, (Size) AMQ_SLICE_BYTES);
		hash = hash_bytes_extended(data + from, slice, hash);
		from += slice;
	} while (from < len);
	PG_FREE_IF_COPY(value, 0);
	return hash;
}

/*
 * The SQL-visible functions of one filter type: <type>_eq, _ne, _lt, _le,
 * _gt, _ge, _cmp (btree support 1), _hash and _hash_extended (hash support
 * 1 and 2).  The bytes are compared alike for every type; each type has its
 * own symbols because C symbol = SQL name.
 */
#define AMQ_COMPARE_FUNCTIONS(type) \
PG_FUNCTION_INFO_V1(type##_eq); \
Datum type##_eq(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) == 0); } \
PG_FUNCTION_INFO_V1(type##_ne); \
Datum type##_ne(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) != 0); } \
PG_FUNCTION_INFO_V1(type##_lt); \
Datum type##_lt(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) < 0); } \
PG_FUNCTION_INFO_V1(type##_le); \
Datum type##_le(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) <= 0); } \
PG_FUNCTION_INFO_V1(type##_gt); \
Datum type##_gt(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) > 0); } \
PG_FUNCTION_INFO_V1(type##_ge); \
Datum type##_ge(PG_FUNCTION_ARGS) { PG_RETURN_BOOL(compare_args(fcinfo) >= 0); } \
PG_FUNCTION_INFO_V1(type##_cmp); \
Datum type##_cmp(PG_FUNCTION_ARGS) \
{ \
	int			c = compare_args(fcinfo); \
\
	PG_RETURN_INT32(c < 0 ? -1 : c > 0); \
} \
PG_FUNCTION_INFO_V1(type##_hash); \
Datum type##_hash(PG_FUNCTION_ARGS) { PG_RETURN_INT32((int32) (uint32) hash_arg(fcinfo, 0)); } \
PG_FUNCTION_INFO_V1(type##_hash_extended); \
Datum type##_hash_extended(PG_FUNCTION_ARGS) \
{ \
	PG_RETURN_INT64((int64) hash_arg(fcinfo, (uint64) PG_GETARG_INT64(1))); \
}

AMQ_COMPARE_FUNCTIONS(bloom)
AMQ_COMPARE_FUNCTIONS(cuckoo)
