/*
 * join_filter_plan.c
 *		Puts runtime join filters into finished plans (a planner hook).
 *
 * Why a planner hook that rewrites the finished plan, and not a join path
 * of our own (set_join_pathlist_hook) or an executor hook: the filter
 * changes no plan choice, only adds work to nodes PostgreSQL already
 * chose, so it needs none of the path machinery; doing it on the finished
 * plan sees every hash join whatever produced it (subqueries, partitions,
 * parallel plans); and the nodes it adds are ordinary custom scans, so
 * EXPLAIN shows them, parallel workers receive them with the plan, and
 * cached plans keep them.  The price: the plan's costs do not know about
 * the filter (a filter never changes which join is chosen).
 *
 * Which joins.  A hash join's probe side is its outer side; a probe-side
 * row whose key the filter rules out has no match in the build side.  The
 * row may be dropped early when a row without a match contributes nothing
 * to the join's result:
 *	- inner join: such a row is not in the result;
 *	- semi join (EXISTS, IN): a row is returned only when it has a match;
 *	- right join (the build side preserved): unmatched probe-side rows are
 *	  not returned, and the build-side rows they did not match are returned
 *	  null-extended all the same;
 *	- right anti join (PostgreSQL 16; the build side's rows without a
 *	  match): a probe-side row without a match marks nothing.
 * Not for left, full or anti joins: they return the probe-side rows that
 * have no match, which are exactly the rows the filter would drop.
 * And only when the join is worth it: a probe side estimated to have at
 * least amqfilter.join_filter_min_probe_rows rows, a build side of at most
 * amqfilter.join_filter_max_keys, and estimates that say the join loses at
 * least amqfilter.join_filter_min_rejected of its probe-side rows (the
 * share a filter must reject at run time to keep testing).
 *
 * Where.  The filter is tested "as early as possible": the probe node goes
 * under the join, and further down while the key passes unchanged (a plain
 * column, the same value in the node below): through sorts, materializing,
 * appends (one probe node per partition), our own filter nodes, and joins
 * below whose output rows all come from the side the key comes from with
 * that side's key (an inner join's either side; a left, semi or anti
 * join's outer side; a right join's inner side) -- a row of that side the
 * filter drops makes only output rows with the same key, which the upper
 * join would not match either.  It stops above a Gather (the filter lives
 * in one process), above the inner side of a merge join (which marks and
 * restores its inner input), and above anything that changes rows
 * (aggregates, limits, subquery scans, function scans...).  A key that is
 * an expression is tested right under the join.
 *
 * Parallel.  A hash join run by each process of a parallel plan reads
 * the whole build side in each: each builds its own filter.  A Parallel
 * Hash join splits the build side between the processes: its build node is
 * parallel-aware and the filter is shared (join_filter_exec.c).
 */
#include "postgres.h"

#include "access/hash.h"
#include "access/htup_details.h"
#include "access/parallel.h"
#include "catalog/pg_am.h"
#include "catalog/pg_amop.h"
#include "catalog/pg_type.h"
#include "commands/defrem.h"
#include "executor/executor.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "optimizer/planner.h"
#include "parser/parsetree.h"
#include "tcop/pquery.h"
#include "utils/lsyscache.h"
#include "utils/builtins.h"
#include "utils/catcache.h"
#include "utils/syscache.h"

#include "index/filter_index.h"
#include "join/join_filter.h"

static planner_hook_type prev_planner_hook = NULL;
static ExecutorStart_hook_type prev_executor_start = NULL;

/* What the filter being placed ships to foreign scans (join_filter_remote.c). */
typedef struct RemoteShip
{
	Oid			build_type;		/* of the build side's key */
	Oid			collation;		/* the join's */
	const char *refuse_all;		/* why no scan may take it, or NULL */
	int			paramid;		/* its slot, once a scan took it; else -1 */
	char	   *schema;			/* the extension's, once looked up */
	Oid			bloom_type;		/* InvalidOid until then */
	int			scans;			/* the scans that took it */
	List	   *refused;		/* "table: why" of those that could not */
} RemoteShip;

typedef struct Rewrite
{
	PlannedStmt *stmt;
	int			next_filter_no;
	int			next_plan_node_id;
	RemoteShip *remote;			/* of the filter being placed; NULL: one key
								 * is needed */
	bool		remote_only;	/* the filter goes to foreign scans only */
	bool		say_why_not;	/* planned for EXPLAIN VERBOSE: a join that
								 * gets no filter says why */
} Rewrite;

/*
 * ----------------------------------------------------------------
 * Hash functions of a join's keys
 * ----------------------------------------------------------------
 */

static bool
is_integer_type(Oid type)
{
	return type == INT2OID || type == INT4OID || type == INT8OID;
}

/*
 * The 64-bit hash functions of a hash-joinable operator's two input types,
 * from the hash operator family it belongs to: a family promises that
 * values its equality calls equal hash alike, also across its types (an
 * int4 and an int8 of the same value).  Integers are hashed inline
 * (InvalidOid), the same way whatever their width.  False if the operator
 * has no family with extended hash functions for both types.
 */
static bool
key_hash_functions(Oid opno, Oid *left_proc, Oid *right_proc,
				   Oid *left_type, Oid *right_type)
{
	CatCList   *catlist = SearchSysCacheList1(AMOPOPID, ObjectIdGetDatum(opno));
	bool		found = false;
	int			i;

	for (i = 0; i < catlist->n_members && !found; i++)
	{
		Form_pg_amop aform = (Form_pg_amop) GETSTRUCT(&catlist->members[i]->tuple);

		if (aform->amopmethod != HASH_AM_OID ||
			aform->amopstrategy != HTEqualStrategyNumber)
			continue;
		*left_type = aform->amoplefttype;
		*right_type = aform->amoprighttype;
		if (is_integer_type(*left_type) && is_integer_type(*right_type))
		{
			*left_proc = *right_proc = InvalidOid;
			found = true;
			break;
		}
		*left_proc = get_opfamily_proc(aform->amopfamily, *left_type, *left_type,
									   HASHEXTENDED_PROC);
		*right_proc = get_opfamily_proc(aform->amopfamily, *right_type, *right_type,
										HASHEXTENDED_PROC);
		found = OidIsValid(*left_proc) && OidIsValid(*right_proc);
	}
	ReleaseSysCacheList(catlist);
	return found;
}

/*
 * ----------------------------------------------------------------
 * The nodes
 * ----------------------------------------------------------------
 */

static bool
is_join_filter_node(const Plan *plan)
{
	return IsA(plan, CustomScan) &&
		(((const CustomScan *) plan)->methods == &amq_join_filter_build_methods ||
		 ((const CustomScan *) plan)->methods == &amq_join_filter_probe_methods);
}

/*
 * A node of ours over child: it returns the child's rows as they are, so
 * its target list is the child's, column for column (INDEX_VAR Vars over a
 * scan target list of OUTER_VAR Vars: EXPLAIN shows the child's names).
 * The child is the node's lefttree (not a custom plan): so the executor's
 * expressions over OUTER_VAR, EXPLAIN's names for them and rescans with
 * changed parameters all find it where they look for any node's input.
 */
static Plan *
make_filter_node(Rewrite *rw, const CustomScanMethods *methods, Plan *child,
				 List *keys, const JoinFilterSpec *spec)
{
	CustomScan *cscan = makeNode(CustomScan);
	Plan	   *plan = &cscan->scan.plan;
	ListCell   *lc;

	plan->startup_cost = child->startup_cost;
	plan->total_cost = child->total_cost;
	plan->plan_rows = child->plan_rows;
	plan->plan_width = child->plan_width;
	plan->parallel_aware = false;
	plan->parallel_safe = child->parallel_safe;
	plan->plan_node_id = rw->next_plan_node_id++;
	foreach(lc, child->targetlist)
	{
		TargetEntry *tle = lfirst_node(TargetEntry, lc);
		Oid			type = exprType((Node *) tle->expr);
		int32		typmod = exprTypmod((Node *) tle->expr);
		Oid			collation = exprCollation((Node *) tle->expr);

		plan->targetlist = lappend(plan->targetlist,
								   makeTargetEntry((Expr *) makeVar(INDEX_VAR, tle->resno, type,
																	typmod, collation, 0),
												   tle->resno, tle->resname, tle->resjunk));
		cscan->custom_scan_tlist = lappend(cscan->custom_scan_tlist,
										   makeTargetEntry((Expr *) makeVar(OUTER_VAR, tle->resno,
																			type, typmod,
																			collation, 0),
														   tle->resno, tle->resname,
														   tle->resjunk));
	}
	plan->lefttree = child;
	/* the child's parameters are ours: a rescan that changes them reaches it */
	plan->extParam = bms_copy(child->extParam);
	plan->allParam = bms_copy(child->allParam);
	cscan->scan.scanrelid = 0;
	cscan->custom_exprs = keys;
	cscan->custom_private = amq_join_filter_spec_to_list(spec);
	cscan->methods = methods;
	return plan;
}

/*
 * Whether a hash join of this type may drop probe-side (outer) rows that
 * have no match; see the file comment.
 */
static bool
join_may_filter(JoinType jointype)
{
	switch (jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
			return true;
		default:
			return amq_join_is_right(jointype);
	}
}

/*
 * Whether rows of a lower join's outer (or inner) side may be dropped for
 * an upper join's key that comes from that side; see the file comment.
 */
static bool
side_may_drop(JoinType jointype, bool outer_side)
{
	switch (jointype)
	{
		case JOIN_INNER:
			return true;
		case JOIN_LEFT:
		case JOIN_SEMI:
		case JOIN_ANTI:
			return outer_side;
		default:
			return amq_join_is_right(jointype) && !outer_side;
	}
}

/*
 * keys (Var(OUTER_VAR, k): column k of plan's output) as columns of the
 * output of the input they come from unchanged: NIL if some key is an
 * expression, or the keys come from different inputs.  *outer_input says
 * which input (for nodes with two).
 */
static List *
keys_below(Plan *plan, List *keys, bool *outer_input)
{
	List	   *tlist = plan->targetlist;
	List	   *below = NIL;
	int			side = 0;		/* 1 outer, 2 inner */
	ListCell   *lc;

	if (is_join_filter_node(plan))
		tlist = ((CustomScan *) plan)->custom_scan_tlist;
	foreach(lc, keys)
	{
		Var		   *key = (Var *) lfirst(lc);
		TargetEntry *tle;
		Var		   *var;
		int			this_side;

		if (!IsA(key, Var) || key->varno != OUTER_VAR)
			return NIL;
		tle = list_nth_node(TargetEntry, tlist, key->varattno - 1);
		var = (Var *) tle->expr;
		if (!IsA(var, Var) || (var->varno != OUTER_VAR && var->varno != INNER_VAR))
			return NIL;
		this_side = var->varno == OUTER_VAR ? 1 : 2;
		if (side != 0 && side != this_side)
			return NIL;
		side = this_side;
		var = copyObject(var);
		/* in the input's own terms: a column of its output */
		var->varno = OUTER_VAR;
		below = lappend(below, var);
	}
	*outer_input = side == 1;
	return below;
}

/*
 * The spec of a probe node over plan: with the amqfilter index of plan's
 * table on the key, when plan scans a table and the one key is a column of
 * it, so that the node can skip the table when the index rules out every
 * build-side key (index_skip.c).
 */
static const JoinFilterSpec *
spec_with_skip_index(Rewrite *rw, Plan *plan, List *keys, const JoinFilterSpec *spec)
{
	Index		scanrelid;
	Var		   *key = linitial(keys);
	TargetEntry *tle;
	Var		   *column;
	JoinFilterSpec *with;
	Oid			index;

	switch (nodeTag(plan))
	{
		case T_SeqScan:
		case T_BitmapHeapScan:
		case T_IndexScan:
		case T_CustomScan:
			scanrelid = ((Scan *) plan)->scanrelid;
			break;
		default:
			return spec;
	}
	if (spec->nkeys != 1 || scanrelid == 0 || !IsA(key, Var) || key->varno != OUTER_VAR ||
		key->varattno < 1 || key->varattno > list_length(plan->targetlist))
		return spec;
	tle = list_nth_node(TargetEntry, plan->targetlist, key->varattno - 1);
	column = (Var *) tle->expr;
	if (!IsA(column, Var) || column->varno != scanrelid || column->varattno < 1 ||
		rt_fetch(scanrelid, rw->stmt->rtable)->rtekind != RTE_RELATION)
		return spec;
	index = amq_index_for_column(rt_fetch(scanrelid, rw->stmt->rtable)->relid,
								 column->varattno, spec->collations[0]);
	if (!OidIsValid(index))
		return spec;
	with = palloc(sizeof(JoinFilterSpec));
	*with = *spec;
	with->skip_index = index;
	return with;
}

/*
 * Sends the filter being placed to a foreign scan's server with its query,
 * if the scan can take it: then the scan needs no probe node (and an async
 * Append of foreign scans stays async).  A scan that cannot is recorded
 * with why, for the build node's EXPLAIN.
 */
static bool
ship_to_foreign_scan(Rewrite *rw, Plan *plan, List *keys)
{
	RemoteShip *remote = rw->remote;
	ForeignScan *fs = (ForeignScan *) plan;
	const char *refused;
	const char *name;

	if (remote == NULL)
		return false;
	name = fs->scan.scanrelid > 0 ?
		get_rel_name(rt_fetch(fs->scan.scanrelid, rw->stmt->rtable)->relid) : NULL;
	if (name == NULL)
		name = "a foreign scan";
	if (remote->refuse_all != NULL)
		refused = remote->refuse_all;
	else if (amq_join_filter_ship(rw->stmt, plan, linitial(keys), remote->build_type,
								  remote->collation, &remote->paramid,
								  &remote->schema, &remote->bloom_type, &refused))
	{
		remote->scans++;
		return true;
	}
	if (refused != NULL)
		remote->refused = lappend(remote->refused,
								  makeString(psprintf("%s: %s", name, refused)));
	return false;
}

/*
 * Puts the probe node for keys (columns of *slot's output) as far down as
 * they pass unchanged, or right over *slot.
 */
static void
place_probe(Rewrite *rw, Plan **slot, List *keys, const JoinFilterSpec *spec)
{
	Plan	   *plan = *slot;
	List	   *below;
	bool		outer_input = true;
	ListCell   *lc;

	switch (nodeTag(plan))
	{
		case T_Append:
		case T_MergeAppend:
			{
				/* a dummy target list: column k of every input */
				List	   *inputs = IsA(plan, Append) ?
					((Append *) plan)->appendplans : ((MergeAppend *) plan)->mergeplans;

				if (inputs == NIL || keys_below(plan, keys, &outer_input) == NIL)
					break;
				foreach(lc, inputs)
					place_probe(rw, (Plan **) &lfirst(lc), copyObject(keys), spec);
				return;
			}
		case T_Sort:
		case T_IncrementalSort:
		case T_Material:
		case T_Hash:
			below = keys_below(plan, keys, &outer_input);
			if (below != NIL && outer_input)
			{
				place_probe(rw, &plan->lefttree, below, spec);
				return;
			}
			break;
		case T_CustomScan:
			if (amq_index_skip_is_append(plan))
			{
				/* an Append of partitions: column k is every child's column k */
				foreach(lc, keys)
					if (!IsA(lfirst(lc), Var) || ((Var *) lfirst(lc))->varno != OUTER_VAR)
						break;
				if (lc != NULL)
					break;
				foreach(lc, ((CustomScan *) plan)->custom_plans)
					place_probe(rw, (Plan **) &lfirst(lc), copyObject(keys), spec);
				return;
			}
			if (!is_join_filter_node(plan))
				break;
			below = keys_below(plan, keys, &outer_input);
			if (below != NIL)
			{
				place_probe(rw, &plan->lefttree, below, spec);
				return;
			}
			break;
		case T_NestLoop:
		case T_MergeJoin:
		case T_HashJoin:
			below = keys_below(plan, keys, &outer_input);
			if (below == NIL || !side_may_drop(((Join *) plan)->jointype, outer_input))
				break;
			/* a merge join marks and restores its inner input */
			if (!outer_input && IsA(plan, MergeJoin))
				break;
			place_probe(rw, outer_input ? &plan->lefttree : &plan->righttree, below, spec);
			return;
		case T_ForeignScan:
			if (ship_to_foreign_scan(rw, plan, keys))
				return;
			break;
		default:
			break;
	}
	if (rw->remote_only)
		return;
	*slot = make_filter_node(rw, &amq_join_filter_probe_methods, plan, keys,
							 spec_with_skip_index(rw, plan, keys, spec));
}

/*
 * The share of the probe side's rows the join is expected to find a match
 * for, from the plan's estimates, or -1 when they do not say.  An inner or
 * semi join returns at least one row for each probe-side row that has a
 * match (a right join also each unmatched build-side row), so its rows over
 * the probe side's are at least that share: the estimate errs towards
 * "most rows match", towards no filter.  A right anti or right semi join
 * returns build-side rows, which say nothing of the probe side.
 */
static double
expected_match_share(const HashJoin *join, const Plan *outer)
{
	switch (join->join.jointype)
	{
		case JOIN_INNER:
		case JOIN_SEMI:
		case JOIN_RIGHT:
			if (outer->plan_rows <= 0)
				return -1;
			return Min(1.0, join->join.plan.plan_rows / outer->plan_rows);
		default:
			return -1;
	}
}

/*
 * Under EXPLAIN VERBOSE, a node over the join's build side that says why it
 * has no filter (and does nothing else: join_filter_exec.c passes its rows
 * on).  Only there: a plan that runs gets no node for nothing.
 */
static void
say_why_not(Rewrite *rw, HashJoin *join, const char *why)
{
	Hash	   *hash = (Hash *) innerPlan(join);
	JoinFilterSpec spec;

	if (!rw->say_why_not)
		return;
	memset(&spec, 0, sizeof(spec));
	spec.skip_index = InvalidOid;
	spec.paramid = -1;
	spec.remote_paramid = -1;
	spec.not_used = pstrdup(why);
	hash->plan.lefttree = make_filter_node(rw, &amq_join_filter_build_methods,
										   hash->plan.lefttree, NIL, &spec);
}

/* Why a join's estimates keep its probe side from getting probe nodes. */
static char *
estimates_refuse(const Plan *outer, double match_share)
{
	if (outer->plan_rows < amq_join_filter_min_probe_rows)
		return psprintf("the probe side is estimated at %.0f rows, fewer than "
						"amqfilter.join_filter_min_probe_rows (%.0f)",
						outer->plan_rows, amq_join_filter_min_probe_rows);
	return psprintf("the join is estimated to keep %.0f%% of its probe-side rows: "
					"it must lose amqfilter.join_filter_min_rejected (%.0f%%)",
					100.0 * match_share, 100.0 * amq_join_filter_min_rejected);
}

/*
 * True if the statement being planned is EXPLAIN with VERBOSE: the portal
 * running it, and its options, say so.
 */
static bool
planning_for_explain_verbose(void)
{
	ListCell   *lc;

	if (ActivePortal == NULL || ActivePortal->commandTag != CMDTAG_EXPLAIN)
		return false;
	foreach(lc, ActivePortal->stmts)
	{
		PlannedStmt *pstmt = lfirst(lc);
		ListCell   *lc2;

		if (!IsA(pstmt, PlannedStmt) || pstmt->utilityStmt == NULL ||
			!IsA(pstmt->utilityStmt, ExplainStmt))
			continue;
		foreach(lc2, ((ExplainStmt *) pstmt->utilityStmt)->options)
		{
			DefElem    *opt = lfirst_node(DefElem, lc2);

			if (strcmp(opt->defname, "verbose") == 0)
				return defGetBoolean(opt);
		}
	}
	return false;
}

/* Adds a filter to a hash join, if it is eligible. */
static void
add_filter(Rewrite *rw, HashJoin *join)
{
	Hash	   *hash = (Hash *) innerPlan(join);
	Plan	   *outer = outerPlan(join);
	JoinFilterSpec spec;
	int			nkeys = list_length(join->hashkeys);
	JoinFilterSpec probe;
	RemoteShip	remote;
	double		match_share;
	bool		local_off;
	int			i;

	if (!join_may_filter(join->join.jointype) || !IsA(hash, Hash) || nkeys == 0 ||
		list_length(hash->hashkeys) != nkeys)
		return;
	/* a build side too large to hold */
	if (hash->plan.plan_rows > (double) amq_join_filter_max_keys)
	{
		say_why_not(rw, join,
					psprintf("the build side is estimated at %.0f rows, more than "
							 "amqfilter.join_filter_max_keys (%d)",
							 hash->plan.plan_rows, amq_join_filter_max_keys));
		return;
	}

	/*
	 * A probe side too small to gain, or a join expected to match too many
	 * of its probe-side rows to pay for testing them (the test the probe
	 * node makes on its first rows, made from the estimates, so that such a
	 * join keeps its plan unchanged: a filter that switches itself off
	 * still costs a node a row) gets no local probe nodes.  Its foreign
	 * scans may still take the filter: their estimates are often a guess
	 * (a foreign table nobody analyzed counts 1,000 rows), a row sent over
	 * the network costs far more than the server's test, and the filter
	 * costs nothing here.
	 */
	match_share = expected_match_share(join, outer);
	local_off = outer->plan_rows < amq_join_filter_min_probe_rows ||
		(match_share >= 0 && 1.0 - match_share < amq_join_filter_min_rejected);
	if (local_off && nkeys != 1)
	{
		say_why_not(rw, join, estimates_refuse(outer, match_share));
		return;
	}

	spec.nkeys = nkeys;
	spec.skip_index = InvalidOid;
	spec.remote_paramid = -1;
	spec.remote_scans = 0;
	spec.remote_refused = NIL;
	spec.not_used = NULL;
	spec.hash_procs = palloc(sizeof(Oid) * nkeys);
	spec.collations = palloc(sizeof(Oid) * nkeys);
	spec.types = palloc(sizeof(Oid) * nkeys);
	probe = spec;
	probe.hash_procs = palloc(sizeof(Oid) * nkeys);
	probe.types = palloc(sizeof(Oid) * nkeys);
	for (i = 0; i < nkeys; i++)
	{
		Oid			opno = list_nth_oid(join->hashoperators, i);

		/* a NULL key cannot match: dropped, as the join would */
		if (!op_strict(opno) ||
			!key_hash_functions(opno, &probe.hash_procs[i], &spec.hash_procs[i],
								&probe.types[i], &spec.types[i]))
		{
			say_why_not(rw, join,
						psprintf("no 64-bit hash function for its key of type %s",
								 format_type_be(exprType(list_nth(hash->hashkeys, i)))));
			return;
		}
		spec.collations[i] = list_nth_oid(join->hashcollations, i);
	}
	/* the filter's number and slot: now if probe nodes will need them */
	spec.filter_no = probe.filter_no = local_off ? 0 : ++rw->next_filter_no;
	spec.paramid = probe.paramid = local_off ? -1 : list_length(rw->stmt->paramExecTypes);
	if (!local_off)
		rw->stmt->paramExecTypes = lappend_oid(rw->stmt->paramExecTypes, INTERNALOID);


	/*
	 * One key may also go to foreign scans of the probe side, as a bloom
	 * value; only a build side that is the same at every rescan, and one
	 * read by this process alone
	 */
	remote.build_type = exprType(linitial(hash->hashkeys));
	remote.collation = spec.collations[0];
	remote.refuse_all = NULL;
	remote.paramid = -1;
	remote.schema = NULL;
	remote.bloom_type = InvalidOid;
	remote.scans = 0;
	remote.refused = NIL;
	if (!bms_is_empty(hash->plan.extParam) || !bms_is_empty(hash->plan.lefttree->extParam))
		remote.refuse_all = "the build side changes between rescans";
	else if (hash->plan.parallel_aware)
		remote.refuse_all = "a Parallel Hash join";
	rw->remote = nkeys == 1 ? &remote : NULL;
	rw->remote_only = local_off;
	place_probe(rw, &join->join.plan.lefttree, copyObject(join->hashkeys), &probe);
	rw->remote = NULL;
	rw->remote_only = false;
	/*
	 * no probe node, and no scan took it: nothing needs the filter; the
	 * build node stays only to say, in EXPLAIN, which scans could not
	 */
	if (local_off && remote.scans == 0 && remote.refused == NIL)
	{
		say_why_not(rw, join, estimates_refuse(outer, match_share));
		return;
	}
	if (local_off)
	{
		spec.filter_no = ++rw->next_filter_no;
		spec.paramid = list_length(rw->stmt->paramExecTypes);
		rw->stmt->paramExecTypes = lappend_oid(rw->stmt->paramExecTypes, INTERNALOID);
	}

	spec.remote_paramid = remote.paramid;
	spec.remote_scans = remote.scans;
	spec.remote_refused = remote.refused;
	hash->plan.lefttree = make_filter_node(rw, &amq_join_filter_build_methods,
										   hash->plan.lefttree,
										   copyObject(hash->hashkeys), &spec);
	/* a Parallel Hash's build side is split: the filter is shared */
	hash->plan.lefttree->parallel_aware = hash->plan.parallel_aware;
	if (remote.scans > 0)
	{
		/* the outer side as placing the probe left it */
		Plan	   *probe_side = outerPlan(join);

		/*
		 * A hash join reads a probe-side row before building when its outer
		 * side's startup cost is below the Hash's total: a foreign scan would
		 * then open its cursor, and send its query, before the filter exists.
		 * Its startup cost is raised to the Hash's, which keeps the join from
		 * looking first (the plan was chosen already; only EXPLAIN shows it).
		 */
		probe_side->startup_cost = Max(probe_side->startup_cost, hash->plan.total_cost);
		if (probe_side->total_cost < probe_side->startup_cost)
			probe_side->total_cost = probe_side->startup_cost;
	}
}

/* The largest plan_node_id of a tree. */
static int
max_plan_node_id(Plan *plan)
{
	int			max;
	ListCell   *lc;
	List	   *children = NIL;

	if (plan == NULL)
		return 0;
	max = plan->plan_node_id;
	max = Max(max, max_plan_node_id(plan->lefttree));
	max = Max(max, max_plan_node_id(plan->righttree));
	if (IsA(plan, Append))
		children = ((Append *) plan)->appendplans;
	else if (IsA(plan, MergeAppend))
		children = ((MergeAppend *) plan)->mergeplans;
	else if (IsA(plan, SubqueryScan))
		children = list_make1(((SubqueryScan *) plan)->subplan);
	else if (IsA(plan, CustomScan))
		children = ((CustomScan *) plan)->custom_plans;
	else if (IsA(plan, BitmapAnd))
		children = ((BitmapAnd *) plan)->bitmapplans;
	else if (IsA(plan, BitmapOr))
		children = ((BitmapOr *) plan)->bitmapplans;
	foreach(lc, children)
		max = Max(max, max_plan_node_id(lfirst(lc)));
	return max;
}

/* Adds filters to the hash joins of a tree, top down. */
static void
rewrite_tree(Rewrite *rw, Plan *plan)
{
	ListCell   *lc;

	if (plan == NULL)
		return;
	if (IsA(plan, HashJoin))
		add_filter(rw, (HashJoin *) plan);
	rewrite_tree(rw, plan->lefttree);
	rewrite_tree(rw, plan->righttree);
	if (IsA(plan, Append))
		foreach(lc, ((Append *) plan)->appendplans)
			rewrite_tree(rw, lfirst(lc));
	else if (IsA(plan, MergeAppend))
		foreach(lc, ((MergeAppend *) plan)->mergeplans)
			rewrite_tree(rw, lfirst(lc));
	else if (IsA(plan, SubqueryScan))
		rewrite_tree(rw, ((SubqueryScan *) plan)->subplan);
	else if (IsA(plan, CustomScan))
		foreach(lc, ((CustomScan *) plan)->custom_plans)
			rewrite_tree(rw, lfirst(lc));
}

/* Whether a plan has been made through the hook since the library loaded. */
static bool planned_through_hook = false;

static PlannedStmt *
join_filter_planner(AMQ_PLANNER_HOOK_PARAMS)
{
	PlannedStmt *stmt;

	planned_through_hook = true;
	if (prev_planner_hook)
		stmt = prev_planner_hook(AMQ_PLANNER_HOOK_ARGS);
	else
		stmt = standard_planner(AMQ_PLANNER_HOOK_ARGS);
	amq_join_filter_rewrite(stmt);
	return stmt;
}

/* Adds runtime join filters to the hash joins of a finished plan. */
void
amq_join_filter_rewrite(PlannedStmt *stmt)
{
	Rewrite		rw;
	ListCell   *lc;

	if (!amq_join_filter || stmt->commandType == CMD_UTILITY)
		return;

	rw.stmt = stmt;
	rw.next_filter_no = 0;
	rw.remote = NULL;
	rw.remote_only = false;
	rw.say_why_not = planning_for_explain_verbose();
	rw.next_plan_node_id = max_plan_node_id(stmt->planTree);
	foreach(lc, stmt->subplans)
		rw.next_plan_node_id = Max(rw.next_plan_node_id, max_plan_node_id(lfirst(lc)));
	rw.next_plan_node_id++;

	rewrite_tree(&rw, stmt->planTree);
	foreach(lc, stmt->subplans)
		rewrite_tree(&rw, lfirst(lc));
}

/*
 * A plan made before the library was loaded: the first query of a session
 * that loads it while planning (when it opens an amqfilter index, or
 * calls one of the extension's functions while folding constants) is
 * planned without the planner hooks, which the library installs only as
 * it loads.  When such a plan starts, a copy of it gets what they would
 * have added (partitions skipped, then runtime join filters: the order
 * the hooks run in), so that a session's first query skips as its later
 * ones do.  Once, until the first plan made through the hooks: never in a
 * parallel worker, whose plan is the leader's.
 */
static void
join_filter_executor_start(QueryDesc *queryDesc, int eflags)
{
	if (!planned_through_hook && !IsParallelWorker() &&
		queryDesc->plannedstmt->commandType != CMD_UTILITY)
	{
		PlannedStmt *stmt = copyObject(queryDesc->plannedstmt);

		planned_through_hook = true;
		amq_index_skip_rewrite(stmt, (eflags & EXEC_FLAG_BACKWARD) != 0);
		amq_join_filter_rewrite(stmt);
		queryDesc->plannedstmt = stmt;
	}
	if (prev_executor_start)
		prev_executor_start(queryDesc, eflags);
	else
		standard_ExecutorStart(queryDesc, eflags);
}

void
amq_join_filter_install_planner_hook(void)
{
	prev_planner_hook = planner_hook;
	planner_hook = join_filter_planner;
	prev_executor_start = ExecutorStart_hook;
	ExecutorStart_hook = join_filter_executor_start;
}
