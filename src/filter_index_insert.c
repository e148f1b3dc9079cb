/*
 * filter_index_insert.c
 *		Inserting into an amqfilter index, in batches, and growing it.
 *
 * What an insert must guarantee: a row is found through the index by every
 * scan that can see the row.  Other transactions see a row only once its
 * transaction commits, and this backend's own later statements see it at
 * once.  So an insert need not set the key's bits when the row is
 * inserted, only before any scan that could see the row: aminsert adds the
 * key's hash to a backend-local batch of its index, and the batch is
 * written (flushed)
 *
 *	- when it is full;
 *	- at the start of every executor run in this backend (ExecutorStart),
 *	  so before any query, trigger, or function's query that could read the
 *	  table, also inside the inserting statement;
 *	- before this backend probes the index in any other way (a scan's
 *	  bitmap, the planner's estimate, bloom_index_contains,
 *	  amqfilter_index_info);
 *	- before the transaction commits or prepares (PRE_COMMIT, PRE_PREPARE):
 *	  its WAL then precedes the commit record, so crash recovery and a
 *	  standby redo the bits before the rows become visible.
 * A batch left by an aborted (sub)transaction is written or dropped: bits
 * of keys whose rows are gone only add "maybe"s.
 *
 * Why: each change to a page is a generic WAL record, which compares the
 * whole page with its copy to find what changed (several microseconds).
 * One record per row made a COPY five times slower; a batch sorted by page
 * makes one record per page for all the keys that page takes, and skips
 * keys whose bits are all set already (duplicates) without writing at all.
 *
 * Growth.  A key whose page in the newest generation is full
 * (core/amq_bloom_paged.h) makes the index grow, under the metapage's
 * exclusive lock: if another backend added a generation meanwhile, the key
 * goes there; else a new one, AMQ_PAGED_GROWTH times larger at a smaller
 * share of the rate, is written (pages first, each WAL-logged whole, then
 * the metapage that points at them; a crash between leaves unreferenced
 * pages at the end, which the next growth skips).  Scans read the metapage
 * every time, after their snapshot: a key's row is visible to them only
 * after the key's batch was written, and that came after the growth that
 * made its generation.  A batch uses the metapage as it read it when it
 * was written; a stale copy only puts keys in an older generation, whose
 * pages stop at their limit just the same, and which every scan probes.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "amqfilter.h"
#include "filter_index.h"

/*
 * Keys all batches of a backend hold before the largest is written (4 MB):
 * a batch touches about every page of a generation, and each page it
 * touches costs a WAL record of about the page, so the larger a batch, the
 * more keys share each page's record, and the less WAL a load writes.
 */
#define BATCH_BUDGET	524288
/* Indexes with a batch at once; one more writes them all first. */
#define MAX_BATCHES		32

typedef struct Batch
{
	Oid			indexoid;
	int			nkeys;
	int			room;			/* keys allocated */
	uint64	   *keys;			/* in TopMemoryContext */
} Batch;

static Batch batches[MAX_BATCHES];
static int	nbatches = 0;
static int	pending = 0;		/* keys in all batches */
static bool hooks_installed = false;
static ExecutorStart_hook_type prev_executor_start = NULL;

/*
 * ----------------------------------------------------------------
 * Writing keys into the index
 * ----------------------------------------------------------------
 */

/*
 * Gets a generation newer than the copy has, or adds one, with room for at
 * least want values: AMQ_PAGED_GROWTH times the newest one's capacity, or
 * room for want with the build's headroom, if that is more (a batch far
 * larger than a young index's newest generation, as in a COPY into a table
 * that was empty at the build, skips the generations it would fill at
 * once).
 * Refreshes the copy.
 */
static void
grow(Relation index, AmqIndexMeta *copy, uint64 want)
{
	Buffer		metabuf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	AmqIndexMeta *meta;
	AmqIndexGen gen;
	GenericXLogState *state;
	BlockNumber first;
	uint64		capacity;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	meta = AmqIndexPageGetMeta(BufferGetPage(metabuf));
	if (meta->ngens > copy->ngens || meta->ngens >= AMQ_PAGED_MAX_GENS)
	{
		UnlockReleaseBuffer(metabuf);
		amq_index_read_meta(index, copy);
		return;
	}

	capacity = Max(meta->gens[meta->ngens - 1].capacity * AMQ_PAGED_GROWTH,
				   (uint64) ceil((double) want * AMQ_INDEX_HEADROOM));
	LockRelationForExtension(index, ExclusiveLock);
	first = RelationGetNumberOfBlocks(index);
	amq_index_size_gen(index, capacity, meta->p, meta->ngens, first, &gen);
	amq_index_write_empty_gen(index, first, &gen, (uint16) meta->ngens);
	UnlockRelationForExtension(index, ExclusiveLock);

	state = GenericXLogStart(index);
	meta = AmqIndexPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->gens[meta->ngens] = gen;
	meta->ngens++;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
	amq_index_read_meta(index, copy);
}

/* A key and where it goes in the newest generation. */
typedef struct Placed
{
	uint32		page;
	uint32		block;
	uint64		hash;
} Placed;

/* Orders keys by page, in O(n + pages): a counting sort into out. */
static void
sort_by_page(const Placed *keys, int n, uint32 npages, Placed *out)
{
	int		   *start = palloc0(sizeof(int) * (npages + 1));
	uint32		pg;
	int			i;

	for (i = 0; i < n; i++)
		start[keys[i].page + 1]++;
	for (pg = 0; pg < npages; pg++)
		start[pg + 1] += start[pg];
	for (i = 0; i < n; i++)
		out[start[keys[i].page]++] = keys[i];
	pfree(start);
}

/*
 * Sets the bits of the keys on one page of generation g: one WAL record for
 * all of them, none if every key is there already.  Keys the page has no
 * room for (it is full) are moved to the front of keys[]; returns how many.
 */
static int
write_page(Relation index, const AmqIndexGen *g, Placed *keys, int nkeys,
		   bool ignore_limit)
{
	Buffer		buf = ReadBuffer(index, g->first + keys[0].page);
	Page		page;
	GenericXLogState *state = NULL;
	int			nleft = 0;
	int			i;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	for (i = 0; i < nkeys; i++)
	{
		uint64		h2 = amq_fmix64(keys[i].hash);

		if (amq_block_test(AmqIndexPageGetBlock(page, keys[i].block), h2, g->hashes))
			continue;			/* nothing to set */
		if (!ignore_limit && AmqIndexPageGetHeader(page)->nset >= g->fill_limit)
		{
			keys[nleft++] = keys[i];
			continue;
		}
		if (state == NULL)
		{
			state = GenericXLogStart(index);
			page = GenericXLogRegisterBuffer(state, buf, 0);
			amq_index_page_make_whole(page);
		}
		AmqIndexPageGetHeader(page)->nset +=
			amq_block_set(AmqIndexPageGetBlock(page, keys[i].block), h2, g->hashes);
	}
	if (state != NULL)
		GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	return nleft;
}

/*
 * Sets the bits of every key in the index's newest generation, page by
 * page; keys whose page is full make it grow, and go to the new one.
 */
static void
write_keys(Relation index, uint64 *hashes, int nkeys)
{
	AmqIndexMeta meta;
	Placed	   *keys = palloc(sizeof(Placed) * nkeys);
	Placed	   *sorted = palloc(sizeof(Placed) * nkeys);
	int			n = nkeys;
	int			i;

	for (i = 0; i < nkeys; i++)
		keys[i].hash = hashes[i];
	amq_index_read_meta(index, &meta);
	while (n > 0)
	{
		const AmqIndexGen *g = &meta.gens[meta.ngens - 1];
		bool		last = meta.ngens >= AMQ_PAGED_MAX_GENS;
		amq_paged_gen geometry;
		int			nfull = 0;
		int			start;

		CHECK_FOR_INTERRUPTS();
		amq_index_geometry(g, &geometry);
		for (i = 0; i < n; i++)
			amq_paged_locate(&geometry, keys[i].hash, &keys[i].page, &keys[i].block);
		sort_by_page(keys, n, g->npages, sorted);
		memcpy(keys, sorted, sizeof(Placed) * n);
		for (start = 0; start < n;)
		{
			int			end = start;
			int			left;

			while (end < n && keys[end].page == keys[start].page)
				end++;

			/*
			 * The last generation an index may have takes every key, past
			 * its limit: its rate then rises above its share, never a "no"
			 * for a key that is there.
			 */
			left = write_page(index, g, keys + start, end - start, last);
			memmove(keys + nfull, keys + start, sizeof(Placed) * left);
			nfull += left;
			start = end;
		}
		n = nfull;
		if (n > 0)
			grow(index, &meta, (uint64) n);
	}
	pfree(sorted);
	pfree(keys);
}

/* Writes one batch, if its index is still there, and empties it. */
static void
flush_batch(Batch *b)
{
	Relation	index;

	if (b->nkeys == 0)
		return;
	/* the inserts took RowExclusiveLock, held to the transaction's end */
	index = try_relation_open(b->indexoid, RowExclusiveLock);
	if (index != NULL)
	{
		/* the same OID cannot be another relation within one transaction */
		if (index->rd_rel->relkind == RELKIND_INDEX &&
			index->rd_indam->amgetbitmap == amq_index_getbitmap)
			write_keys(index, b->keys, b->nkeys);
		relation_close(index, RowExclusiveLock);
	}
	pending -= b->nkeys;
	b->nkeys = 0;
	/* the budget is shared: a large batch gives its memory back */
	if (b->room > 16384)
	{
		pfree(b->keys);
		b->keys = NULL;
		b->room = 0;
	}
}

/* Writes every batch of this backend. */
static void
flush_all(void)
{
	int			i;

	for (i = 0; i < nbatches; i++)
		flush_batch(&batches[i]);
}

/* Writes the batch of one index, if this backend has one. */
void
amq_index_flush(Oid indexoid)
{
	int			i;

	for (i = 0; i < nbatches; i++)
		if (batches[i].indexoid == indexoid)
			flush_batch(&batches[i]);
}

/*
 * ----------------------------------------------------------------
 * When batches are written
 * ----------------------------------------------------------------
 */

static void
batch_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (pending > 0)
		flush_all();
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

static void
batch_xact_callback(XactEvent event, void *arg)
{
	int			i;

	switch (event)
	{
		case XACT_EVENT_PRE_COMMIT:
		case XACT_EVENT_PRE_PREPARE:
			flush_all();
			break;
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_PREPARE:
			/* nothing must be left after a commit; after an abort, drop it */
			for (i = 0; i < nbatches; i++)
				batches[i].nkeys = 0;
			pending = 0;
			break;
		default:
			break;
	}
}

/* The batch of an index, made if there is none. */
static Batch *
batch_of(Oid indexoid)
{
	Batch	   *b;
	int			i;

	if (!hooks_installed)
	{
		prev_executor_start = ExecutorStart_hook;
		ExecutorStart_hook = batch_executor_start;
		RegisterXactCallback(batch_xact_callback, NULL);
		hooks_installed = true;
	}
	for (i = 0; i < nbatches; i++)
		if (batches[i].indexoid == indexoid)
			return &batches[i];
	for (i = 0; i < nbatches; i++)
		if (batches[i].nkeys == 0)
			break;
	if (i == nbatches && nbatches == MAX_BATCHES)
	{
		flush_all();
		i = 0;
	}
	if (i == nbatches)
		nbatches++;
	b = &batches[i];
	b->indexoid = indexoid;
	b->nkeys = 0;
	return b;
}

/* Adds a key to a batch, writing the largest batch when all are full. */
static void
batch_add(Batch *b, uint64 hash)
{
	if (pending >= BATCH_BUDGET)
	{
		Batch	   *largest = b;
		int			i;

		for (i = 0; i < nbatches; i++)
			if (batches[i].nkeys > largest->nkeys)
				largest = &batches[i];
		flush_batch(largest);
	}
	if (b->nkeys == b->room)
	{
		int			room = b->room == 0 ? 1024 : b->room * 2;

		b->keys = b->keys == NULL
			? MemoryContextAlloc(TopMemoryContext, sizeof(uint64) * room)
			: repalloc(b->keys, sizeof(uint64) * room);
		b->room = room;
	}
	b->keys[b->nkeys++] = hash;
	pending++;
}

bool
amq_index_insert(Relation index, Datum *values, bool *isnull,
				 ItemPointer ht_ctid, Relation heapRel,
				 IndexUniqueCheck checkUnique,
#if PG_VERSION_NUM >= 140000
				 bool indexUnchanged,
#endif
				 IndexInfo *indexInfo)
{
	FmgrInfo   *proc = (FmgrInfo *) indexInfo->ii_AmCache;
	Batch	   *b;

	if (isnull[0])
		return false;			/* NULL equals nothing: no key to add */
	if (proc == NULL)
	{
		MemoryContext old = MemoryContextSwitchTo(indexInfo->ii_Context);

		proc = palloc(sizeof(FmgrInfo));
		fmgr_info_copy(proc, index_getprocinfo(index, 1, AMQ_INDEX_HASH_PROC),
					   indexInfo->ii_Context);
		indexInfo->ii_AmCache = proc;
		MemoryContextSwitchTo(old);
	}
	b = batch_of(RelationGetRelid(index));
	batch_add(b, amq_index_hash(proc, index->rd_indcollation[0], values[0]));
	return false;
}
