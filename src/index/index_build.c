/*
 * index_build.c
 *		Building an amqfilter index, hashing values, where a key goes, and
 *		writing the pages of a new index or of a new generation.
 *
 * A build sizes the index from what it sees: it hashes every value of the
 * column into a sort with the block its row is in (tuplesort, so memory
 * stays within maintenance_work_mem and larger builds spill to disk),
 * counts the entries the sorted pairs make (one per value and range, or
 * one "everywhere" for a value in more than AMQ_RT_MAX_RANGES ranges),
 * sizes the first generation for them with AMQ_INDEX_HEADROOM to spare, and
 * then writes the pages in order: the page a key goes to is monotonic in
 * its hash (fastrange), so the sorted pairs fill the pages one after the
 * other, each written once.
 *
 * Inserts and growth are index_insert.c's.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_operator.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "port/pg_bitutils.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/date.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "parser/parse_coerce.h"
#include "catalog/pg_type.h"
#include "utils/memutils.h"
#include "utils/rel.h"
#include "utils/timestamp.h"
#include "utils/tuplesort.h"

#include "glue/amqfilter.h"
#include "core/amq_bytes.h"
#include "core/amq_hash.h"
#include "glue/filter_glue.h"
#include "index/filter_index.h"

/* A hash as a sortable int8: signed order is then the hashes' unsigned order. */
#define SORTABLE(h)		((int64) ((h) ^ UINT64CONST(0x8000000000000000)))
#define UNSORTABLE(d)	((uint64) (d) ^ UINT64CONST(0x8000000000000000))

/*
 * A seed for a new index, drawn at random: where a key goes, and so which
 * keys crowd a page or share bits, cannot be worked out from outside the
 * server (the metapage, which only a superuser can read raw, holds it).
 * The superuser-only setting amqfilter.index_seed, when not 0, fixes it, so
 * that a test's answers for absent values repeat from run to run.
 */
int			amq_index_seed_setting = 0;

uint64
amq_index_seed(void)
{
	uint64		seed;

	/* tests that print answers for absent values fix it (superuser only) */
	if (amq_index_seed_setting != 0)
		return amq_fmix64((uint64) amq_index_seed_setting);
	if (!pg_strong_random(&seed, sizeof(seed)))
		ereport(ERROR,
				(errcode(ERRCODE_INTERNAL_ERROR),
				 errmsg("could not generate a random seed for the index")));
	return seed;
}

/*
 * Sets up hashing values of type for the index (filter_index.h,
 * AmqIndexHasher); false if its operator family cannot hash them.  The
 * support function is the type's own, or that of the class's type when the
 * type is binary coercible to it (varchar for a text column, an array type
 * for anyarray, a composite type for record).
 */
bool
amq_index_hasher_init(AmqIndexHasher *hasher, Relation index, Oid type,
					  MemoryContext cxt)
{
	Oid			opfamily = index->rd_opfamily[0];
	Oid			opcintype = index->rd_opcintype[0];
	Oid			collation = index->rd_indcollation[0];
	Oid			base;
	Oid			proc;

	memset(hasher, 0, sizeof(*hasher));
	hasher->collation = collation;
	if (type == opcintype && opcintype != NAMEOID)
	{
		/* the column's own type: the support function the relcache holds */
		fmgr_info_copy(&hasher->proc, index_getprocinfo(index, 1, AMQ_INDEX_HASH_PROC), cxt);
		proc = hasher->proc.fn_oid;
	}
	else
	{
		base = getBaseType(type);
		if (base == NAMEOID && OidIsValid(collation) &&
			!get_collation_isdeterministic(collation))
		{
			hasher->name_as_text = true;
			base = TEXTOID;
		}
		proc = get_opfamily_proc(opfamily, base, base, AMQ_INDEX_HASH_PROC);
		if (!OidIsValid(proc) && IsBinaryCoercible(base, opcintype))
			proc = get_opfamily_proc(opfamily, opcintype, opcintype, AMQ_INDEX_HASH_PROC);
		if (!OidIsValid(proc))
			return false;
		fmgr_info_cxt(proc, &hasher->proc, cxt);
	}
	switch (proc)
	{
		case F_HASHINT8EXTENDED:
			hasher->int_width = 8;
			break;
		case F_HASHINT4EXTENDED:
			hasher->int_width = 4;
			break;
		case F_HASHINT2EXTENDED:
			hasher->int_width = 2;
			break;
		default:
			break;
	}
	if (hasher->int_width != 0)
		hasher->bounds_kind = AMQ_BOUNDS_INTEGER;
	else
		switch (getBaseType(type))
		{
			case DATEOID:
				hasher->bounds_kind = AMQ_BOUNDS_DATE;
				break;
			case TIMESTAMPOID:
				hasher->bounds_kind = AMQ_BOUNDS_TIMESTAMP;
				break;
			case TIMESTAMPTZOID:
				hasher->bounds_kind = AMQ_BOUNDS_TIMESTAMPTZ;
				break;
			default:
				break;
		}
	return true;
}

/*
 * A value of a kind with bounds as the int64 that orders as it does: an
 * integer of any width, a date's days, a time stamp's microseconds
 * (infinities are their extremes).  hasher->bounds_kind is not NONE.
 */
int64
amq_index_bounds_value(const AmqIndexHasher *hasher, Datum value)
{
	switch (hasher->bounds_kind)
	{
		case AMQ_BOUNDS_INTEGER:
			return hasher->int_width == 8 ? DatumGetInt64(value) :
				hasher->int_width == 4 ? (int64) DatumGetInt32(value) :
				(int64) DatumGetInt16(value);
		case AMQ_BOUNDS_DATE:
			return (int64) DatumGetDateADT(value);
		default:
			return DatumGetTimestamp(value);
	}
}

/*
 * True if the index rules the value out by its bounds alone: it has them,
 * for the value's kind, and the value lies outside.  False when it cannot
 * say (no bounds, another kind): the pages decide.
 */
bool
amq_index_out_of_bounds(const AmqIndexMeta *meta, const AmqIndexHasher *hasher, Datum value)
{
	int64		v;

	if (!(meta->flags & AMQ_INDEX_BOUNDED) || hasher->bounds_kind == AMQ_BOUNDS_NONE ||
		(uint32) hasher->bounds_kind != meta->bounds_kind)
		return false;
	v = amq_index_bounds_value(hasher, value);
	return v < meta->bound_lo || v > meta->bound_hi;
}

/* The 64-bit hash of a non-null value under the index's seed. */
uint64
amq_index_hash(const AmqIndexHasher *hasher, uint64 seed, Datum value)
{
	switch (hasher->int_width)
	{
		case 8:
			return amq_hash_int(DatumGetInt64(value), seed);
		case 4:
			return amq_hash_int(DatumGetInt32(value), seed);
		case 2:
			return amq_hash_int(DatumGetInt16(value), seed);
		default:
			break;
	}
	if (hasher->name_as_text)
		value = DirectFunctionCall1(name_text, value);
	return DatumGetUInt64(FunctionCall2Coll((FmgrInfo *) &hasher->proc,
											hasher->collation, value,
											Int64GetDatum((int64) seed)));
}

/*
 * Where a key goes in generation gen: its page (relative to the
 * generation's first) and its place in the page's table.  Both come from
 * the hash's top 40 bits, so that a build can sort a key's hash and its
 * range as one int8 (a pair of keys that share those bits, about one in
 * 2^40, answers for each other: a "maybe", never a "no").
 */
void
amq_index_locate(const AmqIndexMeta *meta, const amq_rt_geom *geom, uint32 gen,
				 uint64 hash, uint32 *page, amq_rt_key *key)
{
	hash &= ~AMQ_INDEX_RANGE_MASK;
	*page = (uint32) fastrange64(hash, meta->gens[gen].npages);
	*key = amq_rt_place(geom, amq_fmix64(hash));
}

/*
 * The place of a key's lane in generation gen (lanes: format 5): lane 0 is
 * amq_index_locate's, lane i > 0 that of the key's hash mixed with i, so
 * that a key's lanes fall on pages at random, as other keys do.  Its top
 * 40 bits place it, as a key's.
 */
static inline uint64
lane_hash(uint64 hash, uint32 lane)
{
	hash &= ~AMQ_INDEX_RANGE_MASK;
	if (lane == 0)
		return hash;
	return amq_fmix64(hash ^ ((uint64) lane * UINT64CONST(0x9E3779B97F4A7C15))) &
		~AMQ_INDEX_RANGE_MASK;
}

void
amq_index_locate_lane(const AmqIndexMeta *meta, const amq_rt_geom *geom, uint32 gen,
					  uint64 hash, uint32 lane, uint32 *page, amq_rt_key *key)
{
	amq_index_locate(meta, geom, gen, lane_hash(hash, lane), page, key);
}

/*
 * The row class of a line pointer's offset: the offsets 1 .. class_span
 * (the rows a block holds, as the build saw them) cut into 2^row_bits runs
 * of class_span / 2^row_bits each, the last class those past them too.
 * Runs of offsets, not offsets modulo 2^row_bits: rows written together (an
 * order's lines) share a class or two.
 */
uint32
amq_index_class_of(uint32 row_bits, uint32 class_span, OffsetNumber offset)
{
	uint32		c = ((uint32) (offset - 1) << row_bits) / Max(class_span, 1);

	return Min(c, (1u << row_bits) - 1);
}

/* The first offset of row class c (amq_index_class_of). */
OffsetNumber
amq_index_class_start(uint32 row_bits, uint32 class_span, uint32 c)
{
	return (OffsetNumber) (((c * Max(class_span, 1) + (1u << row_bits) - 1) >> row_bits) + 1);
}

/*
 * The entry of a row in generation g: its range (amq_index_range_of), or,
 * with row classes, its range's class (range << row_bits | class);
 * "everywhere" past the ranges the generation numbers.
 */
uint32
amq_index_entry_of(const amq_rt_geom *geom, const AmqIndexGen *g, uint32 class_span,
				   ItemPointer tid)
{
	uint32		range = amq_index_range_of(geom, g, ItemPointerGetBlockNumber(tid));

	if (g->row_bits == 0 || range == amq_rt_everywhere(geom))
		return range;
	if (range >= (amq_rt_ranges(geom) >> g->row_bits))
		return amq_rt_everywhere(geom);
	return (range << g->row_bits) |
		amq_index_class_of(g->row_bits, class_span, ItemPointerGetOffsetNumber(tid));
}

/* The range number of a block in generation g, or "everywhere" past them. */
uint32
amq_index_range_of(const amq_rt_geom *geom, const AmqIndexGen *g, BlockNumber blkno)
{
	uint64		range = blkno / g->pages_per_range;

	return range < amq_rt_ranges(geom) ? (uint32) range : amq_rt_everywhere(geom);
}

/*
 * The pages_per_range of a new generation: the option, or the fewest that
 * number the table's blocks with room for it to grow AMQ_INDEX_RANGE_HEADROOM
 * times (a block past the last range number makes its values "everywhere"),
 * and at least at_least (the previous generation's).
 */
uint32
amq_index_pages_per_range(Relation index, const amq_rt_geom *geom,
						  BlockNumber heap_blocks, uint32 at_least)
{
	int			option = amq_index_option_pages_per_range(index);
	uint64		ranges = amq_rt_ranges(geom);
	uint64		ppr;

	if (option > 0)
		return (uint32) option;
	ppr = ((uint64) heap_blocks * AMQ_INDEX_RANGE_HEADROOM + ranges - 1) / ranges;
	return (uint32) Max(Max(ppr, 1), at_least);
}

/*
 * Sizes a generation for capacity entries, from block first on; false if
 * it would pass the largest block number.  With lanes, at a lesser load.
 */
bool
amq_index_size_gen(uint64 capacity, bool lanes, BlockNumber first,
				   uint32 pages_per_range, AmqIndexGen *out)
{
	amq_rt_geom geom;
	double		per_page;
	double		npages;

	/* the slots of a page do not depend on the fingerprint bits */
	amq_rt_geometry(AMQ_INDEX_SLOT_BYTES, AMQ_RT_MIN_FP_BITS, &geom);
	per_page = floor(amq_rt_slots(&geom) * (lanes ? AMQ_INDEX_LANE_LOAD : AMQ_INDEX_LOAD));
	capacity = Max(capacity, AMQ_INDEX_MIN_CAPACITY);
	npages = ceil((double) capacity / per_page);
	if (!(npages <= (double) (MaxBlockNumber - first)))
		return false;
	memset(out, 0, sizeof(*out));
	out->first = first;
	out->npages = (uint32) npages;
	out->pages_per_range = pages_per_range;
	out->capacity = (uint64) (npages * per_page);
	return true;
}

/* Adds a new page at the end of the index, WAL-logged whole. */
void
amq_index_write_new_page(Relation index, BlockNumber expected, Page contents)
{
	Buffer		buf = ReadBuffer(index, P_NEW);
	GenericXLogState *state;
	Page		page;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	if (BufferGetBlockNumber(buf) != expected)
		elog(ERROR, "index \"%s\" grew to block %u, %u expected",
			 RelationGetRelationName(index), BufferGetBlockNumber(buf), expected);
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, GENERIC_XLOG_FULL_IMAGE);
	memcpy(page, contents, BLCKSZ);
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
}

/* Writes an empty generation's pages from block first on. */
void
amq_index_write_empty_gen(Relation index, BlockNumber first, const AmqIndexGen *g,
						  uint16 gen)
{
	PGAlignedBlock page;
	uint32		i;

	amq_index_init_page(page.data, gen);
	for (i = 0; i < g->npages; i++)
	{
		CHECK_FOR_INTERRUPTS();
		amq_index_write_new_page(index, first + i, page.data);
	}
}

/*
 * ----------------------------------------------------------------
 * Build
 * ----------------------------------------------------------------
 */

/* pages of the table whose greatest offsets size the row classes */
#define CLASS_SAMPLE_PAGES	16

/*
 * The offsets row classes divide: the table's rows a block, as the greatest
 * line pointer offset of up to CLASS_SAMPLE_PAGES pages spread over it
 * shows.  Rows written later past them fall in the last class.
 */
static uint32
class_span_for(Relation heap)
{
	BlockNumber nblocks = RelationGetNumberOfBlocks(heap);
	OffsetNumber most = FirstOffsetNumber;
	BlockNumber i;

	for (i = 0; i < Min(nblocks, CLASS_SAMPLE_PAGES); i++)
	{
		BlockNumber blkno = (BlockNumber) ((uint64) nblocks * i / Min(nblocks, CLASS_SAMPLE_PAGES));
		Buffer		buf = ReadBufferExtended(heap, MAIN_FORKNUM, blkno, RBM_NORMAL, NULL);
		Page		page;

		LockBuffer(buf, BUFFER_LOCK_SHARE);
		page = BufferGetPage(buf);
		if (!PageIsNew(page))
			most = Max(most, Min(PageGetMaxOffsetNumber(page), MaxHeapTuplesPerPage));
		UnlockReleaseBuffer(buf);
	}
	return most;
}
typedef struct BuildState
{
	AmqIndexHasher hasher;
	uint64		seed;
	amq_rt_geom geom;
	AmqIndexGen gen;			/* pages_per_range: the build's ranges */
	Tuplesortstate *sort;
	uint64		values;			/* non-null values hashed */
	int64		lo;				/* their bounds (hasher.bounds_kind) */
	int64		hi;
	int			range_shift;	/* the pairs' ranges, >> it, are the index's */
	uint32		row_bits;		/* the pairs' ranges' row class bits */
	uint32		class_span;		/* the offsets classes divide (row_bits > 0) */
	OffsetNumber max_offset;	/* the greatest offset of a row hashed */
	Tuplesortstate *lane_sort;	/* format 5: lanes' pairs (index_build) */
	uint32		span_limit;		/* the widest span a key keeps, in the
								 * index's ranges (wider: "everywhere") */
	MemoryContext tmpcxt;		/* reset after every value */
} BuildState;

/*
 * A value's hash and its row's range as one sortable int8: the hash's top
 * 40 bits (all that place a key: amq_index_locate) over the range number,
 * which fits the low 24 bits (AMQ_INDEX_MAX_FP_BITS leaves at most 24).
 * Signed order is then the pairs' unsigned order, and pages follow it.
 */
static inline int64
pair_of(uint64 hash, uint32 range)
{
	return SORTABLE((hash & ~AMQ_INDEX_RANGE_MASK) | range);
}

static void
build_callback(Relation index, ItemPointer tid, Datum *values, bool *isnull,
			   bool tupleIsAlive, void *arg)
{
	BuildState *state = (BuildState *) arg;
	MemoryContext old;
	uint64		hash;

	if (isnull[0])
		return;					/* NULL equals nothing */
	old = MemoryContextSwitchTo(state->tmpcxt);
	hash = amq_index_hash(&state->hasher, state->seed, values[0]);
	if (state->hasher.bounds_kind != AMQ_BOUNDS_NONE)
	{
		int64		v = amq_index_bounds_value(&state->hasher, values[0]);

		state->lo = Min(state->lo, v);
		state->hi = Max(state->hi, v);
	}
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->tmpcxt);
	/* its range, with the row's class below it (state->gen.row_bits) */
	tuplesort_putdatum(state->sort,
					   Int64GetDatum(pair_of(hash,
											 amq_index_entry_of(&state->geom, &state->gen,
																state->class_span, tid))),
					   false);
	state->max_offset = Max(state->max_offset, ItemPointerGetOffsetNumber(tid));
	state->values++;
}

/* Fills the metapage of an index whose first generation is g. */
static void
init_meta(Page page, uint32 version, uint64 seed, double p, uint32 fp_bits, uint64 entries,
		  uint64 values, const AmqIndexGen *g)
{
	AmqIndexMeta *meta;

	amq_index_init_page_whole(page);
	meta = AmqIndexPageGetMeta(page);
	memset(meta, 0, sizeof(*meta));
	meta->magic = AMQ_INDEX_MAGIC;
	meta->version = version;
	meta->fp_bits = fp_bits;
	meta->ngens = 1;
	meta->seed = seed;
	meta->p = p;
	meta->build_entries = entries;
	meta->build_values = values;
	meta->gens[0] = *g;
}

/* The fingerprint bits of an index at rate p. */
static uint32
fp_bits_for(double p)
{
	return Min(amq_rt_fp_bits_for(p, AMQ_INDEX_RATE_GENS), AMQ_INDEX_MAX_FP_BITS);
}

/* The next of the sorted pairs, taken apart: false past the last. */
static bool
next_pair(Tuplesortstate *sort, uint64 *hash, uint32 *range)
{
	Datum		d;
	bool		isnull;
	uint64		pair;

	if (!amq_tuplesort_getdatum(sort, &d, &isnull))
		return false;
	pair = UNSORTABLE(DatumGetInt64(d));
	*hash = pair & ~AMQ_INDEX_RANGE_MASK;
	*range = (uint32) (pair & AMQ_INDEX_RANGE_MASK);
	return true;
}

/*
 * Says so when most of the values the build stored are "everywhere" (each
 * in more than AMQ_RT_MAX_RANGES ranges of a table that has many more,
 * spread over more than an eighth of it):
 * their lookups read the whole table, and the planner, which knows it
 * (index_scan.c), will rarely use the index.  A table of a few ranges is
 * read whole at little cost: nothing is said of it.
 */
static void
report_everywhere(Relation index, uint64 keys, uint64 everywhere,
				  BlockNumber heap_blocks, uint32 pages_per_range)
{
	static TimestampTz said_in = 0;
	double		ranges = (double) heap_blocks / Max(pages_per_range, 1);

	if (keys == 0 || everywhere * 2 <= keys || ranges <= 4 * AMQ_RT_MAX_RANGES)
		return;
	/* once a statement: the index of every partition is built by one */
	if (said_in == GetCurrentStatementStartTimestamp())
		return;
	said_in = GetCurrentStatementStartTimestamp();
	ereport(NOTICE,
			(errmsg("index \"%s\" cannot narrow lookups of %.0f%% of its values",
					RelationGetRelationName(index), 100.0 * everywhere / keys),
			 index->rd_rel->relispartition ?
			 errdetail("Each of them is in more than %d of the table's %.0f block ranges, spread over more than an eighth of the table: a lookup of it reads the whole table.  The indexes of other partitions this statement builds are not named.",
					   AMQ_RT_MAX_RANGES, ranges) :
			 errdetail("Each of them is in more than %d of the table's %.0f block ranges, spread over more than an eighth of the table: a lookup of it reads the whole table.",
					   AMQ_RT_MAX_RANGES, ranges),
			 errhint("A btree index serves a column whose values are scattered over the table; BRIN, or an amqfilter index with a larger pages_per_range, one whose rows are clustered.")));
}

/*
 * The sizes of range a build weighs when pages_per_range is left to it:
 * its first size times 1, 2, 4, ... 1024.
 */
#define AMQ_BUILD_SHAPES	11

/*
 * The ranges a build keeps beside a key's span: up to 4 (6 entries) where
 * the span holds at least AMQ_BUILD_CLUSTER of the key's ranges (a
 * cluster: a date of an append-mostly fact, with a few rows in free space
 * of pages far before its own), else as many as an insert keeps.  On a star schema partition,
 * 28% of the dates read more than 100 blocks for their 36 with 2 beside, 9%
 * with 4.  Keys of 5 to 9 scattered rows, at 4 beside, filled pages
 * whatever the build's size (sql/index_costs.sql, ic_part): they keep 2.
 */
#define AMQ_BUILD_BESIDE	4
#define AMQ_BUILD_CLUSTER	(2 * AMQ_RT_MAX_RANGES)
/* a run's first and last ranges counted: one past the most a key keeps */
#define AMQ_BUILD_ENDS		(AMQ_RT_MAX_RANGES + 1)
StaticAssertDecl(AMQ_BUILD_BESIDE <= AMQ_RT_MAX_RANGES &&
				 AMQ_BUILD_ENDS == AMQ_RT_MAX_RANGES + 1,
				 "a key's run is counted to one past the ranges an entry list keeps");

/*
 * What the keys of a build come to at each size of range: counted in the
 * sorted pairs, a key's run at a time (its ranges ascending).
 */
typedef struct BuildShapes
{
	int			n;				/* sizes weighed: 1 << 0 .. 1 << (n - 1) */
	double		table_ranges;	/* the table's ranges at the first size */
	bool		spans;			/* a key in many ranges keeps a span */
	/* the run being counted: its first and last AMQ_BUILD_ENDS distinct ranges */
	uint32		first[AMQ_BUILD_SHAPES][AMQ_BUILD_ENDS];
	uint32		last[AMQ_BUILD_SHAPES][AMQ_BUILD_ENDS];
	int			distinct[AMQ_BUILD_SHAPES];	/* to one past AMQ_RT_MAX_RANGES */
	uint64		count[AMQ_BUILD_SHAPES];	/* all of them */
	/* over the runs */
	uint64		keys;
	uint64		entries[AMQ_BUILD_SHAPES];
	uint64		everywhere[AMQ_BUILD_SHAPES];
	double		read[AMQ_BUILD_SHAPES];	/* first-size ranges a lookup of each
										 * key reads, summed */
	uint64		kept_read[AMQ_BUILD_SHAPES];	/* ranges of the size the keys
												 * not "everywhere" read */
	/* with lanes, at the first size: every range of a key up to lane_limit */
	uint64		lane_limit;
	uint64		lane_entries;
	uint64		lane_everywhere;
	uint64		lane_kept_read;
	double		lane_read;
} BuildShapes;

/*
 * The most ranges a key's span and the ranges beside it may read, in a
 * table of ranges ranges: an eighth of them.  A key spread wider is
 * "everywhere" (one entry for four), which reads little more: a key of a
 * handful of rows scattered over the table (a fact's part key) would read
 * a third of it through a span, and its 4 entries doubled such an index.
 */
static inline uint64
span_limit(double ranges)
{
	return (uint64) Max(ranges / 8.0, 1.0);
}

/*
 * How a key in more than AMQ_RT_MAX_RANGES ranges is kept: a span and up
 * to AMQ_BUILD_BESIDE ranges beside it, the least and greatest of them
 * (the core's rule: the fewest ranges read, then the fewest entries).
 * first and last are its first and last AMQ_BUILD_ENDS distinct ranges,
 * ascending, of n; *left and *right the ranges beside the span below and
 * above it.
 */
static uint64
span_choice(const uint32 *first, const uint32 *last, uint64 n, uint32 *lo, uint32 *hi,
			int *left, int *right)
{
	uint64		best = 0;
	int			beside;
	int			k;

	for (beside = 0; beside <= AMQ_BUILD_BESIDE; beside++)
		for (k = 0; k <= beside; k++)
		{
			uint32		l = first[k];
			uint32		h = last[AMQ_BUILD_ENDS - 1 - (beside - k)];
			uint64		cost = ((uint64) h - l + 1 + beside) * 4 + beside;

			if (h < l || (beside > AMQ_RT_SPAN_BESIDE && n < AMQ_BUILD_CLUSTER + beside))
				continue;
			if (best == 0 || cost < best)
			{
				best = cost;
				*lo = l;
				*hi = h;
				*left = k;
				*right = beside - k;
			}
		}
	/* the ranges a lookup reads */
	return (uint64) *hi - *lo + 1 + *left + *right;
}

static void
shapes_run_start(BuildShapes *sh)
{
	memset(sh->distinct, 0, sizeof(sh->distinct));
	memset(sh->count, 0, sizeof(sh->count));
}

/* A range of the run (not "everywhere"), after those below it. */
static void
shapes_add(BuildShapes *sh, uint32 range)
{
	int			i;

	for (i = 0; i < sh->n; i++)
	{
		uint32		v = range >> i;

		if (sh->distinct[i] == 0 || v != sh->last[i][AMQ_BUILD_ENDS - 1])
		{
			if (sh->distinct[i] < AMQ_BUILD_ENDS)
				sh->first[i][sh->distinct[i]] = v;
			if (sh->distinct[i] < AMQ_BUILD_ENDS)
				sh->distinct[i]++;
			sh->count[i]++;
			memmove(sh->last[i], sh->last[i] + 1, sizeof(uint32) * (AMQ_BUILD_ENDS - 1));
			sh->last[i][AMQ_BUILD_ENDS - 1] = v;
		}
	}
}

/* The run ends; everywhere: one of its ranges was past the last number. */
static void
shapes_run_end(BuildShapes *sh, bool everywhere)
{
	int			i;

	sh->keys++;
	if (everywhere || sh->count[0] > sh->lane_limit)
	{
		sh->lane_entries++;
		sh->lane_everywhere++;
		sh->lane_read += sh->table_ranges;
	}
	else
	{
		sh->lane_entries += sh->count[0];
		sh->lane_kept_read += sh->count[0];
		sh->lane_read += (double) sh->count[0];
	}
	for (i = 0; i < sh->n; i++)
	{
		uint32		lo,
					hi;
		int			left = 0,
					right = 0;
		uint64		width = 0;

		if (!everywhere && sh->distinct[i] > AMQ_RT_MAX_RANGES && sh->spans)
			width = span_choice(sh->first[i], sh->last[i], sh->count[i], &lo, &hi, &left, &right);
		if (width > 0 && width <= span_limit(sh->table_ranges / ((uint64) 1 << i)))
		{
			/* a span, and the ranges beside it */
			sh->entries[i] += 2 + left + right;
			sh->read[i] += (double) width * ((uint64) 1 << i);
			sh->kept_read[i] += width;
		}
		else if (everywhere || sh->distinct[i] > AMQ_RT_MAX_RANGES)
		{
			sh->entries[i]++;
			sh->everywhere[i]++;
			sh->read[i] += sh->table_ranges;
		}
		else
		{
			sh->entries[i] += sh->distinct[i];
			sh->read[i] += (double) sh->distinct[i] * ((uint64) 1 << i);
			sh->kept_read[i] += sh->distinct[i];
		}
	}
}

/*
 * The size of range (as a shift of the first) whose lookups read least: of
 * a value the table holds, its ranges, or the table for an "everywhere"
 * one; of one it does not, at rate p, the ranges of the entry it matches.
 * A key whose rows cluster in a few dozen blocks (a date of an
 * append-mostly table) is "everywhere" at one block a range and keeps its
 * ranges at a few: each of its lookups reads those blocks, not the table.
 * Scattered keys gain nothing from larger ranges, which cost every lookup
 * more, and keep the first size.
 */
static int
shapes_best(const BuildShapes *sh, double p, double *cost_out)
{
	int			best = 0;
	double		best_cost = 0.0;
	int			i;

	*cost_out = 0.0;
	if (sh->keys == 0)
		return 0;
	for (i = 0; i < sh->n; i++)
	{
		double		share = (double) sh->everywhere[i] / sh->keys;
		double		cost = sh->read[i] / sh->keys +
			p * (share * sh->table_ranges + (1.0 - share) * ((uint64) 1 << i));

		/* a larger size must read less by a tenth: ties keep lookups fine */
		if (i == 0 || cost < best_cost * 0.9)
		{
			best = i;
			best_cost = cost;
		}
	}
	*cost_out = best_cost;
	return best;
}

/*
 * True if lanes (format 5) serve the table's keys better than spans: their
 * lookups, which read each of a key's ranges and no more, read less than
 * half of what the best size of range reads with spans (best_cost), in a
 * table of more ranges than a few keys' entries.  Those are tables of
 * scattered values (a fact's foreign keys: a part's rows in a few blocks
 * far apart), which spans keep as "everywhere"; such an index takes about
 * an entry a row.
 */
static bool
shapes_lanes(const BuildShapes *sh, double p, double best_cost)
{
	double		share;
	double		cost;

	if (sh->keys == 0 || sh->table_ranges < 4 * AMQ_RT_MAX_RANGES)
		return false;
	share = (double) sh->lane_everywhere / sh->keys;
	cost = sh->lane_read / sh->keys + p * (share * sh->table_ranges + (1.0 - share));
	return cost < 0.5 * best_cost;
}

/* Tries at sizing a build's generation (index_build: fill_pages). */
#define AMQ_INDEX_BUILD_TRIES	4

/*
 * Adds one key's run of ranges to a page: its ranges, or its span and the
 * ranges beside it (span_choice: from its first ranges, ranges[], its last,
 * last[], and their number, nall), or one "everywhere".
 */
static void
add_run(BuildState *state, Page page, amq_rt_key key, const uint32 *ranges, int n,
		const uint32 *last, uint64 nall, uint64 *added)
{
	AmqIndexPageHeader *hdr = AmqIndexPageGetHeader(page);
	uint32	   *slots = AmqIndexPageGetSlots(page);
	int			delta;
	int			i;

	if (n > AMQ_RT_MAX_RANGES)
	{
		uint32		lo,
					hi;
		int			left,
					right;

		/* straight to what its ranges would become */
		if (state->geom.spans && last[AMQ_BUILD_ENDS - 1] != amq_rt_everywhere(&state->geom) &&
			span_choice(ranges, last, nall, &lo, &hi, &left, &right) <= state->span_limit)
		{
			uint32		beside[AMQ_BUILD_BESIDE];
			int			nbeside = 0;

			for (i = 0; i < left; i++)
				beside[nbeside++] = ranges[i];
			for (i = AMQ_BUILD_ENDS - right; i < AMQ_BUILD_ENDS; i++)
				beside[nbeside++] = last[i];
			amq_rt_insert_span(&state->geom, &hdr->table, slots, key, lo, hi,
							   beside, nbeside, &delta);
			*added += delta;
		}
		else
		{
			amq_rt_insert(&state->geom, &hdr->table, slots, key,
						  amq_rt_everywhere(&state->geom), &delta);
			*added += delta;
		}
		return;
	}
	for (i = 0; i < n; i++)
	{
		amq_rt_insert(&state->geom, &hdr->table, AmqIndexPageGetSlots(page), key,
					  ranges[i], &delta);
		*added += delta;
	}
}

/*
 * The page being filled, *cur, and those after it before upto are done:
 * counted if saturated, written when index is given, and the page emptied
 * for the next.
 */
static void
finish_pages(char *page, const AmqIndexGen *gen, Relation index, uint32 *cur, uint32 upto,
			 uint32 *saturated)
{
	while (*cur < upto)
	{
		if (AmqIndexPageGetHeader(page)->table.flags & AMQ_RT_SATURATED)
			(*saturated)++;
		if (index)
			amq_index_write_new_page(index, gen->first + *cur, page);
		amq_index_init_page(page, 0);
		(*cur)++;
		CHECK_FOR_INTERRUPTS();
	}
}

/*
 * Fills the pages of the build's generation (meta->gens[0]) from the sorted
 * pairs, a key's run of ranges at a time, and writes them when index is
 * given; else only counts them.  Returns the pages that ran out of room
 * (saturated); *added gets the entries added.
 */
static uint32
fill_pages(BuildState *state, const AmqIndexMeta *meta, Relation index, uint64 *added)
{
	const AmqIndexGen *gen = &meta->gens[0];
	PGAlignedBlock page;
	uint32		cur = 0;		/* the page being filled */
	uint32		saturated = 0;
	uint64		hash;
	uint32		range;
	uint64		run_hash = 0;
	amq_rt_key	run_key;
	uint32		run_page = 0;
	uint32		ranges[AMQ_BUILD_ENDS];	/* the run's first distinct ranges */
	int			nranges = 0;
	uint32		last[AMQ_BUILD_ENDS] = {0};	/* and its last */
	uint64		nall = 0;		/* and their number */
	bool		started = false;
	bool		more;

	*added = 0;
	memset(&run_key, 0, sizeof(run_key));
	tuplesort_rescan(state->sort);
	amq_index_init_page(page.data, 0);
	do
	{
		more = next_pair(state->sort, &hash, &range);
		if (started && (!more || hash != run_hash))
		{
			/* the run ends: the pages before its page are done */
			finish_pages(page.data, gen, index, &cur, run_page, &saturated);
			amq_index_page_make_whole(page.data);
			add_run(state, page.data, run_key, ranges, nranges, last, nall, added);
			nranges = 0;
			nall = 0;
		}
		if (!more)
			break;
		if (range != amq_rt_everywhere(&state->geom))
			range >>= state->row_bits + state->range_shift;
		if (!started || hash != run_hash)
		{
			started = true;
			run_hash = hash;
			amq_index_locate(meta, &state->geom, 0, hash, &run_page, &run_key);
		}
		else if (nranges > 0 && last[AMQ_BUILD_ENDS - 1] == range)
			continue;
		/* distinct ranges, counted to past the most a key keeps */
		if (nranges < AMQ_BUILD_ENDS)
			ranges[nranges++] = range;
		nall++;
		/* ascending, "everywhere" last */
		memmove(last, last + 1, sizeof(uint32) * (AMQ_BUILD_ENDS - 1));
		last[AMQ_BUILD_ENDS - 1] = range;
	} while (more);
	finish_pages(page.data, gen, index, &cur, gen->npages, &saturated);
	return saturated;
}

/*
 * With lanes: a key's entries, one a range, into the lanes' sort: its
 * ranges in order, AMQ_INDEX_LANE_ENTRIES to a lane; or one "everywhere"
 * in its first lane when it has more than the limit, or a row past the
 * ranges numbered.  A range of up to BLOCK_CLASSES row classes of the key
 * has an entry for each class; of more, the whole range's.  Returns the
 * entries.
 */

/*
 * Classes of a block kept as entries of their own: an order's 4 lines
 * written together straddle two classes of 4.7 offsets (16 classes of a
 * block of 75 rows) about as often as not, three of 2.3 (32 classes).
 */
#define BLOCK_CLASSES		3

static uint64
put_lane_run(BuildState *state, uint64 hash, const uint32 *ranges, const uint32 *classes,
			 uint64 n, bool everywhere, uint64 limit)
{
	uint32		whole = amq_rt_whole_bit(&state->geom);
	uint64		i;
	uint64		entries = 0;

	if (everywhere || n > limit)
	{
		tuplesort_putdatum(state->lane_sort,
						   Int64GetDatum(pair_of(lane_hash(hash, 0),
												 amq_rt_everywhere(&state->geom))),
						   false);
		return 1;
	}
	for (i = 0; i < n; i++)
	{
		uint32		left = classes[i];

		do
		{
			uint32		entry = ranges[i];

			/* a class's entry for each of up to BLOCK_CLASSES classes, else the block's */
			if (state->row_bits > 0 && pg_popcount32(left) <= BLOCK_CLASSES)
			{
				entry = (ranges[i] << state->row_bits) | pg_rightmost_one_pos32(left);
				left &= left - 1;
			}
			else
			{
				if (state->row_bits > 0)
					entry = whole | ranges[i];
				left = 0;
			}
			tuplesort_putdatum(state->lane_sort,
							   Int64GetDatum(pair_of(lane_hash(hash, (uint32) (entries / AMQ_INDEX_LANE_ENTRIES)),
													 entry)),
							   false);
			entries++;
		} while (left != 0);
	}
	return entries;
}

/*
 * With lanes: reads the sorted pairs once more and sorts every key's
 * entries by the place of their lanes; returns the entries, and in
 * *everywhere the keys kept as "everywhere".
 */
static uint64
sort_lanes(BuildState *state, uint64 limit, uint64 *everywhere)
{
	uint64		hash;
	uint32		range;
	uint64		run_hash = 0;
	bool		started = false;
	bool		run_everywhere = false;
	uint32	   *ranges = palloc(sizeof(uint32) * (limit + 1));
	uint32	   *classes = palloc(sizeof(uint32) * (limit + 1));
	uint64		n = 0;
	uint64		entries = 0;
	uint64		keys = 0;
	bool		more;

	*everywhere = 0;
	state->lane_sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid,
											 false, maintenance_work_mem, NULL,
											 TUPLESORT_RANDOMACCESS);
	tuplesort_rescan(state->sort);
	do
	{
		more = next_pair(state->sort, &hash, &range);
		if (started && (!more || hash != run_hash))
		{
			entries += put_lane_run(state, run_hash, ranges, classes, n, run_everywhere, limit);
			if (run_everywhere || n > limit)
				(*everywhere)++;
			if ((++keys & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		if (!more)
			break;
		if (!started || hash != run_hash)
		{
			started = true;
			run_hash = hash;
			run_everywhere = false;
			n = 0;
		}
		if (range == amq_rt_everywhere(&state->geom))
		{
			run_everywhere = true;
			continue;
		}
		if (n > 0 && ranges[n - 1] == range >> state->row_bits)
			classes[n - 1] |= 1u << (range & ((1u << state->row_bits) - 1));
		else if (n <= limit)
		{
			ranges[n] = range >> state->row_bits;
			classes[n] = 1u << (range & ((1u << state->row_bits) - 1));
			n++;
		}
		else
			n = limit + 1;		/* past the limit: "everywhere" */
	} while (more);
	tuplesort_performsort(state->lane_sort);
	pfree(ranges);
	pfree(classes);
	return entries;
}

/*
 * With lanes: fills the pages of the build's generation from the lanes'
 * sort, an entry at a time (a page keeps what it is given), and writes
 * them when index is given; else only counts them.  As fill_pages.
 */
static uint32
fill_lane_pages(BuildState *state, const AmqIndexMeta *meta, Relation index, uint64 *added)
{
	const AmqIndexGen *gen = &meta->gens[0];
	amq_rt_geom geom;
	PGAlignedBlock page;
	uint32		cur = 0;
	uint32		saturated = 0;
	uint64		hash;
	uint32		entry;

	amq_index_gen_geometry(meta, 0, &geom);
	*added = 0;
	tuplesort_rescan(state->lane_sort);
	amq_index_init_page(page.data, 0);
	for (;;)
	{
		bool		more = next_pair(state->lane_sort, &hash, &entry);
		uint32		pg = gen->npages;
		amq_rt_key	key;
		int			delta;

		if (more)
			amq_index_locate(meta, &geom, 0, hash, &pg, &key);
		/* the pages before this entry's are done */
		finish_pages(page.data, gen, index, &cur, Min(pg, gen->npages), &saturated);
		if (!more)
			break;
		amq_index_page_make_whole(page.data);
		amq_rt_insert(&geom, &AmqIndexPageGetHeader(page.data)->table,
					  AmqIndexPageGetSlots(page.data), key, entry, &delta);
		*added += delta;
	}
	return saturated;
}

IndexBuildResult *
amq_index_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState	state;
	double		reltuples;
	double		p = amq_index_option_fpr(index);
	uint64		entries = 0;
	uint64		added = 0;
	AmqIndexMeta meta;
	PGAlignedBlock metapage;
	uint64		capacity;
	int			attempt;
	uint64		hash;
	uint64		run_hash = 0;
	uint32		range;
	uint32		prev_range = 0;
	bool		run_everywhere = false;	/* a range of the run is "everywhere" */
	BuildShapes shapes;
	uint64		keys = 0;
	uint64		everywhere = 0;
	bool		started = false;
	AmqIndexGen gen;
	double		best_cost;
	bool		lanes = false;
	uint64		reads;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	if (!amq_index_hasher_init(&state.hasher, index, index->rd_opcintype[0],
							   CurrentMemoryContext))
		elog(ERROR, "index \"%s\" has no hash support function for its type",
			 RelationGetRelationName(index));
	state.seed = amq_index_seed();
	state.values = 0;
	state.lo = PG_INT64_MAX;	/* none yet: lo > hi */
	state.hi = PG_INT64_MIN;
	state.range_shift = 0;
	state.row_bits = 0;
	state.max_offset = 0;
	state.lane_sort = NULL;
	state.tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
										 "amqfilter index build",
										 ALLOCSET_DEFAULT_SIZES);
	memset(&meta, 0, sizeof(meta));
	meta.version = AMQ_INDEX_VERSION;
	meta.fp_bits = fp_bits_for(p);
	amq_index_geometry(&meta, &state.geom);
	memset(&state.gen, 0, sizeof(state.gen));
	state.gen.pages_per_range =
		amq_index_pages_per_range(index, &state.geom, RelationGetNumberOfBlocks(heap), 1);

	/*
	 * Ranges of one block leave room, in a table of fewer blocks than the
	 * range numbers, for the rows' classes, should the keys turn out to
	 * need lanes: as many class bits as leave room for the table to grow
	 * AMQ_INDEX_ROW_HEADROOM times (a row past them is "everywhere").
	 */
	if (state.gen.pages_per_range == 1)
		while (state.row_bits < AMQ_INDEX_MAX_ROW_BITS &&
			   (((uint64) Max(RelationGetNumberOfBlocks(heap), 1) * AMQ_INDEX_ROW_HEADROOM) <<
				(state.row_bits + 1)) <= amq_rt_ranges(&state.geom))
			state.row_bits++;
	state.gen.row_bits = state.row_bits;
	if (state.row_bits > 0)
		state.class_span = class_span_for(heap);
	state.sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid,
									   false, maintenance_work_mem, NULL,
									   TUPLESORT_RANDOMACCESS);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &state, NULL);
	tuplesort_performsort(state.sort);

	/*
	 * The entries the pairs make, counted in the sorted pairs: a key's
	 * distinct ranges, or one "everywhere" past AMQ_RT_MAX_RANGES of them
	 * (a range past the last number is "everywhere" already); and, when
	 * pages_per_range is left to the build, the same at larger ranges, of
	 * which it takes the size whose lookups read least (shapes_best).
	 */
	memset(&shapes, 0, sizeof(shapes));
	shapes.spans = state.geom.spans;
	shapes.table_ranges = Max(ceil((double) RelationGetNumberOfBlocks(heap) /
								   state.gen.pages_per_range), 1.0);
	shapes.lane_limit = Min(span_limit(shapes.table_ranges),
							(uint64) AMQ_INDEX_MAX_LANES * AMQ_INDEX_LANE_ENTRIES);
	shapes.n = 1;
	if (amq_index_option_pages_per_range(index) == 0)
		while (shapes.n < AMQ_BUILD_SHAPES &&
			   ((uint64) state.gen.pages_per_range << shapes.n) <= AMQ_INDEX_MAX_PAGES_PER_RANGE &&
			   shapes.table_ranges / ((uint64) 1 << shapes.n) >= 4 * AMQ_RT_MAX_RANGES)
			shapes.n++;
	while (next_pair(state.sort, &hash, &range))
	{
		if (!started || hash != run_hash)
		{
			if (started)
				shapes_run_end(&shapes, run_everywhere);
			started = true;
			run_hash = hash;
			run_everywhere = false;
			shapes_run_start(&shapes);
			if ((shapes.keys & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		else if (range == prev_range)
			continue;
		if (range == amq_rt_everywhere(&state.geom))
			run_everywhere = true;
		else
			shapes_add(&shapes, range >> state.row_bits);
		prev_range = range;
	}
	if (started)
		shapes_run_end(&shapes, run_everywhere);
	state.range_shift = shapes_best(&shapes, p, &best_cost);
	keys = shapes.keys;
	lanes = shapes_lanes(&shapes, p, best_cost);
	if (lanes)
	{
		/* every range of a key, at the first size, with its rows' classes */
		state.range_shift = 0;
		state.span_limit = 0;
		meta.version = AMQ_INDEX_VERSION_LANES;
		entries = sort_lanes(&state, shapes.lane_limit, &everywhere);
		reads = shapes.lane_kept_read;
	}
	else
	{
		state.gen.pages_per_range <<= state.range_shift;
		state.span_limit = (uint32) span_limit(shapes.table_ranges / ((uint64) 1 << state.range_shift));
		entries = shapes.entries[state.range_shift];
		everywhere = shapes.everywhere[state.range_shift];
		reads = shapes.kept_read[state.range_shift];
	}

	/*
	 * Sized for the entries, at AMQ_INDEX_LOAD: a table of keys with several
	 * ranges each (up to 4 entries in a key's two buckets) can still leave
	 * a page without room, and a page without room answers "everywhere" for
	 * all its keys.  The pages are filled once without writing them first;
	 * while some would fill up, the generation is made half again larger.
	 */
	capacity = (uint64) ceil((double) entries * AMQ_INDEX_HEADROOM);
	for (attempt = 0;; attempt++)
	{
		if (!amq_index_size_gen(capacity, lanes, AMQ_INDEX_METAPAGE + 1,
								state.gen.pages_per_range, &gen))
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("index \"%s\" cannot hold " UINT64_FORMAT " entries",
							RelationGetRelationName(index), entries)));
		if (lanes)
			gen.row_bits = state.row_bits;
		meta.ngens = 1;
		meta.gens[0] = gen;
		if (attempt == AMQ_INDEX_BUILD_TRIES - 1 ||
			(lanes ? fill_lane_pages(&state, &meta, NULL, &added) :
			 fill_pages(&state, &meta, NULL, &added)) == 0)
			break;
		capacity += capacity / 2;
	}

	/* block 0, the metapage, first; its count once the pages are written */
	init_meta(metapage.data, meta.version, state.seed, p, meta.fp_bits, 0, state.values, &gen);
	amq_index_write_new_page(index, AMQ_INDEX_METAPAGE, metapage.data);
	if (lanes)
		(void) fill_lane_pages(&state, &meta, index, &added);
	else
		(void) fill_pages(&state, &meta, index, &added);
	gen.count = added;
	init_meta(metapage.data, meta.version, state.seed, p, meta.fp_bits, added, state.values,
			  &gen);
	{
		AmqIndexMeta *m = AmqIndexPageGetMeta(metapage.data);

		m->build_keys = keys;
		m->build_everywhere = everywhere;
		m->build_reads = reads;
		if (lanes)
			m->max_offset = Max(state.max_offset, FirstOffsetNumber);
		if (lanes && state.row_bits > 0)
			m->class_span = state.class_span;
		m->flags |= AMQ_INDEX_KEYS_COUNTED;
		if (state.hasher.bounds_kind != AMQ_BOUNDS_NONE)
		{
			m->bounds_kind = state.hasher.bounds_kind;
			m->bound_lo = state.lo;
			m->bound_hi = state.hi;
			m->flags |= AMQ_INDEX_BOUNDED;
		}
	}
	report_everywhere(index, keys, everywhere, RelationGetNumberOfBlocks(heap),
					  gen.pages_per_range);
	/* the metapage again, with the count */
	{
		Buffer		buf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
		GenericXLogState *xlog;

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		xlog = GenericXLogStart(index);
		memcpy(GenericXLogRegisterBuffer(xlog, buf, GENERIC_XLOG_FULL_IMAGE),
			   metapage.data, BLCKSZ);
		GenericXLogFinish(xlog);
		UnlockReleaseBuffer(buf);
	}
	tuplesort_end(state.sort);
	if (state.lane_sort)
		tuplesort_end(state.lane_sort);
	MemoryContextDelete(state.tmpcxt);

	result = (IndexBuildResult *) palloc(sizeof(IndexBuildResult));
	result->heap_tuples = reltuples;
	result->index_tuples = (double) state.values;
	return result;
}

/*
 * The init fork of an unlogged index: an empty index of one generation of
 * the least capacity, which grows as any does.
 */
void
amq_index_buildempty(Relation index)
{
	double		p = amq_index_option_fpr(index);
	uint64		seed = amq_index_seed();
	AmqIndexMeta meta;
	amq_rt_geom geom;
	AmqIndexGen gen;
	int			i;

	memset(&meta, 0, sizeof(meta));
	meta.version = AMQ_INDEX_VERSION;
	meta.fp_bits = fp_bits_for(p);
	amq_index_geometry(&meta, &geom);
	amq_index_size_gen(AMQ_INDEX_MIN_CAPACITY, false, AMQ_INDEX_METAPAGE + 1,
					   amq_index_pages_per_range(index, &geom, 0, 1), &gen);
	for (i = 0; i < 1 + (int) gen.npages; i++)
	{
		Buffer		buf = ReadBufferExtended(index, INIT_FORKNUM, P_NEW,
											 RBM_NORMAL, NULL);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		START_CRIT_SECTION();
		if (i == 0)
			init_meta(BufferGetPage(buf), AMQ_INDEX_VERSION, seed, p, meta.fp_bits, 0, 0, &gen);
		else
			amq_index_init_page(BufferGetPage(buf), 0);
		MarkBufferDirty(buf);
		log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
}
