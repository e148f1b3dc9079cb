/*
 * amq_cuckoo_merge.c
 *		Merging one cuckoo filter into another, a step at a time.
 *
 * Merging is an algorithm of its own over the format: it indexes the
 * destination's tables by level, folds each source table into tables of
 * its size, spills what does not fit and adds up counter sections.  It
 * shares placement and the eviction walk with adding and nothing else, so
 * it has its own file.
 *
 * A merge runs in steps, each doing about the work it is given, so that the
 * caller can check for interrupts in between: a unit is one bucket read, one
 * destination table tried, one slot written by an eviction walk or one table
 * header decoded, and zeroing or copying a table counts one unit per bucket.
 * First the destination's tables are indexed by level, once: for each level
 * the offsets of its last AMQ_CUCKOO_MERGE_WINDOW tables, its window.  Then
 * each source table in turn comes over whole, when the destination has no
 * table of its level, or is folded in, fingerprint by fingerprint (fold).
 *
 * A fingerprint is tried in the tables of its level's window only, oldest
 * first, not in every table of its level.  Trying them all costs each
 * fingerprint a pass over the destination's tables, which made a union of
 * many filters, or of a filter with thousands of same-size tables (many
 * copies of one value), quadratic: minutes, and no interrupt check.  With the
 * window a fingerprint costs at most AMQ_CUCKOO_MERGE_WINDOW tries, one
 * eviction walk and a write to the spill table.  The tables left out are the
 * oldest of their level, filled by the merges or insertions that came after
 * them; where a size has no more tables than the window, which is every
 * filter that only grew and every union of a few filters, the result is the
 * one trying every table gives.  No fingerprint is lost either way: every
 * one lands in a table of its own size at its own bucket pair, which is all
 * lookups and deletion need (see amq_cuckoo.c).
 *
 * The spill table is appended when the first fingerprint of a source table
 * needs it, not before, and the merge asks the caller's reserve function for
 * the room then, so a merge needs memory for its result only.
 */
#include <string.h>

#include "amq_cuckoo_internal.h"

/* A table has at most MAX_BUCKETS < 2^31 buckets: its level is below 32. */
typedef char amq_cuckoo_levels_fit[(MAX_BUCKETS >> (AMQ_CUCKOO_MAX_LEVELS - 1)) == 0 ? 1 : -1];

amq_status
amq_cuckoo_compatible(const amq_cuckoo_view *dst, const amq_cuckoo_view *src)
{
	amq_cuckoo_table a;
	amq_cuckoo_table b;

	if (dst->tables == 0 || src->tables == 0)
		return AMQ_OK;
	amq_cuckoo_table_first(dst, &a);
	amq_cuckoo_table_first(src, &b);
	if (dst->fp_bits != src->fp_bits || dst->seed != src->seed ||
		a.buckets != b.buckets)
		return AMQ_ERR_GEOMETRY_MISMATCH;
	if (dst->family != 0 && src->family != 0 && dst->family != src->family)
		return AMQ_ERR_FAMILY_MISMATCH;
	return AMQ_OK;
}

amq_status
amq_cuckoo_merge_begin(amq_cuckoo_merge *m, const amq_cuckoo_view *dst,
					   const amq_cuckoo_view *src,
					   amq_cuckoo_reserve_fn reserve, void *ctx)
{
	amq_status	status = amq_cuckoo_compatible(dst, src);

	if (status != AMQ_OK)
		return status;
	if (dst->tables == 0 && src->tables != 0)
		return AMQ_ERR_NO_GEOMETRY;
	m->reserve = reserve;
	m->reserve_ctx = ctx;
	m->work = 0;
	m->need = 0;
	m->index_offset = AMQ_CUCKOO_HEADER_SIZE;
	m->index_left = dst->tables;
	memset(m->window_len, 0, sizeof(m->window_len));
	m->src_table = 0;
	m->src_offset = AMQ_CUCKOO_HEADER_SIZE;
	m->next_bucket = 0;
	m->folding = false;
	m->kicking = false;
	m->spill_offset = 0;
	m->src_counter = 0;
	return AMQ_OK;
}

/* Makes the table at offset the newest of its level's window. */
static void
window_push(amq_cuckoo_merge *m, unsigned level, size_t offset)
{
	uint32_t	n = m->window_len[level];

	if (n == AMQ_CUCKOO_MERGE_WINDOW)
	{
		memmove(&m->window[level][0], &m->window[level][1],
				(n - 1) * sizeof(m->window[level][0]));
		n--;
	}
	m->window[level][n] = offset;
	m->window_len[level] = n + 1;
}

/* A buffer of need bytes for dst (SIZE_MAX: past the limit), from the caller. */
static amq_status
merge_reserve_total(amq_cuckoo_merge *m, amq_cuckoo_view *dst, size_t need)
{
	uint8_t    *base;

	m->need = need;
	if (need > AMQ_CUCKOO_MAX_BYTES)
		return AMQ_ERR_TOO_LARGE;
	base = m->reserve(m->reserve_ctx, need);
	if (base == NULL)
		return AMQ_ERR_TOO_LARGE;
	dst->base = base;
	return AMQ_OK;
}

/* Room for bytes more in dst, from the caller. */
static amq_status
merge_reserve(amq_cuckoo_merge *m, amq_cuckoo_view *dst, size_t bytes)
{
	if (dst->bytes > AMQ_CUCKOO_MAX_BYTES || bytes > AMQ_CUCKOO_MAX_BYTES - dst->bytes)
	{
		m->need = SIZE_MAX;
		return AMQ_ERR_TOO_LARGE;
	}
	return merge_reserve_total(m, dst, dst->bytes + bytes);
}

/*
 * Counts amount copies of fp for the pair with lower bucket at level in
 * dst, growing its counter section first if it must.
 */
static amq_status
merge_count(amq_cuckoo_merge *m, amq_cuckoo_view *dst, unsigned level,
			uint64_t bucket, uint32_t fp, uint64_t amount)
{
	while (!amq_cuckoo_counter_add(dst, level, bucket, fp, amount))
	{
		amq_status	status =
			merge_reserve_total(m, dst, amq_cuckoo_counters_growth_bytes(dst));

		if (status != AMQ_OK)
			return status;
		amq_cuckoo_counters_grow(dst);
		m->work += dst->counters;
	}
	return AMQ_OK;
}

/*
 * Folds fingerprint fp of bucket b of source table st (its victim if
 * is_victim) into dst: a free slot of its pair in a table of the level's
 * window, oldest first; else an eviction walk in the newest of them, until
 * one walk fails; else the spill table's bucket b (or its victim slot, for
 * the source victim), appending the spill table first if this is its first
 * fingerprint.
 */
static amq_status
fold(amq_cuckoo_merge *m, amq_cuckoo_view *dst, const amq_cuckoo_table *st,
	 uint32_t fp, uint64_t b, bool is_victim)
{
	uint32_t	f = dst->fp_bits;
	unsigned	level = st->level;
	uint32_t	n = m->window_len[level];
	amq_cuckoo_table t = {0};
	amq_cuckoo_table spill;
	uint64_t	rng = ((uint64_t) fp << 32) ^ b;
	uint32_t	i;
	int			slot;

	for (i = 0; i < n; i++)
	{
		table_decode(dst->base + m->window[level][i], f, dst->base_buckets, &t);
		m->work++;
		if (place(&t, f, fp, b, alt_in(&t, b, fp)))
		{
			amq_cuckoo_count_item(dst, &t, 1);
			return AMQ_OK;
		}
	}
	/*
	 * Many copies of one value: a counter for its pair, or a pair of nothing
	 * but this fingerprint, takes it, as when adding.
	 */
	{
		uint64_t	alt = alt_in(&t, b, fp);
		uint64_t	lower = b < alt ? b : alt;
		uint32_t	hole;
		bool		count = amq_cuckoo_counter_find(dst, lower, fp, level,
													&hole) != UINT32_MAX;

		for (i = 0; i < n && !count; i++)
		{
			amq_cuckoo_table w;

			table_decode(dst->base + m->window[level][i], f, dst->base_buckets, &w);
			count = pair_all(&w, f, fp, b, alt);
		}
		m->work += n;
		if (count)
			return merge_count(m, dst, level, lower, fp, 1);
	}

	/* t is the newest table of the level now */
	if (m->kicking)
	{
		int			nlog;
		bool		placed = amq_cuckoo_kick_or_undo(m, &t, f, fp, b, &rng,
													 &nlog);

		m->work += (uint64_t) nlog;
		if (placed)
		{
			amq_cuckoo_count_item(dst, &t, 1);
			return AMQ_OK;
		}
		/* this table is saturated: stop spending evictions on it */
		m->kicking = false;
	}
	if (m->spill_offset == 0)
	{
		amq_status	status = merge_reserve(m, dst,
										   amq_cuckoo_table_bytes(st->buckets, f));

		if (status != AMQ_OK)
			return status;
		amq_cuckoo_append_table(dst, st->buckets);
		m->spill_offset = dst->last_offset;
		m->work += st->buckets;
	}
	table_decode(dst->base + m->spill_offset, f, dst->base_buckets, &spill);
	m->work++;
	/*
	 * Bucket b itself, never its emptier alternate: the spill's bucket b must
	 * keep room for the fingerprints of source bucket b alone.
	 */
	if (is_victim && spill.victim_fp == 0)
		amq_cuckoo_set_victim(&spill, fp, b);
	else if ((slot = bucket_find(spill.words, b, f, 0)) >= 0)
		slot_set(spill.words, 4 * b + (unsigned) slot, f, fp);
	else
		amq_cuckoo_set_victim(&spill, fp, b);	/* cannot happen: see amq_cuckoo.c */
	amq_cuckoo_count_item(dst, &spill, 1);
	return AMQ_OK;
}

/* Appends a copy of source table st to dst: dst has no table of its size. */
static amq_status
copy_table(amq_cuckoo_merge *m, amq_cuckoo_view *dst,
		   const amq_cuckoo_table *st)
{
	amq_status	status = merge_reserve(m, dst, st->bytes);
	uint8_t    *p;

	if (status != AMQ_OK)
		return status;
	p = amq_cuckoo_open_table_gap(dst, st->bytes);
	memcpy(p, st->header, st->bytes);
	dst->last_offset = (size_t) (p - dst->base);
	window_push(m, st->level, dst->last_offset);
	dst->tables++;
	dst->slots += TABLE_SLOTS(st->buckets);
	dst->items = add_saturating(dst->items, st->items);
	put_u32(dst->base + OFF_TABLES, dst->tables);
	m->work += st->buckets;
	return AMQ_OK;
}

amq_status
amq_cuckoo_merge_step(amq_cuckoo_merge *m, amq_cuckoo_view *dst,
					  const amq_cuckoo_view *src, uint64_t max_work,
					  bool *done)
{
	uint32_t	f = dst->fp_bits;
	uint64_t	stop = add_saturating(m->work, max_work ? max_work : 1);
	amq_status	status;

	*done = false;

	/*
	 * A filter bound to no family has had no value added: whatever its slots
	 * hold (only a value built elsewhere can hold anything), it is empty.
	 * Folding such slots into dst would also count items in a dst that may
	 * be unbound itself, which the validator rightly rejects.
	 */
	if (src->tables == 0 || src->family == 0)
	{
		*done = true;
		return AMQ_OK;
	}
	bind_family(dst, src->family);

	/* the destination's tables, by level */
	while (m->index_left > 0)
	{
		amq_cuckoo_table t;

		if (m->work >= stop)
			return AMQ_OK;
		table_decode(dst->base + m->index_offset, f, dst->base_buckets, &t);
		window_push(m, t.level, m->index_offset);
		m->index_offset += t.bytes;
		m->index_left--;
		m->work++;
	}

	while (m->src_table < src->tables)
	{
		amq_cuckoo_table st;

		if (m->work >= stop)
			return AMQ_OK;
		table_decode(src->base + m->src_offset, f, src->base_buckets, &st);
		if (!m->folding)
		{
			m->work++;
			if (m->window_len[st.level] == 0)
			{
				status = copy_table(m, dst, &st);
				if (status != AMQ_OK)
					return status;
				m->src_table++;
				m->src_offset += st.bytes;
				continue;
			}
			m->folding = true;
			m->kicking = true;
			m->spill_offset = 0;
			m->next_bucket = 0;
		}
		while (m->next_bucket < st.buckets)
		{
			uint32_t	fps[4];
			unsigned	s;

			if (m->work >= stop)
				return AMQ_OK;
			bucket_read(st.words, m->next_bucket, f, fps);
			for (s = 0; s < 4; s++)
			{
				if (fps[s] != 0 &&
					(status = fold(m, dst, &st, fps[s], m->next_bucket,
								   false)) != AMQ_OK)
					return status;
			}
			m->next_bucket++;
			m->work++;
		}
		if (st.victim_fp != 0 &&
			(status = fold(m, dst, &st, st.victim_fp, st.victim_bucket,
						   true)) != AMQ_OK)
			return status;
		/* a spill table is one more table of its level for what follows */
		if (m->spill_offset != 0)
			window_push(m, st.level, m->spill_offset);
		m->folding = false;
		m->src_table++;
		m->src_offset += st.bytes;
	}

	/* the source's counters add to the destination's */
	while (m->src_counter < src->counters)
	{
		const uint8_t *e = counter_at(src, m->src_counter);
		uint64_t	count = get_u64(e + C_COUNT);

		if (m->work >= stop)
			return AMQ_OK;
		if (count != 0 &&
			(status = merge_count(m, dst, e[C_LEVEL], get_u64(e + C_BUCKET),
								  get_u32(e + C_FP), count)) != AMQ_OK)
			return status;
		m->src_counter++;
		m->work++;
	}
	*done = true;
	return AMQ_OK;
}
