/*
 * amq_cuckoo_counter.c
 *		The counter section of a cuckoo filter: finding, adding, removing
 *		and growing the counts of values stored many times.
 *
 * The section is an open-addressing table after the last table of
 * fingerprints; amq_cuckoo.c's file header says why it exists and
 * amq_cuckoo_internal.h how its entries are laid out and where a key's
 * search starts.  This file keeps the table sound: a search runs from a
 * key's home to the key or to the first empty entry, at most half the
 * entries are used so that every search meets one, a removal shifts the
 * entries after it back so that no search stops short, and growing
 * rehashes every entry into a section twice as large.  When a copy is
 * counted rather than stored is for adding and merging to decide.
 */
#include <string.h>

#include "amq_cuckoo_internal.h"

/*
 * The entry for a key, or UINT32_MAX if there is none; *hole is where it
 * would go (the empty entry that ended the search).
 */
uint32_t
amq_cuckoo_counter_find(const amq_cuckoo_view *view, uint64_t bucket,
						uint32_t fp, unsigned level, uint32_t *hole)
{
	uint32_t	n = view->counters;
	uint32_t	i;
	uint32_t	k;

	*hole = UINT32_MAX;
	if (n == 0)
		return UINT32_MAX;
	i = counter_home(bucket, fp, level, n);
	for (k = 0; k < n; k++, i = (i + 1) & (n - 1))
	{
		const uint8_t *e = counter_at(view, i);

		if (get_u64(e + C_COUNT) == 0)
		{
			*hole = i;
			return UINT32_MAX;
		}
		if (counter_is(e, bucket, fp, level))
			return i;
	}
	return UINT32_MAX;			/* not reached: the validator keeps a hole */
}

/*
 * Counts amount more copies of fp for the pair whose lower bucket is bucket
 * at level; false, changing nothing, when a new entry would fill the
 * section past half (the caller grows it first).
 */
bool
amq_cuckoo_counter_add(amq_cuckoo_view *view, unsigned level, uint64_t bucket,
					   uint32_t fp, uint64_t amount)
{
	uint32_t	hole;
	uint32_t	i = amq_cuckoo_counter_find(view, bucket, fp, level, &hole);
	uint8_t    *e;

	if (i == UINT32_MAX)
	{
		if (hole == UINT32_MAX || view->counters_used + 1 > view->counters / 2)
			return false;
		e = counter_at(view, hole);
		put_u64(e + C_BUCKET, bucket);
		put_u32(e + C_FP, fp);
		e[C_LEVEL] = (uint8_t) level;
		put_u64(e + C_COUNT, amount);
		view->counters_used++;
	}
	else
	{
		e = counter_at(view, i);
		put_u64(e + C_COUNT, add_saturating(get_u64(e + C_COUNT), amount));
	}
	view->counted = add_saturating(view->counted, amount);
	view->items = add_saturating(view->items, amount);
	return true;
}

/*
 * One copy fewer in entry i; an entry that reaches 0 is removed, moving the
 * entries after it back so that every search still finds its key.  A
 * counter at its saturated maximum stays there: the true count is unknown.
 */
void
amq_cuckoo_counter_remove_one(amq_cuckoo_view *view, uint32_t i)
{
	uint32_t	n = view->counters;
	uint8_t    *e = counter_at(view, i);
	uint64_t	count = get_u64(e + C_COUNT);
	uint32_t	j = i;

	if (view->counted > 0)
		view->counted--;
	if (view->items > 0)
		view->items--;
	if (count == UINT64_MAX)
		return;
	if (count > 1)
	{
		put_u64(e + C_COUNT, count - 1);
		return;
	}
	/* backward-shift deletion for linear probing */
	for (;;)
	{
		uint8_t    *f;
		uint32_t	home;

		j = (j + 1) & (n - 1);
		f = counter_at(view, j);
		if (get_u64(f + C_COUNT) == 0)
			break;
		home = counter_home(get_u64(f + C_BUCKET), get_u32(f + C_FP),
							f[C_LEVEL], n);
		/* f may fill the hole at i unless its home lies in (i, j] */
		if ((i < j) ? (home <= i || home > j) : (home <= i && home > j))
		{
			memcpy(counter_at(view, i), f, AMQ_CUCKOO_COUNTER_SIZE);
			i = j;
		}
	}
	memset(counter_at(view, i), 0, AMQ_CUCKOO_COUNTER_SIZE);
	view->counters_used--;
}

/*
 * Buffer size amq_cuckoo_counters_grow needs (the old section and the new one side by
 * side while entries move), or SIZE_MAX past the limits.
 */
size_t
amq_cuckoo_counters_growth_bytes(const amq_cuckoo_view *view)
{
	uint64_t	n = counters_next(view);
	size_t		old = (size_t) view->counters * AMQ_CUCKOO_COUNTER_SIZE;
	size_t		new = (size_t) n * AMQ_CUCKOO_COUNTER_SIZE;

	if (n > AMQ_CUCKOO_MAX_COUNTERS)
		return SIZE_MAX;
	return view->tables_end + old + new;	/* all below 2^31: no overflow */
}

/*
 * Replaces the counter section by one twice as large (the first one: of
 * AMQ_CUCKOO_MIN_COUNTERS entries), marking the value version 2.  The
 * buffer has room for amq_cuckoo_counters_growth_bytes.
 */
void
amq_cuckoo_counters_grow(amq_cuckoo_view *view)
{
	uint32_t	old_n = view->counters;
	uint32_t	new_n = (uint32_t) counters_next(view);
	size_t		old_bytes = (size_t) old_n * AMQ_CUCKOO_COUNTER_SIZE;
	size_t		new_bytes = (size_t) new_n * AMQ_CUCKOO_COUNTER_SIZE;
	uint8_t    *old = view->base + view->tables_end;
	uint8_t    *fresh = old + old_bytes;
	uint32_t	i;

	memset(fresh, 0, new_bytes);
	for (i = 0; i < old_n; i++)
	{
		const uint8_t *e = old + (size_t) i * AMQ_CUCKOO_COUNTER_SIZE;
		uint32_t	j;

		if (get_u64(e + C_COUNT) == 0)
			continue;
		j = counter_home(get_u64(e + C_BUCKET), get_u32(e + C_FP), e[C_LEVEL], new_n);
		while (get_u64(fresh + (size_t) j * AMQ_CUCKOO_COUNTER_SIZE + C_COUNT) != 0)
			j = (j + 1) & (new_n - 1);
		memcpy(fresh + (size_t) j * AMQ_CUCKOO_COUNTER_SIZE, e, AMQ_CUCKOO_COUNTER_SIZE);
	}
	memmove(old, fresh, new_bytes);
	view->counters = new_n;
	view->bytes = view->tables_end + new_bytes;
	view->base[OFF_VERSION] = AMQ_CUCKOO_VERSION_COUNTERS;
	put_u32(view->base + OFF_COUNTERS, new_n);
}
