/*
 * module.c
 *		The library's entry point: module magic, and _PG_init, which sets up
 *		each feature in turn.
 *
 * The only file that knows every feature: the glue (glue/), the types
 * (types/), the index access method (index/) and the runtime join filters
 * (join/) each start from here and never from one another, so that the
 * features' dependencies run one way (src/README.md).
 */
#include "postgres.h"

#include "fmgr.h"
#include "utils/guc.h"

#include "glue/amqfilter.h"
#include "index/filter_index.h"
#include "join/join_filter.h"

PG_MODULE_MAGIC;

void		_PG_init(void);

/*
 * Defines every setting and installs every hook.  PostgreSQL calls it once
 * per backend that loads the library (or once in the postmaster, under
 * shared_preload_libraries).
 */
void
_PG_init(void)
{
	amq_glue_init();
	amq_index_init();
	amq_join_filter_init();
	MarkGUCPrefixReserved("amqfilter");
}
