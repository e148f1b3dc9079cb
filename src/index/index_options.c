/*
 * index_options.c
 *		ALTER INDEX ... SET / RESET on the amqfilter index of a partitioned
 *		table reaches the index of every partition.
 *
 * PostgreSQL refuses to set storage options on a partitioned index ("not
 * supported for partitioned indexes").  An amqfilter index's options are
 * what a partitioned table's owner tunes for the whole table (a rate for
 * every partition; the rate is read when an index is built,
 * max_generations when it grows): one statement on the parent is the
 * natural way to change them.  It runs
 * ALTER INDEX on every partition's index, and stores the options on the
 * partitioned index (and any in between), from which PostgreSQL copies
 * them to the index of a partition created or attached later.  The owner
 * of the partitioned index may do it, as ALTER INDEX requires; each
 * partition's index is altered with its own checks.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/catalog.h"
#include "catalog/indexing.h"
#include "catalog/namespace.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "commands/tablecmds.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "index/filter_index.h"

static ProcessUtility_hook_type prev_process_utility = NULL;

/* Stores the options on a partitioned index, checked by the access method. */
static void
set_partitioned_options(Oid indexoid, List *defs, bool reset)
{
	Relation	pg_class = table_open(RelationRelationId, RowExclusiveLock);
	HeapTuple	tup = SearchSysCacheCopy1(RELOID, ObjectIdGetDatum(indexoid));
	Datum		old;
	Datum		options;
	bool		isnull;
	Datum		values[Natts_pg_class];
	bool		nulls[Natts_pg_class];
	bool		replace[Natts_pg_class];
	HeapTuple	newtup;

	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", indexoid);
	old = SysCacheGetAttr(RELOID, tup, Anum_pg_class_reloptions, &isnull);
	options = transformRelOptions(isnull ? (Datum) 0 : old, defs, NULL, NULL, false, reset);
	(void) index_reloptions(GetIndexAmRoutineByAmId(((Form_pg_class) GETSTRUCT(tup))->relam,
													false)->amoptions,
							options, true);
	memset(values, 0, sizeof(values));
	memset(nulls, false, sizeof(nulls));
	memset(replace, false, sizeof(replace));
	values[Anum_pg_class_reloptions - 1] = options;
	nulls[Anum_pg_class_reloptions - 1] = options == (Datum) 0;
	replace[Anum_pg_class_reloptions - 1] = true;
	newtup = heap_modify_tuple(tup, RelationGetDescr(pg_class), values, nulls, replace);
	CatalogTupleUpdate(pg_class, &newtup->t_self, newtup);
	InvokeObjectPostAlterHook(RelationRelationId, indexoid, 0);
	heap_freetuple(newtup);
	heap_freetuple(tup);
	table_close(pg_class, RowExclusiveLock);
	CacheInvalidateRelcacheByRelid(indexoid);
}

/*
 * True if the statement is ALTER INDEX ... SET / RESET (options) of a
 * partitioned amqfilter index, done here.
 */
static bool
alter_partitioned_index(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			indexoid;
	Oid			amoid;
	LOCKMODE	lockmode;
	List	   *children;

	if (stmt->objtype != OBJECT_INDEX || stmt->cmds == NIL)
		return false;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
			return false;
	}
	indexoid = RangeVarGetRelid(stmt->relation, NoLock, true);
	amoid = get_index_am_oid("amqfilter", true);
	if (!OidIsValid(indexoid) || !OidIsValid(amoid) ||
		get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
		return false;
	{
		HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
		bool		ours;

		if (!HeapTupleIsValid(tup))
			return false;
		ours = ((Form_pg_class) GETSTRUCT(tup))->relam == amoid;
		ReleaseSysCache(tup);
		if (!ours)
			return false;
	}

	/* the owner only, checked before a lock a non-owner could hold up others with */
	if (!object_ownercheck(RelationRelationId, indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));
	lockmode = AlterTableGetLockLevel(stmt->cmds);
	LockRelationOid(indexoid, lockmode);

	/* the partitioned index and those below it, then every partition's */
	children = find_all_inheritors(indexoid, lockmode, NULL);
	foreach(lc, children)
	{
		Oid			child = lfirst_oid(lc);
		ListCell   *lc2;

		CHECK_FOR_INTERRUPTS();
		if (get_rel_relkind(child) == RELKIND_PARTITIONED_INDEX)
		{
			foreach(lc2, stmt->cmds)
			{
				AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc2);

				set_partitioned_options(child, (List *) cmd->def,
										cmd->subtype == AT_ResetRelOptions);
			}
		}
		else
			AlterTableInternal(child, copyObject(stmt->cmds), false);
		CommandCounterIncrement();
	}
	return true;
}

static void
options_process_utility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	if (IsA(pstmt->utilityStmt, AlterTableStmt) &&
		alter_partitioned_index((AlterTableStmt *) pstmt->utilityStmt))
		return;
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/* Installs the hook (from _PG_init). */
void
amq_index_options_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = options_process_utility;
}
