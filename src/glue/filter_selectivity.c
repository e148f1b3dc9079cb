/*
 * filter_selectivity.c
 *		Planner support, written once for every filter type: estimates for
 *		"filter @> value", "value <@ filter" and the functions behind them,
 *		and merges of values that do not change from row to row moved into
 *		InitPlans (at the end of the file).
 *
 * Without an estimator PostgreSQL assumes that half of the rows pass a
 * probe, whatever the filter holds.  When the filter is known at plan time
 * (a constant, or a parameter of a custom plan), its own summary says
 * better: it holds about D distinct values (a bloom filter's fill-based
 * estimate, a cuckoo filter's item count) and lets other values through at
 * its current false-positive rate q.  With the column's statistics (nd
 * distinct values, a fraction nullfrac of NULLs, which never pass) and the
 * assumption that the filter's values are values of the column, as they are
 * when it was built from the other side of a join,
 *
 *	selectivity = (1 - nullfrac) * (m/nd + (1 - m/nd) * q),  m = min(D, nd)
 *
 * the values in the filter, plus the false positives among the others.
 * Each distinct value is taken to have the same number of rows.
 *
 * A filter known only at run time (a scalar subquery, a parameter of a
 * generic plan) leaves PostgreSQL's defaults in place: 0.5 for the
 * operators, 1/3 for the function forms.
 *
 * Reading a constant filter's summary scans its bits once per planning
 * (a few milliseconds for a 12 MB filter).
 */
#include "postgres.h"

#include <math.h>

#include "access/htup_details.h"
#include "catalog/pg_statistic.h"
#include "catalog/pg_type.h"
#include "nodes/makefuncs.h"
#include "nodes/nodeFuncs.h"
#include "nodes/supportnodes.h"
#include "optimizer/optimizer.h"
#include "parser/parsetree.h"
#include "rewrite/rewriteManip.h"
#include "utils/lsyscache.h"
#include "utils/selfuncs.h"

#include "glue/filter_glue.h"

/* What the operators are estimated at without a known filter (PostgreSQL's own default). */
#define DEFAULT_PROBE_SEL	0.5

/*
 * Finds the filter and the value among a probe's two arguments: the filter
 * is the one whose declared type is not anyelement.  False if the shape is
 * not that of a probe.
 */
static bool
probe_args(Oid funcid, List *args, Node **filter, Node **value)
{
	Oid		   *argtypes;
	int			nargs;
	int			filter_arg;

	if (list_length(args) != 2)
		return false;
	(void) get_func_signature(funcid, &argtypes, &nargs);
	if (nargs != 2)
		return false;
	filter_arg = argtypes[0] == ANYELEMENTOID ? 1 : 0;
	pfree(argtypes);
	*filter = (Node *) list_nth(args, filter_arg);
	*value = (Node *) list_nth(args, 1 - filter_arg);
	return true;
}

/*
 * The estimated selectivity of a probe of a filter known at plan time, or
 * -1 when the filter is not known then.
 */
static double
probe_selectivity(PlannerInfo *root, Oid funcid, List *args, int varRelid,
				  const AmqFormat *format, AmqFilterSummary summarize)
{
	Node	   *filter;
	Node	   *value;
	Const	   *c;
	VariableStatData vardata;
	struct varlena *raw;
	AmqAnyView	view;
	double		distinct = 0.0;
	double		fpr = 0.0;
	double		nd;
	double		nullfrac = 0.0;
	double		m;
	double		sel;
	bool		isdefault;

	if (!probe_args(funcid, args, &filter, &value))
		return -1;
	filter = estimate_expression_value(root, filter);
	if (!IsA(filter, Const))
		return -1;
	c = (Const *) filter;
	if (c->constisnull)
		return 0.0;				/* strict: a NULL filter passes no row */

	raw = PG_DETOAST_DATUM(c->constvalue);
	amq_open_or_error(format, VARDATA(raw), VARSIZE(raw) - VARHDRSZ,
					  AMQ_GATE_STORED, &view);
	/* the sizeless empty filter holds nothing and lets nothing through */
	if (!format->is_empty(&view))
		summarize(&view, &distinct, &fpr);
	if ((Pointer) raw != DatumGetPointer(c->constvalue))
		pfree(raw);

	examine_variable(root, value, varRelid, &vardata);
	nd = get_variable_numdistinct(&vardata, &isdefault);
	if (HeapTupleIsValid(vardata.statsTuple))
		nullfrac = ((Form_pg_statistic) GETSTRUCT(vardata.statsTuple))->stanullfrac;
	/* without statistics, take the values of the column as distinct */
	if (isdefault && vardata.rel != NULL && vardata.rel->tuples > 0)
		nd = vardata.rel->tuples;
	ReleaseVariableStats(vardata);

	if (nd < 1.0)
		nd = 1.0;
	if (isnan(distinct) || distinct < 0.0)
		distinct = nd;
	m = Min(distinct, nd);
	if (isnan(fpr) || fpr < 0.0)
		fpr = 1.0;
	sel = (1.0 - nullfrac) * (m / nd + (1.0 - m / nd) * Min(fpr, 1.0));
	CLAMP_PROBABILITY(sel);
	return sel;
}

/* The operators' restriction estimator: (internal, oid, internal, integer). */
Datum
amq_probe_restrict(FunctionCallInfo fcinfo, const AmqFormat *format,
				   AmqFilterSummary summarize)
{
	PlannerInfo *root = (PlannerInfo *) PG_GETARG_POINTER(0);
	Oid			opno = PG_GETARG_OID(1);
	List	   *args = (List *) PG_GETARG_POINTER(2);
	int			varRelid = PG_GETARG_INT32(3);
	double		sel;

	sel = probe_selectivity(root, get_opcode(opno), args, varRelid, format,
							summarize);
	PG_RETURN_FLOAT8(sel < 0.0 ? DEFAULT_PROBE_SEL : sel);
}

/* The probe functions' planner support: selectivity of a restriction. */
Datum
amq_probe_support(FunctionCallInfo fcinfo, const AmqFormat *format,
				  AmqFilterSummary summarize)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSelectivity *req;
	double		sel;

	if (!IsA(rawreq, SupportRequestSelectivity))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestSelectivity *) rawreq;
	if (req->is_join)
		PG_RETURN_POINTER(NULL);
	sel = probe_selectivity(req->root, req->funcid, req->args, req->varRelid,
							format, summarize);
	if (sel < 0.0)
		PG_RETURN_POINTER(NULL);
	req->selectivity = sel;
	PG_RETURN_POINTER(req);
}

/*
 * ----------------------------------------------------------------
 * Merges computed once.  A merge whose arguments do not depend on the row
 * (scalar subqueries, constants, parameters) still sits in the row's
 * expression when the planner pulls the subquery it was written in up:
 *
 *	FROM t, (SELECT (SELECT bloom_agg(...) FROM a) | (SELECT ...) AS f) u
 *
 * and would run once per row of t.  The merges' planner support rewrites
 * such a call merge(x, y) into the scalar subquery (SELECT merge(x, y)),
 * which PostgreSQL plans as an InitPlan: computed once, when first needed.
 *
 * The call is then evaluated once, one query level further down, so every
 * argument must mean the same there and must not need more than one
 * evaluation.  Refused, and left as they are:
 *	- columns, aggregates and window functions of this query, which change
 *	  from row to row or group to group, and columns and aggregates of the
 *	  queries around it, which change with their rows;
 *	- set-returning functions: they make rows of this query, and a scalar
 *	  subquery cannot return a set;
 *	- volatile functions, which are evaluated once per row;
 *	- parameters other than the query's own ($1): executor parameters
 *	  belong to a plan level, and the placeholders CaseTestExpr and
 *	  CoerceToDomainValue to the expression that supplies their value.
 * What remains may still name query levels: a subquery among the
 * arguments can read a CTE of this query or of one around it.  Those
 * references are counted in levels, and are moved one further.
 *
 * Only while the query's expressions are preprocessed, when PostgreSQL
 * plans the SubLinks that eval_const_expressions leaves behind (later
 * simplifications, of an appendrel child's restrictions or of estimates,
 * have none planned: "cannot handle unplanned sub-select"), and only for
 * a query that has a FROM list (a query without one evaluates its
 * expressions once anyway, and the subquery made here is one).  A merge
 * left alone still has its call site's cache of its last result
 * (filter_access.c), which avoids recomputing for repeated inputs.
 * ----------------------------------------------------------------
 */

/* True if node holds a node that ties it to a row or a plan level. */
static bool
row_dependent_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, Param))
		return ((Param *) node)->paramkind != PARAM_EXTERN;
	if (IsA(node, PlaceHolderVar) || IsA(node, SubPlan) ||
		IsA(node, AlternativeSubPlan) || IsA(node, CurrentOfExpr) ||
		IsA(node, NextValueExpr))
		return true;
	if (IsA(node, Query))
		return query_tree_walker((Query *) node, row_dependent_walker,
								 context, 0);
	return expression_tree_walker(node, row_dependent_walker, context);
}

/*
 * True if node holds a placeholder for a value that the expression around
 * it supplies.  Not looking into subqueries: one there belongs to an
 * expression of the subquery, which moves with it.
 */
static bool
placeholder_walker(Node *node, void *context)
{
	if (node == NULL)
		return false;
	if (IsA(node, CaseTestExpr) || IsA(node, CoerceToDomainValue))
		return true;
	if (IsA(node, Query))
		return false;
	return expression_tree_walker(node, placeholder_walker, context);
}

static bool
row_independent(PlannerInfo *root, Node *args)
{
	int			level;

	if (row_dependent_walker(args, NULL) || placeholder_walker(args, NULL) ||
		contain_volatile_functions(args) || contain_windowfuncs(args) ||
		expression_returns_set(args))
		return false;
	/* columns and aggregates of this query and of every query around it */
	for (level = 0; level < root->query_level; level++)
		if (contain_vars_of_level(args, level) ||
			contain_aggs_of_level(args, level))
			return false;
	return true;
}

/*
 * True if the query has no FROM list: while planning, PostgreSQL puts a
 * dummy RTE_RESULT relation in an empty one.
 */
static bool
without_from(Query *parse)
{
	Node	   *item;

	if (parse->jointree == NULL || parse->jointree->fromlist == NIL)
		return true;
	if (list_length(parse->jointree->fromlist) != 1)
		return false;
	item = (Node *) linitial(parse->jointree->fromlist);
	return IsA(item, RangeTblRef) &&
		rt_fetch(((RangeTblRef *) item)->rtindex, parse->rtable)->rtekind == RTE_RESULT;
}

Datum
amq_merge_support(FunctionCallInfo fcinfo)
{
	Node	   *rawreq = (Node *) PG_GETARG_POINTER(0);
	SupportRequestSimplify *req;
	Query	   *parse;
	FuncExpr   *merge;
	Query	   *sub;
	SubLink    *sublink;

	if (!IsA(rawreq, SupportRequestSimplify))
		PG_RETURN_POINTER(NULL);
	req = (SupportRequestSimplify *) rawreq;
	/* the relations are set up once preprocessing is over */
	if (req->root == NULL || (parse = req->root->parse) == NULL ||
		req->root->simple_rel_array_size > 0 ||
		without_from(parse) ||
		!row_independent(req->root, (Node *) req->fcall->args))
		PG_RETURN_POINTER(NULL);

	merge = copyObject(req->fcall);
	/* CTE references in the arguments' subqueries: one level further up */
	IncrementVarSublevelsUp((Node *) merge, 1, 0);

	sub = makeNode(Query);
	sub->commandType = CMD_SELECT;
	sub->querySource = QSRC_ORIGINAL;
	sub->canSetTag = true;
	sub->jointree = makeFromExpr(NIL, NULL);
	sub->targetList = list_make1(makeTargetEntry((Expr *) merge, 1,
												 pstrdup("merge"), false));
	sub->hasSubLinks = checkExprHasSubLink((Node *) merge->args);

	sublink = makeNode(SubLink);
	sublink->subLinkType = EXPR_SUBLINK;
	sublink->subLinkId = 0;
	sublink->testexpr = NULL;
	sublink->operName = NIL;
	sublink->subselect = (Node *) sub;
	sublink->location = -1;
	parse->hasSubLinks = true;
	PG_RETURN_POINTER(sublink);
}
