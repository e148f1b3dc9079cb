/*
 * join_filter_remote.c
 *		Shipping a runtime join filter to postgres_fdw's foreign scans: the
 *		remote query gets a condition on a parameter, a bloom value of the
 *		build side's keys, so that the servers return only the rows whose
 *		key the filter does not rule out.
 *
 * The condition, appended to the foreign scan's remote SQL, is
 *
 *	($N::ext.bloom IS NULL OR ext.bloom_contains($N::ext.bloom, col))
 *
 * with $N a parameter postgres_fdw evaluates when it opens its cursor: a
 * PARAM_EXEC slot the build node (join_filter_exec.c) fills with the
 * filter once the build side is read, and leaves NULL while it is not (the
 * join read a probe-side row before building), when the build side has
 * more keys than amqfilter.join_filter_remote_max_kb allows, or when the
 * setting is off at run time.  A NULL filter lets every row through, so
 * the remote rows are always a superset of those that can match; the
 * join's own hash test decides.
 *
 * When a scan is eligible (every condition is checked here, at plan time;
 * a scan that fails one gets the local probe node instead, and the build
 * node's EXPLAIN names it and why):
 *	- the foreign table's server is a postgres_fdw server whose
 *	  "extensions" option names amqfilter (postgres_fdw ships the
 *	  extension's functions to such servers, and assumes the remote has the
 *	  extension in the same schema; so do we);
 *	- the scan reads one foreign table (not a join or aggregate pushed
 *	  down), and its remote SQL is the SELECT ... FROM rel [WHERE ...] that
 *	  postgres_fdw writes for one: no ORDER BY, LIMIT or row lock after it;
 *	- the key is one of the table's columns, of a type whose hash is the
 *	  same on every server (integers, text types, uuid, bytea, dates and
 *	  times, numeric), and the join compares it under a deterministic
 *	  collation, so that its matches are byte-equal values: the remote
 *	  column is hashed under "C" (bytes), whatever its own collation;
 *	- the build side is the same at every rescan of the join (no parameter
 *	  from above reaches it): postgres_fdw rewinds its cursor at a rescan
 *	  rather than sending the query again, so a filter that changed would
 *	  not reach it.
 * Integers hash as 64-bit values in a bloom filter whatever their width, so
 * int4 keys here find int8 values there.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/pg_extension.h"
#include "catalog/pg_collation.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "foreign/foreign.h"
#include "nodes/makefuncs.h"
#include "nodes/plannodes.h"
#include "parser/parsetree.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"
#include "utils/varlena.h"

#include "join/join_filter.h"

/* Types whose values hash alike on every server (see the file comment). */
static bool
type_ships(Oid type)
{
	switch (getBaseType(type))
	{
		case INT2OID:
		case INT4OID:
		case INT8OID:
		case TEXTOID:
		case VARCHAROID:
		case BPCHAROID:
		case UUIDOID:
		case BYTEAOID:
		case DATEOID:
		case TIMESTAMPOID:
		case TIMESTAMPTZOID:
		case NUMERICOID:
			return true;
		default:
			return false;
	}
}

/* The value of a foreign table's (or server's) option, or NULL. */
static const char *
option_value(List *options, const char *name)
{
	ListCell   *lc;

	foreach(lc, options)
	{
		DefElem    *def = lfirst_node(DefElem, lc);

		if (strcmp(def->defname, name) == 0)
			return defGetString(def);
	}
	return NULL;
}

/* True if the server's "extensions" option names amqfilter. */
static bool
server_has_amqfilter(ForeignServer *server)
{
	const char *value = option_value(server->options, "extensions");
	List	   *names;
	ListCell   *lc;

	if (value == NULL || !SplitIdentifierString(pstrdup(value), ',', &names))
		return false;
	foreach(lc, names)
		if (strcmp((const char *) lfirst(lc), "amqfilter") == 0)
			return true;
	return false;
}

/* The remote name of a foreign table, as postgres_fdw writes it. */
static char *
remote_relation(Oid relid)
{
	ForeignTable *table = GetForeignTable(relid);
	const char *nsp = option_value(table->options, "schema_name");
	const char *rel = option_value(table->options, "table_name");

	if (nsp == NULL)
		nsp = get_namespace_name(get_rel_namespace(relid));
	if (rel == NULL)
		rel = get_rel_name(relid);
	return psprintf("%s.%s", quote_identifier(nsp), quote_identifier(rel));
}

/* The remote name of a foreign table's column, quoted. */
static const char *
remote_column(Oid relid, AttrNumber attnum)
{
	const char *name = option_value(GetForeignColumnOptions(relid, attnum),
									"column_name");

	if (name == NULL)
		name = get_attname(relid, attnum, false);
	return quote_identifier(name);
}

/* The schema the extension is in, or InvalidOid. */
static Oid
extension_namespace(void)
{
	Relation	rel;
	ScanKeyData key;
	SysScanDesc scan;
	HeapTuple	tuple;
	Oid			nsp = InvalidOid;

	rel = table_open(ExtensionRelationId, AccessShareLock);
	ScanKeyInit(&key, Anum_pg_extension_extname, BTEqualStrategyNumber, F_NAMEEQ,
				CStringGetDatum("amqfilter"));
	scan = systable_beginscan(rel, ExtensionNameIndexId, true, NULL, 1, &key);
	tuple = systable_getnext(scan);
	if (HeapTupleIsValid(tuple))
		nsp = ((Form_pg_extension) GETSTRUCT(tuple))->extnamespace;
	systable_endscan(scan);
	table_close(rel, AccessShareLock);
	return nsp;
}

/* The extension's schema and its bloom type; both set only when found. */
static bool
extension_bloom(char **schema, Oid *bloom_type)
{
	Oid			nsp = extension_namespace();
	Oid			type;
	char	   *name;

	if (!OidIsValid(nsp))
		return false;
	type = GetSysCacheOid2(TYPENAMENSP, Anum_pg_type_oid,
						   CStringGetDatum("bloom"), ObjectIdGetDatum(nsp));
	name = get_namespace_name(nsp);
	if (!OidIsValid(type) || name == NULL)
		return false;
	*bloom_type = type;
	*schema = name;
	return true;
}

/*
 * Ships the filter of a join to plan, if plan is a foreign scan that can
 * take it: key is the join's key as plan's output column (an OUTER_VAR),
 * build_type the build side's key type, collation the join's.  *paramid is
 * the filter's slot, allocated here by the first scan shipped to (-1
 * before); *schema and *bloom_type are the extension's, looked up by the
 * first scan that gets that far (*bloom_type InvalidOid before).  True if
 * shipped; false with *refused set if plan is a foreign scan that cannot
 * take it, false with *refused NULL if it is no foreign scan.  The caller has checked that the build side is the same at every
 * rescan.
 */
bool
amq_join_filter_ship(PlannedStmt *stmt, Plan *plan, Var *key, Oid build_type,
					 Oid collation, int *paramid, char **schema, Oid *bloom_type,
					 const char **refused)
{
	ForeignScan *fs = (ForeignScan *) plan;
	ForeignServer *server;
	ForeignDataWrapper *fdw;
	RangeTblEntry *rte;
	TargetEntry *tle;
	Var		   *column;
	const char *sql;
	const char *from;
	const char *rest;
	char	   *relname;
	int			n;
	char	   *param;
	Param	   *filter;
	StringInfoData cond;

	*refused = NULL;
	if (!IsA(plan, ForeignScan))
		return false;
	if (!amq_join_filter_remote)
		return (*refused = "amqfilter.join_filter_remote is off"), false;
	if (fs->operation != CMD_SELECT || fs->scan.scanrelid == 0)
		return (*refused = "a join or aggregate pushed down"), false;
	server = GetForeignServer(fs->fs_server);
	fdw = GetForeignDataWrapper(server->fdwid);
	if (!OidIsValid(fdw->fdwhandler) ||
		strcmp(get_func_name(fdw->fdwhandler), "postgres_fdw_handler") != 0)
		return (*refused = "not a postgres_fdw server"), false;
	if (!server_has_amqfilter(server))
		return (*refused = "its server's extensions option does not name amqfilter"), false;
	if (!IsA(key, Var) || key->varno != OUTER_VAR || key->varattno < 1 ||
		key->varattno > list_length(plan->targetlist))
		return (*refused = "the key is an expression"), false;
	tle = list_nth_node(TargetEntry, plan->targetlist, key->varattno - 1);
	column = (Var *) tle->expr;
	rte = rt_fetch(fs->scan.scanrelid, stmt->rtable);
	if (!IsA(column, Var) || column->varno != fs->scan.scanrelid ||
		column->varattno < 1 || rte->rtekind != RTE_RELATION)
		return (*refused = "the key is not a column of the foreign table"), false;
	if (!type_ships(build_type) || !type_ships(column->vartype))
		return (*refused = psprintf("keys of type %s are not shipped",
									format_type_be(column->vartype))), false;
	if (OidIsValid(collation) && !get_collation_isdeterministic(collation))
		return (*refused = "the join compares under a nondeterministic collation"), false;
	if (list_length(fs->fdw_private) < 1 || !IsA(linitial(fs->fdw_private), String))
		return (*refused = "its remote query is not one postgres_fdw wrote"), false;
	if (!OidIsValid(*bloom_type) && !extension_bloom(schema, bloom_type))
		return (*refused = "the bloom type is not found"), false;

	/* the remote SQL: SELECT ... FROM rel, then nothing or a WHERE clause */
	sql = strVal(linitial(fs->fdw_private));
	relname = remote_relation(rte->relid);
	from = strstr(sql, psprintf(" FROM %s", relname));
	if (strncmp(sql, "SELECT ", 7) != 0 || from == NULL ||
		strstr(from + 1, psprintf(" FROM %s", relname)) != NULL)
		return (*refused = "its remote query is not one postgres_fdw wrote"), false;
	rest = from + strlen(" FROM ") + strlen(relname);
	if ((*rest != '\0' && strncmp(rest, " WHERE ", 7) != 0) ||
		strstr(rest, " ORDER BY ") != NULL || strstr(rest, " LIMIT ") != NULL ||
		strstr(rest, " FOR ") != NULL)
		return (*refused = "its remote query orders, limits or locks rows"), false;

	if (*paramid < 0)
	{
		*paramid = list_length(stmt->paramExecTypes);
		stmt->paramExecTypes = lappend_oid(stmt->paramExecTypes, *bloom_type);
	}
	n = list_length(fs->fdw_exprs) + 1;
	filter = makeNode(Param);
	filter->paramkind = PARAM_EXEC;
	filter->paramid = *paramid;
	filter->paramtype = *bloom_type;
	filter->paramtypmod = -1;
	filter->paramcollid = InvalidOid;
	filter->location = -1;
	fs->fdw_exprs = lappend(fs->fdw_exprs, filter);
	param = psprintf("$%d::%s.bloom", n, quote_identifier(*schema));
	initStringInfo(&cond);
	appendStringInfo(&cond, "%s%s(%s IS NULL OR %s.bloom_contains(%s, %s%s))",
					 sql, *rest == '\0' ? " WHERE " : " AND ",
					 param, quote_identifier(*schema), param,
					 remote_column(rte->relid, column->varattno),
					 type_is_collatable(column->vartype) ? " COLLATE pg_catalog.\"C\"" : "");
	linitial(fs->fdw_private) = makeString(cond.data);
	return true;
}
