/*
 * join_filter_spec.c
 *		What the two halves of runtime join filters share: the settings, and
 *		the spec of a filter as plans carry it (join_filter.h).  The bottom of
 *		join/: join_filter_plan.c writes specs, join_filter_exec.c reads them,
 *		and this file calls neither.
 */
#include "postgres.h"

#include "nodes/pg_list.h"
#include "nodes/value.h"

#include "join/join_filter.h"

/* settings (amqfilter.join_filter*), defined by join_filter.c */
bool		amq_join_filter = false;
int			amq_join_filter_max_keys = 10000000;
double		amq_join_filter_min_probe_rows = 10000;
double		amq_join_filter_min_rejected = 0.25;
bool		amq_join_filter_remote = true;
int			amq_join_filter_remote_max_kb = 4096;

/*
 * ----------------------------------------------------------------
 * The spec, as plans carry it
 * ----------------------------------------------------------------
 */

List *
amq_join_filter_spec_to_list(const JoinFilterSpec *spec)
{
	List	   *list = list_make3(makeInteger(spec->filter_no),
								  makeInteger(spec->paramid),
								  makeInteger(spec->nkeys));
	int			i;

	/* OIDs kept as the int of the same bits, as outfuncs writes Integers */
	for (i = 0; i < spec->nkeys; i++)
		list = lappend(list, list_make3(makeInteger((int) spec->hash_procs[i]),
										makeInteger((int) spec->collations[i]),
										makeInteger((int) spec->types[i])));
	list = lappend(list, makeInteger((int) spec->skip_index));
	list = lappend(list, makeInteger(spec->remote_paramid));
	list = lappend(list, makeInteger(spec->remote_scans));
	list = lappend(list, list_copy_deep(spec->remote_refused));
	return lappend(list, spec->not_used ? list_make1(makeString(pstrdup(spec->not_used))) : NIL);
}

void
amq_join_filter_spec_from_list(List *private, JoinFilterSpec *spec)
{
	int			i;

	spec->filter_no = intVal(linitial(private));
	spec->paramid = intVal(lsecond(private));
	spec->nkeys = intVal(lthird(private));
	if (list_length(private) != 3 + spec->nkeys + 5)
		elog(ERROR, "malformed runtime join filter");
	spec->skip_index = (Oid) intVal(list_nth(private, 3 + spec->nkeys));
	spec->remote_paramid = intVal(list_nth(private, 3 + spec->nkeys + 1));
	spec->remote_scans = intVal(list_nth(private, 3 + spec->nkeys + 2));
	spec->remote_refused = (List *) list_nth(private, 3 + spec->nkeys + 3);
	spec->not_used = list_nth(private, 3 + spec->nkeys + 4) == NIL ? NULL :
		strVal(linitial((List *) list_nth(private, 3 + spec->nkeys + 4)));
	spec->hash_procs = palloc(sizeof(Oid) * spec->nkeys);
	spec->collations = palloc(sizeof(Oid) * spec->nkeys);
	spec->types = palloc(sizeof(Oid) * spec->nkeys);
	for (i = 0; i < spec->nkeys; i++)
	{
		List	   *key = list_nth(private, 3 + i);

		spec->hash_procs[i] = (Oid) intVal(linitial(key));
		spec->collations[i] = (Oid) intVal(lsecond(key));
		spec->types[i] = (Oid) intVal(lthird(key));
	}
}
