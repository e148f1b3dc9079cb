/*
 * amqfilter.h
 *		Declarations shared by the PostgreSQL glue of amqfilter.
 *
 * The glue is thin: it turns Datums into the core's byte buffers and hashes,
 * and the core's status codes into ereports.  Prototypes are grouped by the
 * file that defines them.
 */
#ifndef AMQFILTER_H
#define AMQFILTER_H

#include "postgres.h"
#include "fmgr.h"
#include "nodes/nodes.h"

#include "core/amq_bloom.h"
#include "core/amq_cuckoo.h"

/*
 * Where untrusted bytes entered: decides the errcode of a validation
 * failure.  Text and binary input are the user's mistake; a stored value that
 * fails the check is corruption.
 */
typedef enum AmqGate
{
	AMQ_GATE_TEXT,				/* type input function */
	AMQ_GATE_BINARY,			/* recv, cast from bytea, aggregate deserialize */
	AMQ_GATE_STORED				/* any other read of a value */
} AmqGate;

/*
 * Bytes of work between interrupt checks in loops over a whole filter.  A
 * multiple of 64 (block size) and of 3 (base64 groups).
 */
#define AMQ_SLICE_BYTES		(1024 * 1024 * 3)

/*
 * What the type-independent glue (I/O, argument access) needs to know about
 * a filter type.
 */
typedef struct AmqFormat
{
	const char *name;			/* SQL type name */
	int			version;		/* format version this build reads */
	size_t		header_size;	/* owned copies align the data after it */
	/* the type's core validator, without keeping the view */
	amq_status	(*validate) (const uint8 *buf, size_t len);
} AmqFormat;

extern const AmqFormat amq_bloom_format;
extern const AmqFormat amq_cuckoo_format;

/* amqfilter.c: mapping core status codes to errors */
extern bool amq_report_invalid(const AmqFormat *format, amq_status status,
							   AmqGate gate, Node *escontext);
extern void amq_report_sizing(const char *typname, amq_status status,
							  int64 n, double p) pg_attribute_noreturn();
extern void amq_report_mismatch(amq_status status, const amq_bloom_view *a,
								const amq_bloom_view *b) pg_attribute_noreturn();
extern Datum amq_return_record(FunctionCallInfo fcinfo, Datum *values,
							   bool *nulls);
extern MemoryContext amq_aggregate_context(FunctionCallInfo fcinfo,
										   const char *fname);
extern void amq_report_cuckoo_mismatch(amq_status status,
									   const amq_cuckoo_view *a,
									   const amq_cuckoo_view *b) pg_attribute_noreturn();

/* hashing.c: values -> 64-bit hashes that agree with the type's equality */
typedef struct AmqHasher
{
	Oid			type;			/* type the hash function was looked up for */
	Oid			collation;
	int			int_width;		/* 2, 4 or 8 for the integer family's own
								 * hash functions (computed inline), else 0 */
	uint32		family;			/* stable id of the hash operator family */
	char		family_name[2 * NAMEDATALEN + 2];	/* "schema.family" */
	FmgrInfo	proc;			/* extended (64-bit, seeded) hash support */
} AmqHasher;

extern AmqHasher *amq_hasher_get(FunctionCallInfo fcinfo, int argno);
extern uint64 amq_hash_datum(const AmqHasher *hasher, Datum value, uint64 seed);
extern void amq_check_family(const AmqHasher *hasher, uint32 family,
							 const char *typname);

/* filter_access.c: opening filter arguments, owning filter memory */
typedef struct AmqFilterCache
{
	bool		valid;
	Oid			toastrelid;		/* identity of the cached TOASTed value */
	Oid			valueid;
	void	   *alloc;			/* in fn_mcxt; holds the detoasted copy */
	uint8	   *data;			/* the filter's bytes inside alloc */
	size_t		len;
	bool		opened;			/* view below is filled in */
	union
	{
		amq_bloom_view bloom;
		amq_cuckoo_view cuckoo;
	}			view;
} AmqFilterCache;

typedef struct AmqOwnedBloom
{
	void	   *alloc;			/* what to pfree */
	amq_bloom_view view;		/* bits start on a 64-byte boundary */
} AmqOwnedBloom;

extern bool amq_filter_arg(FunctionCallInfo fcinfo, int argno,
						   AmqFilterCache *cache, const AmqFormat *format,
						   uint8 **data, size_t *len);
extern void amq_bloom_arg(FunctionCallInfo fcinfo, int argno,
						  AmqFilterCache *cache, amq_bloom_view *view);
extern void amq_bloom_open_or_error(const void *data, size_t len, AmqGate gate,
									amq_bloom_view *view);
extern void amq_owned_bloom_alloc(MemoryContext cxt, size_t bytes,
								  AmqOwnedBloom *owned);
extern void amq_owned_bloom_copy(MemoryContext cxt, const amq_bloom_view *src,
								 AmqOwnedBloom *owned);
extern struct varlena *amq_bloom_to_varlena(const amq_bloom_view *view);
extern void amq_bloom_merge(amq_bloom_view *dst, const amq_bloom_view *src,
							bool intersect);
extern int	amq_parse_layout(text *layout);
extern const char *amq_layout_name(int layout);

/* cuckoo_buffer.c: cuckoo filters in growable memory the glue owns */
typedef struct AmqCuckooBuffer
{
	struct varlena *value;		/* palloc'd in cxt; VARDATA holds the filter */
	size_t		room;			/* bytes available after the varlena header */
	MemoryContext cxt;
	amq_cuckoo_view view;		/* of the filter in value */
} AmqCuckooBuffer;

extern void amq_cuckoo_arg(FunctionCallInfo fcinfo, int argno,
						   AmqFilterCache *cache, amq_cuckoo_view *view);
extern void amq_cuckoo_open_or_error(const void *data, size_t len, AmqGate gate,
									 amq_cuckoo_view *view);
extern void amq_cuckoo_buffer_new(AmqCuckooBuffer *buf, MemoryContext cxt,
								  int64 n, double p);
extern void amq_cuckoo_buffer_copy(AmqCuckooBuffer *buf, MemoryContext cxt,
								   const amq_cuckoo_view *src, size_t extra);
extern void amq_cuckoo_buffer_add_many(AmqCuckooBuffer *buf,
									   const uint64 *hashes, size_t count,
									   uint32 family);
extern void amq_cuckoo_buffer_merge(AmqCuckooBuffer *buf,
									const amq_cuckoo_view *src);
extern struct varlena *amq_cuckoo_buffer_finish(AmqCuckooBuffer *buf);
extern struct varlena *amq_cuckoo_to_varlena(const amq_cuckoo_view *view);
extern struct varlena *amq_cuckoo_empty_varlena(void);

/* per-call cache shared by the functions that hash and probe */
typedef struct AmqCallCache
{
	AmqHasher  *hasher;			/* NULL until the first value is hashed */
	AmqFilterCache filter[2];	/* one per filter argument */
} AmqCallCache;

extern AmqCallCache *amq_call_cache(FunctionCallInfo fcinfo);

#endif							/* AMQFILTER_H */
