/*
 * join_filter.h
 *		Runtime join filters: a Bloom filter of a hash join's build-side keys,
 *		built while the Hash node reads them, that drops probe-side rows
 *		which cannot match before they reach the join.
 *
 * The files of join/, from the bottom up (a file calls only those before it):
 *	join_filter_spec.c	the settings, and a filter's spec as plans carry it
 *	join_filter_exec.c	the two nodes, at run time
 *	join_filter_remote.c	sending a filter to postgres_fdw's foreign scans
 *	join_filter_plan.c	the planner hook that places them
 *	join_filter.c		the setup, from _PG_init
 *
 * join_filter_plan.c rewrites finished plans (a planner hook): under the
 * Hash node of an eligible join it puts a "build" node, and above the scans
 * (or other nodes) that produce the join's probe-side keys it puts "probe"
 * nodes.  join_filter_exec.c runs them.  Both are custom scans that pass
 * their one child's tuples through unchanged; the plan says which keys
 * they hash, and a PARAM_EXEC slot, set by the build node when the executor
 * starts, is how the probe nodes find the filter (they may start first).
 */
#ifndef JOIN_FILTER_H
#define JOIN_FILTER_H

#include "nodes/extensible.h"
#include "nodes/plannodes.h"

/* settings (amqfilter.join_filter*): join_filter_spec.c */
extern bool amq_join_filter;
extern int	amq_join_filter_max_keys;
extern bool amq_join_filter_remote;
extern int	amq_join_filter_remote_max_kb;
extern double amq_join_filter_min_probe_rows;
extern double amq_join_filter_min_rejected;

/* the two node kinds (join_filter_exec.c), registered by join_filter.c */
extern const CustomScanMethods amq_join_filter_build_methods;
extern const CustomScanMethods amq_join_filter_probe_methods;

/*
 * What both nodes of one filter are told, kept in custom_private as a list
 * of Integer nodes (so plans copy, serialize for parallel workers and read
 * back): the filter's number in the statement, the PARAM_EXEC slot, then
 * for each key the extended hash function to use (InvalidOid: an integer
 * key, hashed inline) and its collation, the index a probe node may skip
 * its table by (index_skip.c), and last, for a build node, what it ships
 * to foreign scans (remote_paramid, remote_scans, remote_refused).  The key expressions themselves
 * are custom_exprs, in terms of the node's child's output (OUTER_VAR).
 */
typedef struct JoinFilterSpec
{
	int			filter_no;
	int			paramid;
	int			nkeys;
	Oid		   *hash_procs;
	Oid		   *collations;
	Oid		   *types;			/* of the keys as hashed: integers by width */
	Oid			skip_index;		/* probe: the amqfilter index of the table
								 * under it on its one key, or InvalidOid */
	/*
	 * build: the PARAM_EXEC slot in which it leaves a bloom value of the
	 * keys for the foreign scans it was shipped to (join_filter_remote.c),
	 * or -1; the foreign scans it reached, and those it could not
	 */
	int			remote_paramid;
	int			remote_scans;
	List	   *remote_refused;	/* "scan: why" strings */
	/*
	 * build: why the join has no filter, or NULL.  Such a node is planned
	 * only for EXPLAIN VERBOSE, to say so: it holds no keys and passes its
	 * rows on untouched.
	 */
	char	   *not_used;
} JoinFilterSpec;

/* join_filter_spec.c */
extern List *amq_join_filter_spec_to_list(const JoinFilterSpec *spec);
extern void amq_join_filter_spec_from_list(List *private, JoinFilterSpec *spec);

/* join_filter_remote.c */
extern bool amq_join_filter_ship(PlannedStmt *stmt, Plan *plan, Var *key,
								 Oid build_type, Oid collation, int *paramid,
								 char **schema, Oid *bloom_type,
								 const char **refused);

/* join_filter.c */
extern void amq_join_filter_init(void);
/* join_filter_plan.c */
extern void amq_join_filter_rewrite(PlannedStmt *stmt);
extern void amq_join_filter_install_planner_hook(void);

#endif							/* JOIN_FILTER_H */
