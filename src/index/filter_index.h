/*
 * filter_index.h
 *		The amqfilter index access method: for each value of a column, the
 *		block ranges of the table that may hold it, on index pages that
 *		PostgreSQL keeps current on every write path.
 *
 * On disk (docs/format.md, "The filter index"): block 0 is the metapage,
 * the rest hold generations, each a run of consecutive pages.  A key's hash
 * picks one page of each generation, and in it a table of (fingerprint,
 * range) entries (core/amq_range_table.h): a probe reads the metapage and a
 * page per generation, whatever the number of ranges, and returns the
 * ranges, each pages_per_range blocks of the table (the generation's), whose
 * rows may hold the value.  A data page has a small header (its generation
 * and its table's counts) and its slots from byte 64 on.  Every page is a
 * standard page.  A data page with entries has pd_lower and pd_upper both
 * at its end: it has no hole, so generic WAL logs every byte that changed;
 * a new, empty one has its slots as its hole (pd_lower at byte 64), which
 * its full-page image leaves out.
 *
 * Prototypes are grouped by the file that defines them, from the bottom of
 * index/ up (a file calls only files listed before it):
 *	index_meta.c		options, the metapage, page layout and checks, and
 *						whether an index may answer for the caller
 *	index_build.c		building, hashing values, and writing new pages
 *	index_insert.c		inserting, in batches, and growing
 *	index_scan.c		probing, scans and the planner's cost estimate
 *	index_skip.c		skipping partitions: the AmqFilter Scan and Append
 *	index_options.c		ALTER INDEX SET/RESET on a partitioned index
 *	index_handler.c		the handler, validation, vacuum, and the setup
 *	index_sql.c			the SQL functions around the index
 */
#ifndef FILTER_INDEX_H
#define FILTER_INDEX_H

#include "postgres.h"

#include "glue/pg_compat.h"

#include "access/amapi.h"
#include "access/genam.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "storage/block.h"
#include "storage/bufpage.h"
#include "utils/array.h"
#include "utils/relcache.h"

#include "core/amq_range_table.h"

#define AMQ_INDEX_MAGIC			0x414D5149	/* "AMQI" */
/*
 * 4: the range tables have spans (core/amq_range_table.h): a key in many
 * ranges keeps its first and last, not "everywhere".  3: block ranges:
 * tables of (fingerprint, range) entries, read still (2 was a bloom
 * filter of the whole table, with a seed of its own and 64-bit integers;
 * 1 the same with a fixed seed).
 */
#define AMQ_INDEX_VERSION		4
#define AMQ_INDEX_VERSION_NO_SPANS	3
/*
 * 5: lanes (core/amq_range_table.h): a key keeps every range it is in, 2 to
 * a lane, its lanes in pages its hash picks one after the other, and its
 * rows' classes (runs of offsets: amq_index_class_of) where a
 * range holds rows of one or two.  A build writes it for a table whose values are scattered,
 * where a span would read most of the table (index_build.c).
 */
#define AMQ_INDEX_VERSION_LANES	5
/*
 * a lane's entries: a lane is one key's place in a page (core/amq_range_
 * table.h), and places of 4 entries each fill a page to 60% before one
 * runs out of room, of 2 to 89%, of 1 to 98% (lanes of 3: 73%)
 */
#define AMQ_INDEX_LANE_ENTRIES	2
/* the lanes a key may have in a generation; past them it is "everywhere" */
#define AMQ_INDEX_MAX_LANES		2048
/* the most row class bits of a generation (32 classes) */
#define AMQ_INDEX_MAX_ROW_BITS	5
#define AMQ_INDEX_METAPAGE		0
/* where a data page's slots begin: past the page header and ours */
#define AMQ_INDEX_SLOTS_OFFSET	64
#define AMQ_INDEX_SLOT_BYTES	(BLCKSZ - AMQ_INDEX_SLOTS_OFFSET)
/* the support function: the type's extended (64-bit, seeded) hash */
#define AMQ_INDEX_HASH_PROC		1
#define AMQ_INDEX_NPROCS		1
/* the one strategy: equality */
#define AMQ_INDEX_EQUAL			1
#define AMQ_INDEX_NSTRATEGIES	1
/* headroom the build leaves over the entries it counted */
#define AMQ_INDEX_HEADROOM		1.1
/* the share of a generation's slots its capacity fills */
#define AMQ_INDEX_LOAD			0.85
/*
 * With lanes, the share of its slots a generation's capacity fills: places
 * of AMQ_INDEX_LANE_ENTRIES run out of room on a page from about 89% (a
 * page without room answers "everywhere"), and pages fill unevenly (at a
 * mean of 80%, the fullest of 540 pages held 88%)
 */
#define AMQ_INDEX_LANE_LOAD		0.76
/* with lanes, a page whose stash holds more is crowded: its generation is full */
#define AMQ_INDEX_CROWDED_STASH	4
/* a generation's capacity is this many times its predecessor's */
#define AMQ_INDEX_GROWTH		4
/* generations an index may have */
#define AMQ_INDEX_MAX_GENS		16
/* the largest pages_per_range (the option's maximum) */
#define AMQ_INDEX_MAX_PAGES_PER_RANGE	(1 << 20)
/*
 * the least capacity of a generation, in entries: an index built on an
 * empty table starts with a few pages, so that growing to any number of
 * values takes few generations
 */
#define AMQ_INDEX_MIN_CAPACITY	4096
/*
 * fingerprint bits: enough for false_positive_rate over this many
 * generations, at most AMQ_INDEX_MAX_FP_BITS, which leaves 12 bits of range
 * number (4,094 ranges; pages_per_range grows with the table to keep its
 * ranges under that)
 */
#define AMQ_INDEX_RATE_GENS		4
#define AMQ_INDEX_MAX_FP_BITS	20
/*
 * the low bits of a key's hash that place nothing (amq_index_locate): a
 * build sorts a range number there (at most 24 bits: AMQ_RT_MIN_FP_BITS
 * leave that many)
 */
#define AMQ_INDEX_RANGE_MASK	UINT64CONST(0xFFFFFF)
/* an automatic pages_per_range leaves room for the table to grow this much */
#define AMQ_INDEX_RANGE_HEADROOM	4
/* row classes leave room for the table to grow this much (index_build.c) */
#define AMQ_INDEX_ROW_HEADROOM		2
/* the options' defaults */
#define AMQ_INDEX_DEFAULT_FPR	0.01
#define AMQ_INDEX_DEFAULT_MAX_GENS	AMQ_INDEX_MAX_GENS

/* AmqIndexMeta.flags */
/*
 * the newest generation took entries past its capacity because the index
 * could not grow (max_generations, or the size limit): pages that run out
 * of room answer "everywhere" until a REINDEX
 */
#define AMQ_INDEX_SATURATED		0x0001
/*
 * The build counted its keys, and those it stored as "everywhere": what the
 * planner's estimate of a lookup of a value known only at run time reads
 * (index_scan.c).  Metapages written before it have zeros there.
 */
#define AMQ_INDEX_KEYS_COUNTED	0x0002
/*
 * The metapage holds the least and greatest value of a column whose type
 * orders as an int64 (integers, date, timestamp(tz)), widened by every
 * write before its rows can be seen: a value outside them is ruled out
 * without reading a page, however many keys a probe asks (index_build.c).
 */
#define AMQ_INDEX_BOUNDED		0x0004

/* Kinds of values with bounds: one kind compares with itself only. */
#define AMQ_BOUNDS_NONE			0
#define AMQ_BOUNDS_INTEGER		1	/* int2, int4, int8: any width with any */
#define AMQ_BOUNDS_DATE			2
#define AMQ_BOUNDS_TIMESTAMP	3
#define AMQ_BOUNDS_TIMESTAMPTZ	4

/* One generation, as the metapage records it. */
typedef struct AmqIndexGen
{
	BlockNumber first;			/* its first page */
	uint32		npages;
	uint32		pages_per_range;	/* table blocks per range number */
	uint32		row_bits;		/* version 5: its ranges' row classes, 0 ..
								 * AMQ_INDEX_MAX_ROW_BITS, with one block
								 * a range; else zero */
	uint64		capacity;		/* entries it is sized for */
	uint64		count;			/* entries added (in units: see insert) */
} AmqIndexGen;

/* The metapage's contents. */
typedef struct AmqIndexMeta
{
	uint32		magic;
	uint32		version;
	uint32		fp_bits;		/* of every generation's entries */
	uint32		ngens;
	uint64		seed;			/* drawn at random by the build: where a key
								 * goes cannot be known outside the server */
	double		p;				/* the index's false_positive_rate at build */
	uint64		build_entries;	/* entries the build made */
	uint64		build_values;	/* non-null values the build hashed */
	uint32		flags;			/* AMQ_INDEX_SATURATED, AMQ_INDEX_KEYS_COUNTED */
	uint32		class_span;		/* version 5 with row classes: the offsets
								 * the classes divide (amq_index_class_of);
								 * else zero */
	AmqIndexGen gens[AMQ_INDEX_MAX_GENS];
	/* with AMQ_INDEX_KEYS_COUNTED (zero in older metapages): */
	uint64		build_keys;		/* distinct hashes the build stored */
	uint64		build_everywhere;	/* of those, stored as "everywhere" */
	/*
	 * With AMQ_INDEX_BOUNDED: every value the index holds lies within
	 * bound_lo .. bound_hi (lo > hi: it holds none), values of the kind
	 * bounds_kind (AMQ_BOUNDS_*) read as int64.  Zero in older metapages.
	 */
	int64		bound_lo;
	int64		bound_hi;
	uint32		bounds_kind;
	uint32		max_offset;		/* version 5: the greatest offset of a row it
								 * holds, 0 unknown (a lookup of a row class
								 * returns the class's offsets up to it) */
	/*
	 * With AMQ_INDEX_KEYS_COUNTED, in format 4: the ranges (of the build's
	 * pages_per_range) the lookups of the build's keys that are not
	 * "everywhere" read, summed: their own ranges, or their spans.
	 */
	uint64		build_reads;
} AmqIndexMeta;

/* A data page's own header, after the standard page header. */
typedef struct AmqIndexPageHeader
{
	uint32		magic;
	uint16		gen;			/* the generation the page belongs to */
	uint16		flags;			/* zero */
	amq_rt_page table;			/* its table's counts and flags */
} AmqIndexPageHeader;

StaticAssertDecl(MAXALIGN(SizeOfPageHeaderData) + sizeof(AmqIndexPageHeader) <=
				 AMQ_INDEX_SLOTS_OFFSET, "page header overlaps the slots");
StaticAssertDecl(MAXALIGN(SizeOfPageHeaderData) + sizeof(AmqIndexMeta) <= BLCKSZ,
				 "metapage too large");

#define AmqIndexPageGetMeta(page) \
	((AmqIndexMeta *) PageGetContents(page))
#define AmqIndexPageGetHeader(page) \
	((AmqIndexPageHeader *) PageGetContents(page))
#define AmqIndexPageGetSlots(page) \
	((uint32 *) ((char *) (page) + AMQ_INDEX_SLOTS_OFFSET))

/* The reloptions of an index. */
typedef struct AmqIndexOptions
{
	int32		vl_len_;		/* varlena header (do not touch directly!) */
	double		false_positive_rate;
	int			max_generations;
	int			pages_per_range;	/* 0: chosen from the table's size */
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
	int			bounds_kind;	/* of the values it hashes: AMQ_BOUNDS_* */
} AmqIndexHasher;

/* index_meta.c */
extern void amq_index_register_options(void);
extern bytea *amq_index_options(Datum reloptions, bool validate);
extern void amq_index_init_page_whole(Page page);
extern void amq_index_init_page(Page page, uint16 gen);
extern void amq_index_page_make_whole(Page page);
extern void amq_index_check_meta(Relation index, Page page, const AmqIndexMeta *meta);
extern void amq_index_check_data_page(Relation index, Page page,
									  BlockNumber blkno, uint32 gen);
extern void amq_index_read_meta(Relation index, AmqIndexMeta *meta);
extern void amq_index_geometry(const AmqIndexMeta *meta, amq_rt_geom *geom);
extern double amq_index_option_fpr(Relation index);
extern int	amq_index_option_max_gens(Relation index);
extern int	amq_index_option_pages_per_range(Relation index);
extern bool amq_index_is_amqfilter(Relation index);
extern bool amq_index_columns_readable(Relation index, Oid userid);
extern bool amq_index_usable(Relation index);

/* index_handler.c */
extern void amq_index_init(void);

/* index_options.c */
extern void amq_index_options_init(void);

/* index_skip.c */
extern bool amq_index_skip;
extern void amq_index_skip_init(void);
extern void amq_index_skip_rewrite(PlannedStmt *stmt, bool backward);
extern bool amq_index_skip_is_append(Plan *plan);
extern Oid	amq_index_for_column(Oid relid, AttrNumber attno, Oid collation);

/* index_build.c */
extern IndexBuildResult *amq_index_build(Relation heap, Relation index,
										 struct IndexInfo *indexInfo);
extern void amq_index_buildempty(Relation index);
extern int	amq_index_seed_setting;
extern uint64 amq_index_seed(void);
extern bool amq_index_hasher_init(AmqIndexHasher *hasher, Relation index,
								  Oid type, MemoryContext cxt);
extern uint64 amq_index_hash(const AmqIndexHasher *hasher, uint64 seed, Datum value);
extern int64 amq_index_bounds_value(const AmqIndexHasher *hasher, Datum value);
extern bool amq_index_out_of_bounds(const AmqIndexMeta *meta, const AmqIndexHasher *hasher,
									Datum value);
extern void amq_index_locate(const AmqIndexMeta *meta, const amq_rt_geom *geom,
							 uint32 gen, uint64 hash, uint32 *page, amq_rt_key *key);
extern void amq_index_locate_lane(const AmqIndexMeta *meta, const amq_rt_geom *geom,
								  uint32 gen, uint64 hash, uint32 lane, uint32 *page,
								  amq_rt_key *key);
extern void amq_index_gen_geometry(const AmqIndexMeta *meta, uint32 gen, amq_rt_geom *geom);
extern uint32 amq_index_class_of(uint32 row_bits, uint32 class_span, OffsetNumber offset);
extern OffsetNumber amq_index_class_start(uint32 row_bits, uint32 class_span, uint32 c);
extern uint32 amq_index_entry_of(const amq_rt_geom *geom, const AmqIndexGen *g,
								 uint32 class_span, ItemPointer tid);
extern uint32 amq_index_range_of(const amq_rt_geom *geom, const AmqIndexGen *g,
								 BlockNumber blkno);
extern uint32 amq_index_pages_per_range(Relation index, const amq_rt_geom *geom,
										BlockNumber heap_blocks, uint32 at_least);
extern void amq_index_write_new_page(Relation index, BlockNumber expected,
									 Page contents);
extern void amq_index_write_empty_gen(Relation index, BlockNumber first,
									  const AmqIndexGen *g, uint16 gen);
extern bool amq_index_size_gen(uint64 capacity, bool lanes, BlockNumber first,
							   uint32 pages_per_range, AmqIndexGen *out);

/* index_insert.c */
extern bool amq_index_insert(Relation index, Datum *values, bool *isnull,
							 ItemPointer ht_ctid, Relation heapRel,
							 IndexUniqueCheck checkUnique,
							 bool indexUnchanged,
							 struct IndexInfo *indexInfo);
extern void amq_index_flush(Oid indexoid);

/* index_scan.c */

/*
 * Where a probe says a value may be: a list of block ranges of the table
 * (first block, blocks), or everywhere.
 */
typedef struct AmqIndexRanges
{
	bool		everywhere;
	int			n;
	int			room;
	BlockNumber *first;
	uint32	   *len;
	/*
	 * per range, 0: all of its rows; else, for a range of one block, the
	 * row classes (bit c: the rows of class c, amq_index_class_of) that
	 * may hold the key: a reader that reads blocks reads the block
	 */
	uint32	   *classes;
	uint32		row_bits;
} AmqIndexRanges;

extern void amq_index_ranges_merge(AmqIndexRanges *r, BlockNumber limit);
extern bool amq_index_may_contain(Relation index, const AmqIndexMeta *meta,
								  uint64 hash);
extern void amq_index_probe_many(Relation index, const AmqIndexMeta *meta,
								 const uint64 *hashes, int n, bool presence,
								 AmqIndexRanges *out);
extern void amq_index_probe(Relation index, const AmqIndexMeta *meta,
							uint64 hash, AmqIndexRanges *out);
extern void amq_index_probe_array(Relation index, const AmqIndexMeta *meta,
								  const AmqIndexHasher *hasher,
								  ArrayType *array, AmqIndexRanges *out);
extern bool amq_index_may_probe(PlannerInfo *root, RangeTblEntry *rte, Oid relid);
extern bool amq_index_ranges_of_values(Oid indexoid, Oid type, const Datum *values, int n,
									   Snapshot snapshot, bool presence,
									   AmqIndexRanges *out, BlockNumber *heap_blocks);
extern IndexScanDesc amq_index_beginscan(Relation index, int nkeys, int norderbys);
extern void amq_index_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
							 ScanKey orderbys, int norderbys);
extern int64 amq_index_getbitmap(IndexScanDesc scan, TIDBitmap *tbm);
extern bool amq_index_gettuple(IndexScanDesc scan, ScanDirection dir);
extern void amq_index_plain_scans(RelOptInfo *rel);
extern void amq_index_endscan(IndexScanDesc scan);
extern void amq_index_costestimate(PlannerInfo *root, IndexPath *path,
								   double loop_count, Cost *indexStartupCost,
								   Cost *indexTotalCost,
								   Selectivity *indexSelectivity,
								   double *indexCorrelation,
								   double *indexPages);

#endif							/* FILTER_INDEX_H */
