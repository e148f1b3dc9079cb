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

#include "access/amapi.h"
#include "access/genam.h"
#include "access/htup_details.h"
#include "access/relscan.h"
#include "access/tableam.h"
#include "catalog/pg_class.h"
#include "catalog/pg_collation.h"
#include "commands/explain.h"
#include "executor/executor.h"
#include "executor/instrument.h"
#include "miscadmin.h"
#include "nodes/params.h"
#include "nodes/parsenodes.h"
#include "nodes/pathnodes.h"
#include "nodes/plannodes.h"
#include "optimizer/appendinfo.h"
#include "parser/parse_relation.h"
#include "storage/buffile.h"
#include "utils/acl.h"
#include "utils/tuplesort.h"

#if PG_VERSION_NUM < 150000
#error "amqfilter needs PostgreSQL 15 or later"
#endif

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
 * Soft errors, which an input function reports to its caller's context:
 * since 16 (errsave); before, every error was a hard one
 */
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#else
#define errsave(escontext, ...) ereport(ERROR, __VA_ARGS__)
#endif

/*
 * Reading exactly so many bytes of a temporary file, or an error:
 * BufFileReadExact since 16
 */
#if PG_VERSION_NUM < 160000
static inline void
BufFileReadExact(BufFile *file, void *ptr, size_t size)
{
	size_t		got = BufFileRead(file, ptr, size);

	if (got != size)
		ereport(ERROR,
				(errcode_for_file_access(),
				 errmsg("could not read from temporary file: read only %zu of %zu bytes",
						got, size)));
}
#endif

/*
 * Whether a role owns an object: object_ownercheck since 16, which took the
 * place of one function per catalog (amqfilter asks it of relations only)
 */
#if PG_VERSION_NUM < 160000
static inline bool
object_ownercheck(Oid classid, Oid objectid, Oid roleid)
{
	Assert(classid == RelationRelationId);
	return pg_class_ownercheck(objectid, roleid);
}
#endif

/*
 * The column of a collation's catalog row that names its locale: colllocale
 * since 17, colliculocale (ICU) or collcollate (libc) before
 */
static inline AttrNumber
amq_collation_locale_attnum(Form_pg_collation form)
{
#if PG_VERSION_NUM >= 170000
	(void) form;
	return Anum_pg_collation_colllocale;
#else
	return form->collprovider == COLLPROVIDER_ICU ?
		Anum_pg_collation_colliculocale : Anum_pg_collation_collcollate;
#endif
}

/*
 * The role a query checks a table's permissions and row security as, by
 * the table's range table entry: the owner of the view it is read through,
 * else the current role.  Since 16 that is in the query's (or the plan's)
 * list of RTEPermissionInfo, which an entry the planner added (a partition)
 * has none of; before, in the entry.
 */
static inline Oid
amq_rte_user(List *perminfos, RangeTblEntry *rte)
{
#if PG_VERSION_NUM >= 160000
	if (rte->perminfoindex != 0)
	{
		RTEPermissionInfo *perminfo = getRTEPermissionInfo(perminfos, rte);

		if (OidIsValid(perminfo->checkAsUser))
			return perminfo->checkAsUser;
	}
#else
	(void) perminfos;
	if (OidIsValid(rte->checkAsUser))
		return rte->checkAsUser;
#endif
	return GetUserId();
}

/* the lists amq_rte_user reads: of a query, and of a finished plan */
#if PG_VERSION_NUM >= 160000
#define AMQ_QUERY_PERMINFOS(parse) ((parse)->rteperminfos)
#define AMQ_PLAN_PERMINFOS(stmt) ((stmt)->permInfos)
#else
#define AMQ_QUERY_PERMINFOS(parse) NIL
#define AMQ_PLAN_PERMINFOS(stmt) NIL
#endif

/*
 * An expression of an appendrel's top parent, translated for one of its
 * children: given the two rels since 16, their relids before
 */
static inline Node *
amq_adjust_appendrel_attrs_multilevel(PlannerInfo *root, Node *node,
									  RelOptInfo *childrel, RelOptInfo *top_parent)
{
#if PG_VERSION_NUM >= 160000
	return adjust_appendrel_attrs_multilevel(root, node, childrel, top_parent);
#else
	return adjust_appendrel_attrs_multilevel(root, node, childrel->relids,
											 top_parent->relids);
#endif
}

/*
 * The next datum of a sort, not copied (a pass-by-value one is never): 16
 * asks whether to copy it
 */
static inline bool
amq_tuplesort_getdatum(Tuplesortstate *state, Datum *val, bool *isnull)
{
#if PG_VERSION_NUM >= 160000
	return tuplesort_getdatum(state, true, false, val, isnull, NULL);
#else
	return tuplesort_getdatum(state, true, val, isnull, NULL);
#endif
}

/*
 * Whether a join type is JOIN_RIGHT or one of the right joins added since,
 * which keep or drop rows as it does: JOIN_RIGHT_ANTI (16), JOIN_RIGHT_SEMI
 * (18)
 */
static inline bool
amq_join_is_right(JoinType jointype)
{
	switch (jointype)
	{
		case JOIN_RIGHT:
#if PG_VERSION_NUM >= 160000
		case JOIN_RIGHT_ANTI:
#endif
#if PG_VERSION_NUM >= 180000
		case JOIN_RIGHT_SEMI:
#endif
			return true;
		default:
			return false;
	}
}

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

/*
 * A plan node's instrumentation: Instrumentation, the struct EXPLAIN ANALYZE
 * counts in, is NodeInstrumentation for plan nodes since 19
 */
#if PG_VERSION_NUM < 190000
typedef Instrumentation NodeInstrumentation;
#endif

/*
 * The planner hook's parameters, to declare a hook and to pass them on: 19
 * adds the ExplainState of an EXPLAIN that plans (NULL for any other)
 */
#if PG_VERSION_NUM >= 190000
#define AMQ_PLANNER_HOOK_PARAMS Query *parse, const char *query_string, \
	int cursorOptions, ParamListInfo boundParams, ExplainState *es
#define AMQ_PLANNER_HOOK_ARGS parse, query_string, cursorOptions, boundParams, es
#else
#define AMQ_PLANNER_HOOK_PARAMS Query *parse, const char *query_string, \
	int cursorOptions, ParamListInfo boundParams
#define AMQ_PLANNER_HOOK_ARGS parse, query_string, cursorOptions, boundParams
#endif

/*
 * What an index access method's handler returns.  19 takes a routine the AM
 * allocates statically and never copies nor frees it; before 19 the caller
 * copies what it gets and pfrees it, so it gets a palloc'd copy.
 */
static inline Datum
amq_index_am_routine_datum(const IndexAmRoutine *routine)
{
#if PG_VERSION_NUM >= 190000
	return PointerGetDatum(routine);
#else
	IndexAmRoutine *copy = palloc(sizeof(IndexAmRoutine));

	memcpy(copy, routine, sizeof(IndexAmRoutine));
	return PointerGetDatum(copy);
#endif
}

/*
 * A search of an index counted for EXPLAIN ANALYZE, which shows "Index
 * Searches" since 18
 */
static inline void
amq_explain_index_search(IndexScanDesc scan)
{
#if PG_VERSION_NUM >= 180000
	if (scan->instrument)
		scan->instrument->nsearches++;
#endif
}

/*
 * The scan slot of a node that reads a table's rows, as a SeqScan makes its
 * own: 19 takes the slot's flags, and a table's stored rows obey its NOT NULL
 * constraints, which lets 19 deform them faster
 */
static inline void
amq_init_table_scan_slot(EState *estate, ScanState *ss, Relation rel)
{
#if PG_VERSION_NUM >= 190000
	ExecInitScanTupleSlot(estate, ss, RelationGetDescr(rel), table_slot_callbacks(rel),
						  TTS_FLAG_OBEYS_NOT_NULL_CONSTRAINTS);
#else
	ExecInitScanTupleSlot(estate, ss, RelationGetDescr(rel), table_slot_callbacks(rel));
#endif
}

/*
 * Table scans begun for a scan node, with the options a SeqScan begins its
 * own with: the caller passes them since 19 (the relation read only where
 * the statement only reads it, a hint; its I/O counted where EXPLAIN asks)
 */
#if PG_VERSION_NUM >= 190000
static inline uint32
amq_scan_options(ScanState *ss)
{
	uint32		options = SO_NONE;

	if (ScanRelIsReadOnly(ss))
		options |= SO_HINT_REL_READ_ONLY;
	if (ss->ps.state->es_instrument & INSTRUMENT_IO)
		options |= SO_SCAN_INSTRUMENT;
	return options;
}
#endif

static inline TableScanDesc
amq_table_beginscan(ScanState *ss, Relation rel, Snapshot snapshot)
{
#if PG_VERSION_NUM >= 190000
	return table_beginscan(rel, snapshot, 0, NULL, amq_scan_options(ss));
#else
	return table_beginscan(rel, snapshot, 0, NULL);
#endif
}

static inline TableScanDesc
amq_table_beginscan_tidrange(ScanState *ss, Relation rel, Snapshot snapshot,
							 ItemPointer mintid, ItemPointer maxtid)
{
#if PG_VERSION_NUM >= 190000
	return table_beginscan_tidrange(rel, snapshot, mintid, maxtid, amq_scan_options(ss));
#else
	return table_beginscan_tidrange(rel, snapshot, mintid, maxtid);
#endif
}

#endif							/* AMQ_PG_COMPAT_H */
