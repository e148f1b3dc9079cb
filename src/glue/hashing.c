/*
 * hashing.c
 *		Hashing SQL values so that filter membership agrees with SQL equality,
 *		and naming what a filter's values are so that it is never probed
 *		with values hashed another way.
 *
 * A pre-filter in front of a join must never drop a row the join's "=" keeps.
 * So a value is hashed with the extended (64-bit, seeded) support function of
 * its type's default hash operator class, the same equality that hash joins
 * and hash partitioning use: equal values hash equally even across the types
 * of one operator family (int2/int4/int8, float4/float8), numeric ignores
 * display scale, and collatable types hash under the call's collation.
 *
 * A filter records what its values are as a 32-bit id (docs/format.md:
 * family), the FNV-1a hash of an identity text that must mean the same thing
 * in every database a filter can travel to, and must tell apart every two
 * types whose values could hash differently:
 *
 *	- a scalar type: its hash operator family, "pg_catalog.integer_ops", or
 *	  for a family an extension owns, "extension citext.citext_ops", so the
 *	  identity survives ALTER EXTENSION ... SET SCHEMA and a restore into a
 *	  database where the extension lives in another schema;
 *	- containers, whose families are shared by all their instances (every
 *	  array is array_ops), add what they contain: "pg_catalog.array_ops
 *	  [pg_catalog.integer_ops]", ranges and multiranges their subtype,
 *	  composite types and anonymous records their columns;
 *	- under a nondeterministic collation, where the hash depends on the
 *	  collation, the collation's provider, locale and version are added, so a
 *	  probe under another collation, or after the collation's version
 *	  changed, is an error rather than a silent "no" (under a deterministic
 *	  one text hashes as its bytes, and the identity names no collation; a
 *	  value under a nondeterministic collation is refused by such a filter
 *	  too: see amq_check_family);
 *	- an enum: its type name, and its values are hashed by label instead of
 *	  by the OID PostgreSQL hashes, which a dump and restore renumbers.
 *
 * Types whose hash depends on OIDs that a restore renumbers in any other way
 * (reg* types, aclitem, enums inside containers) are refused when a filter
 * would take them: such a filter would miss its own values after a restore.
 *
 * Filters written by 0.1 recorded the FNV-1a of "schema.family" alone and
 * hashed enums by OID.  The hasher keeps that "legacy" id too; a filter that
 * carries it is probed and added to exactly as 0.1 did, so it answers as it
 * always did (and, for containers, as weakly typed as it always was), but
 * for a value under a nondeterministic collation: 0.1 recorded no
 * collation, and such a filter is taken to be a deterministic one.
 *
 * One refinement: int8 values outside the int4 range get a full 64-bit hash
 * instead of PostgreSQL's, which folds them to 32 bits (see amq_hash.h).
 * Equality is unaffected: such values cannot equal an int2 or int4.  The
 * integer types are also hashed inline rather than through fmgr: they are
 * the common case of a join key, and the call costs as much as the hash.
 *
 * The lookup runs once per call site: the result is cached in fn_extra.
 * The identity, which takes catalog reads (a pg_depend scan for extension
 * membership among them), is also kept per backend for each type and
 * collation, until a change to any type, operator family, collation or
 * schema is invalidated: a probe of a stored filter, a query of its own,
 * would otherwise spend a third of its time naming its value's type.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/table.h"
#include "access/stratnum.h"
#include "catalog/dependency.h"
#include "catalog/namespace.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_enum.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/extension.h"
#include "common/hashfn.h"
#include "lib/stringinfo.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "glue/filter_glue.h"
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

/*
 * Why values of a type cannot be hashed the same way after a restore, or
 * NULL.  Their values are OIDs of catalog rows (or contain some), which a
 * restore recreates under new OIDs.
 */
static const char *
oid_dependence(Oid type)
{
	switch (type)
	{
		case REGPROCOID:
		case REGPROCEDUREOID:
		case REGOPEROID:
		case REGOPERATOROID:
		case REGCLASSOID:
		case REGTYPEOID:
		case REGCONFIGOID:
		case REGDICTIONARYOID:
		case REGNAMESPACEOID:
		case REGROLEOID:
		case REGCOLLATIONOID:
			return "its values are OIDs of catalog objects";
		case ACLITEMOID:
			return "its values hold role OIDs";
		default:
			return NULL;
	}
}

/* The default hash operator family of a type, or an error. */
static Oid
hash_family_of(Oid type)
{
	TypeCacheEntry *tce = lookup_type_cache(type, TYPECACHE_HASH_EXTENDED_PROC |
											TYPECACHE_HASH_OPFAMILY);

	if (!OidIsValid(tce->hash_extended_proc) || !OidIsValid(tce->hash_opf))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_FUNCTION),
				 errmsg("could not identify an extended hash function for type %s",
						format_type_be(type)),
				 errhint("Filters hash values with their type's default hash operator class; "
						 "cast the value to a type that has one, or create one for this type.")));
	return tce->hash_opf;
}

/*
 * Appends the identity of an operator family: "schema.family" for families
 * no extension owns (so pg_catalog's are what 0.1 recorded), "extension
 * name.family" for an extension's.  With legacy, always "schema.family".
 */
static void
append_family(StringInfo buf, Oid opf, bool legacy)
{
	HeapTuple	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opf));
	Form_pg_opfamily form;
	Oid			ext = InvalidOid;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator family %u", opf);
	form = (Form_pg_opfamily) GETSTRUCT(tup);
	if (!legacy)
		ext = getExtensionOfObject(OperatorFamilyRelationId, opf);
	if (OidIsValid(ext))
		appendStringInfo(buf, "extension %s.%s", get_extension_name(ext),
						 NameStr(form->opfname));
	else
	{
		char	   *nspname = get_namespace_name(form->opfnamespace);

		appendStringInfo(buf, "%s.%s", nspname ? nspname : "",
						 NameStr(form->opfname));
	}
	ReleaseSysCache(tup);
}

/*
 * Appends " collate provider:locale@version" when values of a collatable
 * type hash differently under this collation than under any other: only
 * nondeterministic collations make a hash depend on the collation.
 */
static void
append_collation(StringInfo buf, Oid type, Oid collation)
{
	HeapTuple	tup;
	Form_pg_collation form;
	Datum		datum;
	bool		isnull;
	const char *locale;

	if (!OidIsValid(collation) || !type_is_collatable(type) ||
		get_collation_isdeterministic(collation))
		return;
	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	form = (Form_pg_collation) GETSTRUCT(tup);
	datum = SysCacheGetAttr(COLLOID, tup, amq_collation_locale_attnum(form), &isnull);
	locale = isnull ? NameStr(form->collname) : TextDatumGetCString(datum);
	datum = SysCacheGetAttr(COLLOID, tup, Anum_pg_collation_collversion, &isnull);
	appendStringInfo(buf, " collate %c:%s@%s", form->collprovider, locale,
					 isnull ? "" : TextDatumGetCString(datum));
	ReleaseSysCache(tup);
}

/*
 * Appends "kind name" for a type known by its name alone, "kind extension
 * ext.name" for one an extension owns: both survive a schema move and a
 * restore (a rename does not).
 */
static void
append_type_name(StringInfo buf, const char *kind, Oid type)
{
	HeapTuple	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	Oid			ext;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	ext = getExtensionOfObject(TypeRelationId, type);
	if (OidIsValid(ext))
		appendStringInfo(buf, "%s extension %s.%s", kind, get_extension_name(ext),
						 NameStr(((Form_pg_type) GETSTRUCT(tup))->typname));
	else
		appendStringInfo(buf, "%s %s", kind,
						 NameStr(((Form_pg_type) GETSTRUCT(tup))->typname));
	ReleaseSysCache(tup);
}

static void append_identity(StringInfo buf, Oid type, Oid collation,
							bool nested, const char **unstable);

/* Appends the identities of a row type's columns, "(a, b, ...)". */
static void
append_columns(StringInfo buf, TupleDesc tupdesc, const char **unstable)
{
	int			i;
	bool		first = true;

	appendStringInfoChar(buf, '(');
	for (i = 0; i < tupdesc->natts; i++)
	{
		Form_pg_attribute att = TupleDescAttr(tupdesc, i);

		if (att->attisdropped)
			continue;
		if (!first)
			appendStringInfoString(buf, ", ");
		first = false;
		append_identity(buf, att->atttypid, att->attcollation, true, unstable);
	}
	appendStringInfoChar(buf, ')');
}

/*
 * Appends the identity of a type's values (see the file header).  nested is
 * set inside a container.  *unstable is set to why a restore would change
 * the values' hashes, if it would.  (Anonymous records have no extended
 * hash function, so no filter takes them.)
 */
static void
append_identity(StringInfo buf, Oid type, Oid collation, bool nested,
				const char **unstable)
{
	Oid			base = getBaseType(type);
	Oid			inner;
	const char *why = oid_dependence(base);

	check_stack_depth();
	if (why != NULL)
	{
		*unstable = why;
		appendStringInfoString(buf, format_type_be(base));
		return;
	}
	if (type_is_enum(base))
	{
		/* hashed by label at the top level; PostgreSQL hashes the OID inside containers */
		if (nested)
			*unstable = "it contains enum values, hashed by the OIDs of their labels";
		append_type_name(buf, "enum", base);
		return;
	}
	append_family(buf, hash_family_of(base), false);
	if (OidIsValid(inner = get_element_type(base)))
	{
		appendStringInfoChar(buf, '[');
		append_identity(buf, inner, collation, true, unstable);
		appendStringInfoChar(buf, ']');
	}
	else if (type_is_range(base))
	{
		Oid			rngcoll = get_range_collation(base);

		appendStringInfoChar(buf, '(');
		append_identity(buf, get_range_subtype(base),
						OidIsValid(rngcoll) ? rngcoll : collation, true, unstable);
		appendStringInfoChar(buf, ')');
	}
	else if (type_is_multirange(base))
	{
		appendStringInfoChar(buf, '(');
		append_identity(buf, get_multirange_range(base), collation, true,
						unstable);
		appendStringInfoChar(buf, ')');
	}
	else if (type_is_rowtype(base) && base != RECORDOID)
	{
		TupleDesc	tupdesc = lookup_rowtype_tupdesc(base, -1);

		append_columns(buf, tupdesc, unstable);
		ReleaseTupleDesc(tupdesc);
	}
	else
		append_collation(buf, base, collation);
}

/* A type's identities under a collation, kept per backend. */
typedef struct IdentityEntry
{
	Oid			key[2];			/* type, collation */
	uint32		family;
	uint32		legacy_family;
	bool		collated;
	uint32		plain_family;
	const char *unstable;		/* a string literal, or NULL */
	char		identity[256];
} IdentityEntry;

static HTAB *identity_cache = NULL;
static uint64 identity_resets = 0;

/* Forgets every identity: a catalog row they may be built from changed. */
static void
identity_cache_reset(Datum arg, int cacheid, uint32 hashvalue)
{
	identity_resets++;
	if (identity_cache != NULL)
	{
		hash_destroy(identity_cache);
		identity_cache = NULL;
	}
}

static void
identity_cache_init(void)
{
	static bool callbacks = false;
	HASHCTL		ctl;

	if (!callbacks)
	{
		CacheRegisterSyscacheCallback(TYPEOID, identity_cache_reset, (Datum) 0);
		CacheRegisterSyscacheCallback(OPFAMILYOID, identity_cache_reset, (Datum) 0);
		CacheRegisterSyscacheCallback(COLLOID, identity_cache_reset, (Datum) 0);
		CacheRegisterSyscacheCallback(NAMESPACEOID, identity_cache_reset, (Datum) 0);
		callbacks = true;
	}
	memset(&ctl, 0, sizeof(ctl));
	ctl.keysize = sizeof(Oid) * 2;
	ctl.entrysize = sizeof(IdentityEntry);
	ctl.hcxt = TopMemoryContext;
	identity_cache = hash_create("amqfilter identities", 16, &ctl,
								 HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
}

/* Fills in the hasher's identities for its type, from the cache if it can. */
static void
hasher_identify(AmqHasher *hasher)
{
	StringInfoData buf;
	const char *unstable = NULL;
	Oid			key[2] = {hasher->type, hasher->collation};
	IdentityEntry *entry;
	bool		found;
	uint64		resets;

	if (identity_cache == NULL)
		identity_cache_init();
	resets = identity_resets;
	entry = hash_search(identity_cache, key, HASH_FIND, NULL);
	if (entry != NULL)
	{
		strlcpy(hasher->identity, entry->identity, sizeof(hasher->identity));
		hasher->family = entry->family;
		hasher->legacy_family = entry->legacy_family;
		hasher->collated = entry->collated;
		hasher->plain_family = entry->plain_family;
		hasher->unstable = entry->unstable;
		return;
	}

	initStringInfo(&buf);
	append_identity(&buf, hasher->type, hasher->collation, false, &unstable);
	strlcpy(hasher->identity, buf.data, sizeof(hasher->identity));
	hasher->family = family_id(buf.data);
	hasher->unstable = unstable;

	/*
	 * Whether the identity names the call's collation: the identity under
	 * no collation, what any deterministic one gives, is another.  (A
	 * composite type's columns and a range's subtype hash under their own
	 * collations, which name themselves whatever the call's.)
	 */
	hasher->collated = false;
	hasher->plain_family = 0;
	if (OidIsValid(hasher->collation) &&
		!get_collation_isdeterministic(hasher->collation))
	{
		const char *ignored = NULL;

		resetStringInfo(&buf);
		append_identity(&buf, hasher->type, InvalidOid, false, &ignored);
		if (family_id(buf.data) != hasher->family)
		{
			hasher->collated = true;
			hasher->plain_family = family_id(buf.data);
		}
	}

	/* what 0.1 recorded: the top-level family's "schema.family" */
	resetStringInfo(&buf);
	append_family(&buf, hash_family_of(getBaseType(hasher->type)), true);
	hasher->legacy_family = family_id(buf.data);
	if (hasher->legacy_family == hasher->family)
		hasher->legacy_family = 0;
	pfree(buf.data);

	/*
	 * Kept unless a catalog change arrived while the catalogs were read: the
	 * identity may then describe either state, so the next call computes it
	 * again.
	 */
	if (identity_resets != resets)
		return;
	entry = hash_search(identity_cache, key, HASH_ENTER, &found);
	strlcpy(entry->identity, hasher->identity, sizeof(entry->identity));
	entry->family = hasher->family;
	entry->legacy_family = hasher->legacy_family;
	entry->collated = hasher->collated;
	entry->plain_family = hasher->plain_family;
	entry->unstable = hasher->unstable;
}

/* Fills in the hasher for a value type, or errors if it cannot be hashed. */
static void
hasher_init(AmqHasher *hasher, Oid type, Oid collation, MemoryContext mcxt)
{
	TypeCacheEntry *tce;
	Oid			base = getBaseType(type);

	tce = lookup_type_cache(base, TYPECACHE_HASH_EXTENDED_PROC |
							TYPECACHE_HASH_OPFAMILY);
	(void) hash_family_of(base);	/* errors for types without a hash */
	hasher->type = type;
	hasher->collation = collation;
	hasher->enum_by_label = type_is_enum(base);

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
	fmgr_info_cxt(tce->hash_extended_proc, &hasher->proc, mcxt);
	hasher_identify(hasher);
	hasher->int_plain = hasher->int_width != 0 && !hasher->enum_by_label &&
		hasher->unstable == NULL;
}

/* Errors if a restore would change the hashes of the hasher's values. */
static void
check_stable(const AmqHasher *hasher)
{
	if (hasher->unstable != NULL)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("values of type %s cannot be members of a filter",
						format_type_be(hasher->type)),
				 errdetail("Their hash would change after a dump and restore: %s, which a restore renumbers.",
						   hasher->unstable),
				 errhint("Build the filter from a stable form of the value, such as its text (value::text).")));
}

/*
 * The hasher for argument argno of the current call, looked up on first use
 * and kept in fn_extra for the rest of the query.
 */
/*
 * Fills in a hasher for values of type under collation, as a filter's
 * aggregate would hash them, for code that hashes outside a function call
 * (runtime join filters shipped to other servers); errors as amq_hasher_get.
 */
void
amq_hasher_init(AmqHasher *hasher, Oid type, Oid collation, MemoryContext mcxt)
{
	hasher_init(hasher, type, collation, mcxt);
}

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

pg_noreturn static void report_family_mismatch(const AmqHasher *hasher, uint32 family,
											   const char *typname);
pg_noreturn static void report_collation_mismatch(const AmqHasher *hasher, uint32 family,
												  const char *typname);

/* Label hash of an enum value: the same after a restore renumbers its OID. */
static uint64
hash_enum_label(Oid value, uint64 seed)
{
	HeapTuple	tup = SearchSysCache1(ENUMOID, ObjectIdGetDatum(value));
	const char *label;
	uint64		hash;

	if (!HeapTupleIsValid(tup))
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid internal value for enum: %u", value)));
	label = NameStr(((Form_pg_enum) GETSTRUCT(tup))->enumlabel);
	hash = hash_bytes_extended((const unsigned char *) label, strlen(label), seed);
	ReleaseSysCache(tup);
	return hash;
}

/*
 * The 64-bit hash of a non-null value under a filter's seed, as values of a
 * filter of the given family are hashed: as 0.1 did for a filter that
 * carries the legacy id, else as this version does (family 0: a filter not
 * bound yet, which this value binds).
 */
uint64
amq_hash_datum(const AmqHasher *hasher, Datum value, uint64 seed, uint32 family)
{
	/* amq_check_family never lets a collated value reach a 0.1 filter */
	bool		legacy = family != 0 && family == hasher->legacy_family &&
		!hasher->collated;

	/* what follows comes to this for the integers, legacy or not */
	if (hasher->int_plain)
		return amq_hash_int(amq_hasher_int(hasher, value), seed);
	if (!legacy)
	{
		check_stable(hasher);
		if (hasher->enum_by_label)
			return hash_enum_label(DatumGetObjectId(value), seed);
	}
	if (hasher->int_width != 0)
	{
		/*
		 * For a value in the int4 range, what hashint2/4/8extended compute
		 * (hashint8extended's folding leaves such a value unchanged), by the
		 * core's copy of hash_uint32_extended; outside it, a full 64-bit
		 * hash (amq_hash.h).
		 */
		return amq_hash_int(amq_hasher_int(hasher, value), seed);
	}
	return DatumGetUInt64(FunctionCall2Coll((FmgrInfo *) &hasher->proc,
											hasher->collation, value,
											Int64GetDatum((int64) seed)));
}

/*
 * Errors unless values hashed by this hasher can be members of a filter of
 * the given family: 0 (the filter has no values yet, anything goes), this
 * version's identity, or the legacy one 0.1 recorded for the same type.
 *
 * Collations.  A value under a nondeterministic collation (one its identity
 * names: hasher->collated) is hashed by that collation, so that values it
 * holds equal, 'apple' and 'APPLE' under a case-insensitive one, hash alike.
 * A filter whose values were hashed under a deterministic collation, as
 * their bytes, cannot answer for such a value: it holds 'apple', probed
 * with 'APPLE' it can only say "no", which the probe's "=" contradicts; and
 * hashing the value under the probe's collation, as 0.1 did, misses even
 * 'apple' itself.  Such a filter's id names no collation, and is also the
 * id 0.1 recorded for a pg_catalog scalar, under whatever collation it was
 * built (0.1 recorded none), so neither it nor any other id 0.1 recorded
 * can tell which collation its values hash under.  A filter of either id is
 * taken to be a deterministic one, as nearly every 0.1 filter is: a
 * collated value is refused by it, with an error that says so and how to
 * probe, never answered "no".  (A 0.1 filter built under a nondeterministic
 * collation thus fails under it too, and must be rebuilt.)  The other way
 * round needs nothing here: a filter built under a nondeterministic
 * collation names it, and every value under another collation has another
 * id.
 */
void
amq_check_family(const AmqHasher *hasher, uint32 family, const char *typname)
{
	if (family == 0 || family == hasher->family)
		return;
	if (hasher->collated)
	{
		if (family == hasher->plain_family || family == hasher->legacy_family)
			report_collation_mismatch(hasher, family, typname);
	}
	else if (family == hasher->legacy_family)
		return;
	report_family_mismatch(hasher, family, typname);
}

/*
 * ----------------------------------------------------------------
 * From a filter's id back to what its values are, for bloom_info and
 * cuckoo_info, and for the error of a probe of the wrong type.  An id is a
 * hash, so the way back is to compute the ids of this database's types and
 * look the filter's up: once per call site of the functions, and only on
 * the error's own path.
 * ----------------------------------------------------------------
 */

typedef struct AmqKnownFamily
{
	uint32		family;
	char	   *identity;
	Oid			type;			/* the type it is an identity of; InvalidOid
								 * when the id does not tell the type (see
								 * index_type) */
	Oid			collation;		/* nondeterministic, or InvalidOid */
	bool		legacy;			/* the id 0.1 recorded */
} AmqKnownFamily;

typedef struct AmqFamilyIndex
{
	int			count;
	AmqKnownFamily *entries;
} AmqFamilyIndex;

/* True if values of a type can be hashed (and its identity computed). */
static bool
hashable(Oid type)
{
	TypeCacheEntry *tce = lookup_type_cache(getBaseType(type),
											TYPECACHE_HASH_EXTENDED_PROC |
											TYPECACHE_HASH_OPFAMILY);

	return OidIsValid(tce->hash_extended_proc) && OidIsValid(tce->hash_opf);
}

static void
index_add(AmqFamilyIndex *index, int *room, uint32 family, const char *identity,
		  Oid type, Oid collation, bool legacy)
{
	AmqKnownFamily *entry;

	if (index->count == *room)
	{
		*room *= 2;
		index->entries = repalloc(index->entries, *room * sizeof(AmqKnownFamily));
	}
	entry = &index->entries[index->count++];
	entry->family = family;
	entry->identity = pstrdup(identity);
	entry->type = type;
	entry->collation = collation;
	entry->legacy = legacy;
}

/*
 * Adds the identities of a type to the index: under no collation, under
 * each nondeterministic one if it is collatable, and the id 0.1 recorded.
 * That last one tells the type only for a scalar: 0.1 recorded one id for
 * every array, one for every range, one for every enum.
 */
static void
index_type(AmqFamilyIndex *index, int *room, Oid type, List *collations)
{
	StringInfoData buf;
	const char *unstable = NULL;
	ListCell   *lc;
	uint32		legacy;
	bool		scalar;

	initStringInfo(&buf);
	append_identity(&buf, type, InvalidOid, false, &unstable);
	index_add(index, room, family_id(buf.data), buf.data, type, InvalidOid,
			  false);
	if (type_is_collatable(type))
	{
		foreach(lc, collations)
		{
			resetStringInfo(&buf);
			append_identity(&buf, type, lfirst_oid(lc), false, &unstable);
			index_add(index, room, family_id(buf.data), buf.data, type,
					  lfirst_oid(lc), false);
		}
	}
	resetStringInfo(&buf);
	append_family(&buf, hash_family_of(getBaseType(type)), true);
	legacy = family_id(buf.data);
	appendStringInfoString(&buf, " (as written by 0.1)");
	scalar = !OidIsValid(get_element_type(type)) && !type_is_range(type) &&
		!type_is_multirange(type) &&
		!type_is_enum(type);
	index_add(index, room, legacy, buf.data, scalar ? type : InvalidOid,
			  InvalidOid, true);
	pfree(buf.data);
}

/*
 * The entry naming what a filter of a family holds: one of this version's
 * identities before one 0.1 recorded (a pg_catalog scalar's are the same
 * id), else the first of the id; NULL when no entry has it.
 */
static const AmqKnownFamily *
find_family(const AmqFamilyIndex *index, uint32 family)
{
	const AmqKnownFamily *legacy = NULL;
	int			i;

	for (i = 0; i < index->count; i++)
	{
		const AmqKnownFamily *entry = &index->entries[i];

		if (entry->family != family)
			continue;
		if (!entry->legacy)
			return entry;
		if (legacy == NULL)
			legacy = entry;
	}
	return legacy;
}

/*
 * Every hashable type of the database but composite types (one per table:
 * too many to walk per query), with arrays and ranges of them.
 */
static AmqFamilyIndex *
build_family_index(MemoryContext mcxt)
{
	MemoryContext old = MemoryContextSwitchTo(mcxt);
	AmqFamilyIndex *index = palloc0(sizeof(AmqFamilyIndex));
	int			room = 256;
	List	   *collations = NIL;
	Relation	rel;
	SysScanDesc scan;
	HeapTuple	tup;

	index->entries = palloc(room * sizeof(AmqKnownFamily));

	rel = table_open(CollationRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_collation coll = (Form_pg_collation) GETSTRUCT(tup);

		if (!coll->collisdeterministic)
			collations = lappend_oid(collations, coll->oid);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);

	rel = table_open(TypeRelationId, AccessShareLock);
	scan = systable_beginscan(rel, InvalidOid, false, NULL, 0, NULL);
	while (HeapTupleIsValid(tup = systable_getnext(scan)))
	{
		Form_pg_type t = (Form_pg_type) GETSTRUCT(tup);
		Oid			elem = get_element_type(t->oid);

		CHECK_FOR_INTERRUPTS();
		if (!t->typisdefined || t->typtype == TYPTYPE_PSEUDO ||
			t->typtype == TYPTYPE_DOMAIN || t->typtype == TYPTYPE_COMPOSITE ||
			(OidIsValid(elem) && type_is_rowtype(elem)) || !hashable(t->oid))
			continue;
		index_type(index, &room, t->oid, collations);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	MemoryContextSwitchTo(old);
	return index;
}

/*
 * What a filter of the given family holds, as text: its identity (see the
 * file header), or "unknown" and the id when no type of this database but a
 * composite one has that id.  family must not be 0.
 */
text *
amq_family_identity(FunctionCallInfo fcinfo, uint32 family)
{
	AmqCallCache *cache = amq_call_cache(fcinfo);
	const AmqKnownFamily *found;

	if (cache->families == NULL)
		cache->families = build_family_index(fcinfo->flinfo->fn_mcxt);
	found = find_family(cache->families, family);
	if (found != NULL)
		return cstring_to_text(found->identity);
	return cstring_to_text(psprintf("unknown (id %08x): a composite type, or one this database lacks",
									family));
}

/*
 * ----------------------------------------------------------------
 * The error for a value that cannot be a member of a filter, naming what
 * the filter holds.  Only this error path resolves the filter's id, with the
 * index above: a probe that passes the check never pays for it.
 * ----------------------------------------------------------------
 */

/*
 * Where a schema comes in the search path, or after it: of two types or
 * collations that stand for the same thing, the one a name written without
 * a schema would find is named.
 */
static int
namespace_rank(Oid nspid, List *search_path)
{
	ListCell   *lc;
	int			rank = 0;

	foreach(lc, search_path)
	{
		if (lfirst_oid(lc) == nspid)
			return rank;
		rank++;
	}
	return rank;
}

/*
 * How well a type stands for the others of its identity in a message, by
 * what it contains (bigint[] as bigint), lower first: a cast to it should
 * take any value of the types hashed alike, so the preferred type of its
 * category (text, double precision), else the widest (bigint, not integer);
 * never a domain, which may refuse values (an array of one is indexed as a
 * type of its own); then the first on the search path (enums of one name in
 * two schemas).  Ties go to the lower OID, built-in types first.
 */
static void
type_rank(Oid type, List *search_path, int rank[3])
{
	HeapTuple	tup;
	Oid			inner = type;
	Oid			next;
	char		category;
	bool		preferred;
	int16		typlen;

	for (;;)
	{
		if (OidIsValid(next = get_element_type(inner)))
			inner = next;
		else if (type_is_range(inner))
			inner = get_range_subtype(inner);
		else if (type_is_multirange(inner))
			inner = get_multirange_range(inner);
		else
			break;
	}
	get_type_category_preferred(inner, &category, &preferred);
	typlen = get_typlen(inner);
	rank[0] = get_typtype(inner) == TYPTYPE_DOMAIN ? 2 : preferred ? 0 : 1;
	rank[1] = typlen < 0 ? 0 : PG_INT16_MAX - typlen;
	tup = SearchSysCache1(TYPEOID, ObjectIdGetDatum(type));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for type %u", type);
	rank[2] = namespace_rank(((Form_pg_type) GETSTRUCT(tup))->typnamespace,
							 search_path);
	ReleaseSysCache(tup);
}

/*
 * How well a collation stands for the others of its provider, locale and
 * version, lower first: the first on the search path.
 */
static int
collation_rank(Oid collation, List *search_path)
{
	HeapTuple	tup = SearchSysCache1(COLLOID, ObjectIdGetDatum(collation));
	int			rank;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for collation %u", collation);
	rank = namespace_rank(((Form_pg_collation) GETSTRUCT(tup))->collnamespace,
						  search_path);
	ReleaseSysCache(tup);
	return rank;
}

/* True if entry a stands better than entry b for their identity. */
static bool
entry_better(const AmqKnownFamily *a, const AmqKnownFamily *b,
			 List *search_path)
{
	int			ra[3];
	int			rb[3];
	int			i;

	if (a->type != b->type)
	{
		type_rank(a->type, search_path, ra);
		type_rank(b->type, search_path, rb);
		for (i = 0; i < 3; i++)
			if (ra[i] != rb[i])
				return ra[i] < rb[i];
		return a->type < b->type;
	}
	if (a->collation != b->collation)
	{
		ra[0] = collation_rank(a->collation, search_path);
		rb[0] = collation_rank(b->collation, search_path);
		if (ra[0] != rb[0])
			return ra[0] < rb[0];
		return a->collation < b->collation;
	}
	return false;
}

/* What a filter of a family holds, as far as this database can tell. */
typedef struct AmqElement
{
	const char *identity;		/* NULL: no type of this database has the id */
	bool		collision;		/* types of different identities have it */
	Oid			type;			/* the type to name, or InvalidOid */
	Oid			collation;		/* nondeterministic, or InvalidOid */
} AmqElement;

/*
 * Resolves a filter's id against this database's types (not its composite
 * types: see build_family_index).  A type is named only when every entry of
 * the id has the same identity and tells its type: an id 0.1 recorded for an
 * array says nothing of its elements, and an id two identities share (a
 * 32-bit hash) could be either.  Every type and collation of one identity
 * hashes a value alike; entry_better picks the one to name.
 */
static void
resolve_element(uint32 family, AmqElement *el)
{
	AmqFamilyIndex *index = build_family_index(CurrentMemoryContext);
	const AmqKnownFamily *found = find_family(index, family);
	const AmqKnownFamily *best = NULL;
	List	   *search_path = fetch_search_path(false);
	int			i;

	memset(el, 0, sizeof(*el));
	if (found == NULL)
		return;
	el->identity = found->identity;
	for (i = 0; i < index->count; i++)
	{
		const AmqKnownFamily *e = &index->entries[i];

		if (e->family != family || e->legacy != found->legacy)
			continue;
		if (strcmp(e->identity, found->identity) != 0)
		{
			el->collision = true;
			return;
		}
		if (!OidIsValid(e->type))
			return;
		if (best == NULL || entry_better(e, best, search_path))
			best = e;
	}
	el->type = best->type;
	el->collation = best->collation;
}

/*
 * " under collation ci" when a value of the type hashes by its collation
 * (a nondeterministic one), else "".
 */
static const char *
collation_phrase(Oid type, Oid collation)
{
	if (!OidIsValid(collation) || !type_is_collatable(type) ||
		get_collation_isdeterministic(collation))
		return "";
	return psprintf(" under collation %s", generate_collation_name(collation));
}

/*
 * Reports that values hashed by hasher cannot be members of a filter of the
 * given family.  The message names what the filter holds and the hint a cast
 * to it, when the filter's id resolves to a type of this database; when it
 * does not, they say so rather than guess.
 */
static void
report_family_mismatch(const AmqHasher *hasher, uint32 family,
					   const char *typname)
{
	AmqElement el;
	const char *value_type = format_type_be(hasher->type);
	const char *value_collation = collation_phrase(hasher->type,
												   hasher->collation);

	resolve_element(family, &el);
	if (OidIsValid(el.type))
	{
		const char *type = format_type_be(el.type);
		const char *under = "";
		const char *collate = "";
		const char *example;

		/* the value's own expression goes where the hint says "value" */
		example = "value";
		if (OidIsValid(el.collation))
		{
			under = collation_phrase(el.type, el.collation);
			collate = psprintf(" COLLATE %s",
							   generate_collation_name(el.collation));
		}
		else if (*value_collation && type_is_collatable(el.type))
		{
			/* any deterministic collation hashes as the filter's did */
			under = " under a deterministic collation";
			collate = " COLLATE \"default\"";
		}
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("a value of type %s%s cannot be a member of this %s of %s values%s",
						value_type, value_collation, typname, type,
						collation_phrase(el.type, el.collation)),
				 errdetail("The filter's values are identified as \"%s\"; "
						   "values of type %s are identified as \"%s\".",
						   el.identity, value_type, hasher->identity),
				 errhint("Cast the value to %s%s: %s::%s%s.",
						 type, under, example, type, collate)));
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("a value of type %s%s cannot be a member of this %s",
					value_type, value_collation, typname),
			 el.identity == NULL ?
			 errdetail("The filter's values are identified by id %08x, which no type of this "
					   "database has (composite types are not looked up); values of type %s "
					   "are identified as \"%s\".",
					   family, value_type, hasher->identity) :
			 el.collision ?
			 errdetail("The filter's values are identified by id %08x, which types of "
					   "different identities in this database share; values of type %s "
					   "are identified as \"%s\".",
					   family, value_type, hasher->identity) :
			 errdetail("The filter's values are identified as \"%s\", which does not tell "
					   "their type; values of type %s are identified as \"%s\".",
					   el.identity, value_type, hasher->identity),
			 errhint("Cast the value to the type the filter was built from, under the "
					 "collation it was built with.")));
}

/*
 * Reports that a value under a nondeterministic collation cannot be a
 * member of a filter whose id names no collation: family is the hasher's
 * plain_family or legacy_family (see amq_check_family).
 */
static void
report_collation_mismatch(const AmqHasher *hasher, uint32 family,
						  const char *typname)
{
	const char *value_type = format_type_be(hasher->type);
	const char *collation = generate_collation_name(hasher->collation);
	bool		maybe_01 = family == hasher->legacy_family;
	const char *unstable = NULL;
	StringInfoData filter_identity;

	initStringInfo(&filter_identity);
	if (family == hasher->plain_family)
		append_identity(&filter_identity, hasher->type, InvalidOid, false,
						&unstable);
	else
	{
		append_family(&filter_identity, hash_family_of(getBaseType(hasher->type)),
					  true);
		appendStringInfoString(&filter_identity, " (as written by 0.1)");
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 family == hasher->plain_family ?
			 errmsg("a value of type %s under collation %s cannot be a member of this %s of %s values under a deterministic collation",
					value_type, collation, typname,
					format_type_be(getBaseType(hasher->type))) :
			 errmsg("a value of type %s under collation %s cannot be a member of this %s written by version 0.1, which records no collation",
					value_type, collation, typname),
			 errdetail("The filter's values are identified as \"%s\", which names no collation: "
					   "the values of such a filter are hashed under a deterministic collation, "
					   "where values equal under collation %s can differ, so it cannot answer "
					   "for all the values equal to this one.  Values of type %s under "
					   "collation %s are identified as \"%s\".",
					   filter_identity.data, collation, value_type, collation,
					   hasher->identity),
			 maybe_01 ?
			 errhint("To look up the value itself, write it under a deterministic collation: "
					 "value COLLATE \"default\".  To look up the values equal to it under "
					 "collation %s, build the filter under that collation (a filter that "
					 "version 0.1 built under it records no collation: build it again).",
					 collation) :
			 errhint("To look up the value itself, write it under a deterministic collation: "
					 "value COLLATE \"default\".  To look up the values equal to it under "
					 "collation %s, build the filter under that collation.",
					 collation)));
}

/*
 * The hash of argument value_arg for a probe of a filter bound to family
 * with seed; false, with no hash, for a filter that holds nothing (family
 * 0).  The value's type is looked up even then: errors must not depend on
 * what a filter holds.  A value of another type is an error.
 */
bool
amq_probe_hash(FunctionCallInfo fcinfo, int value_arg, uint32 family,
			   uint64 seed, const char *typname, uint64 *hash)
{
	AmqHasher  *hasher = amq_hasher_get(fcinfo, value_arg);

	if (family == 0)
		return false;
	/*
	 * A probe per row: the checks and the integers' hash without a call,
	 * the seed's part of the hash kept for the next row (it is half the
	 * hash, and the hash is the first thing the probe's load waits for).
	 */
	if (family != hasher->family)
		amq_check_family(hasher, family, typname);
	if (hasher->int_plain)
	{
		AmqCallCache *cache = amq_call_cache(fcinfo);

		if (!cache->lookup3_set || cache->lookup3_seed != seed)
		{
			cache->lookup3 = amq_hash_uint32_pg_seed(seed);
			cache->lookup3_seed = seed;
			cache->lookup3_set = true;
		}
		*hash = amq_hash_int_seeded(amq_hasher_int(hasher, PG_GETARG_DATUM(value_arg)),
									seed, cache->lookup3);
	}
	else
		*hash = amq_hash_datum(hasher, PG_GETARG_DATUM(value_arg), seed, family);
	return true;
}
