/*
 * join_filter.c
 *		Runtime join filters' setup, from _PG_init: their settings, their two
 *		custom scan nodes (join_filter_exec.c) and the planner hook that
 *		places them (join_filter_plan.c).  The top of join/.
 */
#include "postgres.h"

#include <limits.h>

#include "nodes/extensible.h"
#include "utils/guc.h"

#include "join/join_filter.h"

void
amq_join_filter_init(void)
{
	DefineCustomBoolVariable("amqfilter.join_filter",
							 "Adds runtime Bloom filters to hash joins.",
							 "Off by default while the feature is new: the filter only "
							 "ever drops rows that cannot match, but it changes plans "
							 "that users have tuned, and its choice of joins is by "
							 "estimates and a first sample of rows.",
							 &amq_join_filter, false, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("amqfilter.join_filter_max_keys",
							"The most build-side keys a runtime join filter holds.",
							"A join whose build side is estimated to have more rows "
							"gets no filter, and one found to have more turns its "
							"filter off (8 bytes a key while the build side is read, "
							"about 1.5 after).",
							&amq_join_filter_max_keys, 10000000, 1, INT_MAX / 2,
							PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("amqfilter.join_filter_min_probe_rows",
							 "The fewest probe-side rows, as estimated, for which a "
							 "hash join gets a runtime filter.",
							 NULL,
							 &amq_join_filter_min_probe_rows, 10000, 0, 1e15,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomRealVariable("amqfilter.join_filter_min_rejected",
							 "The share of its probe-side rows a hash join must be "
							 "expected to lose to get a runtime filter, and the share "
							 "of the first rows tested the filter must reject to keep "
							 "testing.",
							 "0 adds a filter to every eligible join and keeps it testing every row.",
							 &amq_join_filter_min_rejected, 0.25, 0, 1,
							 PGC_USERSET, 0, NULL, NULL, NULL);
	DefineCustomBoolVariable("amqfilter.join_filter_remote",
							 "Sends runtime join filters to postgres_fdw's foreign scans.",
							 "A foreign scan on the probe side of a filtered hash join, on a "
							 "server whose extensions option names amqfilter, gets the "
							 "filter as a parameter of its remote query, so that the "
							 "server returns only the rows it does not rule out.",
							 &amq_join_filter_remote, true, PGC_USERSET, 0,
							 NULL, NULL, NULL);
	DefineCustomIntVariable("amqfilter.join_filter_remote_max_kb",
							"The largest runtime join filter sent to a foreign scan.",
							"A build side whose filter would be larger is not sent: the "
							"scans return every row, as without the filter.",
							&amq_join_filter_remote_max_kb, 4096, 1, 1024 * 1024,
							PGC_USERSET, GUC_UNIT_KB, NULL, NULL, NULL);
	RegisterCustomScanMethods(&amq_join_filter_build_methods);
	RegisterCustomScanMethods(&amq_join_filter_probe_methods);
	amq_join_filter_install_planner_hook();
}
