/*
 * partition_filter.h
 *		What the two halves of partition filters share: the writers' side
 *		(partition_track.c), which records that a partition was written, and
 *		the builds and lookups (partition_filter.c), which read that record.
 */
#ifndef PARTITION_FILTER_H
#define PARTITION_FILTER_H

#include "postgres.h"
#include "nodes/pg_list.h"
#include "utils/snapshot.h"

/* The extension's tables, in the schema of its functions. */
#define AMQ_FILTER_TABLE	"amqfilter_partition_filter"
#define AMQ_WRITE_TABLE		"amqfilter_partition_write"

/* The trigger each partition with a filter carries. */
#define AMQ_TRIGGER_NAME	"amqfilter_partition_filter"

/*
 * An extension table found in the schema of the function being called, and
 * its owner, who alone writes it.
 */
typedef struct AmqExtTable
{
	Oid			nsp;			/* the extension's schema */
	Oid			relid;
	Oid			owner;
} AmqExtTable;

/* A user and security context to go back to. */
typedef struct AmqSavedUser
{
	Oid			userid;
	int			sec_context;
} AmqSavedUser;

/* partition_track.c */
extern void amq_ext_table(Oid fn_oid, const char *name, AmqExtTable *table);
extern void amq_ext_become_owner(const AmqExtTable *table, AmqSavedUser *saved);
extern void amq_ext_restore_user(const AmqSavedUser *saved);
extern void amq_partition_forget_written(Oid partition);
extern bool amq_partition_written_since_build(const AmqExtTable *writes,
											  Oid partition, Snapshot snapshot);
extern List *amq_relation_ancestors(Oid relid);

#endif							/* PARTITION_FILTER_H */
