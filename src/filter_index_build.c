/*
 * filter_index_build.c
 *		Building an amqfilter index, and writing the pages of a new one or
 *		of a new generation.
 *
 * A build sizes the filter from what it sees: it hashes every value of the
 * column into a sort (tuplesort, so memory stays within
 * maintenance_work_mem and larger builds spill to disk), counts the
 * distinct hashes exactly, sizes the first generation for them with
 * AMQ_INDEX_HEADROOM to spare, and then writes the pages in order: the
 * position of a key's block is monotonic in its hash (fastrange), so the
 * sorted hashes fill the pages one after the other, each written once.
 *
 * Inserts and growth are filter_index_insert.c's.
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

#include "amqfilter.h"
#include "core/amq_hash.h"
#include "filter_glue.h"
#include "filter_index.h"

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
	Oid			base = getBaseType(type);
	Oid			proc;

	memset(hasher, 0, sizeof(*hasher));
	hasher->collation = collation;
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
	Tuplesortstate *sort;
	uint64		values;			/* non-null values hashed */
	MemoryContext tmpcxt;		/* reset after every value */
} BuildState;

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
	tuplesort_putdatum(state->sort, Int64GetDatum(SORTABLE(hash)), false);
	state->values++;
}

/* Fills the metapage of an index whose first generation is g. */
static void
init_meta(Page page, uint64 seed, double p, uint64 distinct, uint64 values,
		  const AmqIndexGen *g)
{
	AmqIndexMeta *meta;

	amq_index_init_page_whole(page);
	meta = AmqIndexPageGetMeta(page);
	memset(meta, 0, sizeof(*meta));
	meta->magic = AMQ_INDEX_MAGIC;
	meta->version = AMQ_INDEX_VERSION;
	meta->blocks_per_page = AMQ_INDEX_BLOCKS_PER_PAGE;
	meta->ngens = 1;
	meta->seed = seed;
	meta->p = p;
	meta->build_distinct = distinct;
	meta->build_values = values;
	meta->gens[0] = *g;
}

/* Sizes a generation, or errors naming the index. */
void
amq_index_size_gen(Relation index, uint64 capacity, double p, unsigned gen,
		 BlockNumber first, AmqIndexGen *out)
{
	amq_paged_gen g;
	amq_status	status;

	status = amq_paged_size(capacity, p, gen, AMQ_INDEX_BLOCKS_PER_PAGE,
							MaxBlockNumber - first, &g);
	if (status != AMQ_OK)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("index \"%s\" cannot hold " UINT64_FORMAT " values at false_positive_rate %s",
						RelationGetRelationName(index), capacity, amq_format_p(p)),
				 errdetail("%s", amq_status_text(status))));
	amq_index_gen_from_geometry(out, first, &g);
}

IndexBuildResult *
amq_index_build(Relation heap, Relation index, IndexInfo *indexInfo)
{
	IndexBuildResult *result;
	BuildState	state;
	double		reltuples;
	double		p = amq_index_option_fpr(index);
	uint64		distinct = 0;
	Datum		d;
	bool		isnull;
	bool		have_prev = false;
	int64		prev = 0;
	AmqIndexGen gen;
	PGAlignedBlock meta;
	PGAlignedBlock page;
	uint32		cur = 0;		/* the page being filled */
	uint32		pg;
	amq_paged_gen geometry;

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
	state.sort = tuplesort_begin_datum(INT8OID, Int8LessOperator, InvalidOid,
									   false, maintenance_work_mem, NULL,
#if PG_VERSION_NUM >= 150000
									   TUPLESORT_RANDOMACCESS
#else
									   true
#endif
		);
	reltuples = table_index_build_scan(heap, index, indexInfo, true, true,
									   build_callback, &state, NULL);
	tuplesort_performsort(state.sort);

	/* the distinct values, counted exactly in the sorted hashes */
	while (tuplesort_getdatum(state.sort, true,
#if PG_VERSION_NUM >= 160000
							  false,
#endif
							  &d, &isnull, NULL))
	{
		if (!have_prev || DatumGetInt64(d) != prev)
			distinct++;
		prev = DatumGetInt64(d);
		have_prev = true;
		if ((distinct & 0xFFFF) == 0)
			CHECK_FOR_INTERRUPTS();
	}

	amq_index_size_gen(index, Max((uint64) ceil((double) distinct * AMQ_INDEX_HEADROOM),
								  AMQ_INDEX_MIN_CAPACITY),
					   p, 0, AMQ_INDEX_METAPAGE + 1, &gen);
	gen.count = distinct;
	amq_index_geometry(&gen, &geometry);
	init_meta(meta.data, state.seed, p, distinct, state.values, &gen);
	amq_index_write_new_page(index, AMQ_INDEX_METAPAGE, meta.data);

	/* the pages in order, each filled from the sorted hashes */
	tuplesort_rescan(state.sort);
	amq_index_init_page(page.data, 0);
	while (tuplesort_getdatum(state.sort, true,
#if PG_VERSION_NUM >= 160000
							  false,
#endif
							  &d, &isnull, NULL))
	{
		uint64		hash = UNSORTABLE(DatumGetInt64(d));
		uint32		target;
		uint32		block;

		amq_paged_locate(&geometry, hash, &target, &block);
		while (cur < target)
		{
			amq_index_write_new_page(index, gen.first + cur, page.data);
			amq_index_init_page(page.data, 0);
			cur++;
		}
		amq_index_page_make_whole(page.data);
		AmqIndexPageGetHeader(page.data)->nset +=
			amq_block_set(AmqIndexPageGetBlock(page.data, block),
						  amq_fmix64(hash), gen.hashes);
	}
	for (pg = cur; pg < gen.npages; pg++)
	{
		amq_index_write_new_page(index, gen.first + pg, page.data);
		amq_index_init_page(page.data, 0);
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
	AmqIndexGen gen;
	int			i;

	amq_index_size_gen(index, AMQ_INDEX_MIN_CAPACITY, p, 0, AMQ_INDEX_METAPAGE + 1, &gen);
	for (i = 0; i < 1 + (int) gen.npages; i++)
	{
		Buffer		buf = ReadBufferExtended(index, INIT_FORKNUM, P_NEW,
											 RBM_NORMAL, NULL);

		LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
		START_CRIT_SECTION();
		if (i == 0)
			init_meta(BufferGetPage(buf), seed, p, 0, 0, &gen);
		else
			amq_index_init_page(BufferGetPage(buf), 0);
		MarkBufferDirty(buf);
		log_newpage_buffer(buf, true);
		END_CRIT_SECTION();
		UnlockReleaseBuffer(buf);
	}
}
