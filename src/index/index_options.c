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
 * of the partitioned index may do it, as ALTER INDEX requires (checked
 * before any lock is taken); each partition's index is altered with its
 * own checks.
 *
 * The statement stays PostgreSQL's own: PostgreSQL runs it with its SET /
 * RESET commands left out, so that it is refused wherever DDL is (in a
 * read-only transaction, during recovery, in parallel mode) before
 * anything is done, is tagged ALTER INDEX, fires event triggers, and takes
 * its own locks and checks.  The options are set when its
 * ddl_command_start event fires, before PostgreSQL's own lookup and lock
 * of the index, and the statement is collected there, as written, for
 * pg_event_trigger_ddl_commands() (PostgreSQL collects no ALTER without
 * commands).  Two ways lead here:
 *
 *	- the extension's event trigger, amqfilter_partitioned_index_options,
 *	  on ddl_command_start of ALTER INDEX: it exists wherever the extension
 *	  is installed, and calling it loads this library, which is how a
 *	  session's first statement gets here.  For a statement of ours it sets
 *	  the options and empties the statement's commands in place: the
 *	  statement it was given is the one PostgreSQL goes on to run, and it
 *	  then changes nothing.  Any other ALTER INDEX costs it a few tests of
 *	  the parse tree; SET / RESET of another index, a lookup of the index's
 *	  name and kind.
 *	- the ProcessUtility hook, once the library is loaded: it hands
 *	  PostgreSQL a copy of the statement without the commands, and sets the
 *	  options when the event trigger fires for that copy.  When event
 *	  triggers do not fire (the extension's disabled, or missing before
 *	  ALTER EXTENSION UPDATE; single-user mode), it sets them right after
 *	  PostgreSQL ran the statement: ddl_command_end triggers, if any fired,
 *	  saw no command, and the lock PostgreSQL took on the index
 *	  (ShareUpdateExclusiveLock) is then raised to the options'.
 *
 * A session's first statement with the event trigger disabled, or in
 * single-user mode, is PostgreSQL's alone, which refuses it.
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
#include "catalog/objectaddress.h"
#include "catalog/objectaccess.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/defrem.h"
#include "commands/event_trigger.h"
#include "commands/tablecmds.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "nodes/parsenodes.h"
#include "storage/lmgr.h"
#include "tcop/utility.h"
#include "utils/acl.h"
#include "utils/inval.h"
#include "utils/lsyscache.h"
#include "utils/syscache.h"

#include "index/filter_index.h"

PG_FUNCTION_INFO_V1(amqfilter_partitioned_index_options);

static ProcessUtility_hook_type prev_process_utility = NULL;

/*
 * The statement of ours the hook handed PostgreSQL, if any: the statement
 * as written, the copy without its commands that PostgreSQL runs (the
 * event trigger knows it by its address), and whether its options are set.
 */
typedef struct OptionsStatement
{
	AlterTableStmt *stmt;
	Node	   *passed;
	bool		done;
} OptionsStatement;

static OptionsStatement *current_statement = NULL;

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
 * The partitioned amqfilter index whose options the statement sets or
 * resets, or InvalidOid if it is any other statement.  The tests of the
 * parse tree come first: the event trigger asks this of every ALTER INDEX.
 */
static Oid
options_target(AlterTableStmt *stmt)
{
	ListCell   *lc;
	Oid			indexoid;
	Oid			amoid;
	HeapTuple	tup;
	bool		ours;

	if (stmt->objtype != OBJECT_INDEX || stmt->cmds == NIL)
		return InvalidOid;
	foreach(lc, stmt->cmds)
	{
		AlterTableCmd *cmd = lfirst_node(AlterTableCmd, lc);

		if (cmd->subtype != AT_SetRelOptions && cmd->subtype != AT_ResetRelOptions)
			return InvalidOid;
	}
	indexoid = RangeVarGetRelid(stmt->relation, NoLock, true);
	if (!OidIsValid(indexoid) || get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
		return InvalidOid;
	amoid = get_index_am_oid("amqfilter", true);
	if (!OidIsValid(amoid))
		return InvalidOid;
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(indexoid));
	if (!HeapTupleIsValid(tup))
		return InvalidOid;
	ours = ((Form_pg_class) GETSTRUCT(tup))->relam == amoid;
	ReleaseSysCache(tup);
	return ours ? indexoid : InvalidOid;
}

/*
 * Sets or resets the statement's options on the partitioned index, those
 * below it and every partition's index.  With collect, at the statement's
 * ddl_command_start, it is also collected for ddl_command_end triggers.
 */
static void
alter_partitioned_index(AlterTableStmt *stmt, Oid indexoid, bool collect)
{
	LOCKMODE	lockmode;
	List	   *children;
	ListCell   *lc;

	/* the owner only, checked before a lock a non-owner could hold up others with */
	if (!object_ownercheck(RelationRelationId, indexoid, GetUserId()))
		aclcheck_error(ACLCHECK_NOT_OWNER, OBJECT_INDEX, get_rel_name(indexoid));
	lockmode = AlterTableGetLockLevel(stmt->cmds);
	LockRelationOid(indexoid, lockmode);

	/*
	 * pg_event_trigger_ddl_commands() reports the statement, as written, as
	 * an ALTER INDEX of the partitioned index with its SET / RESET
	 * commands.  PostgreSQL would not: the statement it runs has no
	 * commands, and it collects no ALTER without any.  The partitions'
	 * indexes, altered below, are not collected on their own.  Each call
	 * does nothing when no event trigger needs the commands; an error
	 * leaves with the statement's collection state.
	 */
	if (collect)
	{
		EventTriggerAlterTableStart((Node *) stmt);
		EventTriggerAlterTableRelid(indexoid);
		foreach(lc, stmt->cmds)
			EventTriggerCollectAlterTableSubcmd((Node *) lfirst(lc), InvalidObjectAddress);
	}
	EventTriggerInhibitCommandCollection();

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

	EventTriggerUndoInhibitCommandCollection();
	if (collect)
		EventTriggerAlterTableEnd();
}

/*
 * The event trigger amqfilter_partitioned_index_options, on
 * ddl_command_start of ALTER INDEX: sets the options of the statement the
 * hook handed PostgreSQL, or, when the hook did not see the statement (the
 * library was loaded by this call), of the statement itself, whose
 * commands it then empties.
 */
Datum
amqfilter_partitioned_index_options(PG_FUNCTION_ARGS)
{
	EventTriggerData *trigdata;
	Node	   *parsetree;

	if (!CALLED_AS_EVENT_TRIGGER(fcinfo))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_EVENT_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("amqfilter_partitioned_index_options() was not called by an event trigger")));
	trigdata = (EventTriggerData *) fcinfo->context;
	parsetree = trigdata->parsetree;
	if (strcmp(trigdata->event, "ddl_command_start") != 0)
		PG_RETURN_VOID();

	if (current_statement != NULL && parsetree == current_statement->passed)
	{
		if (!current_statement->done)
		{
			Oid			indexoid = options_target(current_statement->stmt);

			if (OidIsValid(indexoid))
				alter_partitioned_index(current_statement->stmt, indexoid, true);
			current_statement->done = true;
		}
	}
	else if (IsA(parsetree, AlterTableStmt))
	{
		AlterTableStmt *stmt = (AlterTableStmt *) parsetree;
		Oid			indexoid = options_target(stmt);

		if (OidIsValid(indexoid))
		{
			alter_partitioned_index(stmt, indexoid, true);
			stmt->cmds = NIL;
		}
	}
	PG_RETURN_VOID();
}

static void
next_process_utility(PlannedStmt *pstmt, const char *queryString,
					 bool readOnlyTree, ProcessUtilityContext context,
					 ParamListInfo params, QueryEnvironment *queryEnv,
					 DestReceiver *dest, QueryCompletion *qc)
{
	if (prev_process_utility)
		prev_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
	else
		standard_ProcessUtility(pstmt, queryString, readOnlyTree, context, params,
								queryEnv, dest, qc);
}

/*
 * Hands PostgreSQL a statement of ours without its commands, and sets the
 * options at its ddl_command_start, or after it if that did not fire.
 */
static void
options_process_utility(PlannedStmt *pstmt, const char *queryString,
						bool readOnlyTree, ProcessUtilityContext context,
						ParamListInfo params, QueryEnvironment *queryEnv,
						DestReceiver *dest, QueryCompletion *qc)
{
	OptionsStatement mine;
	OptionsStatement *outer = current_statement;
	PlannedStmt *copy;

	if (!IsA(pstmt->utilityStmt, AlterTableStmt) ||
		!OidIsValid(options_target((AlterTableStmt *) pstmt->utilityStmt)))
	{
		next_process_utility(pstmt, queryString, readOnlyTree, context, params,
							 queryEnv, dest, qc);
		return;
	}

	/*
	 * A copy of its own, handed on as writable so that PostgreSQL runs it
	 * without copying it again: the event trigger knows it by its address.
	 */
	copy = copyObject(pstmt);
	((AlterTableStmt *) copy->utilityStmt)->cmds = NIL;
	mine.stmt = (AlterTableStmt *) pstmt->utilityStmt;
	mine.passed = copy->utilityStmt;
	mine.done = false;
	current_statement = &mine;
	PG_TRY();
	{
		next_process_utility(copy, queryString, false, context, params,
							 queryEnv, dest, qc);
		if (!mine.done)
		{
			Oid			indexoid = options_target(mine.stmt);

			mine.done = true;
			if (OidIsValid(indexoid))
				alter_partitioned_index(mine.stmt, indexoid, false);
		}
	}
	PG_FINALLY();
	{
		current_statement = outer;
	}
	PG_END_TRY();
}

/* Installs the hook (from _PG_init). */
void
amq_index_options_init(void)
{
	prev_process_utility = ProcessUtility_hook;
	ProcessUtility_hook = options_process_utility;
}
