/*
 * amq_cuckoo_membership.c
 *		Membership in a cuckoo filter: adding values (placement, short
 *		paths and eviction walks, counted copies, growth when full), and
 *		probing for them and counting their copies.
 *
 * A value goes to the emptier bucket of its pair in the last table (place,
 * in amq_cuckoo_internal.h), else in an older table.  When its pair is full
 * in every table, a value stored many times has the copy counted; else one
 * or two fingerprints move along the shortest path to a free slot, or an
 * eviction walk parks the last one it moved in the table's victim slot.
 * When that slot is taken too, a copy is counted where one can be, and
 * otherwise the filter is full and its caller grows it
 * (amq_cuckoo_add_growing does that for every caller).  A probe looks for
 * the value's fingerprint in its pair of each table, oldest table first,
 * in the victims and in the counters, and stops at the first copy; a count
 * looks everywhere.  amq_cuckoo.c's file header says why each of these is
 * built the way it is.
 *
 * Adding and probing share this file because they are the filter's hot
 * paths and are built from the same inline helpers, and the compiler makes
 * its inlining choices file by file: compiled together they get the code
 * they had when the cuckoo core was one file, apart they did not (GCC 12
 * stopped inlining the bucket search into the short-path insertion, and an
 * add cost 2 to 3% more instructions).  For the same reason the eviction
 * code stays static: deletion and merging reach it only through
 * amq_cuckoo_rehome_victim and amq_cuckoo_kick_or_undo.
 * test_cuckoo_membership.c tests this file.
 */
#include "amq_cuckoo_internal.h"

/* ----------------------------------------------------------------
 * Table bookkeeping: the item count and the victim slot.
 * ----------------------------------------------------------------
 */

/*
 * Counts one more (delta = 1) or one fewer (delta = -1) item in a table and
 * in the view.  Table counts stay within [0, slots] whatever a crafted value
 * claimed, so the result always validates.
 */
void
amq_cuckoo_count_item(amq_cuckoo_view *view, amq_cuckoo_table *t, int delta)
{
	if (delta > 0 && t->items < TABLE_SLOTS(t->buckets))
	{
		t->items++;
		view->items = add_saturating(view->items, 1);
	}
	else if (delta < 0 && t->items > 0)
	{
		t->items--;
		if (view->items > 0)
			view->items--;
	}
	put_u64(t->header + T_ITEMS, t->items);
}

/* Parks fp, from bucket, in t's victim slot; fp = 0 empties the slot. */
void
amq_cuckoo_set_victim(amq_cuckoo_table *t, uint32_t fp, uint64_t bucket)
{
	t->victim_fp = fp;
	t->victim_bucket = fp ? bucket : 0;
	put_u32(t->header + T_VICTIM_FP, t->victim_fp);
	put_u64(t->header + T_VICTIM_BUCKET, t->victim_bucket);
}

/* ----------------------------------------------------------------
 * Moving fingerprints: eviction walks and short paths.
 * ----------------------------------------------------------------
 */

/* Writes fp to slot position pos, recording the old content if logging. */
static inline void
write_logged(amq_cuckoo_table *t, uint32_t f, uint64_t pos, uint32_t fp,
			 amq_cuckoo_merge *log, int *nlog)
{
	if (log != NULL)
	{
		log->path_pos[*nlog] = pos;
		log->path_fp[*nlog] = slot_get(t->words, pos, f);
		(*nlog)++;
	}
	slot_set(t->words, pos, f, fp);
}

/*
 * Eviction walk for *fp, whose bucket *b (and its alternate) is full.  Each
 * step first looks one move ahead: if a fingerprint of the current bucket
 * can move to a free slot of its own alternate bucket, it moves and the
 * fingerprint in flight takes its place.  Otherwise a random one is evicted
 * and the walk continues from its alternate bucket.  The look-ahead reads
 * four buckets whose loads overlap, and it shortens walks at high load
 * several-fold compared to the plain random walk, each step of which waits
 * for one dependent cache miss.
 *
 * Returns true once every fingerprint has a slot; false after
 * AMQ_CUCKOO_MAX_KICKS evictions, with *fp and *b the fingerprint still in
 * flight and the bucket it belongs to.  With a log, every slot write is
 * recorded for undo (at most AMQ_CUCKOO_MAX_KICKS + 2 of them).
 */
static bool
kick_walk(amq_cuckoo_table *t, uint32_t f, uint32_t *fp_io, uint64_t *b_io,
		  uint64_t *rng, amq_cuckoo_merge *log, int *nlog)
{
	uint32_t	fp = *fp_io;
	uint64_t	b = *b_io;
	int			k;

	for (k = 0; k < AMQ_CUCKOO_MAX_KICKS; k++)
	{
		uint32_t	fps[4];
		uint64_t	alt[4];
		unsigned	s;

		bucket_read(t->words, b, f, fps);
		for (s = 0; s < 4; s++)
			alt[s] = alt_in(t, b, fps[s]);
		for (s = 0; s < 4; s++)
		{
			int			free_slot = bucket_find(t->words, alt[s], f, 0);

			if (free_slot >= 0)
			{
				write_logged(t, f, 4 * alt[s] + (unsigned) free_slot, fps[s], log, nlog);
				write_logged(t, f, 4 * b + s, fp, log, nlog);
				return true;
			}
		}
		s = (unsigned) (next_random(rng) >> 62);
		write_logged(t, f, 4 * b + s, fp, log, nlog);
		fp = fps[s];
		b = alt[s];
	}
	*fp_io = fp;
	*b_io = b;
	return false;
}

/*
 * Inserts fp, whose pair (b, alternate(b)) is full, by evicting; if the walk
 * does not end, the fingerprint left in flight becomes the victim, which
 * must be free.
 */
static void
kick_insert(amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b,
			uint64_t *rng)
{
	if (!kick_walk(t, f, &fp, &b, rng, NULL, NULL))
		amq_cuckoo_set_victim(t, fp, b);
}

/*
 * Eviction walk in table t that is undone if it does not end, leaving t as
 * it was.  fp's pair (b, ...) is full.  *nlog counts the slots written.
 */
bool
amq_cuckoo_kick_or_undo(amq_cuckoo_merge *m, amq_cuckoo_table *t, uint32_t f,
						uint32_t fp, uint64_t b, uint64_t *rng, int *nlog)
{
	int			n = 0;
	bool		done = kick_walk(t, f, &fp, &b, rng, m, &n);

	*nlog = n;
	if (done)
		return true;
	while (n-- > 0)
		slot_set(t->words, m->path_pos[n], f, m->path_fp[n]);
	*nlog *= 2;
	return false;
}

/* Requests bucket b of table t for writing. */
static inline void
prefetch_bucket(const amq_cuckoo_table *t, uint32_t f, uint64_t b)
{
	amq_prefetch_write(t->words + ((b * 4 * f) >> 3));
}

/*
 * The 8 fingerprints of the pair (b1, b2) into fps, and the bucket each
 * would move to into alts: the first level of short_path_insert's search.
 */
static inline void
pair_moves(const amq_cuckoo_table *t, uint32_t f, uint64_t b1, uint64_t b2,
		   uint32_t fps[8], uint64_t alts[8])
{
	int			i;

	bucket_read(t->words, b1, f, fps);
	bucket_read(t->words, b2, f, fps + 4);
	for (i = 0; i < 8; i++)
		alts[i] = alt_in(t, i < 4 ? b1 : b2, fps[i]);
}

/*
 * Inserts fp into its full pair (b1, b2) by the shortest sequence of at most
 * two moves that ends in a free slot, searched breadth first: first the
 * alternate buckets of the pair's 8 fingerprints, then the alternates of
 * the 32 fingerprints in those.  The buckets of each level are requested
 * together, so a level costs about one cache miss, where each step of the
 * eviction walk waits for its own.  Near the design load (95%) one of the
 * first 8 buckets nearly always has room, and the walk, which starts from
 * one bucket and moves at random, needed about 3.7 steps per insertion.
 * False, with nothing changed, if no such path exists; then the caller
 * evicts.  Every move puts a fingerprint into the other bucket of its own
 * pair, so nothing stored moves out of the places a probe looks in.
 */
static bool
short_path_insert(amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1,
				  uint64_t b2)
{
	uint64_t	from[2] = {b1, b2};
	uint32_t	fp1[8];			/* the pair's fingerprints */
	uint64_t	alt1[8];		/* and their alternate buckets */
	uint32_t	fp2[32];		/* the fingerprints of those buckets */
	uint64_t	alt2[32];		/* and their alternates */
	int			i,
				j,
				s;

	pair_moves(t, f, b1, b2, fp1, alt1);
	for (i = 0; i < 8; i++)
		prefetch_bucket(t, f, alt1[i]);
	for (i = 0; i < 8; i++)
	{
		if ((s = bucket_find(t->words, alt1[i], f, 0)) >= 0)
		{
			slot_set(t->words, 4 * alt1[i] + (unsigned) s, f, fp1[i]);
			slot_set(t->words, 4 * from[i >> 2] + (unsigned) (i & 3), f, fp);
			return true;
		}
	}

	/*
	 * Every bucket of level 1 is full.  The three slots a path writes are
	 * distinct: the last is free and the others are not, and the two others
	 * could coincide only if alt1[i] were the bucket fp1[i] sits in and j
	 * its slot, when fp2[j] = fp1[i] and alt2[j] = alt1[i], a full bucket.
	 */
	for (i = 0; i < 8; i++)
		bucket_read(t->words, alt1[i], f, fp2 + 4 * i);
	for (j = 0; j < 32; j++)
	{
		alt2[j] = alt_in(t, alt1[j >> 2], fp2[j]);
		prefetch_bucket(t, f, alt2[j]);
	}
	for (j = 0; j < 32; j++)
	{
		if ((s = bucket_find(t->words, alt2[j], f, 0)) >= 0)
		{
			i = j >> 2;
			slot_set(t->words, 4 * alt2[j] + (unsigned) s, f, fp2[j]);
			slot_set(t->words, 4 * alt1[i] + (unsigned) (j & 3), f, fp1[i]);
			slot_set(t->words, 4 * from[i >> 2] + (unsigned) (i & 3), f, fp);
			return true;
		}
	}
	return false;
}

/* After a slot of t was freed: try to move its victim back into a bucket. */
void
amq_cuckoo_rehome_victim(amq_cuckoo_table *t, uint32_t f, uint64_t seed)
{
	uint32_t	fp = t->victim_fp;
	uint64_t	b = t->victim_bucket;
	uint64_t	alt;
	uint64_t	rng = seed ^ fp;

	if (fp == 0)
		return;
	amq_cuckoo_set_victim(t, 0, 0);
	alt = alt_in(t, b, fp);
	if (!place(t, f, fp, b, alt) && !short_path_insert(t, f, fp, b, alt))
		kick_insert(t, f, fp, b, &rng);
}

/* ----------------------------------------------------------------
 * Adding.
 * ----------------------------------------------------------------
 */

/*
 * Whether the pair (b1, b2) of table t holds a copy of fp, in a slot or as
 * its victim.  When a value cannot be placed and the filter would have to
 * grow, a pair holding its fingerprint counts the copy instead, whatever
 * else shares the buckets: pair_all alone misses every value whose pair is
 * shared with another value's fingerprints, and such a pair, once full,
 * stays full, so each further copy took a table of the filter's full size.
 */
static inline bool
pair_holds(const amq_cuckoo_table *t, uint32_t f, uint32_t fp, uint64_t b1,
		   uint64_t b2)
{
	return bucket_find(t->words, b1, f, fp) >= 0 ||
		bucket_find(t->words, b2, f, fp) >= 0 ||
		victim_in_pair(t, fp, b1, b2);
}

typedef enum
{
	COPY_COUNTED,
	COPY_NEEDS_ROOM,			/* the counter section must grow first */
	COPY_NOT_COUNTED
} copy_outcome;

/*
 * Counts one more copy of a value whose pair is full in every table, if the
 * value already has a counter, or else if its pair in some table holds
 * nothing but its fingerprint (held_once false) or a copy of it (held_once
 * true), at the largest such table's level.  Only reached when no slot is
 * free, so it costs nothing on the common path.
 */
static copy_outcome
count_copy(amq_cuckoo_view *view, uint64_t hash, bool held_once)
{
	pair_walk	w;
	amq_cuckoo_table t;
	bool		found = false;
	unsigned	level = 0;
	uint64_t	bucket = 0;

	walk_begin(&w, view, hash);
	while (walk_next(&w, &t))
	{
		uint64_t	lower = w.b1 < w.b2 ? w.b1 : w.b2;
		uint32_t	hole;

		if (amq_cuckoo_counter_find(view, lower, w.fp, t.level,
									&hole) != UINT32_MAX)
		{
			/* an existing counter: use it */
			found = true;
			level = t.level;
			bucket = lower;
			break;
		}
		if ((!found || t.level > level) &&
			(held_once ? pair_holds(&t, w.f, w.fp, w.b1, w.b2) :
			 pair_all(&t, w.f, w.fp, w.b1, w.b2)))
		{
			found = true;
			level = t.level;
			bucket = lower;
		}
	}
	if (!found)
		return COPY_NOT_COUNTED;
	return amq_cuckoo_counter_add(view, level, bucket, w.fp, 1) ?
		COPY_COUNTED : COPY_NEEDS_ROOM;
}

/* What amq_cuckoo_add returns after count_copy said outcome. */
static amq_status
counted_status(amq_cuckoo_view *view, copy_outcome outcome, uint32_t family)
{
	if (outcome == COPY_NEEDS_ROOM)
	{
		view->grow_counters = true;
		return AMQ_FULL;
	}
	bind_family(view, family);
	return AMQ_OK;
}

/*
 * Fewest copies of a fingerprint in its own pair that compact_pair counts
 * one of to make room.  A pair holds three copies of one fingerprint when a
 * value was stored many times; a filter of distinct values meets that only
 * when three values share a fingerprint and a pair, about (8/2^f)^2 per
 * pair, so its bytes stay as they were.
 */
#define COMPACT_MIN_COPIES	3

/*
 * Makes room for fp in its full pair (b1, b2) of table t, where nothing
 * else has room: the first slot (b1's, then b2's) whose fingerprint fills
 * at least COMPACT_MIN_COPIES slots of its own pair in t has that copy
 * counted instead, in the counter of that pair at t's level, and fp takes
 * the slot.  The copy moves from a slot of its pair to the pair's counter
 * of the same level, which probes, counts and deletions treat as one more
 * slot there, so nothing they answer changes.  Without this, copies that
 * filled a table before their counters started (a value's copies arriving
 * together fill its pair first) made the next new value grow the filter.
 */
static copy_outcome
compact_pair(amq_cuckoo_view *view, amq_cuckoo_table *t, uint32_t fp,
			 uint64_t b1, uint64_t b2)
{
	uint32_t	f = view->fp_bits;
	uint32_t	s[8];
	unsigned	i;

	bucket_read(t->words, b1, f, s);
	bucket_read(t->words, b2, f, s + 4);
	for (i = 0; i < (b2 == b1 ? 4u : 8u); i++)
	{
		uint64_t	b = i < 4 ? b1 : b2;
		uint32_t	e = s[i];
		uint64_t	alt = alt_in(t, b, e);
		unsigned	copies = copies_of(s + (i & 4), e);

		if (alt != b)
		{
			uint32_t	other[4];

			bucket_read(t->words, alt, f, other);
			copies += copies_of(other, e);
		}
		if (copies < COMPACT_MIN_COPIES)
			continue;
		if (!amq_cuckoo_counter_add(view, t->level, b < alt ? b : alt, e, 1))
			return COPY_NEEDS_ROOM;
		/* one copy out of the slot, fp in: the table's items stay */
		slot_set(t->words, 4 * b + (i & 3), f, fp);
		return COPY_COUNTED;
	}
	return COPY_NOT_COUNTED;
}

/*
 * The rest of amq_cuckoo_add for a value whose pair (b1, b2) is full in
 * every table, last being the last table: a counted copy, or eviction in
 * the last table.  add_many comes here straight from its own placement
 * when the filter has one table, where nothing comes between the two.
 *
 * Copies are counted at two points.  Before evicting, only those of a value
 * that has a counter or whose pair holds nothing but its fingerprint: a
 * pair that also holds other fingerprints makes room by evicting them, so a
 * filter of distinct values keeps the bytes it always had (a new value
 * meets its own fingerprint in its full pair, another value's, about once
 * in 2^f / 8 such adds at high load, and counting it would give most
 * filters filled to their design load a counter section).  And where the
 * filter is full and would grow: then a pair holding one copy of the
 * fingerprint is enough, whatever shares the buckets, and failing that a
 * copy among many in the pair makes room (compact_pair).  So a value's
 * copies cost at most its first slot and a counter, and a filter of values
 * with many copies grows only when its distinct values need room.  A
 * filter of distinct values that grows meets that point once or twice per
 * growth, and one in 2^f / 8 per table of them counts a colliding value:
 * measured at p = 1%, 7 of 200 builds of 3,000 values at n = 500 got a
 * counter section.
 */
static amq_status
add_to_full_pair(amq_cuckoo_view *view, amq_cuckoo_table *last, uint64_t hash,
				 uint32_t fp, uint64_t b1, uint64_t b2, uint32_t family)
{
	uint64_t	rng;
	copy_outcome outcome;

	/*
	 * A value stored many times: count the copy.  In one table without
	 * counters, count_copy would only find a pair of nothing but fp, so
	 * that is checked first, cheaply.
	 */
	if (view->tables > 1 || view->counters != 0 ||
		pair_all(last, view->fp_bits, fp, b1, b2))
	{
		outcome = count_copy(view, hash, false);
		if (outcome != COPY_NOT_COUNTED)
			return counted_status(view, outcome, family);
	}

	/*
	 * Evict in the last table, unless its victim slot is taken: full, and
	 * the filter grows unless the copy can be counted.
	 */
	view->grow_counters = false;
	if (last->victim_fp != 0)
	{
		/*
		 * Not where a new counter section would cost more than the growth:
		 * in a tiny filter of distinct values a new value meets an equal
		 * fingerprint in its full pair often (half the time at f = 4), and
		 * a table of a few buckets is smaller than the smallest section.
		 */
		if (view->counters == 0 &&
			amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(view), view->fp_bits) <
			(size_t) AMQ_CUCKOO_MIN_COUNTERS * AMQ_CUCKOO_COUNTER_SIZE)
			return AMQ_FULL;
		outcome = count_copy(view, hash, true);
		if (outcome == COPY_NOT_COUNTED)
			outcome = compact_pair(view, last, fp, b1, b2);
		if (outcome != COPY_NOT_COUNTED)
			return counted_status(view, outcome, family);
		return AMQ_FULL;
	}
	if (!short_path_insert(last, view->fp_bits, fp, b1, b2))
	{
		rng = hash;
		if (next_random(&rng) >> 63)
			b1 = b2;
		kick_insert(last, view->fp_bits, fp, b1, &rng);
	}
	bind_family(view, family);
	amq_cuckoo_count_item(view, last, 1);
	return AMQ_OK;
}

amq_status
amq_cuckoo_add(amq_cuckoo_view *view, uint64_t hash, uint32_t family)
{
	uint32_t	f = view->fp_bits;
	pair_walk	w;
	amq_cuckoo_table t;
	amq_cuckoo_table last;
	uint64_t	b1;
	uint64_t	b2;

	if (view->tables == 0)
		return AMQ_ERR_NO_GEOMETRY;
	walk_begin(&w, view, hash);

	/*
	 * A free slot in the value's buckets: in the last table first, which has
	 * the most room (and where the copies of a value stored many times end
	 * up, so adding one more costs O(1) bucket reads, not one per table),
	 * then in the others.
	 */
	table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
	pair_in(&last, w.mixed, w.fp, &b1, &b2);
	if (place(&last, f, w.fp, b1, b2))
	{
		bind_family(view, family);
		amq_cuckoo_count_item(view, &last, 1);
		return AMQ_OK;
	}
	while (w.left > 1 && walk_next(&w, &t)) /* all but the last */
	{
		if (place(&t, f, w.fp, w.b1, w.b2))
		{
			bind_family(view, family);
			amq_cuckoo_count_item(view, &t, 1);
			return AMQ_OK;
		}
	}
	return add_to_full_pair(view, &last, hash, w.fp, b1, b2, family);
}

/*
 * Counts n values that place put into table t, as n calls of
 * amq_cuckoo_count_item and bind_family would.  Like amq_cuckoo_count_item
 * it never counts past the table's slots: a value read from outside may
 * pass validation with a count above its fingerprints, and then its free
 * slots are not all uncounted.
 */
static void
count_placed(amq_cuckoo_view *view, amq_cuckoo_table *t, uint64_t n,
			 uint32_t family)
{
	uint64_t	room;

	if (n == 0)
		return;
	bind_family(view, family);
	room = TABLE_SLOTS(t->buckets) - t->items;	/* items <= slots: validated */
	if (n > room)
		n = room;
	t->items += n;
	view->items = add_saturating(view->items, n);
	put_u64(t->header + T_ITEMS, t->items);
}

/* How far ahead add_many requests a value's buckets, in values. */
#define PREFETCH_DISTANCE	8

/* A value add_many has located in the last table: its pair and fingerprint. */
typedef struct located
{
	uint64_t	b1;
	uint64_t	b2;
	uint32_t	fp;
} located;

/*
 * Locates a value in table t and requests both its buckets for writing:
 * place reads both.  Always inlined: GCC deletes calls to a function whose
 * only effect is a prefetch (see amq_prefetch_write; test/prefetch_check.sh).
 */
static AMQ_ALWAYS_INLINE void
locate_and_request(const amq_cuckoo_table *t, uint32_t f, uint64_t hash,
				   located *v)
{
	uint64_t	mixed = amq_fmix64(hash);

	v->fp = fingerprint_of_mixed(mixed, f);
	pair_in(t, mixed, v->fp, &v->b1, &v->b2);
	prefetch_bucket(t, f, v->b1);
	prefetch_bucket(t, f, v->b2);
}

/*
 * Adds hashes in order, each exactly as amq_cuckoo_add would: a value whose
 * pair in the last table has a free slot goes to place's bucket there,
 * which is what amq_cuckoo_add does first, without the walk over the
 * tables; only a value whose pair in the last table is full takes
 * amq_cuckoo_add's whole path (in a filter of one table, only its part
 * after the placement: add_to_full_pair).  Below the filter's design load
 * nearly every value takes the short one.  Each value is located once,
 * PREFETCH_DISTANCE values before its turn.  The short path's item counts
 * and family are written back once, before the whole path runs (it reads
 * them) and before returning, not once per value.
 */
amq_status
amq_cuckoo_add_many(amq_cuckoo_view *view, const uint64_t *hashes,
					size_t count, uint32_t family, size_t *done)
{
	uint32_t	f = view->fp_bits;
	amq_cuckoo_table last;
	located		ring[PREFETCH_DISTANCE];
	uint64_t	placed = 0;		/* by the short path, not yet counted */
	amq_status	status = AMQ_OK;
	size_t		i;

	*done = 0;
	if (view->tables == 0)
		return AMQ_ERR_NO_GEOMETRY;

	table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
	for (i = 0; i < count && i < PREFETCH_DISTANCE; i++)
		locate_and_request(&last, f, hashes[i], &ring[i]);
	for (i = 0; i < count; i++)
	{
		located    *v = &ring[i % PREFETCH_DISTANCE];

		if (place(&last, f, v->fp, v->b1, v->b2))
			placed++;
		else
		{
			count_placed(view, &last, placed, family);
			placed = 0;
			status = view->tables == 1 ?
				add_to_full_pair(view, &last, hashes[i], v->fp, v->b1, v->b2, family) :
				amq_cuckoo_add(view, hashes[i], family);
			if (status != AMQ_OK)
				break;
			/* that may have changed the last table's header */
			table_decode(view->base + view->last_offset, f, view->base_buckets, &last);
		}
		if (i + PREFETCH_DISTANCE < count)
			locate_and_request(&last, f, hashes[i + PREFETCH_DISTANCE], v);
	}
	count_placed(view, &last, placed, family);
	*done = i;
	return status;
}

/* ----------------------------------------------------------------
 * Growing.
 * ----------------------------------------------------------------
 */

uint64_t
amq_cuckoo_growth_buckets(const amq_cuckoo_view *view)
{
	amq_cuckoo_table last;

	table_decode(view->base + view->last_offset, view->fp_bits, view->base_buckets, &last);
	if (last.items >= 2 * last.buckets && last.buckets <= MAX_BUCKETS / 2)
		return 2 * last.buckets;
	return last.buckets;
}

size_t
amq_cuckoo_growth_bytes(const amq_cuckoo_view *view)
{
	size_t		table;

	if (view->grow_counters)
		return amq_cuckoo_counters_growth_bytes(view);
	table = amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(view), view->fp_bits);
	return view->bytes > SIZE_MAX - table ? SIZE_MAX : view->bytes + table;
}

void
amq_cuckoo_grow(amq_cuckoo_view *view)
{
	if (view->grow_counters)
		amq_cuckoo_counters_grow(view);
	else
		amq_cuckoo_append_table(view, amq_cuckoo_growth_buckets(view));
	view->grow_counters = false;
}

/*
 * Growth as every caller needs it: add until the filter is full, ask the
 * caller for room, grow as asked, go on.  Each growth leaves the next add an
 * empty table or a counter section with room, so every round adds at least
 * one hash and the loop ends.
 */
amq_status
amq_cuckoo_add_growing(amq_cuckoo_view *view, const uint64_t *hashes,
					   size_t count, uint32_t family,
					   amq_cuckoo_reserve_fn reserve, void *ctx, size_t *done)
{
	*done = 0;
	for (;;)
	{
		size_t		added;
		amq_status	status = amq_cuckoo_add_many(view, hashes + *done,
												 count - *done, family, &added);
		size_t		need;
		uint8_t    *base;
		bool		counters;

		*done += added;
		if (status != AMQ_FULL)
			return status;
		counters = view->grow_counters;
		need = amq_cuckoo_growth_bytes(view);
		if (need > AMQ_CUCKOO_MAX_BYTES)
			return AMQ_ERR_TOO_LARGE;
		base = reserve(ctx, need);
		if (base == NULL)
			return AMQ_ERR_TOO_LARGE;
		/* reserve may have opened the filter again, which forgets the wish */
		view->base = base;
		view->grow_counters = counters;
		amq_cuckoo_grow(view);
	}
}

/* ----------------------------------------------------------------
 * Probing and counting.
 * ----------------------------------------------------------------
 */

/*
 * Copies of fp among the four fingerprints of a bucket, or with count false
 * just whether there is one (fewer instructions on the probe's hot path).
 */
static inline unsigned
copies_or_any(const uint32_t s[4], uint32_t fp, bool count)
{
	if (!count)
		return s[0] == fp || s[1] == fp || s[2] == fp || s[3] == fp;
	return copies_of(s, fp);
}

/* The fingerprints of bucket b of the table whose words start at words_off. */
static AMQ_ALWAYS_INLINE void
bucket_read_via(amq_read_fn read, void *ctx, size_t words_off, uint64_t b,
				uint32_t f, uint32_t out[4])
{
	uint64_t	bit = b * 4 * f;
	size_t		first = (size_t) (bit >> 3);

	/* up to the 8-byte load of the last slot: inside the words (docs/format.md) */
	bucket_read_at(read(ctx, words_off + first,
						(size_t) ((bit + 3 * f) >> 3) + 8 - first),
				   (unsigned) (bit & 7), f, out);
}

/*
 * The count of a value (every table: the slots of its pair holding its
 * fingerprint, and the victim), or with count false just whether it is
 * nonzero, stopping at the first copy.  Reads each table's header and the
 * value's two buckets there through read, so the same code probes a filter
 * in memory (inlined, the reads are loads) and one that is not
 * (amq_cuckoo_may_contain_read).
 */
static AMQ_ALWAYS_INLINE uint64_t
lookup(const amq_cuckoo_view *view, uint64_t hash, bool count,
	   amq_read_fn read, void *ctx)
{
	uint64_t	mixed = amq_fmix64(hash);
	uint32_t	f = view->fp_bits;
	uint32_t	fp;
	size_t		off = AMQ_CUCKOO_HEADER_SIZE;
	uint64_t	n = 0;
	uint32_t	left;
	uint32_t	levels_seen = 0;

	if (view->tables == 0)
		return 0;
	fp = fingerprint_of_mixed(mixed, f);
	for (left = view->tables; left > 0; left--)
	{
		amq_cuckoo_table t;
		size_t		words_off = off + AMQ_CUCKOO_TABLE_HEADER_SIZE;
		uint32_t	slots[4];
		uint64_t	b1;
		uint64_t	b2;

		table_fields(read(ctx, off, AMQ_CUCKOO_TABLE_HEADER_SIZE), f,
					 view->base_buckets, &t);
		pair_in(&t, mixed, fp, &b1, &b2);
		bucket_read_via(read, ctx, words_off, b1, f, slots);
		n += copies_or_any(slots, fp, count);
		if (b2 != b1)
		{
			if (n != 0 && !count)
				return n;
			bucket_read_via(read, ctx, words_off, b2, f, slots);
			n += copies_or_any(slots, fp, count);
		}
		if (victim_in_pair(&t, fp, b1, b2))
			n++;
		/* a level's counter once, however many tables share the level */
		if (view->counters_used && (count || n == 0) &&
			!(levels_seen & (UINT32_C(1) << t.level)))
		{
			levels_seen |= UINT32_C(1) << t.level;
			n = add_saturating(n, counted_via(view, read, ctx, t.level,
											  b1 < b2 ? b1 : b2, fp));
		}
		if (n != 0 && !count)
			return n;
		off += t.bytes;
	}
	return n;
}

bool
amq_cuckoo_may_contain(const amq_cuckoo_view *view, uint64_t hash)
{
	return lookup(view, hash, false, amq_read_in_memory, view->base) != 0;
}

/*
 * Flattened, so that its loop over the tables calls nothing, as when the
 * cuckoo core was one file: whether GCC inlines the table decoder here
 * depends on everything else the file holds.
 */
AMQ_FLATTEN uint64_t
amq_cuckoo_count(const amq_cuckoo_view *view, uint64_t hash)
{
	return lookup(view, hash, true, amq_read_in_memory, view->base);
}

bool
amq_cuckoo_may_contain_read(const amq_cuckoo_view *view, uint64_t hash,
							amq_read_fn read, void *ctx)
{
	return lookup(view, hash, false, read, ctx) != 0;
}

uint64_t
amq_cuckoo_count_read(const amq_cuckoo_view *view, uint64_t hash,
					  amq_read_fn read, void *ctx)
{
	return lookup(view, hash, true, read, ctx);
}
