/*
 * index_meta.c
 *		What every part of the amqfilter index reads: its options, the
 *		metapage, the layout of its pages and the checks every path that
 *		reads or writes one makes first, and whether an index may answer for
 *		the caller at all (usable, readable).  The bottom of index/: it calls
 *		nothing else of it.
 */
#include "postgres.h"

#include "access/htup_details.h"
#include "access/reloptions.h"
#include "access/sysattr.h"
#include "access/transam.h"
#include "catalog/pg_class.h"
#include "miscadmin.h"
#include "optimizer/optimizer.h"
#include "storage/bufmgr.h"
#include "utils/acl.h"
#include "utils/rel.h"
#include "utils/snapmgr.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

static relopt_kind amq_relopt_kind;
static relopt_parse_elt amq_relopt_tab[3];
static bool amq_relopt_registered = false;

/*
 * Registers the index's options: when the library is loaded (_PG_init),
 * and at the latest the first time an index's options are parsed.  ALTER
 * INDEX takes the lock an option names (AccessExclusiveLock) only if the
 * option is registered when it picks the lock; for a name it does not know
 * it takes a weaker one.
 */
void
amq_index_register_options(void)
{
	if (amq_relopt_registered)
		return;
	amq_relopt_kind = add_reloption_kind();
	add_real_reloption(amq_relopt_kind, "false_positive_rate",
					   "The rate of \"maybe\" answers for values the column does not hold",
					   AMQ_INDEX_DEFAULT_FPR, 1e-6, 0.5, AccessExclusiveLock);
	add_int_reloption(amq_relopt_kind, "max_generations",
					  "Generations the index may grow to; past the last, pages that fill answer \"everywhere\" instead of the index growing",
					  AMQ_INDEX_DEFAULT_MAX_GENS, 1, AMQ_INDEX_MAX_GENS, AccessExclusiveLock);
	add_int_reloption(amq_relopt_kind, "pages_per_range",
					  "Table blocks per range a lookup reads; 0 chooses from the table's size",
					  0, 0, AMQ_INDEX_MAX_PAGES_PER_RANGE, AccessExclusiveLock);
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

bytea *
amq_index_options(Datum reloptions, bool validate)
{
	amq_index_register_options();
	return (bytea *) build_reloptions(reloptions, validate, amq_relopt_kind,
									  sizeof(AmqIndexOptions), amq_relopt_tab,
									  lengthof(amq_relopt_tab));
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
	/* an index of format 3 has none: its ranges use every bit */
	geom->spans = meta->version == AMQ_INDEX_VERSION;
	geom->lanes = meta->version == AMQ_INDEX_VERSION_LANES;
}

/* The geometry of generation gen's pages: the index's, and its row classes. */
void
amq_index_gen_geometry(const AmqIndexMeta *meta, uint32 gen, amq_rt_geom *geom)
{
	amq_index_geometry(meta, geom);
	geom->row_bits = meta->gens[gen].row_bits;
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
pg_noreturn static void
page_corrupted(Relation index, BlockNumber blkno, const char *detail);

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
	if (meta->version != AMQ_INDEX_VERSION && meta->version != AMQ_INDEX_VERSION_NO_SPANS &&
		meta->version != AMQ_INDEX_VERSION_LANES)
		ereport(ERROR,
				(errcode(ERRCODE_FEATURE_NOT_SUPPORTED),
				 errmsg("index \"%s\" has format version %u, this build reads versions %d to %d",
						RelationGetRelationName(index), meta->version,
						AMQ_INDEX_VERSION_NO_SPANS, AMQ_INDEX_VERSION_LANES),
				 errhint("REINDEX it.")));
	if (meta->fp_bits < AMQ_RT_MIN_FP_BITS || meta->fp_bits > AMQ_INDEX_MAX_FP_BITS ||
		meta->ngens < 1 || meta->ngens > AMQ_INDEX_MAX_GENS)
		page_corrupted(index, AMQ_INDEX_METAPAGE, "Its geometry is out of range.");
	if (meta->max_offset > MaxHeapTuplesPerPage)
		page_corrupted(index, AMQ_INDEX_METAPAGE, "Its greatest row offset is out of range.");
	/* the offsets of a row class: with row classes, 1 .. a page's rows */
	if (meta->class_span > MaxHeapTuplesPerPage ||
		(meta->class_span > 0 && meta->version != AMQ_INDEX_VERSION_LANES))
		page_corrupted(index, AMQ_INDEX_METAPAGE, "Its row classes' offsets are out of range.");
	for (i = 0; i < meta->ngens; i++)
	{
		const AmqIndexGen *g = &meta->gens[i];

		/* row classes only in format 5, of one-block ranges */
		if (g->row_bits > AMQ_INDEX_MAX_ROW_BITS ||
			(g->row_bits > 0 && (meta->version != AMQ_INDEX_VERSION_LANES ||
								 g->pages_per_range != 1 || meta->class_span == 0)))
			page_corrupted(index, AMQ_INDEX_METAPAGE, "A generation's row classes are out of range.");
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
 * True if the relation is an index of the amqfilter access method (its
 * options parser is ours), not merely one whose OID a caller was given.
 */
bool
amq_index_is_amqfilter(Relation index)
{
	return index->rd_rel->relkind == RELKIND_INDEX &&
		index->rd_indam->amoptions == amq_index_options;
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
