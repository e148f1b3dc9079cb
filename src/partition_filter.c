/*
 * partition_filter.c
 *		Partition filters: one bloom filter per table of an inheritance or
 *		partition tree, over one column, kept in amqfilter_partition_filter;
 *		the build, the rule that says when a filter may be consulted, and the
 *		lookups that skip the tables whose filter rules a value out.
 *
 * The rule.  A filter may be consulted only while it provably describes
 * what its table holds now.  The build records, next to the filter, what it
 * was built from, and a lookup compares each with the catalogs before it
 * trusts the filter; anything that differs makes the table "stale", scanned
 * and never skipped, until the next build:
 *
 *	- the column: its number in the table (a filter is asked for by column
 *	  name, and names can be swapped, or a column dropped and another added
 *	  under its name), its type, type modifier and collation;
 *	- how its values hash: the identity a filter of that type and collation
 *	  records (hashing.c; it changes with a nondeterministic collation's
 *	  version, for one), and the definition of the type beyond it (an enum's
 *	  labels, which its values are hashed by: amq_type_version);
 *	- the storage: pg_class.relfilenode, which every rewrite changes
 *	  (ALTER TABLE ... TYPE ... USING, VACUUM FULL, CLUSTER, TRUNCATE): none
 *	  of them fires a row trigger;
 *	- the trigger that records writes (partition_track.c): its pg_trigger
 *	  row, by OID and by the version of the row (its xmin and its place),
 *	  which every ALTER TABLE ... DISABLE/ENABLE TRIGGER replaces, so that a
 *	  write while it was disabled is never trusted away;
 *	- and no record that the table was written since (partition_track.c).
 *
 * Each filter describes its own table's rows only (read with FROM ONLY), so
 * a table with inheritance children has a filter of its own rows, and each
 * child one of its own: a child created, attached or inheriting later has
 * no filter and is scanned.
 *
 * Who may see a filter.  A filter is a summary of every value of its column
 * in its table, so it may be read only by a role that could read all of
 * them: one with SELECT on the column (or the table) through the table or a
 * table above it, not subject to row-level security there
 * (amqfilter_partition_readable, the row security policy of the filter
 * table).  Lookups read the filter table as the caller: a filter the caller
 * may not read is not consulted, and its table is scanned, through the
 * table asked about, whose privileges and policies then apply.
 *
 * Who may write a filter.  Nobody directly: only bloom_partition_build,
 * called by the owner of every table it builds, records a filter, as the
 * filter table's owner, from values it computed itself.
 *
 * Every query these functions run names its objects qualified, operators
 * as OPERATOR(schema.name), and the SQL functions pin search_path too, so a
 * function or operator another role planted on the caller's search_path is
 * never called.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_operator.h"
#include "catalog/pg_trigger.h"
#include "catalog/pg_type.h"
#include "commands/trigger.h"
#include "nodes/primnodes.h"
#include "executor/spi.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "parser/parse_coerce.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/partcache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"
#include "utils/timestamp.h"
#include "utils/typcache.h"

#include "filter_glue.h"
#include "bloom_type.h"
#include "partition_filter.h"

PG_FUNCTION_INFO_V1(bloom_partition_build);
PG_FUNCTION_INFO_V1(bloom_partition_status);
PG_FUNCTION_INFO_V1(bloom_partition_candidates);
PG_FUNCTION_INFO_V1(bloom_partition_lookup);
PG_FUNCTION_INFO_V1(amqfilter_partition_readable);

#if PG_VERSION_NUM >= 160000
#define owns_relation(relid) object_ownercheck(RelationRelationId, (relid), GetUserId())
#else
#define owns_relation(relid) pg_class_ownercheck((relid), GetUserId())
#endif

/* Rows a lookup fetches from its cursors at a time. */
#define LOOKUP_FETCH 1000

/* The column a partition filter is of, as the table asked about has it. */
typedef struct PartColumn
{
	Oid			parent;
	char	   *name;
	AttrNumber	attnum;			/* in parent */
	Oid			type;
	int32		typmod;
	Oid			collation;
} PartColumn;

/* Why a table is scanned, or that its filter may be consulted. */
typedef enum PartState
{
	PART_CURRENT,				/* its filter describes it */
	PART_NO_FILTER,				/* none built, or none the caller may read */
	PART_NOT_TABLE,				/* a foreign table, say: never has one */
	PART_WRITTEN,				/* written since the build */
	PART_REWRITTEN,				/* its storage was rewritten */
	PART_COLUMN_CHANGED,		/* the column is another one now */
	PART_TYPE_CHANGED,			/* its values hash differently now */
	PART_TRIGGER_CHANGED		/* writes may have gone unrecorded */
} PartState;

static const char *const state_names[] = {
	[PART_CURRENT] = "current",
	[PART_NO_FILTER] = "no filter",
	[PART_NOT_TABLE] = "not a table",
	[PART_WRITTEN] = "written",
	[PART_REWRITTEN] = "rewritten",
	[PART_COLUMN_CHANGED] = "column changed",
	[PART_TYPE_CHANGED] = "type changed",
	[PART_TRIGGER_CHANGED] = "trigger changed",
};

/*
 * What a filter was built from, recorded next to it and compared with the
 * catalogs before it is consulted (the rule in the file header).
 */
typedef struct FilterSource
{
	AttrNumber	attnum;			/* the column's number in the table */
	Oid			type;
	int32		typmod;
	Oid			collation;
	int64		family;			/* amq_identity_family of type, collation */
	int64		type_version;	/* amq_type_version of type */
	Oid			relfilenode;	/* the table's storage */
	Oid			trigger;		/* its trigger, and the version of its row */
	TransactionId trigger_xmin;
	ItemPointerData trigger_tid;
} FilterSource;

/* A table of the tree with rows of its own, and its filter row, if any. */
typedef struct PartMember
{
	Oid			relid;
	PartState	state;
	bool		may_hold;		/* its filter may hold the value looked up */
	/* the filter row, when the caller could read one */
	bool		has_row;
	FilterSource source;
	TimestampTz built_at;
	int64		rows;
	int64		distinct_values;
	int64		bytes;
} PartMember;

/* A value looked up, as compared with the column and probed. */
typedef struct PartValue
{
	Datum		value;
	Oid			type;
	Oid			eqop;			/* column = value, in the column's hash family */
} PartValue;

/*
 * ----------------------------------------------------------------
 * Arguments
 * ----------------------------------------------------------------
 */

/*
 * Checks that parent is a table and column_name one of its columns whose
 * values a filter can take, before any work, and describes the column.
 */
static void
resolve_column(Oid parent, FunctionCallInfo fcinfo, int column_arg,
			   PartColumn *col)
{
	char		relkind;

	if (!OidIsValid(parent) || PG_ARGISNULL(column_arg))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("parent and column_name must not be null")));
	col->parent = parent;
	col->name = pstrdup(NameStr(*PG_GETARG_NAME(column_arg)));

	relkind = get_rel_relkind(parent);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", parent)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(parent)),
				 errdetail("Partition filters are built for tables and partitioned tables.")));

	col->attnum = get_attnum(parent, col->name);
	if (col->attnum == InvalidAttrNumber || col->attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						col->name, get_rel_name(parent))));
	get_atttypetypmodcoll(parent, col->attnum, &col->type, &col->typmod,
						  &col->collation);
	amq_check_hashable(col->type, col->collation);
}

/* True if values of the type are strings, read as a literal of another. */
static bool
is_string_type(Oid type)
{
	char		category;
	bool		preferred;

	if (type == UNKNOWNOID)
		return true;
	get_type_category_preferred(type, &category, &preferred);
	return category == TYPCATEGORY_STRING;
}

/*
 * Makes the value looked up comparable with the column, as "column = value"
 * compares it: a value of a type of the column's hash operator family as it
 * is (an int4 with an int8 column: equal values hash alike across the
 * family), a string as a literal of the column's type ('42' for a bigint
 * column: every caller's string arrives as text), anything else an error
 * before any work, naming the column's type.  No value is converted in a way
 * that could change which rows equal it (42.5::numeric is not 43).
 */
static void
resolve_value(const PartColumn *col, Datum value, Oid valtype, PartValue *out)
{
	Oid			base_col = getBaseType(col->type);
	Oid			base_val = getBaseType(valtype);
	TypeCacheEntry *tce = lookup_type_cache(base_col, TYPECACHE_HASH_OPFAMILY);
	Oid			opcintype = tce->hash_opintype;

	out->value = value;
	out->type = base_val;
	/* the column's own type, or one its class takes as it is */
	if (base_val == base_col ||
		(IsBinaryCoercible(base_val, opcintype) &&
		 IsBinaryCoercible(base_col, opcintype) &&
		 !IsPolymorphicType(opcintype) && opcintype != RECORDOID))
	{
		if (base_val != base_col)
			out->type = opcintype;
		out->eqop = get_opfamily_member(tce->hash_opf, out->type, out->type,
										HTEqualStrategyNumber);
		if (!OidIsValid(out->eqop))
			/* a class of a polymorphic type (enums): its own operator */
			out->eqop = get_opfamily_member(tce->hash_opf, opcintype, opcintype,
											HTEqualStrategyNumber);
		if (OidIsValid(out->eqop))
			return;
	}
	/* another type of the family: int4 with int8 */
	out->eqop = get_opfamily_member(tce->hash_opf, base_col, base_val,
									HTEqualStrategyNumber);
	if (OidIsValid(out->eqop))
		return;
	/* a string, read as a literal of the column's type */
	if (is_string_type(base_val) && !is_string_type(base_col))
	{
		Oid			output;
		Oid			input;
		Oid			ioparam;
		bool		varlena;
		int32		typmod = col->typmod;
		Oid			base = getBaseTypeAndTypmod(col->type, &typmod);
		char	   *text;

		getTypeOutputInfo(valtype, &output, &varlena);
		text = OidOutputFunctionCall(output, value);
		getTypeInputInfo(base, &input, &ioparam);
		resolve_value(col, OidInputFunctionCall(input, text, ioparam, typmod),
					  base, out);
		return;
	}
	ereport(ERROR,
			(errcode(ERRCODE_DATATYPE_MISMATCH),
			 errmsg("a value of type %s cannot be looked up in column \"%s\" of type %s",
					format_type_be(valtype), col->name, format_type_be(col->type)),
			 errhint("Cast the value to %s.", format_type_be(col->type))));
}

/*
 * ----------------------------------------------------------------
 * The tables of a tree and their state
 * ----------------------------------------------------------------
 */

/*
 * The tables of parent's tree (parent too) that hold rows of their own: not
 * partitioned tables, whose rows are their partitions'.  Locked in lockmode
 * first, as a query of parent would lock them.
 */
static List *
tree_members(Oid parent, LOCKMODE lockmode)
{
	List	   *relids = find_all_inheritors(parent, lockmode, NULL);
	List	   *members = NIL;
	ListCell   *lc;

	foreach(lc, relids)
	{
		Oid			relid = lfirst_oid(lc);
		char		relkind = get_rel_relkind(relid);
		PartMember *m;

		if (relkind == RELKIND_PARTITIONED_TABLE)
			continue;
		m = palloc0(sizeof(PartMember));
		m->relid = relid;
		m->state = relkind == RELKIND_RELATION ? PART_NO_FILTER : PART_NOT_TABLE;
		members = lappend(members, m);
	}
	return members;
}

static PartMember *
find_member(List *members, Oid relid)
{
	ListCell   *lc;

	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);

		if (m->relid == relid)
			return m;
	}
	return NULL;
}

/* The members' OIDs as an oid[] Datum, those in the given state only. */
static Datum
member_oids(List *members, bool only_current)
{
	Datum	   *oids = palloc(sizeof(Datum) * Max(list_length(members), 1));
	int			n = 0;
	ListCell   *lc;

	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);

		if (!only_current || m->state == PART_CURRENT)
			oids[n++] = ObjectIdGetDatum(m->relid);
	}
	return PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid), true,
										   TYPALIGN_INT));
}

static char *
qualified_relation(Oid relid)
{
	return quote_qualified_identifier(get_namespace_name(get_rel_namespace(relid)),
									  get_rel_name(relid));
}

/*
 * Reads, as the caller (whose row security applies to the filter table),
 * the filter rows of the members for the column.  Inside SPI.
 */
static void
read_filter_rows(const AmqExtTable *filters, const PartColumn *col,
				 List *members)
{
	Oid			argtypes[2] = {OIDARRAYOID, NAMEOID};
	Datum		args[2];
	NameData	name;
	char	   *sql;
	uint64		i;
	int			rc;

	namestrcpy(&name, col->name);
	args[0] = member_oids(members, false);
	args[1] = NameGetDatum(&name);
	sql = psprintf("SELECT f.partition::pg_catalog.oid, f.attnum, f.atttype::pg_catalog.oid, "
				   "f.atttypmod, f.attcollation, f.hash_family, f.type_version, "
				   "f.relfilenode, f.trigger_oid, f.trigger_xmin, f.trigger_tid, "
				   "f.built_at, f.rows, f.distinct_values, f.bytes "
				   "FROM %s f "
				   "WHERE f.partition::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
				   "AND f.column_name OPERATOR(pg_catalog.=) $2",
				   quote_qualified_identifier(get_namespace_name(filters->nsp),
											  AMQ_FILTER_TABLE));
	rc = SPI_execute_with_args(sql, 2, argtypes, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	for (i = 0; i < SPI_processed; i++)
	{
		HeapTuple	tup = SPI_tuptable->vals[i];
		TupleDesc	desc = SPI_tuptable->tupdesc;
		bool		isnull;
		PartMember *m;

		m = find_member(members, DatumGetObjectId(SPI_getbinval(tup, desc, 1, &isnull)));
		if (m == NULL || m->state != PART_NO_FILTER)
			continue;
		m->has_row = true;
		m->source.attnum = DatumGetInt16(SPI_getbinval(tup, desc, 2, &isnull));
		m->source.type = DatumGetObjectId(SPI_getbinval(tup, desc, 3, &isnull));
		m->source.typmod = DatumGetInt32(SPI_getbinval(tup, desc, 4, &isnull));
		m->source.collation = DatumGetObjectId(SPI_getbinval(tup, desc, 5, &isnull));
		m->source.family = DatumGetInt64(SPI_getbinval(tup, desc, 6, &isnull));
		m->source.type_version = DatumGetInt64(SPI_getbinval(tup, desc, 7, &isnull));
		m->source.relfilenode = DatumGetObjectId(SPI_getbinval(tup, desc, 8, &isnull));
		m->source.trigger = DatumGetObjectId(SPI_getbinval(tup, desc, 9, &isnull));
		m->source.trigger_xmin = DatumGetTransactionId(SPI_getbinval(tup, desc, 10, &isnull));
		m->source.trigger_tid = *(ItemPointer) DatumGetPointer(SPI_getbinval(tup, desc, 11, &isnull));
		m->built_at = DatumGetTimestampTz(SPI_getbinval(tup, desc, 12, &isnull));
		m->rows = DatumGetInt64(SPI_getbinval(tup, desc, 13, &isnull));
		m->distinct_values = DatumGetInt64(SPI_getbinval(tup, desc, 14, &isnull));
		m->bytes = DatumGetInt64(SPI_getbinval(tup, desc, 15, &isnull));
	}
}

/* The relfilenode of a table: every rewrite of its storage changes it. */
static Oid
relation_filenode(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	Oid			filenode;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", relid);
	filenode = ((Form_pg_class) GETSTRUCT(tup))->relfilenode;
	ReleaseSysCache(tup);
	return filenode;
}

/*
 * The pg_trigger row of a trigger, by OID: a copy, or NULL.  Its t_self and
 * raw xmin tell its version apart from any other of the same trigger.
 */
static HeapTuple
trigger_row(Oid trigger, char **qual)
{
	Relation	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tup;

	ScanKeyInit(&key, Anum_pg_trigger_oid, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(trigger));
	scan = systable_beginscan(rel, TriggerOidIndexId, true, NULL, 1, &key);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		if (qual != NULL)
		{
			bool		isnull;
			Datum		d = heap_getattr(tup, Anum_pg_trigger_tgqual,
										 RelationGetDescr(rel), &isnull);

			*qual = isnull ? NULL : TextDatumGetCString(d);
		}
		tup = heap_copytuple(tup);
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return tup;
}

/* The trigger of relid named AMQ_TRIGGER_NAME, or InvalidOid. */
static Oid
named_trigger(Oid relid, Oid *function)
{
	Relation	rel = table_open(TriggerRelationId, AccessShareLock);
	ScanKeyData keys[2];
	SysScanDesc scan;
	HeapTuple	tup;
	Oid			trigger = InvalidOid;

	ScanKeyInit(&keys[0], Anum_pg_trigger_tgrelid, BTEqualStrategyNumber,
				F_OIDEQ, ObjectIdGetDatum(relid));
	ScanKeyInit(&keys[1], Anum_pg_trigger_tgname, BTEqualStrategyNumber,
				F_NAMEEQ, CStringGetDatum(AMQ_TRIGGER_NAME));
	scan = systable_beginscan(rel, TriggerRelidNameIndexId, true, NULL, 2, keys);
	tup = systable_getnext(scan);
	if (HeapTupleIsValid(tup))
	{
		trigger = ((Form_pg_trigger) GETSTRUCT(tup))->oid;
		*function = ((Form_pg_trigger) GETSTRUCT(tup))->tgfoid;
	}
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return trigger;
}

/* True if function is the extension's trigger function, in schema nsp. */
static bool
is_mark_function(Oid function, Oid nsp)
{
	char	   *name = get_func_name(function);

	return name != NULL && strcmp(name, "amqfilter_partition_mark") == 0 &&
		get_func_namespace(function) == nsp;
}

/*
 * True if the trigger the build recorded is still there, unchanged since:
 * the same row version (no ALTER TABLE ... DISABLE/ENABLE TRIGGER since),
 * on the same table, calling the extension's function, enabled ALWAYS.
 */
static bool
trigger_unchanged(const PartMember *m, Oid nsp)
{
	HeapTuple	tup = trigger_row(m->source.trigger, NULL);
	Form_pg_trigger form;
	bool		same;

	if (!HeapTupleIsValid(tup))
		return false;
	form = (Form_pg_trigger) GETSTRUCT(tup);
	same = form->tgrelid == m->relid &&
		form->tgenabled == TRIGGER_FIRES_ALWAYS &&
		HeapTupleHeaderGetRawXmin(tup->t_data) == m->source.trigger_xmin &&
		ItemPointerEquals(&tup->t_self, (ItemPointer) &m->source.trigger_tid) &&
		is_mark_function(form->tgfoid, nsp);
	heap_freetuple(tup);
	return same;
}

/*
 * Decides whether the member's filter may be consulted (the rule in the
 * file header), with snapshot for the record of writes.
 */
static void
judge_member(const PartColumn *col, PartMember *m, const AmqExtTable *writes,
			 Snapshot snapshot)
{
	AttrNumber	attnum;
	Oid			type;
	int32		typmod;
	Oid			collation;

	if (m->state != PART_NO_FILTER || !m->has_row)
		return;
	attnum = get_attnum(m->relid, col->name);
	if (attnum != m->source.attnum || attnum <= 0)
	{
		m->state = PART_COLUMN_CHANGED;
		return;
	}
	get_atttypetypmodcoll(m->relid, attnum, &type, &typmod, &collation);
	if (type != m->source.type || typmod != m->source.typmod || collation != m->source.collation)
		m->state = PART_COLUMN_CHANGED;
	else if ((int64) amq_identity_family(type, collation) != m->source.family ||
			 (int64) amq_type_version(type) != m->source.type_version)
		m->state = PART_TYPE_CHANGED;
	else if (relation_filenode(m->relid) != m->source.relfilenode)
		m->state = PART_REWRITTEN;
	else if (!trigger_unchanged(m, writes->nsp))
		m->state = PART_TRIGGER_CHANGED;
	else if (amq_partition_written_since_build(writes, m->relid, snapshot))
		m->state = PART_WRITTEN;
	else
		m->state = PART_CURRENT;
}

/*
 * The members of parent's tree with their state for the column.  Inside
 * SPI; fn_oid names the calling function, whose schema is the extension's.
 */
static List *
judge_tree(Oid fn_oid, const PartColumn *col)
{
	AmqExtTable filters;
	AmqExtTable writes;
	List	   *members = tree_members(col->parent, AccessShareLock);
	ListCell   *lc;

	amq_ext_table(fn_oid, AMQ_FILTER_TABLE, &filters);
	amq_ext_table(fn_oid, AMQ_WRITE_TABLE, &writes);
	read_filter_rows(&filters, col, members);
	foreach(lc, members)
		judge_member(col, lfirst(lc), &writes, GetActiveSnapshot());
	return members;
}

/* " COLLATE name" for a value of type under collation, or "". */
static const char *
collate_clause(Oid type, Oid collation)
{
	if (!OidIsValid(collation) || !type_is_collatable(type))
		return "";
	return psprintf(" COLLATE %s", generate_collation_name(collation));
}

/*
 * Probes, as the caller, the filters of the current members for the value;
 * marks those that may hold it.  Only current filters are probed: another
 * could be of another type, and its probe an error.  Inside SPI.
 */
static void
probe_members(Oid fn_oid, const PartColumn *col, const PartValue *value,
			  List *members)
{
	AmqExtTable filters;
	char	   *nspname;
	Oid			argtypes[3] = {OIDARRAYOID, NAMEOID, value->type};
	Datum		args[3];
	NameData	name;
	char	   *sql;
	ListCell   *lc;
	bool		any = false;
	uint64		i;
	int			rc;

	foreach(lc, members)
		any |= ((PartMember *) lfirst(lc))->state == PART_CURRENT;
	if (!any)
		return;
	amq_ext_table(fn_oid, AMQ_FILTER_TABLE, &filters);
	nspname = get_namespace_name(filters.nsp);
	namestrcpy(&name, col->name);
	args[0] = member_oids(members, true);
	args[1] = NameGetDatum(&name);
	args[2] = value->value;
	sql = psprintf("SELECT f.partition::pg_catalog.oid, %s.bloom_contains(f.filter, $3%s) "
				   "FROM %s f "
				   "WHERE f.partition::pg_catalog.oid OPERATOR(pg_catalog.=) ANY ($1) "
				   "AND f.column_name OPERATOR(pg_catalog.=) $2",
				   quote_identifier(nspname),
				   collate_clause(value->type, col->collation),
				   quote_qualified_identifier(nspname, AMQ_FILTER_TABLE));
	rc = SPI_execute_with_args(sql, 3, argtypes, args, NULL, true, 0);
	if (rc != SPI_OK_SELECT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	for (i = 0; i < SPI_processed; i++)
	{
		bool		isnull;
		PartMember *m;
		Datum		oid = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 1, &isnull);
		Datum		maybe = SPI_getbinval(SPI_tuptable->vals[i], SPI_tuptable->tupdesc, 2, &isnull);

		m = find_member(members, DatumGetObjectId(oid));
		if (m != NULL && m->state == PART_CURRENT)
			m->may_hold = isnull || DatumGetBool(maybe);
	}
}

/* True if the member must be read for the value: it may hold rows of it. */
static inline bool
is_candidate(const PartMember *m)
{
	return m->state != PART_CURRENT || m->may_hold;
}

/*
 * ----------------------------------------------------------------
 * Set-returning plumbing
 * ----------------------------------------------------------------
 */

/*
 * Sets up materialized results of the call's result type (of one column
 * for a scalar one); returns the tuple store, in per-query memory.
 */
static Tuplestorestate *
materialize_result(FunctionCallInfo fcinfo, TupleDesc *desc)
{
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	MemoryContext old;
	Oid			type;
	TupleDesc	tupdesc;
	Tuplestorestate *store;

	if (rsinfo == NULL || !IsA(rsinfo, ReturnSetInfo) ||
		!(rsinfo->allowedModes & SFRM_Materialize))
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("set-valued function called in context that cannot accept a set")));
	old = MemoryContextSwitchTo(rsinfo->econtext->ecxt_per_query_memory);
	switch (get_call_result_type(fcinfo, &type, &tupdesc))
	{
		case TYPEFUNC_COMPOSITE:
			tupdesc = CreateTupleDescCopy(tupdesc);
			break;
		case TYPEFUNC_SCALAR:
			tupdesc = CreateTemplateTupleDesc(1);
			TupleDescInitEntry(tupdesc, 1, "result", type, -1, 0);
			break;
		default:
			elog(ERROR, "return type must be a row type or a scalar");
	}
	store = tuplestore_begin_heap(rsinfo->allowedModes & SFRM_Materialize_Random,
								  false, work_mem);
	rsinfo->returnMode = SFRM_Materialize;
	rsinfo->setResult = store;
	rsinfo->setDesc = tupdesc;
	MemoryContextSwitchTo(old);
	*desc = tupdesc;
	return store;
}

/*
 * ----------------------------------------------------------------
 * bloom_partition_build
 * ----------------------------------------------------------------
 */

/* Runs a statement through SPI, or errors. */
static void
spi_exec(const char *sql, int expected, bool read_only)
{
	int			rc = SPI_execute(sql, read_only, 0);

	if (rc != expected)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
}

/*
 * True if a trigger row is exactly the trigger a build creates on relid:
 * AFTER INSERT OR UPDATE FOR EACH ROW of every column, calling the
 * extension's function with no arguments, under the condition
 * amqfilter_partition_written('relid'::regclass), not deferred, not a
 * constraint trigger.  Anything else could let writes go unrecorded.
 */
static bool
trigger_is_exact(HeapTuple tup, const char *qual, Oid relid, Oid nsp)
{
	Form_pg_trigger form = (Form_pg_trigger) GETSTRUCT(tup);
	int16		type = TRIGGER_TYPE_ROW | TRIGGER_TYPE_INSERT | TRIGGER_TYPE_UPDATE;
	Node	   *expr;
	FuncExpr   *call;
	Const	   *arg;
	char	   *name;

	if (form->tgrelid != relid || form->tgtype != type ||
		!is_mark_function(form->tgfoid, nsp) || OidIsValid(form->tgconstraint) ||
		form->tgdeferrable || form->tginitdeferred || form->tgnargs != 0 ||
		form->tgattr.dim1 != 0 || form->tgisinternal)
		return false;
	if (qual == NULL)
		return false;
	expr = stringToNode(qual);
	if (!IsA(expr, FuncExpr))
		return false;
	call = (FuncExpr *) expr;
	if (list_length(call->args) != 1 || !IsA(linitial(call->args), Const))
		return false;
	arg = linitial(call->args);
	name = get_func_name(call->funcid);
	return name != NULL && strcmp(name, "amqfilter_partition_written") == 0 &&
		get_func_namespace(call->funcid) == nsp &&
		arg->consttype == REGCLASSOID && !arg->constisnull &&
		DatumGetObjectId(arg->constvalue) == relid;
}

/*
 * Gives relid the trigger that records writes, enabled ALWAYS, and returns
 * its OID.  One that is exactly the build's is kept as it is, so that the
 * filters of the table's other columns stay current; one of the extension's
 * that differs (its condition could be anything) is dropped and made anew;
 * a trigger of the name that is not the extension's is an error.
 */
static Oid
ensure_trigger(Oid relid, const char *nspname, Oid nsp)
{
	char	   *rel = qualified_relation(relid);
	Oid			function = InvalidOid;
	Oid			trigger = named_trigger(relid, &function);

	if (OidIsValid(trigger))
	{
		HeapTuple	tup;
		char	   *qual = NULL;
		bool		exact;
		bool		always;

		if (!is_mark_function(function, nsp))
			ereport(ERROR,
					(errcode(ERRCODE_DUPLICATE_OBJECT),
					 errmsg("trigger \"%s\" of relation \"%s\" is not amqfilter's",
							AMQ_TRIGGER_NAME, get_rel_name(relid)),
					 errhint("Rename or drop that trigger.")));
		tup = trigger_row(trigger, &qual);
		exact = HeapTupleIsValid(tup) && trigger_is_exact(tup, qual, relid, nsp);
		always = HeapTupleIsValid(tup) &&
			((Form_pg_trigger) GETSTRUCT(tup))->tgenabled == TRIGGER_FIRES_ALWAYS;
		if (exact && always)
			return trigger;
		if (!exact)
			spi_exec(psprintf("DROP TRIGGER %s ON %s", AMQ_TRIGGER_NAME, rel),
					 SPI_OK_UTILITY, false);
	}
	if (!OidIsValid(trigger) || !OidIsValid(named_trigger(relid, &function)))
		spi_exec(psprintf("CREATE TRIGGER %s AFTER INSERT OR UPDATE ON %s FOR EACH ROW "
						  "WHEN (%s.amqfilter_partition_written('%u'::pg_catalog.regclass)) "
						  "EXECUTE FUNCTION %s.amqfilter_partition_mark()",
						  AMQ_TRIGGER_NAME, rel, quote_identifier(nspname), relid,
						  quote_identifier(nspname)),
				 SPI_OK_UTILITY, false);
	spi_exec(psprintf("ALTER TABLE ONLY %s ENABLE ALWAYS TRIGGER %s", rel,
					  AMQ_TRIGGER_NAME),
			 SPI_OK_UTILITY, false);
	trigger = named_trigger(relid, &function);
	if (!OidIsValid(trigger))
		elog(ERROR, "trigger \"%s\" of relation %u was not created",
			 AMQ_TRIGGER_NAME, relid);
	return trigger;
}

/* What a build records of one table. */
typedef struct BuiltFilter
{
	Oid			relid;
	FilterSource source;
	Datum		filter;
	int64		rows;
	int64		distinct_values;
	int64		bytes;
} BuiltFilter;

/*
 * Reads the table (its own rows) and builds its filter, sized for the
 * distinct values it holds now, as the caller.  Inside SPI.
 */
static void
build_one(const PartColumn *col, const char *nspname, double p, BuiltFilter *b)
{
	char	   *rel = qualified_relation(b->relid);
	const char *column = quote_identifier(col->name);
	Oid			argtypes[2] = {INT8OID, FLOAT8OID};
	Datum		args[2];
	bool		isnull;
	int			rc;

	rc = SPI_execute(psprintf("SELECT pg_catalog.count(*), pg_catalog.count(DISTINCT %s) "
							  "FROM ONLY %s", column, rel), false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "SPI_execute failed: %s", SPI_result_code_string(rc));
	b->rows = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
										  SPI_tuptable->tupdesc, 1, &isnull));
	b->distinct_values = DatumGetInt64(SPI_getbinval(SPI_tuptable->vals[0],
													 SPI_tuptable->tupdesc, 2, &isnull));
	args[0] = Int64GetDatum(Max(b->distinct_values, 1));
	args[1] = Float8GetDatum(p);
	rc = SPI_execute_with_args(psprintf("SELECT %s.bloom_agg(%s, $1, $2) FROM ONLY %s",
										quote_identifier(nspname), column, rel),
							   2, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_SELECT || SPI_processed != 1)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	b->filter = SPI_getbinval(SPI_tuptable->vals[0], SPI_tuptable->tupdesc, 1, &isnull);
	if (isnull)
		elog(ERROR, "bloom_agg returned NULL");
	/* out of SPI's memory, into the caller's, where the record needs it */
	b->filter = PointerGetDatum(PG_DETOAST_DATUM_COPY(b->filter));
	{
		struct varlena *copy = SPI_palloc(VARSIZE(DatumGetPointer(b->filter)));

		memcpy(copy, DatumGetPointer(b->filter), VARSIZE(DatumGetPointer(b->filter)));
		b->filter = PointerGetDatum(copy);
	}
	b->bytes = VARSIZE_ANY_EXHDR(DatumGetPointer(b->filter));
}

/*
 * Records a built filter, as the filter table's owner, restricted: removes
 * the record that its table was written, and inserts or replaces its row.
 * Inside SPI.
 */
static void
record_filter(const AmqExtTable *filters, const AmqExtTable *writes,
			  Oid parent, const PartColumn *col, const BuiltFilter *b)
{
	char	   *nspname = get_namespace_name(filters->nsp);
	Oid			filter_type = get_atttype(filters->relid,
										  get_attnum(filters->relid, "filter"));
	Oid			argtypes[18] = {REGCLASSOID, REGCLASSOID, NAMEOID, filter_type,
		INT8OID, INT8OID, TIMESTAMPTZOID, INT8OID, INT2OID, REGTYPEOID, INT4OID,
		OIDOID, INT8OID, INT8OID, OIDOID, OIDOID, XIDOID, TIDOID};
	Datum		args[18];
	Oid			oidtype = OIDOID;
	NameData	name;
	AmqSavedUser saved;
	int			rc;

	namestrcpy(&name, col->name);
	args[0] = ObjectIdGetDatum(parent);
	args[1] = ObjectIdGetDatum(b->relid);
	args[2] = NameGetDatum(&name);
	args[3] = b->filter;
	args[4] = Int64GetDatum(b->rows);
	args[5] = Int64GetDatum(b->distinct_values);
	args[6] = TimestampTzGetDatum(GetCurrentTimestamp());
	args[7] = Int64GetDatum(b->bytes);
	args[8] = Int16GetDatum(b->source.attnum);
	args[9] = ObjectIdGetDatum(b->source.type);
	args[10] = Int32GetDatum(b->source.typmod);
	args[11] = ObjectIdGetDatum(b->source.collation);
	args[12] = Int64GetDatum(b->source.family);
	args[13] = Int64GetDatum(b->source.type_version);
	args[14] = ObjectIdGetDatum(b->source.relfilenode);
	args[15] = ObjectIdGetDatum(b->source.trigger);
	args[16] = TransactionIdGetDatum(b->source.trigger_xmin);
	args[17] = PointerGetDatum(&b->source.trigger_tid);

	amq_ext_become_owner(filters, &saved);
	rc = SPI_execute_with_args(psprintf("DELETE FROM %s WHERE partition OPERATOR(pg_catalog.=) $1",
										quote_qualified_identifier(get_namespace_name(writes->nsp),
																   AMQ_WRITE_TABLE)),
							   1, &oidtype, &args[1], NULL, false, 0);
	if (rc != SPI_OK_DELETE)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	rc = SPI_execute_with_args(psprintf("INSERT INTO %s AS t (parent, partition, column_name, "
										"filter, rows, distinct_values, built_at, bytes, attnum, "
										"atttype, atttypmod, attcollation, hash_family, type_version, "
										"relfilenode, trigger_oid, trigger_xmin, trigger_tid) "
										"VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, "
										"$12, $13, $14, $15, $16, $17, $18) "
										"ON CONFLICT (partition, column_name) DO UPDATE SET "
										"parent = EXCLUDED.parent, filter = EXCLUDED.filter, "
										"rows = EXCLUDED.rows, distinct_values = EXCLUDED.distinct_values, "
										"built_at = EXCLUDED.built_at, bytes = EXCLUDED.bytes, "
										"attnum = EXCLUDED.attnum, atttype = EXCLUDED.atttype, "
										"atttypmod = EXCLUDED.atttypmod, attcollation = EXCLUDED.attcollation, "
										"hash_family = EXCLUDED.hash_family, "
										"type_version = EXCLUDED.type_version, "
										"relfilenode = EXCLUDED.relfilenode, "
										"trigger_oid = EXCLUDED.trigger_oid, "
										"trigger_xmin = EXCLUDED.trigger_xmin, "
										"trigger_tid = EXCLUDED.trigger_tid",
										quote_qualified_identifier(nspname, AMQ_FILTER_TABLE)),
							   18, argtypes, args, NULL, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_with_args failed: %s", SPI_result_code_string(rc));
	amq_ext_restore_user(&saved);
}

/*
 * Errors before any work unless the caller may build a filter of every
 * table of the tree that has rows of its own: owns it, and sees all its rows
 * (row security would hide some from a filter built as the caller, and a
 * filter that misses them answers "no" for rows that are there).
 */
static void
check_may_build(List *members)
{
	ListCell   *lc;

	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);

		if (m->state == PART_NOT_TABLE)
			continue;
		if (!owns_relation(m->relid))
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("must be owner of table %s", get_rel_name(m->relid)),
					 errdetail("A filter is built by the owner of the table it summarizes.")));
		if (check_enable_rls(m->relid, InvalidOid, true) == RLS_ENABLED)
			ereport(ERROR,
					(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
					 errmsg("row-level security hides rows of table %s from the build",
							get_rel_name(m->relid)),
					 errdetail("A filter built from the rows the policies let through would answer \"no\" for the others."),
					 errhint("Build it as a role that bypasses row-level security on the table, or without FORCE ROW LEVEL SECURITY.")));
	}
}

/*
 * Removes the rows of tables that no longer exist from both of the
 * extension's tables, as their owner.  Inside SPI.
 */
static void
forget_dropped(const AmqExtTable *filters, const AmqExtTable *writes)
{
	char	   *nspname = get_namespace_name(filters->nsp);
	AmqSavedUser saved;

	amq_ext_become_owner(filters, &saved);
	spi_exec(psprintf("DELETE FROM %s f WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c "
					  "WHERE c.oid OPERATOR(pg_catalog.=) f.partition::pg_catalog.oid)",
					  quote_qualified_identifier(nspname, AMQ_FILTER_TABLE)),
			 SPI_OK_DELETE, false);
	spi_exec(psprintf("DELETE FROM %s w WHERE NOT EXISTS (SELECT FROM pg_catalog.pg_class c "
					  "WHERE c.oid OPERATOR(pg_catalog.=) w.partition)",
					  quote_qualified_identifier(get_namespace_name(writes->nsp),
												 AMQ_WRITE_TABLE)),
			 SPI_OK_DELETE, false);
	amq_ext_restore_user(&saved);
}

/*
 * bloom_partition_build(parent regclass, column_name name, p float8)
 *	-> SETOF (partition regclass, rows bigint, distinct_values bigint,
 *			  bytes bigint)
 *
 * Builds the filter of every table of parent's tree that has rows of its
 * own, sized for the distinct values each holds now, and records it with
 * what it was built from.  Each table is locked against writers (SHARE ROW
 * EXCLUSIVE, as creating its trigger takes) before it is read, until the
 * transaction ends, so that no write falls between the read and the record;
 * at READ COMMITTED only, so that the read sees every write committed before
 * the lock.
 */
Datum
bloom_partition_build(PG_FUNCTION_ARGS)
{
	Oid			parent = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	PartColumn	col;
	double		p;
	amq_bloom_params params;
	AmqExtTable filters;
	AmqExtTable writes;
	char	   *nspname;
	List	   *members;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *store;

	/* the checks that cost nothing, before any work */
	resolve_column(parent, fcinfo, 1, &col);
	if (PG_ARGISNULL(2))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("p must not be null")));
	p = PG_GETARG_FLOAT8(2);
	amq_bloom_size_or_error(1, p, AMQ_BLOOM_LAYOUT_BLOCKED, &params);
	if (IsolationUsesXactSnapshot())
		ereport(ERROR,
				(errcode(ERRCODE_ACTIVE_SQL_TRANSACTION),
				 errmsg("bloom_partition_build must run at READ COMMITTED"),
				 errdetail("A build reads each table after locking it against writers; under a transaction snapshot taken earlier it could miss rows committed in between."),
				 errhint("Run it in its own transaction, or one begun with ISOLATION LEVEL READ COMMITTED.")));
	members = tree_members(parent, AccessShareLock);
	check_may_build(members);
	amq_ext_table(fcinfo->flinfo->fn_oid, AMQ_FILTER_TABLE, &filters);
	amq_ext_table(fcinfo->flinfo->fn_oid, AMQ_WRITE_TABLE, &writes);
	nspname = get_namespace_name(filters.nsp);

	store = materialize_result(fcinfo, &desc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	forget_dropped(&filters, &writes);

	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);
		BuiltFilter b;
		HeapTuple	trig;
		Datum		values[4];
		bool		nulls[4] = {false, false, false, false};

		CHECK_FOR_INTERRUPTS();
		if (m->state == PART_NOT_TABLE)
		{
			ereport(NOTICE,
					(errmsg("bloom_partition_build: %s is not a plain table; it has no filter and is always scanned",
							get_rel_name(m->relid))));
			continue;
		}
		memset(&b, 0, sizeof(b));
		b.relid = m->relid;
		LockRelationOid(b.relid, ShareRowExclusiveLock);
		b.source.trigger = ensure_trigger(b.relid, nspname, filters.nsp);

		/* what the filter is built from, all read under the lock */
		trig = trigger_row(b.source.trigger, NULL);
		if (!HeapTupleIsValid(trig))
			elog(ERROR, "cache lookup failed for trigger %u", b.source.trigger);
		b.source.trigger_xmin = HeapTupleHeaderGetRawXmin(trig->t_data);
		b.source.trigger_tid = trig->t_self;
		heap_freetuple(trig);
		b.source.relfilenode = relation_filenode(b.relid);
		b.source.attnum = get_attnum(b.relid, col.name);
		if (b.source.attnum <= 0)
			elog(ERROR, "column \"%s\" of relation %u does not exist", col.name, b.relid);
		get_atttypetypmodcoll(b.relid, b.source.attnum, &b.source.type, &b.source.typmod, &b.source.collation);
		/* before the values are hashed: a change during the read shows */
		b.source.family = (int64) amq_identity_family(b.source.type, b.source.collation);
		b.source.type_version = (int64) amq_type_version(b.source.type);

		build_one(&col, nspname, p, &b);
		record_filter(&filters, &writes, parent, &col, &b);
		amq_partition_forget_written(b.relid);

		ereport(NOTICE,
				(errmsg("bloom_partition_build: %s: " INT64_FORMAT " rows, " INT64_FORMAT " distinct, " INT64_FORMAT " bytes",
						get_rel_name(b.relid), b.rows, b.distinct_values, b.bytes)));
		values[0] = ObjectIdGetDatum(b.relid);
		values[1] = Int64GetDatum(b.rows);
		values[2] = Int64GetDatum(b.distinct_values);
		values[3] = Int64GetDatum(b.bytes);
		tuplestore_putvalues(store, desc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * bloom_partition_status(parent regclass, column_name name)
 *	-> SETOF (partition regclass, state text, built_at timestamptz,
 *			  rows bigint, distinct_values bigint, bytes bigint)
 *
 * Every table of parent's tree with rows of its own, and whether a lookup
 * by the caller may consult its filter ("current") or why it scans it.
 */
Datum
bloom_partition_status(PG_FUNCTION_ARGS)
{
	Oid			parent = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	PartColumn	col;
	List	   *members;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *store;

	resolve_column(parent, fcinfo, 1, &col);
	store = materialize_result(fcinfo, &desc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	members = judge_tree(fcinfo->flinfo->fn_oid, &col);
	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);
		Datum		values[6];
		bool		nulls[6] = {false, false, !m->has_row, !m->has_row,
		!m->has_row, !m->has_row};

		values[0] = ObjectIdGetDatum(m->relid);
		values[1] = CStringGetTextDatum(state_names[m->state]);
		values[2] = TimestampTzGetDatum(m->built_at);
		values[3] = Int64GetDatum(m->rows);
		values[4] = Int64GetDatum(m->distinct_values);
		values[5] = Int64GetDatum(m->bytes);
		tuplestore_putvalues(store, desc, values, nulls);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * The tree's members, judged, with the filters of current ones probed for
 * the value (value_arg of the call).  NIL for a NULL value: no row equals it.
 * Inside SPI.
 */
static List *
candidates(FunctionCallInfo fcinfo, const PartColumn *col, int value_arg,
		   PartValue *value)
{
	List	   *members;

	if (PG_ARGISNULL(value_arg))
		return NIL;
	resolve_value(col, PG_GETARG_DATUM(value_arg),
				  get_fn_expr_argtype(fcinfo->flinfo, value_arg), value);
	members = judge_tree(fcinfo->flinfo->fn_oid, col);
	probe_members(fcinfo->flinfo->fn_oid, col, value, members);
	return members;
}

/*
 * bloom_partition_candidates(parent regclass, column_name name,
 *							  value anycompatible) -> SETOF regclass
 *
 * The tables of parent's tree that may hold rows whose column equals value:
 * those whose filter may contain it, and all whose filter is not current.
 */
Datum
bloom_partition_candidates(PG_FUNCTION_ARGS)
{
	Oid			parent = PG_ARGISNULL(0) ? InvalidOid : PG_GETARG_OID(0);
	PartColumn	col;
	PartValue	value;
	List	   *members;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *store;

	resolve_column(parent, fcinfo, 1, &col);
	store = materialize_result(fcinfo, &desc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	members = candidates(fcinfo, &col, 2, &value);
	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);
		Datum		relid = ObjectIdGetDatum(m->relid);
		bool		isnull = false;

		if (is_candidate(m))
			tuplestore_putvalues(store, desc, &relid, &isnull);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * ----------------------------------------------------------------
 * bloom_partition_lookup
 * ----------------------------------------------------------------
 */

/* "OPERATOR(schema.name)" of an operator, for a query. */
static char *
operator_clause(Oid op)
{
	HeapTuple	tup = SearchSysCache1(OPEROID, ObjectIdGetDatum(op));
	Form_pg_operator form;
	char	   *clause;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for operator %u", op);
	form = (Form_pg_operator) GETSTRUCT(tup);
	clause = psprintf("OPERATOR(%s.%s)",
					  quote_identifier(get_namespace_name(form->oprnamespace)),
					  NameStr(form->oprname));
	ReleaseSysCache(tup);
	return clause;
}

/*
 * True if the caller may read the member's rows directly and sees there
 * what a query of parent shows of them: parent's row security does not
 * apply to the caller (then nor does any), and the member's neither, and
 * the caller may read the member.
 */
static bool
read_directly(Oid parent, Oid relid)
{
	return check_enable_rls(parent, InvalidOid, true) != RLS_ENABLED &&
		check_enable_rls(relid, InvalidOid, true) != RLS_ENABLED &&
		pg_class_aclcheck(relid, GetUserId(), ACL_SELECT) == ACLCHECK_OK;
}

/*
 * Runs a query through a cursor and adds its rows, the parent's columns but
 * the dropped ones, to the result.  Inside SPI.
 */
static void
add_rows(const char *sql, int nargs, Oid *argtypes, Datum *args,
		 Tuplestorestate *store, TupleDesc desc)
{
	Portal		portal;
	Datum	   *values = palloc(sizeof(Datum) * desc->natts);
	bool	   *nulls = palloc(sizeof(bool) * desc->natts);

	portal = SPI_cursor_open_with_args(NULL, sql, nargs, argtypes, args, NULL,
									   true, 0);
	for (;;)
	{
		uint64		i;

		CHECK_FOR_INTERRUPTS();
		SPI_cursor_fetch(portal, true, LOOKUP_FETCH);
		if (SPI_processed == 0)
			break;
		for (i = 0; i < SPI_processed; i++)
		{
			HeapTuple	tup = SPI_tuptable->vals[i];
			int			from = 1;
			int			att;

			for (att = 0; att < desc->natts; att++)
			{
				if (TupleDescAttr(desc, att)->attisdropped)
				{
					values[att] = (Datum) 0;
					nulls[att] = true;
					continue;
				}
				values[att] = SPI_getbinval(tup, SPI_tuptable->tupdesc, from++,
											&nulls[att]);
			}
			tuplestore_putvalues(store, desc, values, nulls);
		}
		SPI_freetuptable(SPI_tuptable);
	}
	SPI_cursor_close(portal);
}

/*
 * bloom_partition_lookup(parent anyelement, column_name name,
 *						  value anycompatible) -> SETOF anyelement
 *
 * The rows of the table whose row type parent has (NULL::orders) whose
 * column equals value: what SELECT * FROM orders WHERE column = value gives
 * the caller, reading only the candidates.  A candidate the caller may read
 * directly (see read_directly) is read with FROM ONLY; the others are read
 * together in one query of the table asked about, whose privileges and
 * row security then apply, restricted to them by tableoid and, for the
 * planner to prune the rest, by their partition bounds.
 */
Datum
bloom_partition_lookup(PG_FUNCTION_ARGS)
{
	Oid			rowtype = get_fn_expr_argtype(fcinfo->flinfo, 0);
	Oid			parent = InvalidOid;
	PartColumn	col;
	PartValue	value;
	List	   *members;
	ListCell   *lc;
	TupleDesc	desc;
	Tuplestorestate *store;
	StringInfoData cols;
	char	   *where;
	List	   *through_parent = NIL;
	bool		all_members = true;
	Oid			argtypes[2];
	Datum		args[2];
	int			att;

	if (OidIsValid(rowtype) && type_is_rowtype(rowtype))
	{
		Oid			relid = get_typ_typrelid(rowtype);
		char		relkind = get_rel_relkind(relid);

		if (relkind == RELKIND_RELATION || relkind == RELKIND_PARTITIONED_TABLE)
			parent = relid;
	}
	if (!OidIsValid(parent))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("parent must be a null value of a table's row type, not of type %s",
						format_type_be(rowtype)),
				 errhint("Call it as bloom_partition_lookup(NULL::orders, 'customer_id', 42).")));
	resolve_column(parent, fcinfo, 1, &col);
	store = materialize_result(fcinfo, &desc);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	if (PG_ARGISNULL(2))
	{
		/* no row equals NULL */
		SPI_finish();
		return (Datum) 0;
	}
	members = candidates(fcinfo, &col, 2, &value);

	/* the parent's columns by name, in its order */
	initStringInfo(&cols);
	for (att = 0; att < desc->natts; att++)
	{
		Form_pg_attribute a = TupleDescAttr(desc, att);

		if (a->attisdropped)
			continue;
		appendStringInfo(&cols, "%s%s", cols.len > 0 ? ", " : "",
						 quote_identifier(NameStr(a->attname)));
	}
	if (cols.len == 0)
		appendStringInfoString(&cols, "NULL");	/* a table of no columns */
	where = psprintf("%s %s ($1%s)", quote_identifier(col.name),
					 operator_clause(value.eqop),
					 collate_clause(value.type, col.collation));
	argtypes[0] = value.type;
	args[0] = value.value;

	foreach(lc, members)
	{
		PartMember *m = lfirst(lc);

		if (!is_candidate(m))
		{
			all_members = false;
			continue;
		}
		if (read_directly(parent, m->relid))
		{
			all_members = false;
			add_rows(psprintf("SELECT %s FROM ONLY %s WHERE %s", cols.data,
							  qualified_relation(m->relid), where),
					 1, argtypes, args, store, desc);
		}
		else
			through_parent = lappend_oid(through_parent, m->relid);
	}

	if (through_parent != NIL)
	{
		StringInfoData sql;

		initStringInfo(&sql);
		appendStringInfo(&sql, "SELECT %s FROM %s WHERE %s", cols.data,
						 qualified_relation(parent), where);
		if (!all_members)
		{
			StringInfoData bounds;
			Datum	   *oids = palloc(sizeof(Datum) * list_length(through_parent));
			bool		prunable = true;
			int			n = 0;

			initStringInfo(&bounds);
			foreach(lc, through_parent)
			{
				Oid			relid = lfirst_oid(lc);
				Expr	   *bound;

				oids[n++] = ObjectIdGetDatum(relid);
				bound = get_partition_qual_relid(relid);
				if (bound == NULL)
					prunable = false;
				else if (prunable)
					appendStringInfo(&bounds, "%s(%s)", bounds.len > 0 ? " OR " : "",
									 deparse_expression((Node *) bound,
														deparse_context_for(get_rel_name(relid), relid),
														false, false));
			}
			appendStringInfoString(&sql, " AND tableoid OPERATOR(pg_catalog.=) ANY ($2)");
			if (prunable && bounds.len > 0)
				appendStringInfo(&sql, " AND (%s)", bounds.data);
			argtypes[1] = OIDARRAYOID;
			args[1] = PointerGetDatum(construct_array(oids, n, OIDOID, sizeof(Oid),
													  true, TYPALIGN_INT));
		}
		add_rows(sql.data, all_members ? 1 : 2, argtypes, args, store, desc);
	}
	SPI_finish();
	return (Datum) 0;
}

/*
 * amqfilter_partition_readable(partition regclass, column_name name)
 *	-> boolean
 *
 * The row security policy of amqfilter_partition_filter: true if the
 * current user could read every value of the column in the table, through
 * the table itself or a table above it: SELECT on the column (or the
 * table) there, and no row security applying to the user there.  A filter
 * is a summary of all those values; anyone else could learn from it values
 * the policies hide.
 */
Datum
amqfilter_partition_readable(PG_FUNCTION_ARGS)
{
	Oid			relid = PG_GETARG_OID(0);
	char	   *column = NameStr(*PG_GETARG_NAME(1));
	List	   *tables;
	ListCell   *lc;

	if (get_rel_relkind(relid) == '\0')
		PG_RETURN_BOOL(false);
	tables = lcons_oid(relid, amq_relation_ancestors(relid));
	foreach(lc, tables)
	{
		Oid			table = lfirst_oid(lc);
		AttrNumber	attnum = get_attnum(table, column);

		if (attnum <= 0)
			continue;
		if ((pg_class_aclcheck(table, GetUserId(), ACL_SELECT) == ACLCHECK_OK ||
			 pg_attribute_aclcheck(table, attnum, GetUserId(), ACL_SELECT) == ACLCHECK_OK) &&
			check_enable_rls(table, InvalidOid, true) != RLS_ENABLED)
			PG_RETURN_BOOL(true);
	}
	PG_RETURN_BOOL(false);
}
