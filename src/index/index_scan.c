/*
 * index_scan.c
 *		Probing an amqfilter index: bitmap scans, and the planner's cost
 *		estimate, which probes too when the value is known.
 *
 * A scan's keys are "column = value" and "column = ANY (array)".  A probe
 * of a value reads the metapage and one page per generation, and returns
 * the block ranges whose rows may hold it (or "everywhere": a value in too
 * many ranges, or on a page out of room); the bitmap gets those blocks,
 * lossy, and the heap scan rechecks each of their rows.  A value in no
 * range leaves the bitmap empty: the table is not read.  Keys are ANDed:
 * the smallest set of blocks any key gives is enough.
 *
 * Values of another type of the column's operator family (an int4 with an
 * int8 column) are hashed with their own type's support function: within
 * a family, equal values hash alike (the rule hash operator families obey).
 *
 * Cost.  A scan reads the blocks of the ranges the probe returns.  With a
 * constant value the estimate probes the index (as btree's estimates read
 * the index for the actual range of a column), unless row security or a
 * security barrier stands between the role and the table
 * (may_probe_clause): it costs the blocks the probe returns, none for a
 * value the index rules out.  With a value known only at run time (a
 * parameter of a generic plan, the outer row of a nested loop), or no
 * probe, it costs the blocks of the rows the column's statistics expect for
 * a value, each in a range of its own, times the chance that the table
 * holds the value: for a partition, the share of the partitioned table's
 * distinct values that it holds (from both tables' statistics); for any
 * other table, 1, as PostgreSQL's own equality estimate assumes the value
 * is there.
 */
#include "postgres.h"

#include <math.h>

#include "access/relscan.h"
#include "access/table.h"
#include "catalog/pg_class.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "miscadmin.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/tidbitmap.h"
#include "optimizer/cost.h"
#include "optimizer/optimizer.h"
#include "optimizer/pathnode.h"
#include "pgstat.h"
#include "port/pg_bitutils.h"
#include "parser/parse_coerce.h"
#include "parser/parsetree.h"
#include "storage/bufmgr.h"
#include "utils/array.h"
#include "utils/builtins.h"
#include "utils/lsyscache.h"
#include "utils/rel.h"
#include "utils/rls.h"
#include "utils/selfuncs.h"
#include "utils/spccache.h"
#include "utils/syscache.h"
#include "utils/typcache.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"

/*
 * Adds blocks first .. first + len - 1 to a set of ranges, or with classes
 * not 0, those row classes of block first (len 1).
 */
static void
ranges_add_classes(AmqIndexRanges *r, BlockNumber first, uint32 len, uint32 classes)
{
	if (r->n == r->room)
	{
		r->room = r->room == 0 ? 16 : r->room * 2;
		r->first = r->first == NULL ? palloc(sizeof(BlockNumber) * r->room)
			: repalloc(r->first, sizeof(BlockNumber) * r->room);
		r->len = r->len == NULL ? palloc(sizeof(uint32) * r->room)
			: repalloc(r->len, sizeof(uint32) * r->room);
		r->classes = r->classes == NULL ? palloc(sizeof(uint32) * r->room)
			: repalloc(r->classes, sizeof(uint32) * r->room);
	}
	r->first[r->n] = first;
	r->len[r->n] = len;
	r->classes[r->n] = classes;
	r->n++;
}

static void
ranges_add(AmqIndexRanges *r, BlockNumber first, uint32 len)
{
	ranges_add_classes(r, first, len, 0);
}

/* Blocks a set of ranges holds (overlaps counted twice), at most cap. */
static double
ranges_blocks(const AmqIndexRanges *r, double cap)
{
	double		blocks = 0.0;
	int			i;

	if (r->everywhere)
		return cap;
	for (i = 0; i < r->n; i++)
		blocks += r->len[i];
	return Min(blocks, cap);
}

static int
range_start_cmp(const void *a, const void *b)
{
	BlockNumber fa = ((const BlockNumber *) a)[0];
	BlockNumber fb = ((const BlockNumber *) b)[0];

	return fa < fb ? -1 : fa > fb ? 1 : 0;
}

/*
 * Sorts a set of ranges by first block, merges those that overlap or touch,
 * and clips them to the table's first limit blocks.  Generations cover the
 * same blocks with ranges of their own sizes (pages_per_range can change
 * between them), so the ranges a probe gathers overlap: a scan of each as
 * it came would read a block, and return its rows, more than once.
 */
void
amq_index_ranges_merge(AmqIndexRanges *r, BlockNumber limit)
{
	BlockNumber *items;
	int			i;
	int			m = 0;

	if (r->everywhere || r->n == 0)
		return;
	Assert(r->classes != NULL);	/* ranges_add_classes made them */
	/* first, end (exclusive), classes */
	items = palloc(sizeof(BlockNumber) * 3 * r->n);
	for (i = 0; i < r->n; i++)
	{
		items[3 * i] = r->first[i];
		/* a range that runs past the last block number ends there */
		items[3 * i + 1] = (BlockNumber) Min((uint64) r->first[i] + r->len[i],
											 (uint64) MaxBlockNumber + 1);
		items[3 * i + 2] = r->classes[i];
	}
	qsort(items, r->n, sizeof(BlockNumber) * 3, range_start_cmp);
	for (i = 0; i < r->n; i++)
	{
		BlockNumber first = items[3 * i];
		BlockNumber end = Min(items[3 * i + 1], limit);
		uint32		classes = items[3 * i + 2];

		if (first >= end)
			continue;
		if (m > 0)
		{
			BlockNumber last_end = r->first[m - 1] + r->len[m - 1];
			uint32		last_classes = r->classes[m - 1];

			if (classes == 0 && last_classes == 0 && first <= last_end)
			{
				/* whole ranges that overlap or touch: one */
				r->len[m - 1] = Max(last_end, end) - r->first[m - 1];
				continue;
			}
			if (first < last_end)
			{
				/*
				 * One of them has classes of one block, where the other
				 * starts or that the other holds: classes of one block
				 * join, a whole range takes in a block's classes.
				 */
				if (last_classes == 0)
					continue;	/* this block's classes, in a whole range */
				if (classes != 0)
					r->classes[m - 1] |= classes;
				else
				{
					r->len[m - 1] = end - first;
					r->classes[m - 1] = 0;
				}
				continue;
			}
		}
		r->first[m] = first;
		r->len[m] = end - first;
		r->classes[m] = classes;
		m++;
	}
	r->n = m;
	pfree(items);
}

/* Adds the ranges lo .. hi of generation g, as blocks of the table. */
static void
add_range_numbers(AmqIndexRanges *out, const AmqIndexGen *g, uint32 lo, uint32 hi)
{
	uint64		first = (uint64) lo * g->pages_per_range;
	uint64		end = ((uint64) hi + 1) * g->pages_per_range;

	/* no row's block maps past the last (an entry a page got wrong) */
	if (first <= MaxBlockNumber)
		ranges_add(out, (BlockNumber) first,
				   (uint32) (Min(end, (uint64) MaxBlockNumber + 1) - first));
}

/*
 * Adds what a lookup in a page of generation g found: n range numbers of
 * the room given and a span, or "everywhere" (n < 0).  With lanes, a range
 * with the whole bit is the range, and one without it, with row classes,
 * a class of a one-block range.
 */
static void
add_lookup(AmqIndexRanges *out, const amq_rt_geom *geom, const AmqIndexGen *g,
		   const uint32 *ranges, int n, int room, const amq_rt_span *span)
{
	uint32		whole = amq_rt_whole_bit(geom);
	int			j;

	if (n < 0)
		out->everywhere = true;
	for (j = 0; j < n && j < room; j++)
	{
		uint32		r = ranges[j];

		if (geom->lanes && (r & whole))
			r &= ~whole;
		else if (geom->lanes && g->row_bits > 0)
		{
			/* one block a range: the class's rows of the block */
			ranges_add_classes(out, r >> g->row_bits, 1, 1u << (r & ((1u << g->row_bits) - 1)));
			out->row_bits = g->row_bits;
			continue;
		}
		add_range_numbers(out, g, r, r);
	}
	if (n >= 0 && span->lo <= span->hi)
		add_range_numbers(out, g, span->lo, span->hi);
}

/* Reads page pg of generation gen, share-locked and checked. */
static Buffer
read_gen_page(Relation index, const AmqIndexGen *g, uint32 gen, uint32 pg)
{
	Buffer		buf = ReadBuffer(index, g->first + pg);

	LockBuffer(buf, BUFFER_LOCK_SHARE);
	amq_index_check_data_page(index, BufferGetPage(buf), g->first + pg, gen);
	return buf;
}

/*
 * True if some generation of the index may hold the key ("maybe"), false
 * if none does.  meta is a copy of the metapage read after the caller's
 * snapshot was taken (see index_insert.c on why that is enough).
 */
bool
amq_index_may_contain(Relation index, const AmqIndexMeta *meta, uint64 hash)
{
	amq_rt_geom geom;
	uint32		i;

	amq_index_geometry(meta, &geom);
	for (i = 0; i < meta->ngens; i++)
	{
		uint32		pg;
		amq_rt_key	key;
		Buffer		buf;
		Page		page;
		bool		found;

		amq_index_locate(meta, &geom, i, hash, &pg, &key);
		buf = read_gen_page(index, &meta->gens[i], i, pg);
		page = BufferGetPage(buf);
		found = amq_rt_may_contain(&geom, &AmqIndexPageGetHeader(page)->table,
								   AmqIndexPageGetSlots(page), key);
		UnlockReleaseBuffer(buf);
		if (found)
			return true;
	}
	return false;
}

/* A key of a probe of many, where its lane goes in one generation. */
typedef struct PlacedKey
{
	uint32		page;
	int			index;			/* of the key in hashes[] */
	amq_rt_key	key;
} PlacedKey;

static int
placed_key_cmp(const void *a, const void *b)
{
	uint32		pa = ((const PlacedKey *) a)->page;
	uint32		pb = ((const PlacedKey *) b)->page;

	return pa < pb ? -1 : pa > pb ? 1 : 0;
}

/* The lanes a lookup of a key may read in an index of geometry geom. */
static inline uint32
max_lanes(const amq_rt_geom *geom)
{
	return geom->lanes ? AMQ_INDEX_MAX_LANES : 1;
}

/*
 * Adds to out the block ranges that may hold any of n keys, or sets
 * out->everywhere.  The keys of a generation are sorted by the page they go
 * to, and each page is read once: n keys cost n hashes and a read of at most
 * every page, where n probes would read n pages.  With lanes, so for each
 * lane, of the keys whose lane before was full; with presence, only their
 * first lanes, which every key the index holds has an entry in: the ranges
 * are then some of those that may hold them, none only if none may.
 */
void
amq_index_probe_many(Relation index, const AmqIndexMeta *meta,
					 const uint64 *hashes, int n, bool presence, AmqIndexRanges *out)
{
	amq_rt_geom geom;
	PlacedKey  *placed;
	int		   *active;
	uint32		i;

	if (n <= 0)
		return;
	amq_index_geometry(meta, &geom);
	placed = palloc(sizeof(PlacedKey) * n);
	active = palloc(sizeof(int) * n);
	for (i = 0; i < meta->ngens && !out->everywhere; i++)
	{
		const AmqIndexGen *g = &meta->gens[i];
		int			nactive = n;
		uint32		lane;
		int			j;

		for (j = 0; j < n; j++)
			active[j] = j;
		for (lane = 0; lane < (presence ? 1 : max_lanes(&geom)) && nactive > 0 &&
			 !out->everywhere; lane++)
		{
			int			next = 0;

			for (j = 0; j < nactive; j++)
			{
				placed[j].index = active[j];
				amq_index_locate_lane(meta, &geom, i, hashes[active[j]], lane,
									  &placed[j].page, &placed[j].key);
			}
			qsort(placed, nactive, sizeof(PlacedKey), placed_key_cmp);
			j = 0;
			while (j < nactive && !out->everywhere)
			{
				uint32		pg = placed[j].page;
				Buffer		buf;
				Page		page;

				CHECK_FOR_INTERRUPTS();
				buf = read_gen_page(index, g, i, pg);
				page = BufferGetPage(buf);
				for (; j < nactive && placed[j].page == pg && !out->everywhere; j++)
				{
					uint32		ranges[2 * AMQ_RT_BUCKET_SLOTS + AMQ_RT_STASH_SLOTS];
					amq_rt_span span;
					int			nr = amq_rt_lookup(&geom, &AmqIndexPageGetHeader(page)->table,
												   AmqIndexPageGetSlots(page), placed[j].key,
												   ranges, lengthof(ranges), &span);

					add_lookup(out, &geom, g, ranges, nr, lengthof(ranges), &span);
					/* a full lane: the key may have more in its next */
					if (geom.lanes && nr >= AMQ_INDEX_LANE_ENTRIES)
						active[next++] = placed[j].index;
				}
				UnlockReleaseBuffer(buf);
				while (j < nactive && placed[j].page == pg)
					j++;
			}
			nactive = next;
		}
	}
	pfree(active);
	pfree(placed);
}

/*
 * Adds to out the block ranges of the table that may hold the key, or sets
 * out->everywhere.
 */
void
amq_index_probe(Relation index, const AmqIndexMeta *meta, uint64 hash,
				AmqIndexRanges *out)
{
	amq_rt_geom geom;
	uint32		i;

	amq_index_geometry(meta, &geom);
	for (i = 0; i < meta->ngens && !out->everywhere; i++)
	{
		const AmqIndexGen *g = &meta->gens[i];
		uint32		lane;

		for (lane = 0; lane < max_lanes(&geom) && !out->everywhere; lane++)
		{
			uint32		ranges[2 * AMQ_RT_BUCKET_SLOTS + AMQ_RT_STASH_SLOTS];
			amq_rt_span span;
			uint32		pg;
			amq_rt_key	key;
			Buffer		buf;
			Page		page;
			int			n;

			if ((lane & 0x3F) == 0x3F)
				CHECK_FOR_INTERRUPTS();
			amq_index_locate_lane(meta, &geom, i, hash, lane, &pg, &key);
			buf = read_gen_page(index, g, i, pg);
			page = BufferGetPage(buf);
			n = amq_rt_lookup(&geom, &AmqIndexPageGetHeader(page)->table,
							  AmqIndexPageGetSlots(page), key, ranges, lengthof(ranges), &span);
			UnlockReleaseBuffer(buf);
			add_lookup(out, &geom, g, ranges, n, lengthof(ranges), &span);
			/* a lane of fewer is the key's last */
			if (!geom.lanes || n < AMQ_INDEX_LANE_ENTRIES)
				break;
		}
	}
}

/*
 * Adds to out the block ranges that may hold some non-null element of the
 * array, hashed as its element type is.
 */
void
amq_index_probe_array(Relation index, const AmqIndexMeta *meta,
					  const AmqIndexHasher *hasher, ArrayType *array,
					  AmqIndexRanges *out)
{
	Oid			elemtype = ARR_ELEMTYPE(array);
	int16		typlen;
	bool		typbyval;
	char		typalign;
	Datum	   *elems;
	bool	   *nulls;
	int			n;
	int			i;

	get_typlenbyvalalign(elemtype, &typlen, &typbyval, &typalign);
	deconstruct_array(array, elemtype, typlen, typbyval, typalign,
					  &elems, &nulls, &n);
	for (i = 0; i < n && !out->everywhere; i++)
	{
		if ((i & 0xFF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (!nulls[i] && !amq_index_out_of_bounds(meta, hasher, elems[i]))
			amq_index_probe(index, meta, amq_index_hash(hasher, meta->seed, elems[i]), out);
	}
}

/*
 * ----------------------------------------------------------------
 * Scans
 * ----------------------------------------------------------------
 */

/* How a scan hashes values, by their type: a scan has keys of few types. */
typedef struct ScanHasher
{
	Oid			type;
	AmqIndexHasher hasher;
} ScanHasher;

typedef struct ScanOpaque
{
	int			nhashers;
	ScanHasher	hashers[4];
	AmqIndexHasher spare;		/* a fifth type's, for the moment */
	bool		have_meta;		/* meta read by the scan's first lookup */
	AmqIndexMeta meta;

	/* a plain scan's (amgettuple) place since the last rescan */
	MemoryContext cxt;			/* the scan's, where tuples' arrays live */
	bool		looked_up;		/* tuples holds the keys' ranges */
	AmqIndexRanges tuples;		/* merged, by first block */
	int			range;			/* the range being read */
	BlockNumber block;			/* the block of it being read */
	OffsetNumber offset;		/* the offset returned last, or 0 */
	OffsetNumber max_offset;	/* no row the index holds is past it */
	BlockNumber heap_blocks;	/* the table's blocks when last asked */
} ScanOpaque;

static const AmqIndexHasher *
scan_hasher(IndexScanDesc scan, Oid type)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;
	AmqIndexHasher *hasher;
	int			i;

	if (!OidIsValid(type))
		type = scan->indexRelation->rd_opcintype[0];
	for (i = 0; i < so->nhashers; i++)
		if (so->hashers[i].type == type)
			return &so->hashers[i].hasher;
	if (so->nhashers < (int) lengthof(so->hashers))
	{
		so->hashers[so->nhashers].type = type;
		hasher = &so->hashers[so->nhashers].hasher;
	}
	else
		hasher = &so->spare;
	if (!amq_index_hasher_init(hasher, scan->indexRelation, type, CurrentMemoryContext))
		elog(ERROR, "amqfilter index \"%s\" has no hash support function for type %s",
			 RelationGetRelationName(scan->indexRelation), format_type_be(type));
	if (hasher != &so->spare)
		so->nhashers++;
	return hasher;
}

IndexScanDesc
amq_index_beginscan(Relation index, int nkeys, int norderbys)
{
	IndexScanDesc scan = RelationGetIndexScan(index, nkeys, norderbys);
	ScanOpaque *so = palloc0(sizeof(ScanOpaque));

	so->cxt = CurrentMemoryContext;
	scan->opaque = so;
	return scan;
}

static void
ranges_free(AmqIndexRanges *r)
{
	if (r->first != NULL)
		pfree(r->first);
	if (r->len != NULL)
		pfree(r->len);
	if (r->classes != NULL)
		pfree(r->classes);
	memset(r, 0, sizeof(*r));
}

void
amq_index_rescan(IndexScanDesc scan, ScanKey keys, int nkeys,
				 ScanKey orderbys, int norderbys)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;

	if (keys && scan->numberOfKeys > 0)
		memmove(scan->keyData, keys, scan->numberOfKeys * sizeof(ScanKeyData));
	ranges_free(&so->tuples);
	so->looked_up = false;
}

void
amq_index_endscan(IndexScanDesc scan)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;

	ranges_free(&so->tuples);
	pfree(so);
}

/* The block ranges that may hold rows matching a key. */
static void
key_ranges(IndexScanDesc scan, const AmqIndexMeta *meta, ScanKey key,
		   AmqIndexRanges *out)
{
	Relation	index = scan->indexRelation;

	if (key->sk_flags & SK_ISNULL)
		return;					/* "= NULL" holds for no row */
	if (key->sk_flags & SK_SEARCHARRAY)
	{
		ArrayType  *array = DatumGetArrayTypeP(key->sk_argument);

		amq_index_probe_array(index, meta, scan_hasher(scan, ARR_ELEMTYPE(array)),
							  array, out);
		return;
	}
	if (amq_index_out_of_bounds(meta, scan_hasher(scan, key->sk_subtype), key->sk_argument))
		return;
	amq_index_probe(index, meta,
					amq_index_hash(scan_hasher(scan, key->sk_subtype), meta->seed,
								   key->sk_argument),
					out);
}

/*
 * The ranges of the key that narrows the scan most, in *best (everywhere
 * if none does); false if a key holds for no row.  Counts the search.
 */
static bool
scan_ranges(IndexScanDesc scan, AmqIndexRanges *best)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;
	const AmqIndexMeta *meta;
	int			i;

	/* one search, as pg_stat_user_indexes and EXPLAIN count them */
	pgstat_count_index_scan(scan->indexRelation);
	amq_explain_index_search(scan);

	/*
	 * This backend's own inserts first (index_insert.c), and the metapage,
	 * once a scan: a nested loop's later loops see no row its snapshot did
	 * not (a row written since, by this backend too, is past it), and a
	 * copy read after the snapshot holds every generation of the rows it
	 * sees.
	 */
	if (!so->have_meta)
	{
		amq_index_flush(RelationGetRelid(scan->indexRelation));
		amq_index_read_meta(scan->indexRelation, &so->meta);
		so->have_meta = true;
	}
	meta = &so->meta;
	memset(best, 0, sizeof(*best));
	best->everywhere = true;
	for (i = 0; i < scan->numberOfKeys; i++)
	{
		AmqIndexRanges r;

		memset(&r, 0, sizeof(r));
		key_ranges(scan, meta, &scan->keyData[i], &r);
		if (!r.everywhere && r.n == 0)
		{
			ranges_free(best);
			return false;		/* no row matches this key */
		}
		if (best->everywhere ||
			(!r.everywhere && ranges_blocks(&r, 1e18) < ranges_blocks(best, 1e18)))
		{
			ranges_free(best);
			*best = r;
		}
		else
			ranges_free(&r);
	}
	return true;
}

/*
 * The first offset after off, up to max_offset, of one of a block's row
 * classes (all of them if classes is 0), or InvalidOffsetNumber: a class's
 * offsets run on, and past its run the next class with its bit set
 * starts (a class of each offset would cost a division of each).
 */
static OffsetNumber
class_next_offset(uint32 classes, uint32 row_bits, uint32 class_span, OffsetNumber off,
				  OffsetNumber max_offset)
{
	off++;
	if (classes == 0)
		return off <= max_offset ? off : InvalidOffsetNumber;
	while (off <= max_offset)
	{
		uint32		c = amq_index_class_of(row_bits, class_span, off);
		uint32		above;

		if (classes & (1u << c))
			return off;
		/* the classes above c (none above the 32nd: 2 << 31 is 0) */
		above = classes & ~((2u << c) - 1);
		if (above == 0)
			break;
		off = amq_index_class_start(row_bits, class_span, pg_rightmost_one_pos32(above));
	}
	return InvalidOffsetNumber;
}

/* The greatest offset of a row the index holds. */
static OffsetNumber
scan_max_offset(const AmqIndexMeta *meta)
{
	return meta->max_offset > 0 && meta->max_offset < MaxHeapTuplesPerPage ?
		(OffsetNumber) meta->max_offset : MaxHeapTuplesPerPage;
}

int64
amq_index_getbitmap(IndexScanDesc scan, TIDBitmap *tbm)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;
	AmqIndexRanges best;
	int64		blocks = 0;
	int			i;

	if (!scan_ranges(scan, &best))
		return 0;
	if (best.everywhere)
	{
		/*
		 * Every page of the table, to be rechecked row by row.  A bitmap
		 * scan is not given the table: open it (the query locked it).
		 */
		Relation	heap = table_open(scan->indexRelation->rd_index->indrelid,
									  AccessShareLock);
		BlockNumber nblocks = RelationGetNumberOfBlocks(heap);
		BlockNumber blk;

		table_close(heap, AccessShareLock);
		for (blk = 0; blk < nblocks; blk++)
		{
			if ((blk & 0x3FF) == 0)
				CHECK_FOR_INTERRUPTS();
			tbm_add_page(tbm, blk);
		}
		blocks = nblocks;
	}
	else
	{
		/* a row class's rows: no row the index holds is past max_offset */
		OffsetNumber max_offset = scan_max_offset(&so->meta);

		/* blocks past the table's end are skipped by the heap scan */
		if (best.row_bits > 0)
			amq_index_ranges_merge(&best, MaxBlockNumber);
		for (i = 0; i < best.n; i++)
		{
			uint32		b;

			if (best.classes != NULL && best.classes[i] != 0)
			{
				/* the rows of those classes, rechecked: offsets past the block's are none */
				ItemPointerData tids[MaxHeapTuplesPerPage];
				int			ntids = 0;
				OffsetNumber off = InvalidOffsetNumber;

				while ((off = class_next_offset(best.classes[i], best.row_bits,
												so->meta.class_span, off,
												max_offset)) != InvalidOffsetNumber)
				{
					ItemPointerSet(&tids[ntids], best.first[i], off);
					ntids++;
				}
				tbm_add_tuples(tbm, tids, ntids, true);
				blocks++;
				continue;
			}
			for (b = 0; b < best.len[i]; b++)
				tbm_add_page(tbm, best.first[i] + b);
			blocks += best.len[i];
			if ((i & 0xFF) == 0)
				CHECK_FOR_INTERRUPTS();
		}
	}
	ranges_free(&best);
	/* as BRIN reports a lossy page: about ten rows each */
	return blocks * 10;
}

/*
 * A plain index scan: the TIDs the ranges may hold, in block order, every
 * one to be rechecked.  A block range's TIDs are every offset of its
 * blocks up to the greatest the index holds; a block's row classes, the
 * offsets of those classes.  The planner takes it only for indexes with
 * row classes (amq_index_plain_scans), where a lookup of a few rows
 * fetches about a class's rows of a block, without the bitmap a bitmap
 * heap scan builds and sorts at each loop of a nested loop.
 */
bool
amq_index_gettuple(IndexScanDesc scan, ScanDirection dir)
{
	ScanOpaque *so = (ScanOpaque *) scan->opaque;
	AmqIndexRanges *r = &so->tuples;

	if (!so->looked_up)
	{
		MemoryContext old = MemoryContextSwitchTo(so->cxt);

		so->looked_up = true;
		if (!scan_ranges(scan, r))
			r->n = 0;
		else if (r->everywhere)
		{
			r->everywhere = false;
			ranges_add(r, 0, MaxBlockNumber);
		}
		else
			amq_index_ranges_merge(r, MaxBlockNumber);	/* no TID twice */
		MemoryContextSwitchTo(old);
		so->range = 0;
		so->block = r->n > 0 ? r->first[0] : InvalidBlockNumber;
		so->offset = InvalidOffsetNumber;
		so->max_offset = scan_max_offset(&so->meta);
	}

	while (so->range < r->n)
	{
		uint32		classes = r->classes[so->range];
		OffsetNumber off = so->offset;

		/*
		 * Blocks past the table's end hold nothing (the entries of rows a
		 * VACUUM truncated away): the table, locked by the query, cannot
		 * shrink while it runs, and the ranges are in block order.
		 */
		if (so->block >= so->heap_blocks)
		{
			so->heap_blocks = RelationGetNumberOfBlocks(scan->heapRelation);
			if (so->block >= so->heap_blocks)
				break;
		}
		off = class_next_offset(classes, r->row_bits, so->meta.class_span, off,
								so->max_offset);
		if (off != InvalidOffsetNumber)
		{
			so->offset = off;
			ItemPointerSet(&scan->xs_heaptid, so->block, off);
			scan->xs_recheck = true;
			return true;
		}
		/* the next block, of this range or the next */
		so->offset = InvalidOffsetNumber;
		if ((so->block & 0x3FF) == 0)
			CHECK_FOR_INTERRUPTS();
		if (++so->block - r->first[so->range] >= r->len[so->range])
		{
			so->range++;
			if (so->range < r->n)
				so->block = r->first[so->range];
		}
	}
	return false;
}

/*
 * Lets the planner consider plain index scans of the relation's amqfilter
 * indexes with row classes (index format 5 built them), and only those:
 * for the others, whose ranges are whole blocks or more, a plain scan would
 * fetch every offset of each block one by one, where a bitmap heap scan
 * reads a block's rows at once.  Reads each one's metapage.
 */
void
amq_index_plain_scans(RelOptInfo *rel)
{
	ListCell   *lc;

	foreach(lc, rel->indexlist)
	{
		IndexOptInfo *index = lfirst_node(IndexOptInfo, lc);
		Relation	irel;
		AmqIndexMeta meta;

		if ((void *) index->amcostestimate != (void *) amq_index_costestimate)
			continue;
		irel = index_open(index->indexoid, AccessShareLock);
		amq_index_read_meta(irel, &meta);
		index_close(irel, AccessShareLock);
		index->amhasgettuple = meta.version == AMQ_INDEX_VERSION_LANES &&
			meta.ngens > 0 && meta.gens[0].row_bits > 0;
	}
}

/*
 * ----------------------------------------------------------------
 * Cost estimate
 * ----------------------------------------------------------------
 */

/* pg_class.reltuples of a relation (of a partitioned table too), or -1. */
static double
relation_tuples(Oid relid)
{
	HeapTuple	tup = SearchSysCache1(RELOID, ObjectIdGetDatum(relid));
	double		tuples;

	if (!HeapTupleIsValid(tup))
		return -1.0;
	tuples = ((Form_pg_class) GETSTRUCT(tup))->reltuples;
	ReleaseSysCache(tup);
	return tuples;
}

/*
 * The chance that a value known only at run time is in the table: for a
 * partition, its distinct values' share of its parent's, when both have
 * statistics; else 1.
 */
static double
runtime_presence(PlannerInfo *root, IndexOptInfo *index, Node *indexkey)
{
	RelOptInfo *rel = index->rel;
	AppendRelInfo *appinfo;
	VariableStatData vardata;
	bool		isdefault;
	double		nd_rel;
	double		nd_parent;
	Var		   *var;
	Var		   *parent_var;
	int			i;

	if (!IsA(indexkey, Var) || root->append_rel_array == NULL ||
		(appinfo = root->append_rel_array[rel->relid]) == NULL)
		return 1.0;
	var = (Var *) indexkey;

	examine_variable(root, indexkey, 0, &vardata);
	nd_rel = get_variable_numdistinct(&vardata, &isdefault);
	ReleaseVariableStats(vardata);
	if (isdefault)
		return 1.0;

	/* the parent's column of this partition's column */
	parent_var = NULL;
	for (i = 0; i < list_length(appinfo->translated_vars); i++)
	{
		Var		   *tv = (Var *) list_nth(appinfo->translated_vars, i);

		if (tv != NULL && IsA(tv, Var) && tv->varattno == var->varattno)
		{
			parent_var = makeVar(appinfo->parent_relid, i + 1, var->vartype,
								 var->vartypmod, var->varcollid, 0);
			break;
		}
	}
	if (parent_var == NULL)
		return 1.0;
	/*
	 * The parent's distinct values from its own statistics, and as a
	 * fraction from its size in pg_class: its RelOptInfo counts the rows
	 * left after this query's restrictions, not its rows.
	 */
	examine_variable(root, (Node *) parent_var, 0, &vardata);
	nd_parent = -1.0;
	if (HeapTupleIsValid(vardata.statsTuple))
	{
		double		stadistinct = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stadistinct;

		if (stadistinct > 0.0)
			nd_parent = stadistinct;
		else if (stadistinct < 0.0)
			nd_parent = -stadistinct * relation_tuples(root->simple_rte_array[appinfo->parent_relid]->relid);
	}
	ReleaseVariableStats(vardata);
	if (nd_parent <= 0.0)
		return 1.0;
	return Min(1.0, nd_rel / nd_parent);
}

/*
 * What a lookup of a value the table holds returns, for a value known only
 * at run time: the share of values whose entry is "everywhere" (a lookup
 * of one reads the whole table), and the ranges, of *pages_per_range
 * blocks, a lookup of any other returns.
 *
 * A build counts both (AMQ_INDEX_KEYS_COUNTED): they are the metapage's
 * while the table holds about the rows it was built over.  Otherwise
 * (an index built before the count, or a table grown well past its build)
 * they follow from the statistics: rows_per_value rows, each value's
 * clustered as the column's correlation says (c^2 of them in consecutive
 * blocks, the rest scattered at random over the table's ranges, as the
 * planner weighs an index's correlation), make a value "everywhere" when
 * they fall in more than AMQ_RT_MAX_RANGES ranges, as the build decides
 * (with spans, a span of them).
 */
static void
lookup_shape(PlannerInfo *root, IndexOptInfo *index, Node *indexkey,
			 const AmqIndexMeta *meta, double rows_per_value, double heap_blocks,
			 double *everywhere, double *ranges, double *pages_per_range)
{
	double		tuples = Max(index->rel->tuples, 1.0);
	double		nranges;
	double		scattered;
	double		clustered;
	double		correlation = 0.0;
	VariableStatData vardata;

	if ((meta->flags & AMQ_INDEX_KEYS_COUNTED) && meta->build_keys > 0 &&
		(double) meta->build_values * 2.0 >= tuples)
	{
		double		keys = (double) meta->build_keys;
		double		every = (double) meta->build_everywhere;

		*everywhere = every / keys;
		if (meta->version != AMQ_INDEX_VERSION_NO_SPANS)
			*ranges = keys > every ? (double) meta->build_reads / (keys - every) : 1.0;
		else
			*ranges = keys > every ?
				Max((double) meta->build_entries - every, 0.0) / (keys - every) : 1.0;
		*pages_per_range = meta->gens[0].pages_per_range;
		return;
	}

	*pages_per_range = meta->gens[meta->ngens - 1].pages_per_range;
	nranges = Max(heap_blocks / *pages_per_range, 1.0);
	examine_variable(root, indexkey, 0, &vardata);
	if (HeapTupleIsValid(vardata.statsTuple))
	{
		AttStatsSlot sslot;

		if (get_attstatsslot(&sslot, vardata.statsTuple, STATISTIC_KIND_CORRELATION,
							 InvalidOid, ATTSTATSSLOT_NUMBERS))
		{
			if (sslot.nnumbers > 0)
				correlation = sslot.numbers[0];
			free_attstatsslot(&sslot);
		}
	}
	ReleaseVariableStats(vardata);
	scattered = nranges * (1.0 - pow(1.0 - 1.0 / nranges, rows_per_value));
	clustered = Min(nranges, rows_per_value / (tuples / heap_blocks) / *pages_per_range + 1.0);
	*ranges = correlation * correlation * clustered +
		(1.0 - correlation * correlation) * scattered;
	*everywhere = *ranges > AMQ_RT_MAX_RANGES ? 1.0 : 0.0;
	/* with lanes, a value keeps its ranges to an eighth of the table's */
	if (meta->version == AMQ_INDEX_VERSION_LANES)
	{
		*everywhere = *ranges > Max(nranges / 8.0, 1.0) ? 1.0 : 0.0;
		return;
	}
	/*
	 * With spans, such a value reads its span, its first range to its last:
	 * the clustered rows', or the table for scattered ones (or "everywhere",
	 * past an eighth of it at build: much the same blocks)
	 */
	if (*everywhere > 0.0 && meta->version != AMQ_INDEX_VERSION_NO_SPANS)
	{
		*ranges = correlation * correlation * clustered +
			(1.0 - correlation * correlation) * nranges;
		*everywhere = 0.0;
	}
}

/*
 * Whether the estimate may probe the index with a clause's constant.  Not
 * where row security, or a security barrier view, stands between the
 * querying role and the table (the clause then comes from above the
 * barrier: its security_level is above 0): the index summarizes the rows
 * they hide too, and a plan that changed with its answer would tell a
 * hidden value from an absent one, with nothing executed.  The estimate
 * then is the one for a value known only at run time, the same whatever
 * the value.  (A role without SELECT on the columns the index reads never
 * sees a plan: its query, EXPLAIN too, fails the executor's privilege
 * check.)
 */
/*
 * True if the planner may probe an index of a table with a value the query
 * gives (and show what it learns in a plan): when no row security or
 * security barrier stands between the role and the table.  rte is the
 * table's entry (for a partition, its partitioned table's: row security
 * is the parent's), relid the table whose policies apply.
 */
bool
amq_index_may_probe(PlannerInfo *root, RangeTblEntry *rte, Oid relid)
{
	PlannerInfo *outer;

	if (rte->securityQuals != NIL)
		return false;

	/*
	 * A security barrier view is planned as a subquery, the clauses pushed
	 * into it from above at the level of its own: any such subquery above
	 * this one may be the barrier.
	 */
	for (outer = root->parent_root; outer != NULL; outer = outer->parent_root)
	{
		ListCell   *lc;

		foreach(lc, outer->parse->rtable)
		{
			RangeTblEntry *orte = lfirst_node(RangeTblEntry, lc);

			if (orte->rtekind == RTE_SUBQUERY && orte->security_barrier)
				return false;
		}
	}
	return check_enable_rls(relid, amq_rte_user(AMQ_QUERY_PERMINFOS(root->parse), rte),
							true) != RLS_ENABLED;
}

static bool
may_probe_clause(PlannerInfo *root, IndexOptInfo *index, Relation irel,
				 RestrictInfo *rinfo)
{
	if (rinfo->security_level > 0)
		return false;
	return amq_index_may_probe(root, planner_rt_fetch(index->rel->relid, root),
							   irel->rd_index->indrelid);
}

/*
 * The blocks of the table a scan with one index clause reads: those its
 * probe returns when its value is a constant and may_probe; else those of
 * the rows the statistics expect for a value, each in a range of its own,
 * times the chance that the table holds the value.
 */
static double
clause_blocks(PlannerInfo *root, IndexOptInfo *index, Relation irel,
			  const AmqIndexMeta *meta, RestrictInfo *rinfo, bool may_probe,
			  double heap_blocks)
{
	Expr	   *clause = rinfo->clause;
	const AmqIndexGen *newest = &meta->gens[meta->ngens - 1];
	Node	   *indexkey;
	Node	   *other;
	Selectivity sel;
	double		rows;
	double		nvalues = 1.0;
	double		everywhere;
	double		ranges;
	double		pages_per_range;
	double		present;
	double		absent;
	double		presence;

	if (IsA(clause, OpExpr) && list_length(((OpExpr *) clause)->args) == 2)
	{
		indexkey = linitial(((OpExpr *) clause)->args);
		other = lsecond(((OpExpr *) clause)->args);
	}
	else if (IsA(clause, ScalarArrayOpExpr))
	{
		indexkey = linitial(((ScalarArrayOpExpr *) clause)->args);
		other = lsecond(((ScalarArrayOpExpr *) clause)->args);
	}
	else
		return heap_blocks;
	if (IsA(indexkey, RelabelType))
		indexkey = (Node *) ((RelabelType *) indexkey)->arg;

	other = estimate_expression_value(root, other);
	if (IsA(other, Const) && may_probe)
	{
		Const	   *c = (Const *) other;
		AmqIndexHasher hasher;
		AmqIndexRanges r;

		if (c->constisnull)
			return 0.0;
		memset(&r, 0, sizeof(r));
		if (IsA(clause, ScalarArrayOpExpr))
		{
			ArrayType  *array = DatumGetArrayTypeP(c->constvalue);

			if (!amq_index_hasher_init(&hasher, irel, ARR_ELEMTYPE(array),
									   CurrentMemoryContext))
				return heap_blocks;
			amq_index_probe_array(irel, meta, &hasher, array, &r);
		}
		else
		{
			if (!amq_index_hasher_init(&hasher, irel, c->consttype, CurrentMemoryContext))
				return heap_blocks;
			if (amq_index_out_of_bounds(meta, &hasher, c->constvalue))
				return 0.0;
			amq_index_probe(irel, meta, amq_index_hash(&hasher, meta->seed, c->constvalue),
							&r);
		}
		return ranges_blocks(&r, heap_blocks);
	}

	sel = clauselist_selectivity(root, list_make1(rinfo), index->rel->relid,
								 JOIN_INNER, NULL);
	rows = Max(sel * index->rel->tuples, 1.0);
	if (IsA(clause, ScalarArrayOpExpr))
	{
		/* the array's elements, or as many as the planner supposes of one unknown */
		nvalues = 10.0;
		if (IsA(other, Const) && !((Const *) other)->constisnull)
		{
			ArrayType  *array = DatumGetArrayTypeP(((Const *) other)->constvalue);

			nvalues = Max(ArrayGetNItems(ARR_NDIM(array), ARR_DIMS(array)), 1);
		}
	}
	lookup_shape(root, index, indexkey, meta, rows / nvalues, heap_blocks,
				 &everywhere, &ranges, &pages_per_range);
	present = everywhere * heap_blocks +
		(1.0 - everywhere) * Min(heap_blocks, ranges * pages_per_range);
	/* an absent value's false positive returns the entry it matched */
	absent = meta->p * (everywhere * heap_blocks + (1.0 - everywhere) * newest->pages_per_range);
	presence = runtime_presence(root, index, indexkey);
	return Min(heap_blocks, nvalues * (presence * present + (1.0 - presence) * absent));
}

void
amq_index_costestimate(PlannerInfo *root, IndexPath *path, double loop_count,
					   Cost *indexStartupCost, Cost *indexTotalCost,
					   Selectivity *indexSelectivity, double *indexCorrelation,
					   double *indexPages)
{
	IndexOptInfo *index = path->indexinfo;
	Relation	irel;
	AmqIndexMeta meta;
	double		heap_blocks = Max(index->rel->pages, 1);
	double		tuples = Max(index->rel->tuples, 1.0);
	double		blocks = heap_blocks;
	double		spc_random_page_cost;
	double		pages;
	int			nkeys = 0;
	ListCell   *lc;

	amq_index_flush(index->indexoid);
	irel = index_open(index->indexoid, AccessShareLock);
	amq_index_read_meta(irel, &meta);
	foreach(lc, path->indexclauses)
	{
		IndexClause *iclause = lfirst_node(IndexClause, lc);
		ListCell   *lc2;

		foreach(lc2, iclause->indexquals)
		{
			RestrictInfo *rinfo = lfirst_node(RestrictInfo, lc2);

			blocks = Min(blocks, clause_blocks(root, index, irel, &meta, rinfo,
											   may_probe_clause(root, index, irel, rinfo),
											   heap_blocks));
			nkeys++;
		}
	}
	index_close(irel, AccessShareLock);

	/* the metapage and a page per generation, for each key */
	pages = 1 + meta.ngens;
	/* with lanes, a page for each lane of a key's ranges, as the build counted them */
	if (meta.version == AMQ_INDEX_VERSION_LANES && (meta.flags & AMQ_INDEX_KEYS_COUNTED) &&
		meta.build_keys > meta.build_everywhere)
		pages += floor((double) meta.build_reads /
					   (meta.build_keys - meta.build_everywhere) / AMQ_INDEX_LANE_ENTRIES);

	/*
	 * Pages read again by the loops of a nested loop are mostly in cache, as
	 * a btree's are costed (genericcostestimate): the pages the loops fetch
	 * from an index of index->pages, shared among them.
	 */
	if (loop_count > 1.0)
		pages = index_pages_fetched(pages * loop_count, index->pages,
									(double) index->pages, root) / loop_count;
	get_tablespace_page_costs(index->reltablespace, &spc_random_page_cost, NULL);
	*indexStartupCost = pages * spc_random_page_cost +
		Max(nkeys, 1) * meta.ngens * cpu_operator_cost;
	*indexTotalCost = *indexStartupCost;

	/*
	 * The scan returns whole blocks, lossy: as many tuples as blocks make the
	 * bitmap heap scan's estimate read that many blocks (its pages fetched
	 * follow its tuples fetched while they are few), all of them for a scan
	 * of the whole table.
	 */
	*indexSelectivity = blocks >= heap_blocks ? 1.0 : Min(1.0, blocks / tuples);

	/*
	 * A plain scan (of an index with row classes) returns those "tuples" in
	 * block order but each in a block of its own: a block a random read, as
	 * uncorrelated tuples are costed.  (A bitmap heap scan's cost does not
	 * read it.)
	 */
	*indexCorrelation = 0.0;
	*indexPages = pages;

	/*
	 * Every row of a block read is rechecked, where the bitmap heap scan's
	 * estimate counts a row a block: the rest are the scan's, charged here
	 * (a bitmap scan's index cost is paid at each of its loops).
	 */
	{
		/* with row classes, a block's rows of the key's class, about */
		double		share = meta.gens[0].row_bits > 0 && blocks < heap_blocks ?
			1.0 / (1 << meta.gens[0].row_bits) : 1.0;
		double		recheck = Min(blocks, heap_blocks) * Max(tuples / heap_blocks * share, 1.0) -
			*indexSelectivity * tuples;

		if (recheck > 0.0)
			*indexTotalCost += recheck * (cpu_tuple_cost + Max(nkeys, 1) * cpu_operator_cost);
	}
}
