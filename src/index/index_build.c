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
#include "access/xloginsert.h"
#include "catalog/index.h"
#include "catalog/pg_operator.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/builtins.h"
#include "utils/fmgroids.h"
#include "utils/lsyscache.h"
#include "parser/parse_coerce.h"
#include "catalog/pg_type.h"
#include "utils/memutils.h"
#include "utils/rel.h"
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
	return true;
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

/* The range number of a block in generation g, or "everywhere" past them. */
uint32
amq_index_range_of(const amq_rt_geom *geom, const AmqIndexGen *g, BlockNumber blkno)
{
	uint64		range = blkno / g->pages_per_range;

	return range < amq_rt_everywhere(geom) ? (uint32) range : amq_rt_everywhere(geom);
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
	uint64		ranges = amq_rt_everywhere(geom);
	uint64		ppr;

	if (option > 0)
		return (uint32) option;
	ppr = ((uint64) heap_blocks * AMQ_INDEX_RANGE_HEADROOM + ranges - 1) / ranges;
	return (uint32) Max(Max(ppr, 1), at_least);
}

/*
 * Sizes a generation for capacity entries, from block first on; false if
 * it would pass the largest block number.
 */
bool
amq_index_size_gen(uint64 capacity, BlockNumber first, uint32 pages_per_range,
				   AmqIndexGen *out)
{
	amq_rt_geom geom;
	double		per_page;
	double		npages;

	/* the slots of a page do not depend on the fingerprint bits */
	amq_rt_geometry(AMQ_INDEX_SLOT_BYTES, AMQ_RT_MIN_FP_BITS, &geom);
	per_page = floor(amq_rt_slots(&geom) * AMQ_INDEX_LOAD);
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
typedef struct BuildState
{
	AmqIndexHasher hasher;
	uint64		seed;
	amq_rt_geom geom;
	AmqIndexGen gen;			/* pages_per_range: the build's ranges */
	Tuplesortstate *sort;
	uint64		values;			/* non-null values hashed */
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
	MemoryContextSwitchTo(old);
	MemoryContextReset(state->tmpcxt);
	tuplesort_putdatum(state->sort,
					   Int64GetDatum(pair_of(hash,
											 amq_index_range_of(&state->geom, &state->gen,
																ItemPointerGetBlockNumber(tid)))),
					   false);
	state->values++;
}

/* Fills the metapage of an index whose first generation is g. */
static void
init_meta(Page page, uint64 seed, double p, uint32 fp_bits, uint64 entries,
		  uint64 values, const AmqIndexGen *g)
{
	AmqIndexMeta *meta;

	amq_index_init_page_whole(page);
	meta = AmqIndexPageGetMeta(page);
	memset(meta, 0, sizeof(*meta));
	meta->magic = AMQ_INDEX_MAGIC;
	meta->version = AMQ_INDEX_VERSION;
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
	PGAlignedBlock page;
	uint32		cur = 0;		/* the page being filled */
	uint32		pg;
	uint64		hash;
	uint64		run_hash = 0;
	uint32		range;
	uint32		prev_range = 0;
	int			run_ranges = 0;	/* distinct ranges of the run, counted to
								 * one past the most a key has */
	bool		started = false;
	AmqIndexGen gen;

	if (RelationGetNumberOfBlocks(index) != 0)
		elog(ERROR, "index \"%s\" already contains data",
			 RelationGetRelationName(index));

	if (!amq_index_hasher_init(&state.hasher, index, index->rd_opcintype[0],
							   CurrentMemoryContext))
		elog(ERROR, "index \"%s\" has no hash support function for its type",
			 RelationGetRelationName(index));
	state.seed = amq_index_seed();
	state.values = 0;
	state.tmpcxt = AllocSetContextCreate(CurrentMemoryContext,
										 "amqfilter index build",
										 ALLOCSET_DEFAULT_SIZES);
	memset(&meta, 0, sizeof(meta));
	meta.fp_bits = fp_bits_for(p);
	amq_index_geometry(&meta, &state.geom);
	memset(&state.gen, 0, sizeof(state.gen));
	state.gen.pages_per_range =
		amq_index_pages_per_range(index, &state.geom, RelationGetNumberOfBlocks(heap), 1);
	state.sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid,
									   false, maintenance_work_mem, NULL,
									   TUPLESORT_RANDOMACCESS);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &state, NULL);
	tuplesort_performsort(state.sort);

	/*
	 * The entries the pairs make, counted in the sorted pairs: a key's
	 * distinct ranges, or one "everywhere" past AMQ_RT_MAX_RANGES of them
	 * (a range past the last number is "everywhere" already).
	 */
	while (next_pair(state.sort, &hash, &range))
	{
		if (!started || hash != run_hash)
		{
			entries += run_ranges > AMQ_RT_MAX_RANGES ? 1 : run_ranges;
			started = true;
			run_hash = hash;
			run_ranges = 0;
			if ((entries & 0xFFFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
		else if (range == prev_range)
			continue;
		if (run_ranges <= AMQ_RT_MAX_RANGES)
			run_ranges++;
		prev_range = range;
	}
	entries += run_ranges > AMQ_RT_MAX_RANGES ? 1 : run_ranges;

	if (!amq_index_size_gen((uint64) ceil((double) entries * AMQ_INDEX_HEADROOM),
							AMQ_INDEX_METAPAGE + 1, state.gen.pages_per_range, &gen))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index \"%s\" cannot hold " UINT64_FORMAT " entries",
						RelationGetRelationName(index), entries)));
	meta.ngens = 1;
	meta.gens[0] = gen;

	/* block 0, the metapage, first; its count once the pages are written */
	init_meta(metapage.data, state.seed, p, meta.fp_bits, 0, state.values, &gen);
	amq_index_write_new_page(index, AMQ_INDEX_METAPAGE, metapage.data);

	/* the pages in order, each filled from the sorted pairs */
	tuplesort_rescan(state.sort);
	amq_index_init_page(page.data, 0);
	while (next_pair(state.sort, &hash, &range))
	{
		uint32		target;
		amq_rt_key	key;
		int			delta;
		AmqIndexPageHeader *hdr;

		amq_index_locate(&meta, &state.geom, 0, hash, &target, &key);
		while (cur < target)
		{
			amq_index_write_new_page(index, gen.first + cur, page.data);
			amq_index_init_page(page.data, 0);
			cur++;
			CHECK_FOR_INTERRUPTS();
		}
		amq_index_page_make_whole(page.data);
		hdr = AmqIndexPageGetHeader(page.data);
		amq_rt_insert(&state.geom, &hdr->table, AmqIndexPageGetSlots(page.data), key,
					  range, &delta);
		added += delta;
	}
	for (pg = cur; pg < gen.npages; pg++)
	{
		amq_index_write_new_page(index, gen.first + pg, page.data);
		amq_index_init_page(page.data, 0);
	}
	gen.count = added;
	init_meta(metapage.data, state.seed, p, meta.fp_bits, added, state.values, &gen);
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
	meta.fp_bits = fp_bits_for(p);
	amq_index_geometry(&meta, &geom);
	amq_index_size_gen(AMQ_INDEX_MIN_CAPACITY, AMQ_INDEX_METAPAGE + 1,
					   amq_index_pages_per_range(index, &geom, 0, 1), &gen);
	for (i = 0; i < 1 + (int) gen.npages; i++)
	{
		Buffer		buf = ReadBufferExtended(index, INIT_FORKNUM, P_NEW,
											 RBM_NORMAL, NULL);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		START_CRIT_SECTION();
		if (i == 0)
			init_meta(BufferGetPage(buf), seed, p, meta.fp_bits, 0, 0, &gen);
		else
			amq_index_init_page(BufferGetPage(buf), 0);
		MarkBufferDirty(buf);
		log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
}
