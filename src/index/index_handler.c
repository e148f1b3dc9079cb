/*
 * index_handler.c
 *		The amqfilter index access method's handler, which names the
 *		callbacks of the other files of index/, its operator class
 *		validation, its vacuum callbacks, and the setup of its settings and
 *		hooks (from _PG_init).  The top of index/, with index_sql.c.
 *
 * What the index is for.  For each value of a column it knows the block
 * ranges of the table that may hold it: a lookup of a value the table
 * holds reads those few blocks, as a btree lookup reads the blocks its
 * entries point to, at a fraction of a btree's size (an entry is 4 bytes,
 * a fingerprint and a range number, where a btree's is the key and a
 * tuple identifier); a value the table does not hold reads nothing, which
 * on a partitioned table skips every partition that cannot hold it.
 * PostgreSQL keeps it current on every write path (INSERT, COPY, UPDATE,
 * logical replication apply, crash recovery and physical standbys through
 * WAL, rewrites through REINDEX), and the planner uses it for plain
 * "column = value" and "column = ANY (array)", with constants, in generic
 * plans and on the inner side of a nested loop.
 *
 * The scan returns the ranges' blocks, lossy, and the heap recheck keeps
 * answers exact (index_scan.c).  Deletes and updates leave entries
 * as they are: a range whose rows are gone may still say "maybe" until a
 * REINDEX, never the reverse.
 */
#include "postgres.h"

#include "access/amapi.h"
#include "access/htup_details.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/vacuum.h"
#include "storage/bufmgr.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/guc.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/syscache.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

PG_FUNCTION_INFO_V1(amqfilter_index_handler);

/* Defines the index's setting and options, and installs its hooks (from _PG_init). */
void
amq_index_init(void)
{
	DefineCustomIntVariable("amqfilter.index_seed",
							"Fixes the seed of the amqfilter indexes built while it is set (0: a random one).",
							"For tests whose output shows answers for absent values: with a fixed "
							"seed they repeat.  Where keys go is then known to whoever knows the "
							"setting: leave it 0 in production.",
							&amq_index_seed_setting, 0, INT_MIN, INT_MAX,
							PGC_SUSET, 0, NULL, NULL, NULL);
	amq_index_register_options();
	amq_index_skip_init();
	amq_index_options_init();
}

/*
 * Vacuum has nothing to remove: the filter holds no tuple identifiers, and
 * a deleted value only leaves a "maybe".  It reports what an index reports.
 */
static IndexBulkDeleteResult *
amq_index_bulkdelete(IndexVacuumInfo *info, IndexBulkDeleteResult *stats,
					 IndexBulkDeleteCallback callback, void *callback_state)
{
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	return stats;
}

static IndexBulkDeleteResult *
amq_index_vacuumcleanup(IndexVacuumInfo *info, IndexBulkDeleteResult *stats)
{
	if (info->analyze_only)
		return stats;
	if (stats == NULL)
		stats = (IndexBulkDeleteResult *) palloc0(sizeof(IndexBulkDeleteResult));
	stats->num_pages = RelationGetNumberOfBlocks(info->index);
	/* one entry per table row, as far as the planner is concerned */
	stats->num_index_tuples = info->num_heap_tuples;
	stats->estimated_count = info->estimated_count;
	return stats;
}

/* An operator family's name, for messages. */
static const char *
family_name(Oid opfamily)
{
	HeapTuple	tup = SearchSysCache1(OPFAMILYOID, ObjectIdGetDatum(opfamily));
	char	   *name;

	if (!HeapTupleIsValid(tup))
		return "?";
	name = pstrdup(NameStr(((Form_pg_opfamily) GETSTRUCT(tup))->opfname));
	ReleaseSysCache(tup);
	return name;
}

/*
 * Checks an operator class: its operators are boolean equality of the
 * class's types, strategy 1, and its support function the type's extended
 * hash, (type, int8) -> int8.
 */
static bool
amq_index_validate(Oid opclassoid)
{
	HeapTuple	classtup = SearchSysCache1(CLAOID, ObjectIdGetDatum(opclassoid));
	Form_pg_opclass classform;
	Oid			opfamily;
	CatCList   *oprlist;
	CatCList   *proclist;
	bool		result = true;
	int			i;

	if (!HeapTupleIsValid(classtup))
		elog(ERROR, "cache lookup failed for operator class %u", opclassoid);
	classform = (Form_pg_opclass) GETSTRUCT(classtup);
	opfamily = classform->opcfamily;
	oprlist = SearchSysCacheList1(AMOPSTRATEGY, ObjectIdGetDatum(opfamily));
	proclist = SearchSysCacheList1(AMPROCNUM, ObjectIdGetDatum(opfamily));

	for (i = 0; i < oprlist->n_members; i++)
	{
		Form_pg_amop op = (Form_pg_amop) GETSTRUCT(&oprlist->members[i]->tuple);

		if (op->amopstrategy != AMQ_INDEX_EQUAL || op->amoppurpose != AMOP_SEARCH ||
			get_op_rettype(op->amopopr) != BOOLOID)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("amqfilter operator family \"%s\" contains operator %s that is not boolean equality with strategy 1",
							family_name(opfamily),
							format_operator(op->amopopr))));
			result = false;
		}
	}
	for (i = 0; i < proclist->n_members; i++)
	{
		Form_pg_amproc proc = (Form_pg_amproc) GETSTRUCT(&proclist->members[i]->tuple);

		if (proc->amprocnum != AMQ_INDEX_HASH_PROC ||
			get_func_rettype(proc->amproc) != INT8OID ||
			get_func_nargs(proc->amproc) != 2)
		{
			ereport(INFO,
					(errcode(ERRCODE_INVALID_OBJECT_DEFINITION),
					 errmsg("amqfilter operator family \"%s\" contains function %s that is not an extended hash function with support number 1",
							family_name(opfamily),
							format_procedure(proc->amproc))));
			result = false;
		}
	}
	ReleaseCatCacheList(proclist);
	ReleaseCatCacheList(oprlist);
	ReleaseSysCache(classtup);
	return result;
}

/*
 * The access method's routine.  The fields it does not name are false or
 * NULL, the fields added since 15 among them: amsummarizing,
 * amcanbuildparallel, aminsertcleanup (17), amcanhash,
 * amconsistentequality, amconsistentordering, amgettreeheight and the
 * strategy translations (18).
 */
static const IndexAmRoutine amq_index_routine = {
	.type = T_IndexAmRoutine,
	.amstrategies = AMQ_INDEX_NSTRATEGIES,
	.amsupport = AMQ_INDEX_NPROCS,
	.amoptsprocnum = 0,
	.amcanorder = false,
	.amcanorderbyop = false,
	.amcanbackward = false,
	.amcanunique = false,
	.amcanmulticol = false,
	.amoptionalkey = false,
	.amsearcharray = true,
	.amsearchnulls = false,
	.amstorage = false,
	.amclusterable = false,
	.ampredlocks = false,
	.amcanparallel = false,
	.amcaninclude = false,
	.amusemaintenanceworkmem = true,
	.amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_CLEANUP,
	.amkeytype = InvalidOid,

	.ambuild = amq_index_build,
	.ambuildempty = amq_index_buildempty,
	.aminsert = amq_index_insert,
	.ambulkdelete = amq_index_bulkdelete,
	.amvacuumcleanup = amq_index_vacuumcleanup,
	.amcanreturn = NULL,
	.amcostestimate = amq_index_costestimate,
	.amoptions = amq_index_options,
	.amproperty = NULL,
	.ambuildphasename = NULL,
	.amvalidate = amq_index_validate,
	.amadjustmembers = NULL,
	.ambeginscan = amq_index_beginscan,
	.amrescan = amq_index_rescan,
	.amgettuple = amq_index_gettuple,
	.amgetbitmap = amq_index_getbitmap,
	.amendscan = amq_index_endscan,
	.ammarkpos = NULL,
	.amrestrpos = NULL,
	.amestimateparallelscan = NULL,
	.aminitparallelscan = NULL,
	.amparallelrescan = NULL,
};

/* amqfilter_index_handler(internal) -> index_am_handler */
Datum
amqfilter_index_handler(PG_FUNCTION_ARGS)
{
	return amq_index_am_routine_datum(&amq_index_routine);
}
