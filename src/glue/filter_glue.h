/*
 * filter_glue.h
 *		The type-independent glue: argument access and the TOAST cache,
 *		hashing of Datums, text/binary I/O and aggregate plumbing.
 *
 * Each is written once against a descriptor that the type's own file
 * provides (an AmqFormat for I/O, an AmqAggType for aggregates), so a new
 * filter type or layout adds a descriptor, not a copy of the plumbing.
 * Prototypes are grouped by the file that defines them.
 */
#ifndef FILTER_GLUE_H
#define FILTER_GLUE_H

#include "glue/amqfilter.h"
#include "core/amq_bloom.h"
#include "core/amq_cuckoo.h"
#include "core/amq_hash.h"

/* An opened filter of any type, for code that only stores or passes it. */
typedef union AmqAnyView
{
	amq_bloom_view bloom;
	amq_cuckoo_view cuckoo;
} AmqAnyView;

/*
 * The identity of a value stored out of line: all of its TOAST pointer
 * (filter_cache.c says why it names one byte string within a transaction).
 */
typedef struct AmqToastKey
{
	Oid			toastrelid;
	Oid			valueid;
	int32		rawsize;
	uint32		extinfo;		/* stored size and compression method */
} AmqToastKey;

static inline void
amq_toast_key(const struct varatt_external *pointer, AmqToastKey *key)
{
	key->toastrelid = pointer->va_toastrelid;
	key->valueid = pointer->va_valueid;
	key->rawsize = pointer->va_rawsize;
	key->extinfo = pointer->va_extinfo;
}

static inline bool
amq_toast_key_equal(const AmqToastKey *a, const AmqToastKey *b)
{
	return a->valueid == b->valueid && a->toastrelid == b->toastrelid &&
		a->rawsize == b->rawsize && a->extinfo == b->extinfo;
}

/* filter_cache.c: the transaction's cache of stored filters */
typedef struct AmqCacheEntry
{
	AmqToastKey key;
	const AmqFormat *format;	/* the type it is read as */
	size_t		len;			/* of the value */
	bool		whole;			/* view is of the whole value in memory; else
								 * of its header, to probe through slices */
	uint64		slice_reads;	/* slices read from it in this transaction */
	AmqAnyView	view;
} AmqCacheEntry;

/* Where an entry is, to find it again if the cache still holds it. */
typedef struct AmqCacheRef
{
	int			slot;
	uint64		serial;			/* 0: none */
} AmqCacheRef;

extern uint64 amq_xact_serial;

extern uint64 amq_cache_xact(void);
extern AmqCacheEntry *amq_cache_lookup(const AmqToastKey *key,
									   const AmqFormat *format,
									   AmqCacheRef *ref);
extern AmqCacheEntry *amq_cache_deref(const AmqCacheRef *ref);
extern AmqCacheEntry *amq_cache_add_header(const AmqToastKey *key,
										   const AmqFormat *format, size_t len,
										   const void *view, AmqCacheRef *ref);
extern AmqCacheEntry *amq_cache_read_whole(const AmqToastKey *key,
										   const AmqFormat *format,
										   struct varlena *raw,
										   const struct varatt_external *pointer,
										   AmqCacheRef *ref);
extern void amq_cache_count_slice(const AmqCacheRef *ref);
extern void amq_cache_pin(const AmqCacheRef *ref);
extern void amq_cache_unpin(const AmqCacheRef *ref);
extern size_t amq_read_whole(MemoryContext cxt, struct varlena *raw,
							 const struct varatt_external *toast_pointer,
							 size_t header_size, void **alloc, uint8 **data);

/* filter_access.c: filter arguments and the per-call cache */
struct AmqStoredSite;

typedef struct AmqFilterCache
{
	/* amq_filter_arg: the last TOASTed value, read whole */
	bool		valid;			/* a detoasted copy is held (alloc, data) */
	AmqToastKey key;			/* its identity */
	uint64		xact;			/* amq_xact_serial when it was read */
	void	   *alloc;			/* in fn_mcxt; holds the detoasted copy */
	uint8	   *data;			/* the filter's bytes inside alloc */
	size_t		len;
	bool		opened;			/* view below is filled in */
	AmqAnyView	view;			/* of the copy */
	/* probes of a value in memory (see probe_view) */
	AmqAnyView	scratch;		/* a probe's view of the value */
	const uint8 *memo_data;		/* the value last opened into scratch */
	size_t		memo_len;
	uint8		memo_state;		/* how far it is known: AMQ_MEMO_* */
	struct AmqOpenMemo *memo;	/* what validating it read, in fn_mcxt */
	/* probes of stored values (amq_filter_probe_arg) */
	struct AmqStoredSite *stored;	/* in fn_mcxt, from the first one */
	/* the value probed through slices now: slice_read's context */
	const AmqFormat *format;
	struct varlena *pointer;	/* the TOAST pointer of the current call */
	size_t		slice_len;		/* the value's length */
	struct AmqSiteValue *slicing;	/* where its slices are counted */
	uint8		slice[AMQ_READ_MAX];	/* the bytes of the last slice */
} AmqFilterCache;

struct AmqHasher;
struct AmqFamilyIndex;
struct AmqMergeCache;

/* per-call cache shared by the functions that hash and probe */
typedef struct AmqCallCache
{
	struct AmqHasher *hasher;	/* NULL until the first value is hashed */
	struct AmqFamilyIndex *families;	/* ids of known types, for info */
	AmqFilterCache filter[2];	/* one per filter argument */
	struct AmqMergeCache *merge;	/* merges only: the last result */
	/* probes of integers: lookup3 after the seed lookup3_seed, if set */
	bool		lookup3_set;
	uint64		lookup3_seed;
	amq_lookup3_seeded lookup3;
} AmqCallCache;

extern AmqCallCache *amq_call_cache_new(FunctionCallInfo fcinfo);

/* The call site's cache, made on its first call (once per row: inline). */
static inline AmqCallCache *
amq_call_cache(FunctionCallInfo fcinfo)
{
	if (likely(fcinfo->flinfo->fn_extra != NULL))
		return (AmqCallCache *) fcinfo->flinfo->fn_extra;
	return amq_call_cache_new(fcinfo);
}
extern bool amq_filter_arg(FunctionCallInfo fcinfo, int argno,
						   AmqFilterCache *cache, const AmqFormat *format,
						   uint8 **data, size_t *len);
extern void amq_filter_open_arg(FunctionCallInfo fcinfo, int argno,
								AmqFilterCache *cache, const AmqFormat *format,
								void *view);
extern struct varlena *amq_merge_cached(FunctionCallInfo fcinfo);
extern struct varlena *amq_merge_remember(FunctionCallInfo fcinfo,
										  struct varlena *result);
extern amq_read_fn amq_filter_probe_arg(FunctionCallInfo fcinfo, int argno,
										AmqFilterCache *cache,
										const AmqFormat *format,
										const void **view);

/* hashing.c: values -> 64-bit hashes that agree with the type's equality */
typedef struct AmqHasher
{
	Oid			type;			/* type the hash function was looked up for */
	Oid			collation;
	int			int_width;		/* 2, 4 or 8 for the integer family's own
								 * hash functions (computed inline), else 0 */
	bool		enum_by_label;	/* an enum, hashed by label (see hashing.c) */
	bool		int_plain;		/* int_width != 0, no enum, stable: the
								 * value's hash is amq_hash_int's */
	uint32		family;			/* id of this version's identity */
	uint32		legacy_family;	/* id 0.1 recorded, if different, else 0;
								 * never accepted when collated */
	bool		collated;		/* the identity names the (nondeterministic)
								 * collation the values hash under */
	uint32		plain_family;	/* collated: the id of the type's values under
								 * a deterministic collation, else 0 */
	const char *unstable;		/* why a restore would change the hashes */
	char		identity[256];	/* identity text, for messages */
	FmgrInfo	proc;			/* extended (64-bit, seeded) hash support */
} AmqHasher;

/*
 * The integer hashers' hash, inline, for callers that hash many values: the
 * integer of a by-value integer Datum (hasher->int_width != 0), then the
 * hash amq_hash_datum gives it (see there).
 */
static inline int64
amq_hasher_int(const AmqHasher *hasher, Datum value)
{
	switch (hasher->int_width)
	{
		case 8:
			return DatumGetInt64(value);
		case 4:
			return DatumGetInt32(value);
		default:
			return DatumGetInt16(value);
	}
}

/*
 * amq_hash_int with the seed's part of lookup3 given (s =
 * amq_hash_uint32_pg_seed(seed)): for a batch of values of one seed.
 */
static inline uint64
amq_hash_int_seeded(int64 v, uint64 seed, amq_lookup3_seeded s)
{
	if (v < PG_INT32_MIN || v > PG_INT32_MAX)
		return amq_hash_wide_int64(v, seed);
	return amq_hash_uint32_pg_seeded(s, (uint32) (int32) v);
}

static inline uint64
amq_hash_int(int64 v, uint64 seed)
{
	return amq_hash_int_seeded(v, seed, amq_hash_uint32_pg_seed(seed));
}

extern AmqHasher *amq_hasher_get(FunctionCallInfo fcinfo, int argno);
extern void amq_hasher_init(AmqHasher *hasher, Oid type, Oid collation,
							MemoryContext mcxt);
extern uint64 amq_hash_datum(const AmqHasher *hasher, Datum value, uint64 seed,
							 uint32 family);
extern void amq_check_family(const AmqHasher *hasher, uint32 family,
							 const char *typname);
extern bool amq_probe_hash(FunctionCallInfo fcinfo, int value_arg, uint32 family,
						   uint64 seed, const char *typname, uint64 *hash);
extern text *amq_family_identity(FunctionCallInfo fcinfo, uint32 family);

/*
 * filter_selectivity.c: planner estimates of probes.  A type's summary of
 * an opened, non-empty filter: the distinct values it holds and its current
 * false-positive rate.
 */
typedef void (*AmqFilterSummary) (const void *view, double *distinct,
								  double *fpr);

extern Datum amq_probe_restrict(FunctionCallInfo fcinfo, const AmqFormat *format,
								AmqFilterSummary summarize);
extern Datum amq_probe_support(FunctionCallInfo fcinfo, const AmqFormat *format,
							   AmqFilterSummary summarize);
extern Datum amq_merge_support(FunctionCallInfo fcinfo);

/*
 * filter_overfill.c: the warning, once per statement, that a filter holds
 * more than it was sized for.  A type checks the cheap gate first, then
 * reads the filter's fill for its rate.
 */
typedef struct AmqOverfill
{
	const char *type_name;		/* "bloom", for the message */
	const char *agg_name;		/* "bloom_agg", for the hint */
	int64		capacity;		/* n it was sized for */
	double		target_fpr;		/* p */
	uint64		inserted;		/* additions, duplicates included */
	double		holds;			/* distinct values the fill suggests */
	double		est_fpr;		/* the rate it has now */
} AmqOverfill;

extern bool amq_is_overfilled(double est_fpr, double target_fpr);
extern bool amq_overfill_worth_checking(uint64 inserted, uint64 capacity);
extern void amq_warn_if_overfilled(const AmqOverfill *filter);

/* filter_io.c: text and binary I/O, written once against an AmqFormat */
extern Datum amq_filter_in(FunctionCallInfo fcinfo, const AmqFormat *format);
extern Datum amq_filter_out(FunctionCallInfo fcinfo, const AmqFormat *format);
extern Datum amq_filter_recv(FunctionCallInfo fcinfo, const AmqFormat *format);
extern Datum amq_filter_send(FunctionCallInfo fcinfo, const AmqFormat *format);
extern Datum amq_filter_to_bytea(FunctionCallInfo fcinfo, const AmqFormat *format);
extern Datum amq_filter_from_bytea(FunctionCallInfo fcinfo, const AmqFormat *format);

/*
 * The AmqFormat amq_<type>_format of a type whose core validator is
 * amq_<type>_open (amq_<type>_open_read through reads, probed so when
 * amq_<type>_probe_reads) and whose sizeless-empty test is
 * amq_<type>_is_empty, and
 * the type's SQL-visible I/O functions.  Expanded once in the type's own
 * file.
 */
#define AMQ_FORMAT_FUNCTIONS(type, format_version, format_header_size) \
static amq_status type##_open_any(const uint8 *buf, size_t len, void *view) \
{ return amq_##type##_open(buf, len, view); } \
static amq_status type##_open_read_any(amq_read_fn read, void *ctx, size_t len, void *view) \
{ return amq_##type##_open_read(read, ctx, len, view); } \
static uint64 type##_open_reads_any(const uint8 *header) \
{ return amq_##type##_open_reads(header); } \
static bool type##_probe_reads_any(const void *view) \
{ return amq_##type##_probe_reads(view); } \
static bool type##_is_empty_any(const void *view) \
{ return amq_##type##_is_empty(view); } \
const AmqFormat amq_##type##_format = { \
	.name = #type, \
	.version = format_version, \
	.header_size = format_header_size, \
	.view_size = sizeof(amq_##type##_view), \
	.open = type##_open_any, \
	.open_read = type##_open_read_any, \
	.open_reads = type##_open_reads_any, \
	.probe_reads = type##_probe_reads_any, \
	.is_empty = type##_is_empty_any, \
	.init_empty = amq_##type##_init_empty, \
}; \
PG_FUNCTION_INFO_V1(type##_in); \
Datum type##_in(PG_FUNCTION_ARGS) { return amq_filter_in(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_out); \
Datum type##_out(PG_FUNCTION_ARGS) { return amq_filter_out(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_recv); \
Datum type##_recv(PG_FUNCTION_ARGS) { return amq_filter_recv(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_send); \
Datum type##_send(PG_FUNCTION_ARGS) { return amq_filter_send(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_to_bytea); \
Datum type##_to_bytea(PG_FUNCTION_ARGS) { return amq_filter_to_bytea(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_from_bytea); \
Datum type##_from_bytea(PG_FUNCTION_ARGS) { return amq_filter_from_bytea(fcinfo, &amq_##type##_format); }

/*
 * filter_agg.c: the aggregates that build a filter from values (<type>_agg)
 * and from filters (<type>_union_agg), written once against an AmqAggType.
 *
 * The state is a filter the aggregate owns, of whatever representation the
 * type chooses ("filter" below), plus hashes not yet added to it.  An owned
 * filter begins with the core's view of it, so a pointer to the filter is
 * a pointer to its view.  The functions take opened views of other filters.
 */
/* The sizing arguments of an aggregate over values, as given in SQL. */
typedef struct AmqAggSizing
{
	int64		n;
	double		p;
	int			layout;			/* for types that have layouts, else 0 */
} AmqAggSizing;

typedef struct AmqAggType
{
	const char *agg_name;		/* "bloom_agg", for messages */
	const AmqFormat *format;	/* of the filters it builds and takes */
	/* a new empty owned filter in cxt; bad sizing errors before allocating */
	void	   *(*create) (MemoryContext cxt, const AmqAggSizing *sizing);
	/* errors unless an owned filter was created with these arguments */
	void		(*check_sizing) (const void *filter, const AmqAggSizing *sizing);
	/* the arguments a (non-empty) view was created with */
	void		(*sizing_of) (const void *view, AmqAggSizing *sizing);
	/* the seed values are hashed with for an owned filter */
	uint64		(*seed) (const void *filter);
	/* a new owned filter in cxt holding a copy of an opened view */
	void	   *(*copy) (MemoryContext cxt, const void *view);
	/* frees an owned filter */
	void		(*free) (void *filter);
	/*
	 * adds hashed values of one family to an owned filter; lines_requested:
	 * their lines (key_lines) have been requested already
	 */
	void		(*add_hashes) (void *filter, const uint64 *hashes, int count,
							   uint32 family, bool lines_requested);
	/* merges a non-empty view into a non-empty owned filter, or errors */
	void		(*merge) (void *filter, const void *src);
	/* a new varlena: the owned filter plus hashes, the filter unchanged */
	struct varlena *(*to_varlena) (const void *filter, const uint64 *hashes,
								   int count, uint32 family);
	/*
	 * counts additions of values an owned filter already holds, sorted
	 * away before adding (filter_agg_sizeless.c); NULL for a type whose
	 * filters count every copy (and so are never given fewer)
	 */
	void		(*count_duplicates) (void *filter, uint64 count);
	/* warns (filter_overfill.c) if an opened view is overfilled */
	void		(*warn_if_overfilled) (const void *view);
	/* true, with lines set, if each key's add writes one line (amq_key_lines) */
	bool		(*key_lines) (const void *filter, amq_key_lines *lines);
} AmqAggType;

/*
 * Hashes buffered before they are added.  Adding one key to a filter larger
 * than the cache costs a memory round trip; a batch lets the core overlap
 * those round trips.
 */
#define AMQ_AGG_BATCH 256

typedef struct AmqAggState
{
	const AmqAggType *type;
	void	   *filter;			/* owned, in the aggregate context */
	/* what the transition function looked up once for the group */
	struct AmqHasher *hasher;	/* NULL until the first value */
	uint64		seed;			/* the filter's */
	bool		sizing_fixed;	/* the sizing arguments are constants */
	/* sizing_fixed and hasher known: a row only adds its value to pending */
	bool		steady;
	/*
	 * The values are integers whose hashes the aggregate computes itself:
	 * pending then holds the integers' Datums, hashed together when the
	 * batch is added (a tight loop instead of a call per row).
	 */
	bool		pending_ints;
	/*
	 * Each key's add writes one line of the filter, whose place is fixed: a
	 * row hashes its value and requests that line, which arrives while the
	 * executor fetches the next rows rather than while the batch's add waits
	 * for it.  int_hashes: the values are integers, hashed inline with the
	 * seed's part of the hash in seeded.
	 */
	bool		request_lines;
	bool		int_hashes;
	amq_key_lines lines;
	amq_lookup3_seeded seeded;
	uint32		pending_family;
	int			npending;
	uint64		pending[AMQ_AGG_BATCH];
} AmqAggState;

/* reads an aggregate's sizing arguments from its transition call */
typedef void (*AmqAggReadSizing) (FunctionCallInfo fcinfo, AmqAggSizing *sizing);

extern void amq_agg_check_not_null(FunctionCallInfo fcinfo, const char *agg, int argno,
								   const char *argname);
extern Datum amq_agg_transfn(FunctionCallInfo fcinfo, const AmqAggType *type,
							 AmqAggReadSizing read_sizing);
extern Datum amq_agg_combine(FunctionCallInfo fcinfo, const AmqAggType *type,
							 bool same_sizing);
extern Datum amq_agg_union_transfn(FunctionCallInfo fcinfo,
								   const AmqAggType *type);
extern Datum amq_agg_serialize(FunctionCallInfo fcinfo);
extern Datum amq_agg_deserialize(FunctionCallInfo fcinfo,
								 const AmqAggType *type);
extern Datum amq_agg_final(FunctionCallInfo fcinfo, const AmqAggType *type);

/*
 * filter_agg_sizeless.c: the aggregates over values that size their filter
 * from the values themselves (<type>_agg(value, p ...)).  counts_copies
 * says whether a layout's filter counts copies of a value; seed is the one
 * the type's create() gives a new filter.
 */
extern Datum amq_sizeless_transfn(FunctionCallInfo fcinfo, const AmqAggType *type,
								  AmqAggReadSizing read_sizing,
								  bool (*counts_copies) (int layout), uint64 seed);
extern Datum amq_sizeless_combine(FunctionCallInfo fcinfo, const AmqAggType *type);
extern Datum amq_sizeless_serialize(FunctionCallInfo fcinfo);
extern Datum amq_sizeless_deserialize(FunctionCallInfo fcinfo, const AmqAggType *type);
extern Datum amq_sizeless_final(FunctionCallInfo fcinfo, const AmqAggType *type);

/*
 * The SQL-visible support functions of <type>_agg(value, p ...) but for
 * its transition function, which reads the type's own arguments.  Expanded
 * once in the type's aggregate file, after AMQ_AGG_FUNCTIONS.
 */
#define AMQ_SIZELESS_AGG_FUNCTIONS(type) \
PG_FUNCTION_INFO_V1(type##_agg_sizeless_combinefn); \
Datum type##_agg_sizeless_combinefn(PG_FUNCTION_ARGS) { return amq_sizeless_combine(fcinfo, &type##_agg_type); } \
PG_FUNCTION_INFO_V1(type##_agg_sizeless_serialfn); \
Datum type##_agg_sizeless_serialfn(PG_FUNCTION_ARGS) { return amq_sizeless_serialize(fcinfo); } \
PG_FUNCTION_INFO_V1(type##_agg_sizeless_deserialfn); \
Datum type##_agg_sizeless_deserialfn(PG_FUNCTION_ARGS) { return amq_sizeless_deserialize(fcinfo, &type##_agg_type); } \
PG_FUNCTION_INFO_V1(type##_agg_sizeless_finalfn); \
Datum type##_agg_sizeless_finalfn(PG_FUNCTION_ARGS) { return amq_sizeless_final(fcinfo, &type##_agg_type); }

/*
 * The descriptor <type>_agg_type of a type whose owned-filter functions are
 * named <type>_owned_<op>, and the SQL-visible support functions of the
 * aggregates <type>_agg and <type>_union_agg but for <type>_agg_transfn,
 * which reads the type's own sizing arguments.  Expanded once in the type's
 * aggregate file.
 */
#define AMQ_AGG_FUNCTIONS(type) \
static const AmqAggType type##_agg_type = { \
	.agg_name = #type "_agg", \
	.format = &amq_##type##_format, \
	.create = type##_owned_create, \
	.check_sizing = type##_owned_check_sizing, \
	.sizing_of = type##_owned_sizing_of, \
	.seed = type##_owned_seed, \
	.copy = type##_owned_copy, \
	.free = type##_owned_free, \
	.add_hashes = type##_owned_add_hashes, \
	.merge = type##_owned_merge, \
	.to_varlena = type##_owned_to_varlena, \
	.count_duplicates = type##_owned_count_duplicates, \
	.warn_if_overfilled = amq_##type##_warn_if_overfilled, \
	.key_lines = type##_owned_key_lines, \
}; \
PG_FUNCTION_INFO_V1(type##_agg_combinefn); \
Datum type##_agg_combinefn(PG_FUNCTION_ARGS) { return amq_agg_combine(fcinfo, &type##_agg_type, true); } \
PG_FUNCTION_INFO_V1(type##_union_agg_combinefn); \
Datum type##_union_agg_combinefn(PG_FUNCTION_ARGS) { return amq_agg_combine(fcinfo, &type##_agg_type, false); } \
PG_FUNCTION_INFO_V1(type##_union_agg_transfn); \
Datum type##_union_agg_transfn(PG_FUNCTION_ARGS) { return amq_agg_union_transfn(fcinfo, &type##_agg_type); } \
PG_FUNCTION_INFO_V1(type##_agg_serialfn); \
Datum type##_agg_serialfn(PG_FUNCTION_ARGS) { return amq_agg_serialize(fcinfo); } \
PG_FUNCTION_INFO_V1(type##_agg_deserialfn); \
Datum type##_agg_deserialfn(PG_FUNCTION_ARGS) { return amq_agg_deserialize(fcinfo, &type##_agg_type); } \
PG_FUNCTION_INFO_V1(type##_agg_finalfn); \
Datum type##_agg_finalfn(PG_FUNCTION_ARGS) { return amq_agg_final(fcinfo, &type##_agg_type); }

#endif							/* FILTER_GLUE_H */
