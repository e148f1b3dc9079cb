/*
 * partition_track.c
 *		The writers' side of partition filters: recording, in the writer's
 *		own transaction, that a partition was written after its filters were
 *		built, so that no lookup trusts them again until they are rebuilt.
 *
 * A filter describes its partition as of its build; a lookup may skip the
 * partition only while nothing was written to it since.  Every partition
 * with a filter carries a trigger, amqfilter_partition_filter, AFTER INSERT
 * OR UPDATE FOR EACH ROW, enabled ALWAYS (so that logical replication apply
 * fires it too), whose condition is
 *
 *		WHEN (amqfilter_partition_written('partition'::regclass))
 *
 * The condition does the work itself and is always false:
 *
 *	- at the first row a transaction writes to the partition it inserts a
 *	  row into amqfilter_partition_write, the record "written since the
 *	  build", unless one is already there; from the second row on it finds
 *	  the partition in a per-transaction hash table and returns at once, so
 *	  a row costs one function call and one hash probe (with a one-entry
 *	  cache in front, for the common case of many rows into one partition);
 *	- being false, it queues no trigger event at all: nothing is left
 *	  pending at the end of a statement, so the writer keeps every DDL it
 *	  has ("cannot ALTER TABLE because it has pending trigger events" never
 *	  comes from here), and COPY keeps its batched inserts (an AFTER trigger,
 *	  unlike a BEFORE one, does not turn them off).
 *
 * The record is an INSERT, never an UPDATE: writers of one partition never
 * wait for each other's transactions on a shared row, and never deadlock
 * on the rows of two partitions written in opposite orders.  It is made in
 * the writer's transaction, so it commits or aborts with the rows: any
 * snapshot that sees the rows sees the record, the writer's own included.
 * A subtransaction rolled back takes its record with it, and forgets its
 * entries in the hash table, so that the next write records again.
 *
 * The record is read with the latest snapshot, not the transaction's: under
 * REPEATABLE READ a transaction snapshot could still show a record that a
 * build has since removed.  No build can remove it between that read and
 * the writer's commit: a build locks the partition against writers (SHARE)
 * before it reads the partition, and the writer holds its ROW EXCLUSIVE
 * lock until it ends; so a build either committed before the writer's lock
 * (and the latest snapshot shows that) or waits for the writer and reads
 * its rows.
 *
 * Who may record.  The condition runs as the writer, who need not have any
 * privilege on the extension's tables: the INSERT runs as their owner, in a
 * security-restricted operation, with every name and operator qualified.
 * Anyone may call the function by hand; it can only add a record (a
 * stale filter: the partition is scanned), never suppress one, since an
 * entry in the hash table exists only for a record really inserted in this
 * transaction.  A call by someone who is not writing the partition (holds no
 * lock that writing takes) and could not write it (no INSERT or UPDATE on
 * it or a table above it) records nothing, so that no role can make
 * another's filters useless.
 */
#include "postgres.h"

#include "access/genam.h"
#include "access/htup_details.h"
#include "access/stratnum.h"
#include "access/table.h"
#include "access/xact.h"
#include "catalog/indexing.h"
#include "catalog/pg_class.h"
#include "catalog/pg_inherits.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "storage/lmgr.h"
#include "storage/lock.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/hsearch.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "partition_filter.h"

PG_FUNCTION_INFO_V1(amqfilter_partition_written);
PG_FUNCTION_INFO_V1(amqfilter_partition_mark);

/*
 * Finds one of the extension's tables in the schema of the function fn_oid
 * (the extension is relocatable: its schema is known only at run time).
 */
void
amq_ext_table(Oid fn_oid, const char *name, AmqExtTable *table)
{
	HeapTuple	tup;

	table->nsp = get_func_namespace(fn_oid);
	table->relid = get_relname_relid(name, table->nsp);
	if (!OidIsValid(table->relid))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"%s\" does not exist in the schema of amqfilter's functions",
						name),
				 errhint("Reinstall the extension: DROP EXTENSION amqfilter; CREATE EXTENSION amqfilter.")));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(table->relid));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", table->relid);
	table->owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);
}

/*
 * Acts as the owner of one of the extension's tables, in a
 * security-restricted operation (as REFRESH MATERIALIZED VIEW and index
 * builds run as the table's owner), until amq_ext_restore_user.  An error
 * in between restores the caller at the (sub)transaction's abort.
 */
void
amq_ext_become_owner(const AmqExtTable *table, AmqSavedUser *saved)
{
	GetUserIdAndSecContext(&saved->userid, &saved->sec_context);
	SetUserIdAndSecContext(table->owner, saved->sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
}

void
amq_ext_restore_user(const AmqSavedUser *saved)
{
	SetUserIdAndSecContext(saved->userid, saved->sec_context);
}

/*
 * The tables relid inherits from, directly or not: the partitioned tables
 * above a partition, the parents of an inheritance child, in breadth-first
 * order, each once.
 */
List *
amq_relation_ancestors(Oid relid)
{
	List	   *result = NIL;
	List	   *queue = list_make1_oid(relid);
	Relation	inherits = table_open(InheritsRelationId, AccessShareLock);

	while (queue != NIL)
	{
		Oid			child = linitial_oid(queue);
		ScanKeyData key;
		SysScanDesc scan;
		HeapTuple	tup;

		queue = list_delete_first(queue);
		ScanKeyInit(&key, Anum_pg_inherits_inhrelid, BTEqualStrategyNumber,
					F_OIDEQ, ObjectIdGetDatum(child));
		scan = systable_beginscan(inherits, InheritsRelidSeqnoIndexId, true,
								  NULL, 1, &key);
		while (HeapTupleIsValid(tup = systable_getnext(scan)))
		{
			Oid			parent = ((Form_pg_inherits) GETSTRUCT(tup))->inhparent;

			if (parent != relid && !list_member_oid(result, parent))
			{
				result = lappend_oid(result, parent);
				queue = lappend_oid(queue, parent);
			}
		}
		systable_endscan(scan);
	}
	table_close(inherits, AccessShareLock);
	return result;
}

/*
 * ----------------------------------------------------------------
 * The partitions this transaction recorded as written
 * ----------------------------------------------------------------
 */
typedef struct WrittenEntry
{
	Oid			partition;		/* hash key */
	SubTransactionId subid;		/* the subtransaction that recorded it */
} WrittenEntry;

static HTAB *written = NULL;
/* the partition found last, or InvalidOid: most writes go to one */
static Oid	last_written = InvalidOid;
static bool callbacks_registered = false;

static void
forget_all(void)
{
	if (written != NULL)
	{
		hash_destroy(written);
		written = NULL;
	}
	last_written = InvalidOid;
}

static void
written_xact_callback(XactEvent event, void *arg)
{
	forget_all();
}

/*
 * A subtransaction rolled back takes its records with it: forget what it and
 * its children recorded.  Subtransactions nest, so those are the entries of
 * subtransactions with an id at least its own.
 */
static void
written_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	HASH_SEQ_STATUS seq;
	WrittenEntry *entry;

	if (event != SUBXACT_EVENT_ABORT_SUB || written == NULL)
		return;
	last_written = InvalidOid;
	hash_seq_init(&seq, written);
	while ((entry = hash_seq_search(&seq)) != NULL)
		if (entry->subid >= mySubid)
			hash_search(written, &entry->partition, HASH_REMOVE, NULL);
}

static void
remember_written(Oid partition)
{
	WrittenEntry *entry;

	if (!callbacks_registered)
	{
		RegisterXactCallback(written_xact_callback, NULL);
		RegisterSubXactCallback(written_subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (written == NULL)
	{
		HASHCTL		ctl;

		memset(&ctl, 0, sizeof(ctl));
		ctl.keysize = sizeof(Oid);
		ctl.entrysize = sizeof(WrittenEntry);
		ctl.hcxt = TopTransactionContext;
		written = hash_create("amqfilter written partitions", 16, &ctl,
							  HASH_ELEM | HASH_BLOBS | HASH_CONTEXT);
	}
	entry = hash_search(written, &partition, HASH_ENTER, NULL);
	entry->subid = GetCurrentSubTransactionId();
	last_written = partition;
}

/*
 * Forgets that this transaction recorded partition as written: a build has
 * just removed the record, and the next write must make it again.
 */
void
amq_partition_forget_written(Oid partition)
{
	if (written != NULL)
		hash_search(written, &partition, HASH_REMOVE, NULL);
	last_written = InvalidOid;
}

static bool
is_remembered(Oid partition)
{
	if (partition == last_written)
		return true;
	if (written == NULL || hash_search(written, &partition, HASH_FIND, NULL) == NULL)
		return false;
	last_written = partition;
	return true;
}

/*
 * ----------------------------------------------------------------
 * The record itself
 * ----------------------------------------------------------------
 */

/* True if this backend holds a lock on the relation that writing it takes. */
static bool
holds_write_lock(Oid relid)
{
	LOCKTAG		tag;
	LOCKMODE	mode;

	SET_LOCKTAG_RELATION(tag, MyDatabaseId, relid);
	for (mode = RowExclusiveLock; mode <= AccessExclusiveLock; mode++)
#if PG_VERSION_NUM >= 170000
		if (LockHeldByMe(&tag, mode, false))
#else
		if (LockHeldByMe(&tag, mode))
#endif
			return true;
	return false;
}

/* True if the current user may insert or update rows of the relation. */
static bool
may_write(Oid relid)
{
	ListCell   *lc;
	List	   *ancestors;

	if (pg_class_aclcheck(relid, GetUserId(), ACL_INSERT | ACL_UPDATE) == ACLCHECK_OK)
		return true;
	ancestors = amq_relation_ancestors(relid);
	foreach(lc, ancestors)
		if (pg_class_aclcheck(lfirst_oid(lc), GetUserId(),
							  ACL_INSERT | ACL_UPDATE) == ACLCHECK_OK)
			return true;
	return false;
}

/* The saved statement that records a write, and the table it was made for. */
static SPIPlanPtr record_plan = NULL;
static Oid	record_plan_table = InvalidOid;
static char *record_plan_nspname = NULL;

/*
 * Inserts the record that partition was written, unless a committed one (or
 * one of this transaction's) is there, with the latest snapshot (see the
 * file header).  As the table's owner, restricted.
 */
static void
insert_record(const AmqExtTable *writes, Oid partition)
{
	char	   *nspname = get_namespace_name(writes->nsp);
	Oid			argtype = OIDOID;
	Datum		arg = ObjectIdGetDatum(partition);
	AmqSavedUser saved;
	int			rc;

	amq_ext_become_owner(writes, &saved);
	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");

	/* the plan names the table by its schema: made again after a move */
	if (record_plan != NULL &&
		(record_plan_table != writes->relid || nspname == NULL ||
		 strcmp(record_plan_nspname, nspname) != 0))
	{
		SPI_freeplan(record_plan);
		record_plan = NULL;
	}
	if (record_plan == NULL)
	{
		char	   *table = quote_qualified_identifier(nspname, AMQ_WRITE_TABLE);
		char	   *sql;
		SPIPlanPtr	plan;

		sql = psprintf("INSERT INTO %s (partition) SELECT $1 "
					   "WHERE NOT EXISTS (SELECT FROM %s w "
					   "WHERE w.partition OPERATOR(pg_catalog.=) $1)",
					   table, table);
		plan = SPI_prepare(sql, 1, &argtype);
		if (plan == NULL)
			elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
		if (SPI_keepplan(plan) != 0)
			elog(ERROR, "SPI_keepplan failed");
		if (record_plan_nspname != NULL)
			pfree(record_plan_nspname);
		record_plan_nspname = MemoryContextStrdup(TopMemoryContext, nspname);
		record_plan_table = writes->relid;
		record_plan = plan;
	}
	rc = SPI_execute_snapshot(record_plan, &arg, NULL, GetLatestSnapshot(),
							  InvalidSnapshot, false, false, 0);
	if (rc != SPI_OK_INSERT)
		elog(ERROR, "SPI_execute_snapshot failed: %s", SPI_result_code_string(rc));
	SPI_finish();
	amq_ext_restore_user(&saved);
}

/* Records, once per transaction, that partition was written. */
static void
record_written(Oid fn_oid, Oid partition)
{
	AmqExtTable writes;

	if (is_remembered(partition))
		return;
	if (!holds_write_lock(partition) && !may_write(partition))
		return;
	amq_ext_table(fn_oid, AMQ_WRITE_TABLE, &writes);
	/*
	 * Most transactions find the record there already (a table is written
	 * after its build by many): a look at the index costs less than the
	 * statement that inserts, which checks again.
	 */
	{
		Snapshot	latest = RegisterSnapshot(GetLatestSnapshot());
		bool		found = amq_partition_written_since_build(&writes, partition,
															  latest);

		UnregisterSnapshot(latest);
		if (!found)
			insert_record(&writes, partition);
	}
	remember_written(partition);
}

/*
 * amqfilter_partition_written(partition regclass) -> boolean: the condition
 * of a partition's trigger.  Records that this transaction wrote the
 * partition, once, and returns false, so that the trigger queues nothing.
 */
Datum
amqfilter_partition_written(PG_FUNCTION_ARGS)
{
	Oid			partition = PG_GETARG_OID(0);

	if (partition != last_written)
		record_written(fcinfo->flinfo->fn_oid, partition);
	PG_RETURN_BOOL(false);
}

/*
 * amqfilter_partition_mark() trigger: what the trigger runs if its condition
 * is ever true or missing (a trigger recreated by hand): the same record.
 */
Datum
amqfilter_partition_mark(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("amqfilter_partition_mark must be called as an AFTER ROW trigger")));
	record_written(fcinfo->flinfo->fn_oid, RelationGetRelid(trigdata->tg_relation));
	return PointerGetDatum(NULL);
}

/*
 * True if a record that partition was written since its filters were built
 * is visible to snapshot.  Read directly through the table's index: the
 * answer only ever makes a lookup scan more, so it needs no privilege.
 */
bool
amq_partition_written_since_build(const AmqExtTable *writes, Oid partition,
								  Snapshot snapshot)
{
	Relation	rel = table_open(writes->relid, AccessShareLock);
	List	   *indexes = RelationGetIndexList(rel);
	ScanKeyData key;
	SysScanDesc scan;
	bool		found;

	if (list_length(indexes) != 1)
		elog(ERROR, "relation \"%s\" must have exactly one index",
			 RelationGetRelationName(rel));
	ScanKeyInit(&key, 1, BTEqualStrategyNumber, F_OIDEQ,
				ObjectIdGetDatum(partition));
	scan = systable_beginscan(rel, linitial_oid(indexes), true, snapshot, 1, &key);
	found = HeapTupleIsValid(systable_getnext(scan));
	systable_endscan(scan);
	list_free(indexes);
	table_close(rel, AccessShareLock);
	return found;
}
