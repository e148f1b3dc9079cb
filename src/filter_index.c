/*
 * filter_index.c
 *		The amqfilter index access method: its handler, its options, the
 *		metapage, operator class validation, and the SQL functions that
 *		read an index (amqfilter_index_info, bloom_index_contains).
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
 * answers exact (filter_index_scan.c).  Deletes and updates leave entries
 * as they are: a range whose rows are gone may still say "maybe" until a
 * REINDEX, never the reverse.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/htup_details.h"
#include "access/reloptions.h"
#include "catalog/index.h"
#include "catalog/pg_inherits.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_amproc.h"
#include "catalog/pg_opclass.h"
#include "catalog/pg_opfamily.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "commands/vacuum.h"
#include "funcapi.h"
#include "miscadmin.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/acl.h"
#include "utils/builtins.h"
#include "utils/guc.h"
#include "utils/catcache.h"
#include "utils/lsyscache.h"
#include "utils/regproc.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/ruleutils.h"
#include "utils/syscache.h"
#include "access/sysattr.h"
#include "access/table.h"
#include "access/transam.h"
#include "optimizer/optimizer.h"
#include "utils/snapmgr.h"

#include "amqfilter.h"
#include "filter_index.h"

PG_FUNCTION_INFO_V1(amqfilter_index_handler);
PG_FUNCTION_INFO_V1(amqfilter_index_info);
PG_FUNCTION_INFO_V1(amqfilter_index_candidates);
PG_FUNCTION_INFO_V1(bloom_index_contains);

static relopt_kind amq_relopt_kind;
static relopt_parse_elt amq_relopt_tab[3];
static bool amq_relopt_registered = false;

/*
 * Registers the index's option, the first time an index's options are
 * parsed in this backend (the library is loaded by then: the handler that
 * names the parser is in it).
 */
static void
register_options(void)
{
	if (amq_relopt_registered)
		return;
	amq_relopt_kind = add_reloption_kind();
	add_real_reloption(amq_relopt_kind, "false_positive_rate",
					   "The rate of \"maybe\" answers for values the column does not hold",
					   AMQ_INDEX_DEFAULT_FPR, 1e-6, 0.5
#if PG_VERSION_NUM >= 130000
					   ,AccessExclusiveLock
#endif
		);
	add_int_reloption(amq_relopt_kind, "max_generations",
					  "Generations the index may grow to; past the last, pages that fill answer \"everywhere\" instead of the index growing",
					  AMQ_INDEX_DEFAULT_MAX_GENS, 1, AMQ_INDEX_MAX_GENS
#if PG_VERSION_NUM >= 130000
					  ,AccessExclusiveLock
#endif
		);
	add_int_reloption(amq_relopt_kind, "pages_per_range",
					  "Table blocks per range a lookup reads; 0 chooses from the table's size",
					  0, 0, 1 << 20
#if PG_VERSION_NUM >= 130000
					  ,AccessExclusiveLock
#endif
		);
	amq_relopt_tab[0].optname = "false_positive_rate";
	amq_relopt_tab[0].opttype = RELOPT_TYPE_REAL;
	amq_relopt_tab[0].offset = offsetof(AmqIndexOptions, false_positive_rate);
	amq_relopt_tab[1].optname = "max_generations";
	amq_relopt_tab[1].opttype = RELOPT_TYPE_INT;
	amq_relopt_tab[1].offset = offsetof(AmqIndexOptions, max_generations);
	amq_relopt_tab[2].optname = "pages_per_range";
	amq_relopt_tab[2].opttype = RELOPT_TYPE_INT;
	amq_relopt_tab[2].offset = offsetof(AmqIndexOptions, pages_per_range);
	amq_relopt_registered = true;
}

static bytea *
amq_index_options(Datum reloptions, bool validate)
{
	register_options();
	return (bytea *) build_reloptions(reloptions, validate, amq_relopt_kind,
									  sizeof(AmqIndexOptions), amq_relopt_tab,
									  lengthof(amq_relopt_tab));
}

/* Defines the index's settings (from _PG_init). */
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
	amq_index_skip_init();
	amq_index_options_init();
}

/* The index's false_positive_rate option, or its default. */
double
amq_index_option_fpr(Relation index)
{
	AmqIndexOptions *opts = (AmqIndexOptions *) index->rd_options;

	return opts != NULL ? opts->false_positive_rate : AMQ_INDEX_DEFAULT_FPR;
}

/* The index's max_generations option, or its default. */
int
amq_index_option_max_gens(Relation index)
{
	AmqIndexOptions *opts = (AmqIndexOptions *) index->rd_options;

	return opts != NULL ? opts->max_generations : AMQ_INDEX_DEFAULT_MAX_GENS;
}

/* The index's pages_per_range option: 0 (the default) lets the index choose. */
int
amq_index_option_pages_per_range(Relation index)
{
	AmqIndexOptions *opts = (AmqIndexOptions *) index->rd_options;

	return opts != NULL ? opts->pages_per_range : 0;
}

/* The geometry of the tables of an index's data pages. */
void
amq_index_geometry(const AmqIndexMeta *meta, amq_rt_geom *geom)
{
	if (!amq_rt_geometry(AMQ_INDEX_SLOT_BYTES, meta->fp_bits, geom))
		elog(ERROR, "fingerprints of %u bits do not fit an index page", meta->fp_bits);
}

/*
 * Initializes a page with no hole: pd_lower and pd_upper at its end, so
 * that generic WAL logs (and a standby replays) every byte of it.
 */
void
amq_index_init_page_whole(Page page)
{
	PageInit(page, BLCKSZ, 0);
	((PageHeader) page)->pd_lower = BLCKSZ;
	((PageHeader) page)->pd_upper = BLCKSZ;
}

/*
 * Initializes an empty data page of generation gen.  Its slots, all zero,
 * are left as the page's hole (pd_lower at the first slot): a full-page
 * image of a new generation's page then leaves them out of WAL.  The first
 * write of entries makes the page whole (amq_index_page_make_whole).
 */
void
amq_index_init_page(Page page, uint16 gen)
{
	AmqIndexPageHeader *hdr;

	PageInit(page, BLCKSZ, 0);
	((PageHeader) page)->pd_lower = AMQ_INDEX_SLOTS_OFFSET;
	hdr = AmqIndexPageGetHeader(page);
	memset(hdr, 0, sizeof(*hdr));
	hdr->magic = AMQ_INDEX_MAGIC;
	hdr->gen = gen;
}

/*
 * Makes a data page whole before entries are written to it: generic WAL
 * then logs the slots as data, not as a hole (the first such record
 * carries all of them, in place of the full-page image its creation did
 * not write).
 */
void
amq_index_page_make_whole(Page page)
{
	((PageHeader) page)->pd_lower = BLCKSZ;
}

/*
 * Errors (XX002) unless a page read back from disk is what the index wrote
 * there: every path that reads or writes a page checks it first, so that a
 * corrupted page is an error in the statement, never a wild write (generic
 * WAL trusts pd_lower and pd_upper to find the page's hole) or read.
 */
static void
page_corrupted(Relation index, BlockNumber blkno, const char *detail)
	pg_attribute_noreturn();

static void
page_corrupted(Relation index, BlockNumber blkno, const char *detail)
{
	ereport(ERROR,
			(errcode(ERRCODE_INDEX_CORRUPTED),
			 errmsg("page %u of index \"%s\" is corrupted",
					blkno, RelationGetRelationName(index)),
			 errdetail("%s", detail),
			 errhint("REINDEX it.")));
}

/*
 * Checks the metapage: its page header (a metapage has no hole), and what
 * it says, given as meta (a copy of it, or the page's own).  A metapage of
 * another format version is an error that says so.
 */
void
amq_index_check_meta(Relation index, Page page, const AmqIndexMeta *meta)
{
	PageHeader	ph = (PageHeader) page;
	uint32		i;

	if (ph->pd_upper == 0)
		page_corrupted(index, AMQ_INDEX_METAPAGE, "The metapage is all zeros.");
	if (ph->pd_lower != BLCKSZ || ph->pd_upper != BLCKSZ || ph->pd_special != BLCKSZ)
		page_corrupted(index, AMQ_INDEX_METAPAGE, "The metapage's header is not one the index writes.");
	if (meta->magic != AMQ_INDEX_MAGIC)
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("index \"%s\" is not an amqfilter index",
						RelationGetRelationName(index))));
	if (meta->version != AMQ_INDEX_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" has format version %u, this build reads version %d",
						RelationGetRelationName(index), meta->version, AMQ_INDEX_VERSION),
				 errhint("REINDEX it.")));
	if (meta->fp_bits < AMQ_RT_MIN_FP_BITS || meta->fp_bits > AMQ_INDEX_MAX_FP_BITS ||
		meta->ngens < 1 || meta->ngens > AMQ_INDEX_MAX_GENS)
		page_corrupted(index, AMQ_INDEX_METAPAGE, "Its geometry is out of range.");
	for (i = 0; i < meta->ngens; i++)
	{
		const AmqIndexGen *g = &meta->gens[i];

		if (g->first < 1 || g->npages < 1 || g->pages_per_range < 1 ||
			(uint64) g->first + g->npages > MaxBlockNumber ||
			(i > 0 && g->first < meta->gens[i - 1].first + meta->gens[i - 1].npages))
			page_corrupted(index, AMQ_INDEX_METAPAGE, "A generation is out of range.");
	}
}

/*
 * Checks a data page of generation gen: a data page has its blocks either
 * as its hole (new, pd_lower at the first block) or as data (pd_lower at
 * its end), no special space, and our header.
 */
void
amq_index_check_data_page(Relation index, Page page, BlockNumber blkno, uint32 gen)
{
	PageHeader	ph = (PageHeader) page;
	AmqIndexPageHeader *hdr = AmqIndexPageGetHeader(page);
	amq_rt_geom geom;

	if (PageIsNew(page))
		page_corrupted(index, blkno, "The page is all zeros.");
	if ((ph->pd_lower != AMQ_INDEX_SLOTS_OFFSET && ph->pd_lower != BLCKSZ) ||
		ph->pd_upper != BLCKSZ || ph->pd_special != BLCKSZ)
		page_corrupted(index, blkno, "The page's header is not one the index writes.");
	/* the counts a lookup indexes by do not depend on the fingerprint bits */
	amq_rt_geometry(AMQ_INDEX_SLOT_BYTES, AMQ_RT_MIN_FP_BITS, &geom);
	if (hdr->magic != AMQ_INDEX_MAGIC || hdr->gen != gen || hdr->flags != 0 ||
		!amq_rt_check_header(&geom, &hdr->table))
		ereport(ERROR,
				(errcode(ERRCODE_INDEX_CORRUPTED),
				 errmsg("page %u of index \"%s\" is not a page of generation %u",
						blkno, RelationGetRelationName(index), gen),
				 errhint("REINDEX it.")));
}

/*
 * Copies the metapage, after checking it: a page read back from disk is
 * checked before anything it says is used.
 */
void
amq_index_read_meta(Relation index, AmqIndexMeta *meta)
{
	Buffer		buf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	PageHeaderData header;

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	memcpy(&header, BufferGetPage(buf), SizeOfPageHeaderData);
	memcpy(meta, AmqIndexPageGetMeta(BufferGetPage(buf)), sizeof(AmqIndexMeta));
	UnlockReleaseBuffer(buf);
	amq_index_check_meta(index, (Page) &header, meta);
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

/* amqfilter_index_handler(internal) -> index_am_handler */
Datum
amqfilter_index_handler(PG_FUNCTION_ARGS)
{
	IndexAmRoutine *amroutine = makeNode(IndexAmRoutine);

	amroutine->amstrategies = AMQ_INDEX_NSTRATEGIES;
	amroutine->amsupport = AMQ_INDEX_NPROCS;
	amroutine->amoptsprocnum = 0;
	amroutine->amcanorder = false;
	amroutine->amcanorderbyop = false;
	amroutine->amcanbackward = false;
	amroutine->amcanunique = false;
	amroutine->amcanmulticol = false;
	amroutine->amoptionalkey = false;
	amroutine->amsearcharray = true;
	amroutine->amsearchnulls = false;
	amroutine->amstorage = false;
	amroutine->amclusterable = false;
	amroutine->ampredlocks = false;
	amroutine->amcanparallel = false;
	amroutine->amcaninclude = false;
	amroutine->amusemaintenanceworkmem = true;
#if PG_VERSION_NUM >= 170000
	amroutine->amsummarizing = false;
	amroutine->amcanbuildparallel = false;
#endif
	amroutine->amparallelvacuumoptions = VACUUM_OPTION_PARALLEL_CLEANUP;
	amroutine->amkeytype = InvalidOid;

	amroutine->ambuild = amq_index_build;
	amroutine->ambuildempty = amq_index_buildempty;
	amroutine->aminsert = amq_index_insert;
#if PG_VERSION_NUM >= 170000
	amroutine->aminsertcleanup = NULL;
#endif
	amroutine->ambulkdelete = amq_index_bulkdelete;
	amroutine->amvacuumcleanup = amq_index_vacuumcleanup;
	amroutine->amcanreturn = NULL;
	amroutine->amcostestimate = amq_index_costestimate;
	amroutine->amoptions = amq_index_options;
	amroutine->amproperty = NULL;
	amroutine->ambuildphasename = NULL;
	amroutine->amvalidate = amq_index_validate;
#if PG_VERSION_NUM >= 130000
	amroutine->amadjustmembers = NULL;
#endif
	amroutine->ambeginscan = amq_index_beginscan;
	amroutine->amrescan = amq_index_rescan;
	amroutine->amgettuple = NULL;
	amroutine->amgetbitmap = amq_index_getbitmap;
	amroutine->amendscan = amq_index_endscan;
	amroutine->ammarkpos = NULL;
	amroutine->amrestrpos = NULL;
	amroutine->amestimateparallelscan = NULL;
	amroutine->aminitparallelscan = NULL;
	amroutine->amparallelrescan = NULL;

	PG_RETURN_POINTER(amroutine);
}

/*
 * ----------------------------------------------------------------
 * SQL functions that read an index
 * ----------------------------------------------------------------
 */

/* Opens an index, its table locked first, as a query of the table locks. */
static Relation
open_any_index(Oid indexoid)
{
	Oid			heapoid = IndexGetRelation(indexoid, true);

	if (!OidIsValid(heapoid))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an index", get_rel_name(indexoid) ? get_rel_name(indexoid) : "?")));
	LockRelationOid(heapoid, AccessShareLock);
	return index_open(indexoid, AccessShareLock);
}

/*
 * Opens an amqfilter index for a SQL function (the checks that the caller
 * may learn from it what it summarizes, every value of the column, are
 * open_index_checked's).  Locked AccessShareLock.
 */
static Relation
open_index(Oid indexoid, const char *fname)
{
	Relation	index = open_any_index(indexoid);

	if (index->rd_rel->relkind != RELKIND_INDEX ||
		index->rd_indam->amgetbitmap != amq_index_getbitmap)
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an amqfilter index", RelationGetRelationName(index)),
				 errhint("%s takes an index created USING amqfilter (on a partitioned table, the index of one partition).",
						 fname)));
	return index;
}

/*
 * The index of a partitioned table, created USING amqfilter, with its table
 * locked first, as open_index.
 */
static Relation
open_partitioned_index(Oid indexoid, const char *fname)
{
	Relation	index = open_any_index(indexoid);

	if (index->rd_rel->relkind != RELKIND_PARTITIONED_INDEX ||
		index->rd_rel->relam != get_index_am_oid("amqfilter", false))
		ereport(ERROR,
				(errcode(ERRCODE_WRONG_OBJECT_TYPE),
				 errmsg("\"%s\" is not an amqfilter index", RelationGetRelationName(index)),
				 errhint("%s takes an index created USING amqfilter.", fname)));
	return index;
}

/*
 * True if userid may read every column the index reads: its key, and the
 * columns of its expression and of its predicate.  A partial index's
 * filter tells which values the rows matching its predicate hold, so a
 * role that may read the key but not the predicate's column would learn
 * that column's values from it.
 */
bool
amq_index_columns_readable(Relation index, Oid userid)
{
	Oid			heapoid = index->rd_index->indrelid;
	Bitmapset  *attrs = NULL;
	int			i;
	int			x = -1;

	if (pg_class_aclcheck(heapoid, userid, ACL_SELECT) == ACLCHECK_OK)
		return true;
	for (i = 0; i < index->rd_index->indnatts; i++)
		if (index->rd_index->indkey.values[i] != 0)
			attrs = bms_add_member(attrs, index->rd_index->indkey.values[i] -
								   FirstLowInvalidHeapAttributeNumber);
	pull_varattnos((Node *) RelationGetIndexExpressions(index), 1, &attrs);
	pull_varattnos((Node *) RelationGetIndexPredicate(index), 1, &attrs);
	while ((x = bms_next_member(attrs, x)) >= 0)
	{
		AttrNumber	attnum = x + FirstLowInvalidHeapAttributeNumber;

		/* a whole-row reference reads every column: the table's privilege */
		if (attnum == InvalidAttrNumber ||
			pg_attribute_aclcheck(heapoid, attnum, userid, ACL_SELECT) != ACLCHECK_OK)
			return false;
	}
	return true;
}

/*
 * Errors unless the current user may learn from the index what it
 * summarizes: every value of the column of every row it covers, so SELECT
 * on every column it reads, and no row security hiding rows of the table.
 */
static void
check_may_read(Relation index, const char *fname)
{
	Oid			heapoid = index->rd_index->indrelid;

	if (!amq_index_columns_readable(index, GetUserId()))
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("permission denied for table %s", get_rel_name(heapoid)),
				 errdetail("%s tells which values the indexed column holds in the rows the index covers: it needs SELECT on every column the index reads (its key, expressions and predicate).",
						   fname)));
	if (check_enable_rls(heapoid, InvalidOid, true) == RLS_ENABLED)
		ereport(ERROR,
				(errcode(ERRCODE_INSUFFICIENT_PRIVILEGE),
				 errmsg("row-level security hides rows of table %s from the current user",
						get_rel_name(heapoid)),
				 errdetail("The index summarizes every row, those the policies hide too.")));
}

/*
 * True if the index holds every row a snapshot of this transaction may see:
 * valid, ready and live, and not built after the snapshot over rows whose
 * older versions it may see (indcheckxmin).
 */
bool
amq_index_usable(Relation index)
{
	Form_pg_index ix = index->rd_index;

	return ix->indisvalid && ix->indisready && ix->indislive &&
		(!ix->indcheckxmin ||
		 TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
							   TransactionXmin));
}

/*
 * Errors unless the index holds every row the caller's snapshot sees, as
 * the planner requires of an index it uses: valid and ready (not one whose
 * build, or whose DROP INDEX CONCURRENTLY, did not finish: inserts may have
 * skipped it), and, if built over broken HOT chains (indcheckxmin), built
 * before every transaction this snapshot may not see.  An index that is not
 * may hold a row's new version only, where the caller sees the old one:
 * its "no" would be false.
 */
static void
check_usable(Relation index)
{
	Form_pg_index ix = index->rd_index;

	if (!ix->indisvalid || !ix->indisready || !ix->indislive)
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" is not valid", RelationGetRelationName(index)),
				 errdetail("Its build, or a DROP INDEX CONCURRENTLY, did not finish: it may miss rows."),
				 errhint("REINDEX it, or drop it.")));
	if (ix->indcheckxmin &&
		!TransactionIdPrecedes(HeapTupleHeaderGetXmin(index->rd_indextuple->t_data),
							   TransactionXmin))
		ereport(ERROR,
				(errcode(ERRCODE_OBJECT_NOT_IN_PREREQUISITE_STATE),
				 errmsg("index \"%s\" is too new for this transaction's snapshot",
						RelationGetRelationName(index)),
				 errdetail("It was built after this snapshot was taken, over rows whose older versions the snapshot may see and the index does not hold."),
				 errhint("Ask in a later transaction.")));
}

static Relation
open_index_checked(Oid indexoid, const char *fname)
{
	Relation	index = open_index(indexoid, fname);

	check_may_read(index, fname);
	return index;
}

/*
 * Errors unless a value of type under collation can be looked up in the
 * index.  The index hashes values under its column's collation.  That
 * answers for a value under any deterministic collation: values equal under
 * one are the same bytes, which are equal under every collation and hash
 * alike under the column's.  It cannot answer for one under a
 * nondeterministic collation other than the column's: values equal under
 * it ('apple' and 'APPLE' under a case-insensitive one) can hash apart
 * under the column's, and a "no" would then deny a value the probe's "="
 * finds.  That is an error, as for a filter (hashing.c), with the same
 * SQLSTATE.  (The planner never uses the index for a comparison under
 * another collation than the column's: a scan reads the table instead.)
 */
static void
check_value_collation(Relation index, Oid type, Oid collation)
{
	Oid			column_collation = index->rd_indcollation[0];

	if (!OidIsValid(collation) || collation == column_collation ||
		!type_is_collatable(type) || get_collation_isdeterministic(collation))
		return;
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("a value under collation %s cannot be looked up in index \"%s\" of a column under collation %s",
					generate_collation_name(collation), RelationGetRelationName(index),
					OidIsValid(column_collation) ?
					generate_collation_name(column_collation) : "\"default\""),
			 errdetail("The index hashes values under its column's collation, where values equal "
					   "under collation %s can hash apart, so it cannot answer for all the values "
					   "equal to this one.",
					   generate_collation_name(collation)),
			 errhint("Write the value under the column's collation: value COLLATE %s.",
					 OidIsValid(column_collation) ?
					 generate_collation_name(column_collation) : "\"default\"")));
}

/*
 * How the index hashes a value of type under collation: an error for a type
 * its operator family has no hash function for, or a collation it cannot
 * answer under (check_value_collation).
 */
static void
value_hasher(AmqIndexHasher *hasher, Relation index, Oid type, Oid collation,
			 MemoryContext cxt)
{
	if (!amq_index_hasher_init(hasher, index, type, cxt))
		ereport(ERROR,
				(errcode(ERRCODE_DATATYPE_MISMATCH),
				 errmsg("a value of type %s cannot be looked up in index \"%s\" of type %s",
						format_type_be(type), RelationGetRelationName(index),
						format_type_be(TupleDescAttr(RelationGetDescr(index), 0)->atttypid)),
				 errhint("Cast the value to %s.",
						 format_type_be(TupleDescAttr(RelationGetDescr(index), 0)->atttypid))));
	check_value_collation(index, type, collation);
}

/*
 * bloom_index_contains(index regclass, value anyelement) -> boolean: false
 * if the index rules the value out of its column, true ("maybe") if not.
 * NULL for a NULL value.  The key guard of plain SQL: as cheap as a probe
 * of a stored filter, and kept current by PostgreSQL.
 */
/*
 * What bloom_index_contains looks up once per call site: how values of the
 * argument's type hash (and that the value's collation suits the index),
 * and that the user may read the index, which a query's own privileges are
 * checked once per query too.
 */
typedef struct ContainsCache
{
	Oid			indexoid;
	Oid			type;
	Oid			userid;			/* checked for this user, this index */
	bool		have_hasher;
	AmqIndexHasher hasher;
} ContainsCache;

Datum
bloom_index_contains(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	ContainsCache *cache = (ContainsCache *) fcinfo->flinfo->fn_extra;
	Relation	index;
	AmqIndexMeta meta;
	bool		maybe;

	index = open_index(indexoid, "bloom_index_contains");
	if (cache == NULL)
		cache = fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(ContainsCache));
	if (cache->indexoid != indexoid || cache->userid != GetUserId())
	{
		check_may_read(index, "bloom_index_contains");
		cache->have_hasher = false;
		cache->indexoid = indexoid;
		cache->userid = GetUserId();
	}
	/* the index's state can change between calls: checked on every one */
	check_usable(index);
	if (!cache->have_hasher || cache->type != type)
	{
		value_hasher(&cache->hasher, index, type, PG_GET_COLLATION(), fcinfo->flinfo->fn_mcxt);
		cache->type = type;
		cache->have_hasher = true;
	}
	amq_index_flush(indexoid);
	amq_index_read_meta(index, &meta);
	maybe = amq_index_may_contain(index, &meta,
								  amq_index_hash(&cache->hasher, meta.seed,
												 PG_GETARG_DATUM(1)));
	index_close(index, AccessShareLock);
	PG_RETURN_BOOL(maybe);
}

/*
 * amqfilter_index_info(index regclass) -> SETOF (bytes, generations,
 *   entries, everywhere, pages_per_range, ranges, false_positive_rate,
 *   target_false_positive_rate, build_entries, saturated, partition_index)
 *
 * An index's size, its generations, its entries (one per value and range
 * it was seen in), those that say "everywhere" (a value in too many
 * ranges), the newest generation's pages_per_range and the ranges of the
 * table at it, the rate of "maybe" for an absent value now (from every
 * page's load: one minus the product over generations of the chance a
 * probe of it misses), against the target, the entries the build made, and
 * whether the index filled up without growing (AMQ_INDEX_SATURATED, or a
 * page out of room).  Reads every page, and checks each whole.
 *
 * The index of a partitioned table: a row for each partition's index, and
 * a total (partition_index NULL): sums, the largest generations, and as
 * rates the mean of the partitions' -- the share of partitions a lookup of
 * an absent value reads.  Its privileges are the partitioned table's, as
 * for a query of it.
 */
#define INFO_COLUMNS 11

typedef struct InfoTotal
{
	int64		bytes;
	int32		generations;
	int64		entries;
	int64		everywhere;
	int64		ranges;
	double		rate;
	double		target;
	double		target_min;
	double		target_max;
	int64		build_entries;
	bool		saturated;
	int			n;
} InfoTotal;

static void
index_info_row(Relation index, Datum *out, bool *nulls, InfoTotal *total)
{
	AmqIndexMeta meta;
	amq_rt_geom geom;
	uint64		entries = 0;
	uint64		everywhere = 0;
	double		miss = 1.0;
	bool		saturated;
	Relation	heap;
	BlockNumber heap_blocks;
	const AmqIndexGen *newest;
	uint32		i;
	int64		ranges;

	memset(nulls, 0, sizeof(bool) * INFO_COLUMNS);
	amq_index_flush(RelationGetRelid(index));
	amq_index_read_meta(index, &meta);
	amq_index_geometry(&meta, &geom);
	saturated = (meta.flags & AMQ_INDEX_SATURATED) != 0;
	for (i = 0; i < meta.ngens; i++)
	{
		const AmqIndexGen *g = &meta.gens[i];
		double		gen_rate = 0.0;
		uint32		pg;

		for (pg = 0; pg < g->npages; pg++)
		{
			Buffer		buf;
			Page		page;
			AmqIndexPageHeader *hdr;

			CHECK_FOR_INTERRUPTS();
			buf = ReadBuffer(index, g->first + pg);
			LockBuffer(buf, BUFFER_LOCK_SHARE);
			page = BufferGetPage(buf);
			amq_index_check_data_page(index, page, g->first + pg, i);
			hdr = AmqIndexPageGetHeader(page);
			if (!amq_rt_check(&geom, &hdr->table, AmqIndexPageGetSlots(page)))
				ereport(ERROR,
						(errcode(ERRCODE_INDEX_CORRUPTED),
						 errmsg("page %u of index \"%s\" is corrupted",
								g->first + pg, RelationGetRelationName(index)),
						 errdetail("Its counts disagree with its entries."),
						 errhint("REINDEX it.")));
			entries += hdr->table.nentries;
			everywhere += amq_rt_count_everywhere(&geom, &hdr->table,
												  AmqIndexPageGetSlots(page));
			gen_rate += amq_rt_false_match_rate(&geom, &hdr->table);
			saturated |= (hdr->table.flags & AMQ_RT_SATURATED) != 0;
			UnlockReleaseBuffer(buf);
		}
		miss *= 1.0 - gen_rate / g->npages;
	}
	newest = &meta.gens[meta.ngens - 1];
	heap = table_open(index->rd_index->indrelid, AccessShareLock);
	heap_blocks = RelationGetNumberOfBlocks(heap);
	table_close(heap, AccessShareLock);
	ranges = (int64) ((heap_blocks + newest->pages_per_range - 1) / newest->pages_per_range);
	out[0] = Int64GetDatum((int64) RelationGetNumberOfBlocks(index) * BLCKSZ);
	out[1] = Int32GetDatum((int32) meta.ngens);
	out[2] = Int64GetDatum((int64) entries);
	out[3] = Int64GetDatum((int64) everywhere);
	out[4] = Int32GetDatum((int32) newest->pages_per_range);
	out[5] = Int64GetDatum(ranges);
	out[6] = Float8GetDatum(1.0 - miss);
	out[7] = Float8GetDatum(meta.p);
	out[8] = Int64GetDatum((int64) meta.build_entries);
	out[9] = BoolGetDatum(saturated);
	out[10] = ObjectIdGetDatum(RelationGetRelid(index));

	total->bytes += (int64) RelationGetNumberOfBlocks(index) * BLCKSZ;
	total->generations = Max(total->generations, (int32) meta.ngens);
	total->entries += (int64) entries;
	total->everywhere += (int64) everywhere;
	total->ranges += ranges;
	total->rate += 1.0 - miss;
	total->target += meta.p;
	total->target_min = total->n == 0 ? meta.p : Min(total->target_min, meta.p);
	total->target_max = total->n == 0 ? meta.p : Max(total->target_max, meta.p);
	total->build_entries += (int64) meta.build_entries;
	total->saturated |= saturated;
	total->n++;
}

Datum
amqfilter_index_info(PG_FUNCTION_ARGS)
{
	Oid			indexoid = PG_GETARG_OID(0);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	Datum		out[INFO_COLUMNS];
	bool		nulls[INFO_COLUMNS];
	InfoTotal	total;
	Relation	index;

	InitMaterializedSRF(fcinfo, 0);
	memset(&total, 0, sizeof(total));
	if (get_rel_relkind(indexoid) != RELKIND_PARTITIONED_INDEX)
	{
		index = open_index_checked(indexoid, "amqfilter_index_info");
		index_info_row(index, out, nulls, &total);
		index_close(index, AccessShareLock);
		tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		PG_RETURN_NULL();
	}

	index = open_partitioned_index(indexoid, "amqfilter_index_info");
	check_may_read(index, "amqfilter_index_info");
	{
		List	   *children = find_all_inheritors(indexoid, NoLock, NULL);
		ListCell   *lc;

		foreach(lc, children)
		{
			Oid			child = lfirst_oid(lc);
			Relation	part;

			if (get_rel_relkind(child) != RELKIND_INDEX)
				continue;
			/* the partitioned table's privileges were checked */
			part = open_index(child, "amqfilter_index_info");
			index_info_row(part, out, nulls, &total);
			index_close(part, AccessShareLock);
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
		}
	}
	memset(nulls, 0, sizeof(nulls));
	out[0] = Int64GetDatum(total.bytes);
	out[1] = Int32GetDatum(total.generations);
	out[2] = Int64GetDatum(total.entries);
	out[3] = Int64GetDatum(total.everywhere);
	nulls[4] = true;
	out[5] = Int64GetDatum(total.ranges);
	out[6] = Float8GetDatum(total.n > 0 ? total.rate / total.n : 0.0);
	/* the partitions' target, or the mean of theirs if they differ */
	out[7] = Float8GetDatum(total.n == 0 ? amq_index_option_fpr(index) :
							total.target_min == total.target_max ? total.target_min :
							total.target / total.n);
	out[8] = Int64GetDatum(total.build_entries);
	out[9] = BoolGetDatum(total.saturated);
	nulls[10] = true;
	index_close(index, AccessShareLock);
	tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, out, nulls);
	PG_RETURN_NULL();
}

/*
 * amqfilter_index_candidates(index regclass, value anyelement) -> SETOF regclass
 *
 * The tables whose amqfilter index may hold value: for the index of a
 * partitioned table, each partition whose index does not rule it out, in
 * the order of their indexes' creation; for an index of one table, that
 * table or none.  A partition whose index cannot answer for the caller's
 * snapshot (invalid, not ready, too new) is named: a candidate is never
 * left out.  The privileges are bloom_index_contains', the partitioned
 * table's for a partitioned index.
 */
Datum
amqfilter_index_candidates(PG_FUNCTION_ARGS)
{
	const char *fname = "amqfilter_index_candidates";
	Oid			indexoid = PG_GETARG_OID(0);
	Oid			type = get_fn_expr_argtype(fcinfo->flinfo, 1);
	Datum		value = PG_GETARG_DATUM(1);
	ReturnSetInfo *rsinfo = (ReturnSetInfo *) fcinfo->resultinfo;
	List	   *indexes;
	Relation	top;
	ListCell   *lc;

	InitMaterializedSRF(fcinfo, MAT_SRF_USE_EXPECTED_DESC);
	if (get_rel_relkind(indexoid) == RELKIND_PARTITIONED_INDEX)
	{
		top = open_partitioned_index(indexoid, fname);
		check_may_read(top, fname);
		indexes = find_all_inheritors(indexoid, NoLock, NULL);
	}
	else
	{
		top = open_index_checked(indexoid, fname);
		indexes = list_make1_oid(indexoid);
	}
	foreach(lc, indexes)
	{
		Oid			child = lfirst_oid(lc);
		Relation	index;
		AmqIndexHasher hasher;
		bool		maybe = true;
		Datum		out;
		bool		isnull = false;

		CHECK_FOR_INTERRUPTS();
		if (get_rel_relkind(child) != RELKIND_INDEX)
			continue;
		index = child == indexoid ? top : open_index(child, fname);
		value_hasher(&hasher, index, type, PG_GET_COLLATION(), CurrentMemoryContext);
		if (amq_index_usable(index))
		{
			AmqIndexMeta meta;

			amq_index_flush(child);
			amq_index_read_meta(index, &meta);
			maybe = amq_index_may_contain(index, &meta,
										  amq_index_hash(&hasher, meta.seed, value));
		}
		out = ObjectIdGetDatum(index->rd_index->indrelid);
		if (index != top)
			index_close(index, AccessShareLock);
		if (maybe)
			tuplestore_putvalues(rsinfo->setResult, rsinfo->setDesc, &out, &isnull);
	}
	index_close(top, AccessShareLock);
	PG_RETURN_NULL();
}
