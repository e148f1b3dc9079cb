/*
 * partition_filter.c
 *		Keeping the per-partition filters of amqfilter_partition_filter
 *		honest: the trigger that marks a partition's filter stale when the
 *		partition is written, and the checks bloom_partition_build makes
 *		before any work.  The builds and lookups themselves are SQL
 *		(amqfilter--0.2.sql).
 *
 * A filter describes its partition as of its build; a lookup may skip the
 * partition only while nothing was written to it since.  bloom_partition_build
 * gives every leaf it builds a trigger, amqfilter_partition_filter, that sets
 * the filter's "stale" flag when a row is inserted or updated there, by any
 * path that fires row triggers on the partition: INSERT (ON CONFLICT too) and
 * COPY through the parent or the partition, UPDATE moving a row in from
 * another partition, MERGE, and logical replication apply (the trigger is
 * ENABLE ALWAYS, so it fires under session_replication_role = replica).
 * Lookups treat a partition whose trigger is missing or not enabled ALWAYS
 * as having no filter.
 *
 * What a writer pays.  The trigger is an AFTER ROW constraint trigger,
 * DEFERRABLE INITIALLY DEFERRED, with the condition
 * WHEN (amqfilter_partition_written('partition'::regclass)):
 *
 *	- the condition is a C call per row that finds the partition in a small
 *	  per-transaction list and returns false from the second row on.  A false
 *	  condition queues no trigger event at all, and an AFTER trigger, unlike
 *	  a BEFORE one, leaves COPY's batched inserts on, so COPY of a million
 *	  rows costs one list lookup per row more;
 *	- so one event per partition per transaction is queued, and it fires at
 *	  commit: one UPDATE of the partition's row in amqfilter_partition_filter,
 *	  none once the row says stale.  Deferring it holds the row lock only from
 *	  commit to its end, so concurrent writers of one partition neither
 *	  queue behind each other's whole transactions nor deadlock on the rows
 *	  of two partitions written in opposite orders.
 *
 * The list is emptied at the end of every transaction and by each build (a
 * write after a build in the same transaction must queue a new event); an
 * aborted subtransaction removes what it added, since its queued events are
 * gone with it.  Until commit the transaction sees its own rows in a
 * partition whose filter is not yet marked: lookups ask the list
 * (amqfilter_partition_pending) and scan such partitions too.
 *
 * Races with a build.  bloom_partition_build creates or enables the trigger
 * and then reads the partition under a lock that conflicts with every writer
 * (SHARE), keeping it until its transaction ends; it runs only at READ
 * COMMITTED, so its read sees every writer that committed before it got the
 * lock.  A writer that gets its lock after the build committed marks the
 * filter the build recorded: the UPDATE runs with the latest snapshot, as
 * the foreign-key triggers do, so under REPEATABLE READ too it sees a filter
 * that committed after the writer's snapshot was taken.  There, a concurrent
 * update of the same row (another writer marking it) is a serialization
 * failure, which is retried with a newer snapshot instead of failing the
 * writer: no build can be that concurrent updater, since it would need the
 * lock the writer holds.
 *
 * Privileges.  The UPDATE runs as the owner of amqfilter_partition_filter,
 * in a security-restricted operation, as foreign-key checks run as the
 * referenced table's owner: a writer needs no privilege on that table.
 *
 * XXX amqfilter_partition_written must be callable by every writer, since
 * the condition runs as the writer.  A writer who calls it by hand for a
 * partition before writing there keeps the rest of that transaction's writes
 * from marking the filter stale; only someone who may write the partition
 * can do that.
 */
#include "postgres.h"

#include "access/xact.h"
#include "catalog/pg_class.h"
#include "commands/trigger.h"
#include "executor/spi.h"
#include "miscadmin.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"
#include "utils/syscache.h"

#include "filter_glue.h"

PG_FUNCTION_INFO_V1(amqfilter_partition_check);
PG_FUNCTION_INFO_V1(amqfilter_partition_written);
PG_FUNCTION_INFO_V1(amqfilter_partition_pending);
PG_FUNCTION_INFO_V1(amqfilter_partition_forget);
PG_FUNCTION_INFO_V1(amqfilter_partition_mark);

/* The table of filters; it lives in the schema of this file's functions. */
#define FILTER_TABLE "amqfilter_partition_filter"

/* Serialization failures retried by one mark before giving up. */
#define MARK_RETRIES 5

/*
 * Partitions whose mark is queued in the current transaction, each with the
 * subtransaction that queued it.
 */
typedef struct WrittenPartition
{
	Oid			partition;
	SubTransactionId subid;
} WrittenPartition;

static WrittenPartition *written = NULL;
static int	nwritten = 0;
static int	written_room = 0;
static bool callbacks_registered = false;

static void
forget_written(void)
{
	nwritten = 0;
}

static void
written_xact_callback(XactEvent event, void *arg)
{
	forget_written();
}

/*
 * An aborted subtransaction takes its queued events with it: forget what it
 * and its children (whose ids are larger) queued.
 */
static void
written_subxact_callback(SubXactEvent event, SubTransactionId mySubid,
						 SubTransactionId parentSubid, void *arg)
{
	int			i,
				kept = 0;

	if (event != SUBXACT_EVENT_ABORT_SUB)
		return;
	for (i = 0; i < nwritten; i++)
		if (written[i].subid < mySubid)
			written[kept++] = written[i];
	nwritten = kept;
}

/* True if a mark of the partition is queued in the current transaction. */
static bool
is_written(Oid rel)
{
	int			i;

	/* the row just written is the likeliest: check the newest entry first */
	for (i = nwritten - 1; i >= 0; i--)
		if (written[i].partition == rel)
			return true;
	return false;
}

/*
 * amqfilter_partition_check(parent regclass, column_name name) -> regtype:
 * the column's type, after checking that parent is a table, the column
 * exists and its values can be members of a filter.
 */
Datum
amqfilter_partition_check(PG_FUNCTION_ARGS)
{
	Oid			rel;
	char	   *column;
	char		relkind;
	AttrNumber	attnum;
	Oid			type;
	int32		typmod;
	Oid			collation;

	if (PG_ARGISNULL(0) || PG_ARGISNULL(1))
		ereport(ERROR,
				(errcode(ERRCODE_NULL_VALUE_NOT_ALLOWED),
				 errmsg("parent and column_name must not be null")));
	rel = PG_GETARG_OID(0);
	column = NameStr(*PG_GETARG_NAME(1));

	relkind = get_rel_relkind(rel);
	if (relkind == '\0')
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation with OID %u does not exist", rel)));
	if (relkind != RELKIND_RELATION && relkind != RELKIND_PARTITIONED_TABLE)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not a table", get_rel_name(rel)),
				 errdetail("Partition filters are built for tables and partitioned tables.")));

	attnum = get_attnum(rel, column);
	if (attnum == InvalidAttrNumber || attnum < 0)
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_COLUMN),
				 errmsg("column \"%s\" of relation \"%s\" does not exist",
						column, get_rel_name(rel))));

	get_atttypetypmodcoll(rel, attnum, &type, &typmod, &collation);
	amq_check_hashable(type, collation);
	PG_RETURN_OID(type);
}

/*
 * amqfilter_partition_written(partition regclass) -> boolean: true the first
 * time it is called for a partition in a transaction (the condition of the
 * partition's trigger, which then queues its one event), false afterwards.
 */
Datum
amqfilter_partition_written(PG_FUNCTION_ARGS)
{
	Oid			rel = PG_GETARG_OID(0);

	if (is_written(rel))
		PG_RETURN_BOOL(false);

	if (!callbacks_registered)
	{
		RegisterXactCallback(written_xact_callback, NULL);
		RegisterSubXactCallback(written_subxact_callback, NULL);
		callbacks_registered = true;
	}
	if (nwritten == written_room)
	{
		int			room = written_room == 0 ? 16 : written_room * 2;

		written = written == NULL
			? MemoryContextAlloc(TopMemoryContext, room * sizeof(WrittenPartition))
			: repalloc(written, room * sizeof(WrittenPartition));
		written_room = room;
	}
	written[nwritten].partition = rel;
	written[nwritten].subid = GetCurrentSubTransactionId();
	nwritten++;
	PG_RETURN_BOOL(true);
}

/*
 * amqfilter_partition_pending(partition regclass) -> boolean: true if this
 * transaction wrote the partition since its last build in it.  Its mark is
 * made only at commit, and until then the transaction itself sees its own
 * rows there: lookups in it must scan the partition.
 */
Datum
amqfilter_partition_pending(PG_FUNCTION_ARGS)
{
	PG_RETURN_BOOL(is_written(PG_GETARG_OID(0)));
}

/*
 * amqfilter_partition_forget(): empties the list, so that the next write to
 * any partition in this transaction queues its mark again.  Called by
 * bloom_partition_build after recording fresh filters.
 */
Datum
amqfilter_partition_forget(PG_FUNCTION_ARGS)
{
	forget_written();
	PG_RETURN_VOID();
}

/* Sets the stale flag of partition's filters, with the latest snapshot. */
static void
mark_stale(const char *sql, Oid partition)
{
	SPIPlanPtr	plan;
	Oid			argtype = REGCLASSOID;
	Datum		arg = ObjectIdGetDatum(partition);
	int			rc;

	if (SPI_connect() != SPI_OK_CONNECT)
		elog(ERROR, "SPI_connect failed");
	plan = SPI_prepare(sql, 1, &argtype);
	if (plan == NULL)
		elog(ERROR, "SPI_prepare failed: %s", SPI_result_code_string(SPI_result));
	rc = SPI_execute_snapshot(plan, &arg, NULL, GetLatestSnapshot(),
							  InvalidSnapshot, false, false, 0);
	if (rc != SPI_OK_UPDATE)
		elog(ERROR, "SPI_execute_snapshot failed: %s", SPI_result_code_string(rc));
	SPI_finish();
}

/*
 * As mark_stale, retrying serialization failures (REPEATABLE READ and
 * SERIALIZABLE, when another writer marked the row concurrently) in a
 * subtransaction each.
 */
static void
mark_stale_retrying(const char *sql, Oid partition)
{
	MemoryContext cxt = CurrentMemoryContext;
	ResourceOwner owner = CurrentResourceOwner;
	int			attempt;

	for (attempt = 1;; attempt++)
	{
		BeginInternalSubTransaction(NULL);
		MemoryContextSwitchTo(cxt);
		PG_TRY();
		{
			mark_stale(sql, partition);
			ReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
		}
		PG_CATCH();
		{
			ErrorData  *edata;

			MemoryContextSwitchTo(cxt);
			edata = CopyErrorData();
			if (edata->sqlerrcode != ERRCODE_T_R_SERIALIZATION_FAILURE ||
				attempt >= MARK_RETRIES)
				PG_RE_THROW();
			FlushErrorState();
			FreeErrorData(edata);
			RollbackAndReleaseCurrentSubTransaction();
			MemoryContextSwitchTo(cxt);
			CurrentResourceOwner = owner;
			continue;
		}
		PG_END_TRY();
		break;
	}
}

/*
 * amqfilter_partition_mark() trigger: the deferred event a partition's first
 * write in a transaction queued.  Marks the partition's filters stale, as the
 * owner of the filter table.
 */
Datum
amqfilter_partition_mark(PG_FUNCTION_ARGS)
{
	TriggerData *trigdata = (TriggerData *) fcinfo->context;
	Oid			nsp;
	Oid			table;
	HeapTuple	tup;
	Oid			table_owner;
	Oid			save_userid;
	int			save_sec_context;
	char	   *sql;

	if (!CALLED_AS_TRIGGER(fcinfo) ||
		!TRIGGER_FIRED_AFTER(trigdata->tg_event) ||
		!TRIGGER_FIRED_FOR_ROW(trigdata->tg_event))
		ereport(ERROR,
				(errcode(ERRCODE_E_R_I_E_TRIGGER_PROTOCOL_VIOLATED),
				 errmsg("amqfilter_partition_mark must be called as an AFTER ROW trigger")));

	nsp = get_func_namespace(fcinfo->flinfo->fn_oid);
	table = get_relname_relid(FILTER_TABLE, nsp);
	if (!OidIsValid(table))
		ereport(ERROR,
				(errcode(ERRCODE_UNDEFINED_TABLE),
				 errmsg("relation \"%s\" does not exist in the schema of amqfilter_partition_mark",
						FILTER_TABLE)));
	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(table));
	if (!HeapTupleIsValid(tup))
		elog(ERROR, "cache lookup failed for relation %u", table);
	table_owner = ((Form_pg_class) GETSTRUCT(tup))->relowner;
	ReleaseSysCache(tup);

	sql = psprintf("UPDATE %s.%s SET stale = true WHERE partition = $1 AND NOT stale",
				   quote_identifier(get_namespace_name(nsp)), FILTER_TABLE);

	GetUserIdAndSecContext(&save_userid, &save_sec_context);
	SetUserIdAndSecContext(table_owner, save_sec_context |
						   SECURITY_LOCAL_USERID_CHANGE |
						   SECURITY_RESTRICTED_OPERATION);
	if (IsolationUsesXactSnapshot())
		mark_stale_retrying(sql, RelationGetRelid(trigdata->tg_relation));
	else
		mark_stale(sql, RelationGetRelid(trigdata->tg_relation));
	SetUserIdAndSecContext(save_userid, save_sec_context);

	pfree(sql);
	return PointerGetDatum(NULL);
}
