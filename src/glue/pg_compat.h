/*
 * pg_compat.h
 *		The differences between the PostgreSQL majors amqfilter builds on, in
 *		one place.
 *
 * Tested: PostgreSQL 15, 17, 18 and 19 (docs/development.md, "PostgreSQL
 * versions"); 16 is built for by the same guards, untested.  Every other
 * file is written against the newest API and reads the same on every major:
 * where an older major spells a name differently, this file gives it the new
 * spelling; where a major needs other logic, the feature's file has one small
 * function per difference, named for it, and this file names the major.
 *
 * Included by glue/amqfilter.h, index/filter_index.h and join/join_filter.h,
 * right after postgres.h, so every file of the glue and the features sees it.
 */
#ifndef AMQ_PG_COMPAT_H
#define AMQ_PG_COMPAT_H

#include "postgres.h"

#include "commands/explain.h"
#include "nodes/plannodes.h"

/* varlena headers and TOAST pointers: varatt.h, out of postgres.h, since 16 */
#if PG_VERSION_NUM >= 160000
#include "varatt.h"
#endif

/*
 * A function that does not return: pg_noreturn, before the declaration,
 * since 18 (pg_attribute_noreturn(), after it, before)
 */
#if PG_VERSION_NUM < 180000
#define pg_noreturn pg_attribute_noreturn()
#endif

/*
 * EXPLAIN's property functions and its state: commands/explain_format.h and
 * commands/explain_state.h, out of commands/explain.h, since 18
 */
#if PG_VERSION_NUM >= 180000
#include "commands/explain_format.h"
#include "commands/explain_state.h"
#endif

/*
 * Whether an Append prunes its children at run time: its PartitionPruneInfo
 * moved to PlannedStmt's list, which Append.part_prune_index indexes (-1:
 * none), in 18
 */
static inline bool
amq_append_prunes_at_run_time(const Append *append)
{
#if PG_VERSION_NUM >= 180000
	return append->part_prune_index >= 0;
#else
	return append->part_prune_info != NULL;
#endif
}

#endif							/* AMQ_PG_COMPAT_H */
