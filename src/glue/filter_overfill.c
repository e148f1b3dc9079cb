/*
 * filter_overfill.c
 *		The warning a filter gives when it holds more than it was sized for.
 *
 * A filter sized for n values at rate p that is given more answers "maybe"
 * ever more often, silently: a blocked Bloom filter given 100 times its n
 * has every bit set and answers "maybe" to everything.  What builds or
 * grows a filter (the aggregates, add, union) asks its type for the rate
 * the filter has now and, past twice p, warns with the numbers and the fix.
 *
 * Once per statement: an UPDATE that adds to a filter row by row warns
 * once, not per row.  And only for a filter given more additions than its
 * n (inserted > capacity, read from its header): below that the fill is
 * not looked at, so a filter used within its size costs nothing more and
 * never warns.
 */
#include "postgres.h"

#include <math.h>

#include "access/xact.h"

#include "glue/filter_glue.h"

/* the statement that warned last (its start), so it warns once */
static TimestampTz warned_statement = 0;

/* Whether a filter's rate now, est_fpr, is past twice its target. */
bool
amq_is_overfilled(double est_fpr, double target_fpr)
{
	return est_fpr > 2.0 * target_fpr;
}

/*
 * Whether a filter given inserted additions for capacity values is worth
 * looking at: past its size, and this statement has not warned yet.
 */
bool
amq_overfill_worth_checking(uint64 inserted, uint64 capacity)
{
	return inserted > capacity &&
		warned_statement != GetCurrentStatementStartTimestamp();
}

/*
 * Warns when the filter described is overfilled.  holds is the distinct
 * values the filter's fill suggests (infinite when it says nothing, as when
 * every bit is set) and inserted its additions, duplicates included.
 */
void
amq_warn_if_overfilled(const AmqOverfill *filter)
{
	/* every bit set: the additions, duplicates included, bound what it holds */
	double		holds = isfinite(filter->holds) ? filter->holds : (double) filter->inserted;

	if (!amq_is_overfilled(filter->est_fpr, filter->target_fpr))
		return;
	warned_statement = GetCurrentStatementStartTimestamp();
	ereport(WARNING,
			(errcode(ERRCODE_WARNING),
			 errmsg("%s filter holds more values than it was sized for",
					filter->type_name),
			 errdetail("Sized for " INT64_FORMAT " values at a false-positive rate of %g, it holds about %.0f and has a rate of %.3g.",
					   filter->capacity, filter->target_fpr, holds,
					   filter->est_fpr),
			 errhint("Let %s(value, p) size the filter from its values, or build it for at least %.0f values.",
					 filter->agg_name, ceil(holds))));
}
