/*
 * amq_cuckoo_delete.c
 *		Deleting a value from a cuckoo filter: which of its copies goes.
 *
 * A value's copies may sit in several tables, in their victim slots and in
 * counters, and a copy found in its pair may be another value's with the
 * same fingerprint.  Deletion removes one copy, from the largest table
 * that holds one, a counter being one more slot of its level; the comment
 * on amq_cuckoo_delete says why that order never takes a copy another
 * value still needs, and amq_cuckoo.c's file header how tables nest, which
 * the argument rests on.  A slot freed in a table lets its victim move
 * back (amq_cuckoo_rehome_victim, next to the eviction code it uses).
 * test_cuckoo_delete.c tests this file.
 */
#include "amq_cuckoo_internal.h"

/*
 * Removes one copy of the value, from the largest table that holds its
 * fingerprint in the value's pair (the last such among tables of that size).
 *
 * The order matters once tables of different sizes exist.  The copy found
 * may belong to another value y with the same fingerprint and pair in that
 * table; then the value's own copy is in that table or a smaller one, since
 * no larger table matched.  Tables nest (see amq_cuckoo_alternate): values
 * that share a pair in a table share it in every smaller table, so y still
 * finds the copy left behind.  Searching smaller tables first would remove
 * y's copy from a small table while leaving the value's own copy in a large
 * one, where y does not look: a false negative for y.
 */
bool
amq_cuckoo_delete(amq_cuckoo_view *view, uint64_t hash)
{
	uint32_t	f = view->fp_bits;
	pair_walk	w;
	amq_cuckoo_table t;
	amq_cuckoo_table best = {0};
	bool		found = false;
	bool		best_is_victim = false;
	uint64_t	best_pos = 0;
	uint32_t	counter = UINT32_MAX;
	unsigned	counter_level = 0;

	walk_begin(&w, view, hash);
	while (walk_next(&w, &t))
	{
		uint64_t	b = w.b1;
		int			s;

		/* a counter is a slot of its level: at equal levels it goes first */
		if (view->counters && (counter == UINT32_MAX || t.level > counter_level))
		{
			uint32_t	hole;
			uint32_t	i = amq_cuckoo_counter_find(view,
													w.b1 < w.b2 ? w.b1 : w.b2,
													w.fp, t.level, &hole);

			if (i != UINT32_MAX)
			{
				counter = i;
				counter_level = t.level;
			}
		}
		if (found && t.level < best.level)
			continue;
		if ((s = bucket_find(t.words, b, f, w.fp)) < 0 &&
			(s = bucket_find(t.words, w.b2, f, w.fp)) >= 0)
			b = w.b2;
		if (s >= 0)
		{
			best = t;
			best_is_victim = false;
			best_pos = 4 * b + (unsigned) s;
			found = true;
		}
		else if (victim_in_pair(&t, w.fp, w.b1, w.b2))
		{
			best = t;
			best_is_victim = true;
			found = true;
		}
	}
	if (counter != UINT32_MAX && (!found || counter_level >= best.level))
	{
		amq_cuckoo_counter_remove_one(view, counter);
		return true;
	}
	if (!found)
		return false;
	if (best_is_victim)
		amq_cuckoo_set_victim(&best, 0, 0);
	else
	{
		slot_set(best.words, best_pos, f, 0);
		amq_cuckoo_rehome_victim(&best, f, hash);
	}
	amq_cuckoo_count_item(view, &best, -1);
	return true;
}
