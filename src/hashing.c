/*
 * hashing.c
 *		Hashing SQL values so that filter membership agrees with SQL equality.
 *
 * A pre-filter in front of a join must never drop a row the join's "=" keeps.
 * So a value is hashed with the extended (64-bit, seeded) support function of
 * its type's default hash operator class, the same equality that hash joins
 * and hash partitioning use: equal values hash equally even across the types
 * of one operator family (int2/int4/int8, float4/float8), numeric ignores
 * display scale, and collatable types hash under the call's collation.
 *
 * A filter records which operator family its values came from as a 32-bit
 * id: a hash of the family's schema-qualified name, which, unlike an OID,
 * survives dump and restore.  Probing with a value of another family is an
 * error, never a silent "no".
 *
 * One refinement: int8 values outside the int4 range get a full 64-bit hash
 * instead of PostgreSQL's, which folds them to 32 bits (see amq_hash.h).
 * Equality is unaffected: such values cannot equal an int2 or int4.  The
 * integer types are also hashed inline rather than through fmgr: they are
 * the common case of a join key, and the call costs as much as the hash.
 *
 * The lookup runs once per call site: the result is cached in fn_extra.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "catalog/pg_opfamily.h"
#include "common/hashfn.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "filter_glue.h"
#include "core/amq_hash.h"

/* FNV-1a, 32 bits; 0 is reserved for "no family yet" */
static uint32
family_id(const char *name)
{
	uint32		h = 2166136261u;

	for (; *name; name++)
	{
		h ^= (unsigned char) *name;
		h *= 16777619u;
	}
	return h == 0 ? 1 : h;
}

/* Fills in the hasher for a value type, or errors if it cannot be hashed. */
static void
hasher_init(AmqHasher *hasher, Oid type, Oid collation, MemoryContext mcxt)
{
	TypeCacheEntry *tce;
	HeapTuple	tup;
	Form_pg_opfamily opf;
	char	   *nspname;

	tce = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC |
							TYPECACHE_HASH_OPFAMILY);
	if (!OidIsValid(tce->hash_extended_proc) || !OidIsValid(tce->hash_opf))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an extended hash function for type %s",
						format_type_be(type)),
				 errhint("Filters hash values with their type's default hash operator class; "
						 "cast the value to a type that has one, or create one for this type.")));

	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(tce->hash_opf));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator family %u", tce->hash_opf);
	opf = (Form_pg_opfamily) GETSTRUCT(tup);
	nspname = get_namespace_name(opf->opfnamespace);
	snprintf(hasher->family_name, sizeof(hasher->family_name), "%s.%s",
			 nspname ? nspname : "", NameStr(opf->opfname));
	ReleaseSysCache(tup);

	hasher->type = type;
	hasher->collation = collation;
	/*
	 * Values hashed by the integer family's functions (int2, int4, int8 and
	 * domains over them) are hashed inline: the same result as the function,
	 * without a function call per value.
	 */
	if (tce->hash_extended_proc == F_HASHINT8EXTENDED)
		hasher->int_width = 8;
	else if (tce->hash_extended_proc == F_HASHINT4EXTENDED)
		hasher->int_width = 4;
	else if (tce->hash_extended_proc == F_HASHINT2EXTENDED)
		hasher->int_width = 2;
	else
		hasher->int_width = 0;
	hasher->family = family_id(hasher->family_name);
	fmgr_info_cxt(tce->hash_extended_proc, &hasher->proc, mcxt);
}

/*
 * The hasher for argument argno of the current call, looked up on first use
 * and kept in fn_extra for the rest of the query.
 */
AmqHasher *
amq_hasher_get(FunctionCallInfo fcinfo, int argno)
{
	AmqCallCache *cache = amq_call_cache(fcinfo);
	Oid			type;

	if (cache->hasher != NULL)
		return cache->hasher;

	type = get_fn_expr_argtype(fcinfo->flinfo, argno);
	if (!OidIsValid(type))
		ereport(ERROR,
				(errcode(ERRCODE_INDETERMINATE_DATATYPE),
				 errmsg("could not determine the type of the value to hash")));

	cache->hasher = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
										   sizeof(AmqHasher));
	hasher_init(cache->hasher, type, PG_GET_COLLATION(),
				fcinfo->flinfo->fn_mcxt);
	return cache->hasher;
}

/* The 64-bit hash of a non-null value under a filter's seed. */
uint64
amq_hash_datum(const AmqHasher *hasher, Datum value, uint64 seed)
{
	if (hasher->int_width != 0)
	{
		int64		v;

		switch (hasher->int_width)
		{
			case 8:
				v = DatumGetInt64(value);
				if (v < PG_INT32_MIN || v > PG_INT32_MAX)
					return amq_hash_wide_int64(v, seed);
				break;
			case 4:
				v = DatumGetInt32(value);
				break;
			default:
				v = DatumGetInt16(value);
				break;
		}

		/*
		 * What hashint2/4/8extended compute for a value in the int4 range
		 * (hashint8extended's folding leaves such a value unchanged).
		 */
		return hash_uint32_extended((uint32) (int32) v, seed);
	}
	return DatumGetUInt64(FunctionCall2Coll((FmgrInfo *) &hasher->proc,
											hasher->collation, value,
											Int64GetDatum((int64) seed)));
}

/*
 * Errors unless values hashed by this hasher can be members of a filter of
 * the given family (0: the filter has no values yet, anything goes).
 */
void
amq_check_family(const AmqHasher *hasher, uint32 family, const char *typname)
{
	if (family != 0 && family != hasher->family)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("a value of type %s cannot be a member of this %s",
						format_type_be(hasher->type), typname),
				 errdetail("The %s holds values of a type whose hash operator family is not %s.",
						   typname, hasher->family_name),
				 errhint("Cast the value to the type the filter was built from.")));
}
