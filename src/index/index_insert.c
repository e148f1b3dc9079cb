/*
 * index_insert.c
 *		Inserting into an amqfilter index, in batches, and growing it.
 *
 * What an insert must guarantee: a row is found through the index by every
 * scan that can see the row.  Other transactions see a row only once its
 * transaction commits, and this backend's own later statements see it at
 * once.  So an insert need not write the key's entry when the row is
 * inserted, only before any scan that could see the row: aminsert adds the
 * key's hash and the row's block to a backend-local batch of its index, and
 * the batch is written (flushed)
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
 * A batch left by an aborted (sub)transaction is written or dropped:
 * entries of keys whose rows are gone only add "maybe"s.
 *
 * Why: each change to a page is a generic WAL record, which compares the
 * whole page with its copy to find what changed (several microseconds).
 * One record per row made a COPY five times slower; a batch sorted by page
 * makes one record per page for all the keys that page takes, and skips
 * keys whose entries are there already (duplicates: more rows of a value
 * in the same range) without writing at all.
 *
 * Growth.  A generation is full when the entries added to it (its count,
 * in the metapage) reach its capacity.  A batch that added COUNT_UNIT
 * entries or more adds them; a smaller one adds COUNT_UNIT with
 * probability added / COUNT_UNIT, so that the count stays right on
 * average (its relative error at a capacity C about sqrt(COUNT_UNIT / C):
 * 12% at the least capacity, 4,096) while a one-row transaction writes
 * the metapage once in COUNT_UNIT, not every time (which cost 12% of
 * their rate: one more generic WAL record each).  The draw is the
 * server's, so keys cannot steer it.  A full generation makes the index
 * grow, under the metapage's exclusive lock: if another backend added a
 * generation meanwhile, the keys go there; else a new one,
 * AMQ_INDEX_GROWTH times larger, is written (pages first, each WAL-logged
 * whole, then the metapage that points at them; a crash between leaves unreferenced pages at the end,
 * which the next growth skips).  The number of keys decides, never which
 * page they fall on: keys crafted to crowd one page grow the index no more
 * than any others (and, the seed being the index's own secret, cannot be
 * crafted anyway); a page they fill answers "everywhere" for its keys
 * (core/amq_range_table.h), which costs their lookups a scan of the table
 * and nobody a write.  A new generation numbers ranges of
 * amq_index_pages_per_range blocks, enough for the largest block its batch
 * wrote with room to grow.
 *
 * A write never fails for want of room.  An index that cannot grow (at its
 * max_generations, or at the size limit) puts every key in its newest
 * generation past its capacity: its pages fill and answer "everywhere",
 * never "no" for a key it holds; the metapage records it (AMQ_INDEX_SATURATED,
 * reported by amqfilter_index_info) and a WARNING says REINDEX, once per
 * backend and index.
 *
 * Scans read the metapage every time, after their snapshot: a key's row is
 * visible to them only after the key's batch was written, and that came
 * after the growth that made its generation.  A batch uses the metapage as
 * it read it when it was written; a stale copy only puts keys in an older
 * generation, which every scan probes.
 */
#include "postgres.h"

#include <math.h>

#include "access/generic_xlog.h"
#include "access/relation.h"
#include "access/xact.h"
#include "catalog/pg_class.h"
#include "common/pg_prng.h"
#include "executor/executor.h"
#include "miscadmin.h"
#include "nodes/execnodes.h"
#include "storage/bufmgr.h"
#include "storage/lmgr.h"
#include "utils/memutils.h"
#include "utils/rel.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

/*
 * Keys all batches of a backend hold before the largest is written (8 MB):
 * a batch touches about every page of a generation, and each page it
 * touches costs a WAL record of about the page, so the larger a batch, the
 * more keys share each page's record, and the less WAL a load writes.
 */
#define BATCH_BUDGET	524288
/* Indexes with a batch at once; one more writes them all first. */
#define MAX_BATCHES		32
/* keys a smaller batch's count is rounded to, at random (see above) */
#define COUNT_UNIT		64

/* A key of a batch: its hash, and the block of its row. */
typedef struct BatchKey
{
	uint64		hash;
	BlockNumber blkno;
	OffsetNumber offset;		/* its row class, with lanes */
} BatchKey;

typedef struct Batch
{
	Oid			indexoid;
	int			nkeys;
	int			room;			/* keys allocated */
	BatchKey   *keys;			/* in TopMemoryContext */
	int64		lo;				/* the bounds of its values (lo > hi: none */
	int64		hi;				/* of a kind with bounds) */
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

/* Indexes this backend has warned were saturated (a few are enough). */
static Oid	warned[8];
static int	nwarned = 0;

static void
warn_saturated(Relation index)
{
	Oid			oid = RelationGetRelid(index);
	int			i;

	for (i = 0; i < nwarned; i++)
		if (warned[i] == oid)
			return;
	if (nwarned < (int) lengthof(warned))
		warned[nwarned++] = oid;
	ereport(WARNING,
			(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
			 errmsg("index \"%s\" holds more values than it was sized for and cannot grow",
					RelationGetRelationName(index)),
			 errdetail("Its pages that run out of room answer \"everywhere\": lookups of their values read the whole table; every value it holds is still found."),
			 errhint("REINDEX it (a REINDEX sizes it for the values the table holds), or raise its max_generations.")));
}

/*
 * Gets a generation newer than the copy has, or adds one, with room for at
 * least want entries: AMQ_INDEX_GROWTH times the newest one's capacity, or
 * room for want with the build's headroom, if that is more (a batch far
 * larger than a young index's newest generation, as in a COPY into a table
 * that was empty at the build, skips the generations it would fill at
 * once), numbering ranges up to block max_blkno with room to grow.
 * Refreshes the copy.  False if the index cannot grow: it is at its
 * max_generations, or the generation would pass the largest block number.
 */
static bool
grow(Relation index, AmqIndexMeta *copy, uint64 want, BlockNumber max_blkno)
{
	Buffer		metabuf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	Page		metapage;
	AmqIndexMeta *meta;
	AmqIndexGen gen;
	GenericXLogState *state;
	BlockNumber first;
	uint64		capacity;
	amq_rt_geom geom;
	uint32		ppr;

	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	meta = AmqIndexPageGetMeta(metapage);
	amq_index_check_meta(index, metapage, meta);
	if (meta->ngens > copy->ngens)
	{
		UnlockReleaseBuffer(metabuf);
		amq_index_read_meta(index, copy);
		return true;
	}
	if ((int) meta->ngens >= amq_index_option_max_gens(index) ||
		meta->ngens >= AMQ_INDEX_MAX_GENS)
	{
		UnlockReleaseBuffer(metabuf);
		return false;
	}

	amq_index_geometry(meta, &geom);
	capacity = Max(meta->gens[meta->ngens - 1].capacity * AMQ_INDEX_GROWTH,
				   (uint64) ceil((double) want * AMQ_INDEX_HEADROOM));
	ppr = amq_index_pages_per_range(index, &geom, max_blkno + 1,
									meta->gens[meta->ngens - 1].pages_per_range);
	LockRelationForExtension(index, ExclusiveLock);
	first = RelationGetNumberOfBlocks(index);
	if (!amq_index_size_gen(capacity, geom.lanes, first, ppr, &gen))
	{
		UnlockRelationForExtension(index, ExclusiveLock);
		UnlockReleaseBuffer(metabuf);
		return false;
	}
	amq_index_write_empty_gen(index, first, &gen, (uint16) meta->ngens);
	UnlockRelationForExtension(index, ExclusiveLock);

	state = GenericXLogStart(index);
	meta = AmqIndexPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->gens[meta->ngens] = gen;
	meta->ngens++;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
	amq_index_read_meta(index, copy);
	return true;
}

/*
 * Adds added to generation i's count of keys; marks the index saturated
 * when i is its newest generation, past its capacity, and it cannot grow.
 * Refreshes the copy's count.
 */
static void
add_count(Relation index, AmqIndexMeta *copy, uint32 i, int64 added,
		  bool saturated)
{
	Buffer		metabuf;
	Page		metapage;
	AmqIndexMeta *meta;
	GenericXLogState *state;

	if (added == 0 && !saturated)
		return;
	metabuf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	amq_index_check_meta(index, metapage, AmqIndexPageGetMeta(metapage));
	state = GenericXLogStart(index);
	meta = AmqIndexPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (added >= 0 || meta->gens[i].count >= (uint64) -added)
		meta->gens[i].count += added;
	else
		meta->gens[i].count = 0;	/* a key's entries became one */
	if (saturated)
		meta->flags |= AMQ_INDEX_SATURATED;
	copy->gens[i].count = meta->gens[i].count;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
}

/* A key and where it goes in a generation (with lanes, its lane's place). */
typedef struct Placed
{
	uint32		page;
	uint32		range;
	amq_rt_key	key;
	uint32		lane;
	int			index;			/* of the key in the batch */
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
 * With lanes, what a page does with a key: nothing (it answers the key's
 * range), add its entry, or send it to its next lane (its lane here holds
 * AMQ_INDEX_LANE_ENTRIES of its fingerprint's entries, which a lookup takes to
 * mean that there may be more in the next).  Counts only grow (but for an
 * "everywhere", after which a lookup reads no further), so a key never
 * has an entry in a lane whose lane before is not full.  Without lanes:
 * nothing or add.
 */
typedef enum LaneStep
{
	LANE_HELD,
	LANE_ADD,
	LANE_NEXT
} LaneStep;

static LaneStep
lane_step(const amq_rt_geom *geom, Page page, const Placed *key)
{
	AmqIndexPageHeader *hdr = AmqIndexPageGetHeader(page);
	uint32		ranges[2 * AMQ_RT_BUCKET_SLOTS + AMQ_RT_STASH_SLOTS];
	amq_rt_span span;
	int			n;

	if (amq_rt_holds(geom, &hdr->table, AmqIndexPageGetSlots(page), key->key, key->range))
		return LANE_HELD;
	if (!geom->lanes || key->range == amq_rt_everywhere(geom))
		return LANE_ADD;
	n = amq_rt_lookup(geom, &hdr->table, AmqIndexPageGetSlots(page), key->key, ranges,
					  lengthof(ranges), &span);
	return n >= AMQ_INDEX_LANE_ENTRIES ? LANE_NEXT : LANE_ADD;
}

/*
 * Writes the entries of the keys on one page of generation gen: one WAL
 * record for all of them, none if every entry is there already.  Returns
 * the change in the page's entries; with lanes, the keys whose lane here
 * is full go to next[] (*nnext of them).  The page is checked before it is
 * changed.
 */
static int
write_page(Relation index, const amq_rt_geom *geom, const AmqIndexGen *g,
		   uint32 gen, const Placed *keys, int nkeys, Placed *next, int *nnext,
		   bool *crowded)
{
	BlockNumber blkno = g->first + keys[0].page;
	Buffer		buf = ReadBuffer(index, blkno);
	Page		page;
	GenericXLogState *state;
	AmqIndexPageHeader *hdr;
	LaneStep   *steps = palloc(sizeof(LaneStep) * nkeys);
	bool		any = false;
	int			added = 0;
	int			i;

	LockBuffer(buf, BUFFER_LOCK_EXCLUSIVE);
	page = BufferGetPage(buf);
	amq_index_check_data_page(index, page, blkno, gen);
	for (i = 0; i < nkeys; i++)
	{
		steps[i] = lane_step(geom, page, &keys[i]);
		any |= steps[i] == LANE_ADD;
		if (steps[i] == LANE_NEXT)
			next[(*nnext)++] = keys[i];
	}
	if (!any)
	{
		UnlockReleaseBuffer(buf);
		pfree(steps);
		return 0;
	}
	state = GenericXLogStart(index);
	page = GenericXLogRegisterBuffer(state, buf, 0);
	amq_index_page_make_whole(page);
	hdr = AmqIndexPageGetHeader(page);
	for (i = 0; i < nkeys; i++)
	{
		int			delta;

		if (steps[i] != LANE_ADD)
			continue;

		/*
		 * Asked again of the page as the keys before changed it: rows of one
		 * value in a batch reach its lane together, and the lane takes
		 * AMQ_INDEX_LANE_ENTRIES of them, not all (more of one fingerprint
		 * than a bucket pair's slots leave no place to move them to).
		 */
		if (geom->lanes && i > 0)
		{
			steps[i] = lane_step(geom, page, &keys[i]);
			if (steps[i] == LANE_NEXT)
				next[(*nnext)++] = keys[i];
			if (steps[i] != LANE_ADD)
				continue;
		}
		amq_rt_insert(geom, &hdr->table, AmqIndexPageGetSlots(page), keys[i].key,
					  keys[i].range, &delta);
		added += delta;
	}
	if (geom->lanes && hdr->table.nstash > AMQ_INDEX_CROWDED_STASH)
		*crowded = true;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(buf);
	pfree(steps);
	return added;
}

/*
 * Writes the entries of n keys in generation gen of the copy, page by
 * page; returns the change in its entries.  With lanes, the keys whose
 * lane was full go to their next lanes, a round of pages a lane; a key
 * past AMQ_INDEX_MAX_LANES becomes "everywhere" in its first.  *crowded
 * says that a page's stash passed AMQ_INDEX_CROWDED_STASH.
 */
static int64
write_gen(Relation index, const AmqIndexMeta *meta, uint32 gen,
		  const BatchKey *batch, Placed *keys, Placed *sorted, int n, bool *crowded)
{
	const AmqIndexGen *g = &meta->gens[gen];
	amq_rt_geom geom;
	int64		added = 0;
	int			start;
	int			i;

	amq_index_gen_geometry(meta, gen, &geom);
	for (i = 0; i < n; i++)
	{
		ItemPointerData tid;

		ItemPointerSet(&tid, batch[i].blkno, batch[i].offset);
		keys[i].lane = 0;
		keys[i].index = i;
		amq_index_locate_lane(meta, &geom, gen, batch[i].hash, 0, &keys[i].page, &keys[i].key);
		keys[i].range = geom.lanes ? amq_index_entry_of(&geom, g, meta->class_span, &tid) :
			amq_index_range_of(&geom, g, batch[i].blkno);
	}
	while (n > 0)
	{
		int			nnext = 0;

		sort_by_page(keys, n, g->npages, sorted);
		for (start = 0; start < n;)
		{
			int			end = start;

			CHECK_FOR_INTERRUPTS();
			while (end < n && sorted[end].page == sorted[start].page)
				end++;
			added += write_page(index, &geom, g, gen, sorted + start, end - start,
								keys, &nnext, crowded);
			start = end;
		}
		/* the keys whose lane was full: their next lanes */
		for (i = 0; i < nnext; i++)
		{
			Placed	   *k = &keys[i];

			k->lane++;
			if (k->lane >= AMQ_INDEX_MAX_LANES)
			{
				k->lane = 0;
				k->range = amq_rt_everywhere(&geom);
			}
			amq_index_locate_lane(meta, &geom, gen, batch[k->index].hash, k->lane,
								  &k->page, &k->key);
		}
		n = nnext;
	}
	return added;
}

/*
 * Raises the metapage's max_offset (an index with lanes, whose copy, meta,
 * knows it) to the greatest offset of the batch's rows, written before
 * their rows can be seen, as the bounds: a lookup returns a row class's
 * offsets up to it.
 */
static void
widen_max_offset(Relation index, const AmqIndexMeta *copy, const BatchKey *keys, int nkeys)
{
	Buffer		metabuf;
	Page		metapage;
	AmqIndexMeta *meta;
	GenericXLogState *state;
	OffsetNumber max_offset = 0;
	int			i;

	for (i = 0; i < nkeys; i++)
		max_offset = Max(max_offset, keys[i].offset);
	if (max_offset <= copy->max_offset)
		return;
	metabuf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	meta = AmqIndexPageGetMeta(metapage);
	amq_index_check_meta(index, metapage, meta);
	/* another backend may have raised it meanwhile */
	if (max_offset <= meta->max_offset)
	{
		UnlockReleaseBuffer(metabuf);
		return;
	}
	state = GenericXLogStart(index);
	meta = AmqIndexPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	meta->max_offset = max_offset;
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
}

/*
 * Writes the entries of every key in the index's newest generation.  A
 * batch larger than the room left there fills the room and puts the rest
 * in a new generation sized for it; an index that cannot grow takes every
 * key in its newest generation, past its capacity.
 */
static void
write_keys(Relation index, const BatchKey *batch, int nkeys)
{
	AmqIndexMeta meta;
	Placed	   *keys = palloc(sizeof(Placed) * nkeys);
	Placed	   *sorted = palloc(sizeof(Placed) * nkeys);
	BlockNumber max_blkno = 0;
	int			done = 0;
	int			i;

	for (i = 0; i < nkeys; i++)
		max_blkno = Max(max_blkno, batch[i].blkno);
	amq_index_read_meta(index, &meta);
	while (done < nkeys)
	{
		uint32		newest = meta.ngens - 1;
		const AmqIndexGen *g = &meta.gens[newest];
		uint64		room = g->count < g->capacity ? g->capacity - g->count : 0;
		int			take = nkeys - done;
		bool		saturated = false;
		bool		crowded = false;
		int64		added;

		if ((uint64) take > room)
		{
			if (room > 0)
				take = (int) room;
			else if (grow(index, &meta, (uint64) take, max_blkno))
				continue;
			else
				saturated = true;	/* all of them, here, past capacity */
		}
		added = write_gen(index, &meta, newest, batch + done, keys, sorted, take, &crowded);
		if (added > 0 && added < COUNT_UNIT)
			added = pg_prng_uint64_range(&pg_global_prng_state, 0, COUNT_UNIT - 1) < (uint64) added
				? COUNT_UNIT : 0;

		/*
		 * A crowded page fills its generation: before its stash runs out
		 * (and it answers "everywhere"), later writes go to a new one.
		 */
		if (crowded && !saturated && (int64) g->count + added < (int64) g->capacity)
			added = (int64) (g->capacity - g->count);
		add_count(index, &meta, newest, added,
				  saturated && !(meta.flags & AMQ_INDEX_SATURATED));
		if (saturated)
		{
			meta.flags |= AMQ_INDEX_SATURATED;
			warn_saturated(index);
		}
		done += take;
	}
	pfree(sorted);
	pfree(keys);
	if (meta.version == AMQ_INDEX_VERSION_LANES && meta.max_offset != 0)
		widen_max_offset(index, &meta, batch, nkeys);
}

/*
 * Widens the metapage's bounds to hold lo .. hi, the values of a batch just
 * written (so before any scan can see their rows, as the keys).  A bound
 * that moves goes past the value by an eighth of the bounds' span: a key
 * that grows with time (a date, a sequence) then writes the metapage once
 * per step of that size, not once per transaction, and the bounds stay
 * a superset, which is all a probe needs of them.
 */
static void
widen_bounds(Relation index, int64 lo, int64 hi)
{
	Buffer		metabuf;
	Page		metapage;
	AmqIndexMeta *meta;
	GenericXLogState *state;
	int64		slack;

	/* a look under the share lock first: most batches change nothing */
	metabuf = ReadBuffer(index, AMQ_INDEX_METAPAGE);
	LockBuffer(metabuf, BUFFER_LOCK_SHARE);
	meta = AmqIndexPageGetMeta(BufferGetPage(metabuf));
	if (!(meta->flags & AMQ_INDEX_BOUNDED) ||
		(meta->bound_lo <= lo && hi <= meta->bound_hi))
	{
		UnlockReleaseBuffer(metabuf);
		return;
	}
	LockBuffer(metabuf, BUFFER_LOCK_UNLOCK);
	LockBuffer(metabuf, BUFFER_LOCK_EXCLUSIVE);
	metapage = BufferGetPage(metabuf);
	meta = AmqIndexPageGetMeta(metapage);
	amq_index_check_meta(index, metapage, meta);
	/* another backend may have widened them meanwhile */
	if (meta->bound_lo <= lo && hi <= meta->bound_hi)
	{
		UnlockReleaseBuffer(metabuf);
		return;
	}
	state = GenericXLogStart(index);
	meta = AmqIndexPageGetMeta(GenericXLogRegisterBuffer(state, metabuf, 0));
	if (meta->bound_lo > meta->bound_hi)
	{
		/* it held no value: these are its bounds */
		meta->bound_lo = lo;
		meta->bound_hi = hi;
	}
	else
	{
		/* half the span, then a quarter: no overflow */
		slack = (meta->bound_hi / 2 - meta->bound_lo / 2) / 4;
		if (lo < meta->bound_lo)
			meta->bound_lo = lo >= PG_INT64_MIN + slack ? lo - slack : PG_INT64_MIN;
		if (hi > meta->bound_hi)
			meta->bound_hi = hi <= PG_INT64_MAX - slack ? hi + slack : PG_INT64_MAX;
	}
	GenericXLogFinish(state);
	UnlockReleaseBuffer(metabuf);
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
		if (amq_index_is_amqfilter(index))
		{
			write_keys(index, b->keys, b->nkeys);
			if (b->lo <= b->hi)
				widen_bounds(index, b->lo, b->hi);
		}
		relation_close(index, RowExclusiveLock);
	}
	pending -= b->nkeys;
	b->nkeys = 0;
	b->lo = PG_INT64_MAX;
	b->hi = PG_INT64_MIN;
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
			{
				batches[i].nkeys = 0;
				batches[i].lo = PG_INT64_MAX;
				batches[i].hi = PG_INT64_MIN;
			}
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
	b->lo = PG_INT64_MAX;
	b->hi = PG_INT64_MIN;
	return b;
}

/* Adds a key to a batch, writing the largest batch when all are full. */
static void
batch_add(Batch *b, uint64 hash, ItemPointer tid)
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
			? MemoryContextAlloc(TopMemoryContext, sizeof(BatchKey) * room)
			: repalloc(b->keys, sizeof(BatchKey) * room);
		b->room = room;
	}
	b->keys[b->nkeys].hash = hash;
	b->keys[b->nkeys].blkno = ItemPointerGetBlockNumber(tid);
	b->keys[b->nkeys].offset = ItemPointerGetOffsetNumber(tid);
	b->nkeys++;
	pending++;
}

/* What an insert looks up once per statement (IndexInfo's ii_AmCache). */
typedef struct InsertCache
{
	AmqIndexHasher hasher;
	uint64		seed;
} InsertCache;

bool
amq_index_insert(Relation index, Datum *values, bool *isnull,
				 ItemPointer ht_ctid, Relation heapRel,
				 IndexUniqueCheck checkUnique,
				 bool indexUnchanged,
				 IndexInfo *indexInfo)
{
	InsertCache *cache = (InsertCache *) indexInfo->ii_AmCache;
	Batch	   *b;

	if (isnull[0])
		return false;			/* NULL equals nothing: no key to add */
	if (cache == NULL)
	{
		AmqIndexMeta meta;

		cache = MemoryContextAllocZero(indexInfo->ii_Context, sizeof(InsertCache));
		if (!amq_index_hasher_init(&cache->hasher, index, index->rd_opcintype[0],
								   indexInfo->ii_Context))
			elog(ERROR, "index \"%s\" has no hash support function for its type",
				 RelationGetRelationName(index));
		amq_index_read_meta(index, &meta);
		cache->seed = meta.seed;
		indexInfo->ii_AmCache = cache;
	}
	b = batch_of(RelationGetRelid(index));
	batch_add(b, amq_index_hash(&cache->hasher, cache->seed, values[0]), ht_ctid);
	if (cache->hasher.bounds_kind != AMQ_BOUNDS_NONE)
	{
		int64		v = amq_index_bounds_value(&cache->hasher, values[0]);

		b->lo = Min(b->lo, v);
		b->hi = Max(b->hi, v);
	}
	return false;
}
