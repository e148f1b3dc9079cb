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
 *	filter_index_build.c	building, hashing values, and writing new pages
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
/*
 * 2: a seed of its own per index, integers hashed as 64-bit values, a count
 * of keys per generation, the metapage's flags
 */
#define AMQ_INDEX_VERSION		2
#define AMQ_INDEX_METAPAGE		0
/* where a data page's blocks begin: past the page header and ours */
#define AMQ_INDEX_BLOCKS_OFFSET	64
#define AMQ_INDEX_BLOCKS_PER_PAGE	((BLCKSZ - AMQ_INDEX_BLOCKS_OFFSET) / AMQ_BLOCK_BYTES)
/* the support function: the type's extended (64-bit, seeded) hash */
#define AMQ_INDEX_HASH_PROC		1
#define AMQ_INDEX_NPROCS		1
/* the one strategy: equality */
#define AMQ_INDEX_EQUAL			1
#define AMQ_INDEX_NSTRATEGIES	1
/* headroom the build leaves over the distinct values it saw */
#define AMQ_INDEX_HEADROOM		1.1
/*
 * the least capacity of a generation: an index built on an empty table
 * starts with a page's worth, not one value, so that growing to any number
 * of values takes few generations
 */
#define AMQ_INDEX_MIN_CAPACITY	4096
/* the options' defaults */
#define AMQ_INDEX_DEFAULT_FPR	0.01
#define AMQ_INDEX_DEFAULT_MAX_GENS	AMQ_PAGED_MAX_GENS

/* AmqIndexMeta.flags */
/*
 * the newest generation took keys past its capacity because the index could
 * not grow (max_generations, or the size limit): its rate of "maybe" is
 * above its share until a REINDEX
 */
#define AMQ_INDEX_SATURATED		0x0001

/* One generation, as the metapage records it. */
typedef struct AmqIndexGen
{
	BlockNumber first;			/* its first page */
	uint32		npages;
	uint32		hashes;			/* k */
	uint32		unused;			/* zero */
	uint64		capacity;		/* distinct values it is sized for */
	uint64		count;			/* keys that set a bit in it: it is full at
								 * capacity */
	double		p;				/* its target rate */
} AmqIndexGen;

/* The metapage's contents. */
typedef struct AmqIndexMeta
{
	uint32		magic;
	uint32		version;
	uint32		blocks_per_page;
	uint32		ngens;
	uint64		seed;			/* drawn at random by the build: where a key
								 * goes cannot be known outside the server */
	double		p;				/* the index's false_positive_rate at build */
	uint64		build_distinct; /* distinct values the build hashed */
	uint64		build_values;	/* non-null values the build hashed */
	uint32		flags;			/* AMQ_INDEX_SATURATED */
	uint32		unused;			/* zero */
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
	int			max_generations;
} AmqIndexOptions;

/*
 * How an index hashes values of one type: the support function of its
 * operator family for the type, under the column's collation, except
 *	- integers (int2, int4, int8 and the types hashed as they are): as
 *	  64-bit values, as the bloom type hashes them (amq_hash_int), so that
 *	  equal values of any width hash alike and distinct int8 values never
 *	  share a hash by folding;
 *	- a name under a nondeterministic collation: as text under it.  name's
 *	  hash ignores collations, while name = text (and text = name) compare
 *	  under them: 'ABC'::name equals 'abc' under a case-insensitive one.
 */
typedef struct AmqIndexHasher
{
	FmgrInfo	proc;
	Oid			collation;		/* the column's */
	int			int_width;		/* 2, 4 or 8 for an integer, else 0 */
	bool		name_as_text;
} AmqIndexHasher;

/* filter_index.c */
extern void amq_index_init(void);
extern void amq_index_init_page_whole(Page page);
extern void amq_index_init_page(Page page, uint16 gen);
extern void amq_index_page_make_whole(Page page);
extern void amq_index_check_meta(Relation index, Page page, const AmqIndexMeta *meta);
extern void amq_index_check_data_page(Relation index, Page page,
									  BlockNumber blkno, uint32 gen);
extern void amq_index_read_meta(Relation index, AmqIndexMeta *meta);
extern void amq_index_gen_from_geometry(AmqIndexGen *gen, BlockNumber first,
										const amq_paged_gen *g);
extern void amq_index_geometry(const AmqIndexGen *gen, amq_paged_gen *g);
extern double amq_index_option_fpr(Relation index);
extern int	amq_index_option_max_gens(Relation index);
extern bool amq_index_columns_readable(Relation index, Oid userid);

/* filter_index_build.c */
extern IndexBuildResult *amq_index_build(Relation heap, Relation index,
										 struct IndexInfo *indexInfo);
extern void amq_index_buildempty(Relation index);
extern int	amq_index_seed_setting;
extern uint64 amq_index_seed(void);
extern bool amq_index_hasher_init(AmqIndexHasher *hasher, Relation index,
								  Oid type, MemoryContext cxt);
extern uint64 amq_index_hash(const AmqIndexHasher *hasher, uint64 seed, Datum value);
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
									  const AmqIndexHasher *hasher,
									  ArrayType *array);

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
