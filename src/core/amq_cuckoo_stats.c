/*
 * amq_cuckoo_stats.c
 *		Fill statistics of a cuckoo filter: occupied slots, the load factor
 *		and the false-positive rate they imply.
 *
 * The caller walks the tables itself (amq_cuckoo_table_first and _next)
 * and hands over bucket ranges, so that it can be cancelled between the
 * ranges of a large table.  Each table's rate is the model that sizes
 * filters (amq_cuckoo_table_fpr, in amq_cuckoo.c) at the table's measured
 * load, plus its victim; a value is reported if any table reports it.
 */
#include <math.h>

#include "amq_cuckoo_internal.h"

void
amq_cuckoo_stats_begin(amq_cuckoo_stats_acc *acc)
{
	acc->occupied = 0;
	acc->table_occupied = 0;
	acc->miss = 1.0;
}

void
amq_cuckoo_stats_accumulate(const amq_cuckoo_view *view,
							const amq_cuckoo_table *table,
							amq_cuckoo_stats_acc *acc,
							uint64_t from, uint64_t to)
{
	uint64_t	b;

	for (b = from; b < to; b++)
	{
		uint32_t	s[4];

		bucket_read(table->words, b, view->fp_bits, s);
		acc->table_occupied += (s[0] != 0) + (s[1] != 0) + (s[2] != 0) + (s[3] != 0);
	}
}

void
amq_cuckoo_stats_table_done(const amq_cuckoo_view *view,
							const amq_cuckoo_table *table,
							amq_cuckoo_stats_acc *acc)
{
	double		alpha = (double) acc->table_occupied / (4.0 * (double) table->buckets);
	double		fpr = amq_cuckoo_table_fpr(view->fp_bits, alpha);

	/* the victim is one more slot an absent value may meet */
	if (table->victim_fp != 0)
	{
		acc->table_occupied++;
		fpr += 1.0 / (ldexp(1.0, (int) view->fp_bits) - 1.0) *
			2.0 / (double) table->buckets;
		if (fpr > 1.0)
			fpr = 1.0;
	}
	acc->miss *= 1.0 - fpr;
	acc->occupied += acc->table_occupied;
	acc->table_occupied = 0;
}

void
amq_cuckoo_stats_end(const amq_cuckoo_view *view,
					 const amq_cuckoo_stats_acc *acc, amq_cuckoo_stats *out)
{
	out->occupied = acc->occupied;
	out->load_factor = view->slots ? (double) acc->occupied / (double) view->slots : 0.0;
	out->est_fpr = view->tables ? 1.0 - acc->miss : 0.0;
}
