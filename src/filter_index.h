/*
 * filter_index.h
 *		The amqfilter index access method: a bloom filter of a column, on
 *		index pages, that PostgreSQL keeps current on every write path.
 *
 * On disk (docs/format.md, "The filter index"): block 0 is the metapage, the
 * rest hold the generations of a paged blocked bloom filter
 * (core/amq_bloom_paged.h), each a run of consecutive pages.  A data page
 * has a small header (the page's generation and how many of its bits are
 * set) and blocks_per_page 64-byte blocks after it, starting at byte 64 of
 * the page.  Every page is a standard page.  A data page that has bits set
 * has pd_lower and pd_upper both at its end: it has no hole, so generic WAL
 * logs every byte that changed; a new, empty one has its blocks as its hole
 * (pd_lower at byte 64), which its full-page image leaves out.
 *
 * Prototypes are grouped by the file that defines them:
 *	filter_index.c			the handler, options, metapage, validation, and
 *							the SQL functions around the index
 *	filter_index_build.c	building, and writing new pages
 *	filter_index_insert.c	inserting, in batches, and growing
 *	filter_index_scan.c		probing, scans and the planner's cost estimate
 */
#ifndef FILTER_INDEX_H
#define FILTER_INDEX_H

#include "postgres.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "nodes/pathnodes.h"
#include "storage/block.h"
#include "utils/array.h"
#include "utils/relcache.h"

#include "core/amq_bloom.h"
#include "core/amq_bloom_paged.h"

#define AMQ_INDEX_MAGIC			0x414D5149	/* "AMQI" */
#define AMQ_INDEX_VERSION		1
#define AMQ_INDEX_METAPAGE		0
/* where a data page's blocks begin: past the page header and ours */
#define AMQ_INDEX_BLOCKS_OFFSET	64
#define AMQ_INDEX_BLOCKS_PER_PAGE	((BLCKSZ - AMQ_INDEX_BLOCKS_OFFSET) / AMQ_BLOCK_BYTES)
/* the seed every value is hashed with (the format allows any) */
#define AMQ_INDEX_SEED			UINT64CONST(0x616d71696e646578)	/* "amqindex" */
/* the support function: the type's extended (64-bit, seeded) hash */
#define AMQ_INDEX_HASH_PROC		1
#define AMQ_INDEX_NPROCS		1
/* the one strategy: equality */
#define AMQ_INDEX_EQUAL			1
#define AMQ_INDEX_NSTRATEGIES	1
/* headroom the build leaves over the distinct values it saw */
#define AMQ_INDEX_HEADROOM		1.1
/* the option's default */
#define AMQ_INDEX_DEFAULT_FPR	0.01

/* One generation, as the metapage records it. */
typedef struct AmqIndexGen
{
	BlockNumber first;			/* its first page */
	uint32		npages;
	uint32		hashes;			/* k */
	uint32		fill_limit;		/* set bits at which a page is full */
	uint64		capacity;		/* distinct values it is sized for */
	double		p;				/* its target rate */
} AmqIndexGen;

/* The metapage's contents. */
typedef struct AmqIndexMeta
{
	uint32		magic;
	uint32		version;
	uint32		blocks_per_page;
	uint32		ngens;
	uint64		seed;
	double		p;				/* the index's false_positive_rate at build */
	uint64		build_distinct; /* distinct values the build hashed */
	uint64		build_values;	/* non-null values the build hashed */
	AmqIndexGen gens[AMQ_PAGED_MAX_GENS];
} AmqIndexMeta;

/* A data page's own header, after the standard page header. */
typedef struct AmqIndexPageHeader
{
	uint32		magic;
	uint16		gen;			/* the generation the page belongs to */
	uint16		flags;			/* zero */
	uint32		nset;			/* bits set on the page */
} AmqIndexPageHeader;

StaticAssertDecl(MAXALIGN(SizeOfPageHeaderData) + sizeof(AmqIndexPageHeader) <=
				 AMQ_INDEX_BLOCKS_OFFSET, "page header overlaps the blocks");
StaticAssertDecl(MAXALIGN(SizeOfPageHeaderData) + sizeof(AmqIndexMeta) <= BLCKSZ,
				 "metapage too large");

#define AmqIndexPageGetMeta(page) \
	((AmqIndexMeta *) PageGetContents(page))
#define AmqIndexPageGetHeader(page) \
	((AmqIndexPageHeader *) PageGetContents(page))
#define AmqIndexPageGetBlock(page, i) \
	((uint8 *) (page) + AMQ_INDEX_BLOCKS_OFFSET + (Size) (i) * AMQ_BLOCK_BYTES)

/* The reloptions of an index. */
typedef struct AmqIndexOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	double		false_positive_rate;
} AmqIndexOptions;

/* filter_index.c */
extern void amq_index_init_page_whole(Page page);
extern void amq_index_init_page(Page page, uint16 gen);
extern void amq_index_page_make_whole(Page page);
extern void amq_index_read_meta(Relation index, AmqIndexMeta *meta);
extern void amq_index_gen_from_geometry(AmqIndexGen *gen, BlockNumber first,
										const amq_paged_gen *g);
extern void amq_index_geometry(const AmqIndexGen *gen, amq_paged_gen *g);
extern double amq_index_option_fpr(Relation index);

/* filter_index_build.c */
extern IndexBuildResult *amq_index_build(Relation heap, Relation index,
										 struct IndexInfo *indexInfo);
extern void amq_index_buildempty(Relation index);
extern uint64 amq_index_hash(FmgrInfo *proc, Oid collation, Datum value);
extern void amq_index_write_new_page(Relation index, BlockNumber expected,
									 Page contents);
extern void amq_index_write_empty_gen(Relation index, BlockNumber first,
									  const AmqIndexGen *g, uint16 gen);
extern void amq_index_size_gen(Relation index, uint64 capacity, double p,
							   unsigned gen, BlockNumber first, AmqIndexGen *out);

/* filter_index_insert.c */
extern bool amq_index_insert(Relation index, Datum *values, bool *isnull,
							 ItemPointer ht_ctid, Relation heapRel,
							 IndexUniqueCheck checkUnique,
#if PG_VERSION_NUM >= 140000
							 bool indexUnchanged,
#endif
							 struct IndexInfo *indexInfo);
extern void amq_index_flush(Oid indexoid);

/* filter_index_scan.c */
extern bool amq_index_may_contain(Relation index, const AmqIndexMeta *meta,
								  uint64 hash);
extern bool amq_index_may_contain_any(Relation index, const AmqIndexMeta *meta,
									  FmgrInfo *proc, ArrayType *array);
extern FmgrInfo *amq_index_hash_proc(Relation index, Oid type,
									 MemoryContext cxt);
extern IndexScanDesc amq_index_beginscan(Relation index, int nkeys, int norderbys);
extern void amq_index_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
							 ScanKey orderbys, int norderbys);
extern int64 amq_index_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern void amq_index_endscan(IndexScanDesc scan);
extern void amq_index_costestimate(PlannerInfo *root, IndexPath *path,
								   double loop_count, Cost *indexStartupCost,
								   Cost *indexTotalCost,
								   Selectivity *indexSelectivity,
								   double *indexCorrelation,
								   double *indexPages);

#endif							/* FILTER_INDEX_H */
