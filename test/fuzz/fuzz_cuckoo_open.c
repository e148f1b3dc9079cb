/*
 * fuzz_cuckoo_open.c
 *		libFuzzer harness: arbitrary bytes -> amq_cuckoo_open().
 *
 * Checks that the validator never reads out of bounds, and that whenever it
 * accepts a value every operation on it is memory-safe and sane:
 *
 *	- the view describes exactly the input: view.bytes = input length, the
 *	  tables (amq_cuckoo_table_first/next, and amq_cuckoo_table_at for one
 *	  of them) tile the bytes after the header, slots
 *	  and items agree with them; the bytes survive base64 encode/decode
 *	  unchanged (the input is its own serialization);
 *	- may_contain is true exactly when count > 0, on arbitrary hashes;
 *	- stats over every table, in one range and in two ranges per table, give
 *	  the same occupancy, at most the slots, load and rate within [0, 1];
 *	- on a copy with room to grow (growth only for small values, through
 *	  amq_cuckoo_add_growing as the glue does it, within the copy's buffer):
 *	  add raises the hash's count by exactly one and makes it present;
 *	  delete of an added hash succeeds and lowers its count by exactly one;
 *	  the same hashes added in one call from the same start give the same
 *	  bytes as one add after the other; after every mutation the buffer
 *	  passes amq_cuckoo_open on exactly view.bytes with the same view;
 *	- merge of the value with itself (merge_begin/step, its reserve function
 *	  handing out a buffer of twice the size): begin is OK, dst validates
 *	  after every step and whenever the merge asks for room, it never asks
 *	  for more than twice the size, its work count stays linear in the
 *	  value's tables and slots, and every probed hash's count at least
 *	  doubles (or stays the same for a source bound to no family: it holds
 *	  no values).
 *
 * Any violation traps (see fuzz_common.h).
 */
#include "fuzz_common.h"
#include "amq_cuckoo.h"

#define NPROBES		16
#define NADDS		12
#define GROW_LIMIT	(64 * 1024)	/* grow only values below this size */

/* The view a fresh amq_cuckoo_open gives must equal the one kept up to date. */

static void
check_reopen_at(const amq_cuckoo_view *v, const char *what)
{
	amq_cuckoo_view chk;
	amq_status	st = amq_cuckoo_open(v->base, v->bytes, &chk);

	if (st != AMQ_OK)
		fprintf(stderr, "after %s the filter fails validation: %s\n", what,
				amq_status_text(st));
	FUZZ_CHECK(st == AMQ_OK);
	FUZZ_CHECK(chk.bytes == v->bytes);
	FUZZ_CHECK(chk.tables == v->tables);
	FUZZ_CHECK(chk.items == v->items);
	FUZZ_CHECK(chk.slots == v->slots);
	FUZZ_CHECK(chk.family == v->family);
	FUZZ_CHECK(chk.fp_bits == v->fp_bits);
	FUZZ_CHECK(chk.base_buckets == v->base_buckets);
	FUZZ_CHECK(chk.last_offset == v->last_offset);
}

#define check_reopen(v, what) check_reopen_at((v), (what))

/* Tables tile the value; stats in one or two ranges per table agree. */
static void
check_tables_and_stats(const amq_cuckoo_view *v, uint64_t *rng)
{
	amq_cuckoo_stats_acc one;
	amq_cuckoo_stats_acc two;
	amq_cuckoo_stats st1;
	amq_cuckoo_stats st2;
	size_t		off = AMQ_CUCKOO_HEADER_SIZE;
	uint64_t	slots = 0;
	uint64_t	items = 0;
	uint32_t	t = 0;
	uint32_t	pick = v->tables ? (uint32_t) (fuzz_splitmix(rng) % v->tables) : 0;
	amq_cuckoo_table tab;
	bool		more;

	amq_cuckoo_stats_begin(&one);
	amq_cuckoo_stats_begin(&two);
	FUZZ_CHECK(amq_cuckoo_table_first(v, &tab) == (v->tables > 0));
	for (more = v->tables > 0; more; more = amq_cuckoo_table_next(v, &tab), t++)
	{
		uint64_t	cut;

		FUZZ_CHECK(t < v->tables);
		if (t == pick)
		{
			amq_cuckoo_table at;

			amq_cuckoo_table_at(v, t, &at);
			FUZZ_CHECK(at.header == tab.header && at.words == tab.words &&
					   at.buckets == tab.buckets && at.level == tab.level &&
					   at.items == tab.items && at.bytes == tab.bytes &&
					   at.victim_bucket == tab.victim_bucket &&
					   at.victim_fp == tab.victim_fp);
		}
		FUZZ_CHECK(tab.header == v->base + off);
		FUZZ_CHECK(tab.bytes == amq_cuckoo_table_bytes(tab.buckets, v->fp_bits));
		FUZZ_CHECK(tab.buckets >= 1 && tab.buckets == v->base_buckets << tab.level);
		FUZZ_CHECK(tab.items <= 4 * tab.buckets + 1);
		FUZZ_CHECK(tab.victim_bucket < tab.buckets);
		if (t + 1 == v->tables)
			FUZZ_CHECK(v->last_offset == off);
		off += tab.bytes;
		FUZZ_CHECK(off <= v->tables_end);
		slots += 4 * tab.buckets + 1;
		items = items > UINT64_MAX - tab.items ? UINT64_MAX : items + tab.items;

		amq_cuckoo_stats_accumulate(v, &tab, &one, 0, tab.buckets);
		amq_cuckoo_stats_table_done(v, &tab, &one);
		cut = fuzz_splitmix(rng) % (tab.buckets + 1);
		amq_cuckoo_stats_accumulate(v, &tab, &two, 0, cut);
		amq_cuckoo_stats_accumulate(v, &tab, &two, cut, tab.buckets);
		amq_cuckoo_stats_table_done(v, &tab, &two);
	}
	FUZZ_CHECK(t == v->tables);
	FUZZ_CHECK(off == v->tables_end);
	FUZZ_CHECK(v->bytes == v->tables_end +
			   (size_t) v->counters * AMQ_CUCKOO_COUNTER_SIZE);
	FUZZ_CHECK(v->counters_used <= v->counters / 2);
	FUZZ_CHECK(slots == v->slots);
	FUZZ_CHECK(items == v->items - v->counted || v->items == UINT64_MAX);
	amq_cuckoo_stats_end(v, &one, &st1);
	amq_cuckoo_stats_end(v, &two, &st2);
	FUZZ_CHECK(st1.occupied == st2.occupied);
	FUZZ_CHECK(st1.occupied <= v->slots);
	FUZZ_CHECK(st1.load_factor >= 0.0 && st1.load_factor <= 1.0);
	FUZZ_CHECK(st1.est_fpr >= 0.0 && st1.est_fpr <= 1.0);
	FUZZ_CHECK(st1.est_fpr == st2.est_fpr);
}

/* A filter's buffer of fixed size, which growth may fill but not pass. */
typedef struct fixed_room
{
	amq_cuckoo_view *view;
	size_t		room;
} fixed_room;

/*
 * amq_cuckoo_add_growing's reserve function: the buffer itself while need
 * fits in it.  The filter asking for room is valid and asks for a table of
 * base * 2^level buckets.
 */
static uint8_t *
reserve_in_room(void *ctx, size_t need)
{
	fixed_room *r = ctx;
	uint64_t	buckets = amq_cuckoo_growth_buckets(r->view);

	FUZZ_CHECK(buckets >= 1 && buckets % r->view->base_buckets == 0);
	FUZZ_CHECK(need == amq_cuckoo_growth_bytes(r->view));
	if (!r->view->grow_counters)
		FUZZ_CHECK(need == r->view->bytes +
				   amq_cuckoo_table_bytes(buckets, r->view->fp_bits));
	check_reopen(r->view, "amq_cuckoo_add_many before growth");
	return need <= r->room ? r->view->base : NULL;
}

/*
 * Adds hashes[0 .. count) to a filter in a buffer of room bytes, growing when
 * a table fits.  False if one did not: then the hashes before the one that
 * did not fit were added.
 */
static bool
add_growing(amq_cuckoo_view *c, size_t room, const uint64_t *hashes,
			size_t count, uint32_t family)
{
	fixed_room	r = {c, room};
	size_t		done = 0;
	amq_status	st = amq_cuckoo_add_growing(c, hashes, count, family,
											reserve_in_room, &r, &done);

	FUZZ_CHECK(done <= count);
	if (st == AMQ_ERR_TOO_LARGE)
		return false;
	FUZZ_CHECK(st == AMQ_OK && done == count);
	return true;
}

static void
check_mutations(const uint8_t *orig, size_t size, const amq_cuckoo_view *v,
				uint64_t *rng)
{
	size_t		room = size < GROW_LIMIT ? 4 * size : size;
	uint8_t    *a = fuzz_memdup(orig, size, room);
	uint8_t    *b = fuzz_memdup(orig, size, room);
	uint32_t	family = v->family ? v->family : 1 + (uint32_t) (*rng % 1000);
	uint64_t	hashes[NADDS];
	bool		added[NADDS];
	amq_cuckoo_view ca;
	amq_cuckoo_view cb;
	size_t		nadded = 0;
	int			i;

	FUZZ_CHECK(amq_cuckoo_open(a, size, &ca) == AMQ_OK);
	FUZZ_CHECK(amq_cuckoo_open(b, size, &cb) == AMQ_OK);

	for (i = 0; i < NADDS; i++)
	{
		uint64_t	before;
		uint64_t	items = ca.items;

		/* some repeats, so that a bucket pair fills with copies */
		hashes[i] = (i >= 4 && (*rng & 1)) ? hashes[i - 4] : fuzz_splitmix(rng);
		*rng = fuzz_splitmix(rng);
		before = amq_cuckoo_count(&ca, hashes[i]);
		added[i] = add_growing(&ca, room, &hashes[i], 1, family);
		if (!added[i])
			break;
		nadded++;
		check_reopen(&ca, "amq_cuckoo_add");
		FUZZ_CHECK(ca.family == family);
		FUZZ_CHECK(amq_cuckoo_may_contain(&ca, hashes[i]));
		FUZZ_CHECK(amq_cuckoo_count(&ca, hashes[i]) == before + 1);
		FUZZ_CHECK(ca.items == items || ca.items == items + 1);
	}
	check_tables_and_stats(&ca, rng);

	/* the same hashes in one call, with the same growth: the same bytes */
	FUZZ_CHECK(add_growing(&cb, room, hashes, nadded, family));
	check_reopen(&cb, "amq_cuckoo_add_growing");
	FUZZ_CHECK(cb.bytes == ca.bytes);
	FUZZ_CHECK(memcmp(a, b, ca.bytes) == 0);

	/* delete what was added, last first */
	for (i = (int) nadded - 1; i >= 0; i--)
	{
		uint64_t	before = amq_cuckoo_count(&ca, hashes[i]);

		FUZZ_CHECK(before >= 1);
		FUZZ_CHECK(amq_cuckoo_delete(&ca, hashes[i]));
		check_reopen(&ca, "amq_cuckoo_delete of an added hash");
		FUZZ_CHECK(amq_cuckoo_count(&ca, hashes[i]) == before - 1);
	}
	/* deleting arbitrary hashes: a no-op or one copy fewer */
	for (i = 0; i < 4; i++)
	{
		uint64_t	h = fuzz_splitmix(rng);
		uint64_t	before = amq_cuckoo_count(&ca, h);
		bool		deleted = amq_cuckoo_delete(&ca, h);

		FUZZ_CHECK(deleted == (before > 0));
		check_reopen(&ca, "amq_cuckoo_delete of an arbitrary hash");
		if (deleted)
			FUZZ_CHECK(amq_cuckoo_count(&ca, h) == before - 1);
	}
	check_tables_and_stats(&ca, rng);
	free(a);
	free(b);
}

/*
 * The self merge's reserve function: the buffer of twice the size plus room
 * for counters, which the union of a value with itself never outgrows.  The
 * filter asking is valid.
 */
static uint8_t *
reserve_double(void *ctx, size_t need)
{
	fixed_room *r = ctx;

	check_reopen(r->view, "amq_cuckoo_merge_step before it appends a table");
	FUZZ_CHECK(need > r->view->bytes && need <= r->room);
	return r->view->base;
}

static void
check_self_merge(const uint8_t *orig, size_t size, const amq_cuckoo_view *src,
				 uint64_t *rng)
{
	/*
	 * a union of a value with itself: twice its bytes, and a counter section
	 * of at most one entry per slot and counter of both, doubled, plus the
	 * old one while it is rebuilt
	 */
	size_t		room = 2 * size + 3 * AMQ_CUCKOO_COUNTER_SIZE *
		(4 * (size_t) src->slots + 4 * (size_t) src->counters + 2 * AMQ_CUCKOO_MIN_COUNTERS);
	uint8_t    *buf = fuzz_memdup(orig, size, room);
	amq_cuckoo_merge *m = fuzz_malloc(sizeof(amq_cuckoo_merge));
	amq_cuckoo_view dst;
	fixed_room	r = {&dst, room};
	uint64_t	probes[NPROBES];
	uint64_t	counts[NPROBES];
	uint64_t	step = fuzz_splitmix(rng) % 64;	/* 0 means 1 */
	uint64_t	steps = 0;
	uint64_t	buckets = (src->slots - src->tables) / 4;
	/* a fingerprint: its window, an eviction walk written and undone, a spill */
	uint64_t	per_fp = AMQ_CUCKOO_MERGE_WINDOW + 2 * (AMQ_CUCKOO_MAX_KICKS + 2) + 1;
	int			i;

	for (i = 0; i < NPROBES; i++)
	{
		probes[i] = fuzz_splitmix(rng);
		counts[i] = amq_cuckoo_count(src, probes[i]);
	}
	FUZZ_CHECK(amq_cuckoo_open(buf, size, &dst) == AMQ_OK);
	FUZZ_CHECK(amq_cuckoo_compatible(&dst, src) == AMQ_OK);
	FUZZ_CHECK(amq_cuckoo_merge_begin(m, &dst, src, reserve_double, &r) == AMQ_OK);
	for (;;)
	{
		bool		finished = false;
		uint64_t	before = m->work;

		FUZZ_CHECK(amq_cuckoo_merge_step(m, &dst, src, step, &finished) == AMQ_OK);
		FUZZ_CHECK(dst.bytes <= room);
		check_reopen(&dst, "amq_cuckoo_merge_step (self merge)");
		/*
		 * A step stops within one bucket's work (four fingerprints, the
		 * victim, a table appended) of its budget.
		 */
		FUZZ_CHECK(m->work - before <= (step ? step : 1) + 1 + 5 * per_fp + buckets);
		if (finished)
			break;
		FUZZ_CHECK(++steps < 100000000);
	}
	/*
	 * Linear in the value: each table indexed and started once, each bucket
	 * read once, each slot's fingerprint folded once, at most one table
	 * appended (spill or copy) per source table.
	 */
	FUZZ_CHECK(m->work <= 2 * (uint64_t) src->tables + 2 * buckets +
			   src->slots * per_fp);
	check_tables_and_stats(&dst, rng);
	FUZZ_CHECK(dst.tables >= src->tables);
	for (i = 0; i < NPROBES; i++)
	{
		uint64_t	c = amq_cuckoo_count(&dst, probes[i]);

		/* a source bound to no family holds no values: nothing merges */
		FUZZ_CHECK(src->family == 0 ? c == counts[i] : c >= 2 * counts[i]);
		FUZZ_CHECK(amq_cuckoo_may_contain(&dst, probes[i]) == (c > 0));
	}
	free(m);
	free(buf);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	uint8_t    *orig = fuzz_memdup(data, size, size);
	amq_cuckoo_view v;
	uint64_t	rng = fuzz_fnv(data, size);
	int			i;

	if (amq_cuckoo_open(orig, size, &v) != AMQ_OK)
	{
		free(orig);
		return 0;
	}

	FUZZ_CHECK(v.base == orig);
	FUZZ_CHECK(v.bytes == size);
	FUZZ_CHECK(size <= AMQ_CUCKOO_MAX_BYTES);
	FUZZ_CHECK((v.tables == 0) == (v.fp_bits == 0));
	FUZZ_CHECK(v.tables == 0 || (v.fp_bits >= AMQ_CUCKOO_MIN_FP_BITS &&
								  v.fp_bits <= AMQ_CUCKOO_MAX_FP_BITS));
	fuzz_check_base64_roundtrip(orig, size);
	check_tables_and_stats(&v, &rng);

	for (i = 0; i < NPROBES; i++)
	{
		uint64_t	h = fuzz_splitmix(&rng);
		uint64_t	c = amq_cuckoo_count(&v, h);

		FUZZ_CHECK(amq_cuckoo_may_contain(&v, h) == (c > 0));
		if (v.tables == 0)
			FUZZ_CHECK(c == 0);
	}

	FUZZ_CHECK(amq_cuckoo_compatible(&v, &v) == AMQ_OK);
	if (v.tables == 0)
	{
		/* the sizeless empty filter takes no values */
		uint8_t    *c = fuzz_memdup(orig, size, size);
		amq_cuckoo_view cv;

		FUZZ_CHECK(amq_cuckoo_open(c, size, &cv) == AMQ_OK);
		FUZZ_CHECK(amq_cuckoo_add(&cv, rng, 1) == AMQ_ERR_NO_GEOMETRY);
		FUZZ_CHECK(!amq_cuckoo_delete(&cv, rng));
		FUZZ_CHECK(memcmp(c, orig, size) == 0);
		free(c);
	}
	else
	{
		check_mutations(orig, size, &v, &rng);
		check_self_merge(orig, size, &v, &rng);
	}

	/* nothing above wrote to the value it only read */
	FUZZ_CHECK(memcmp(orig, data, size) == 0);
	free(orig);
	return 0;
}
