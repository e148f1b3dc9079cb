/*
 * filter_access.c
 *		Getting the bytes of filter arguments out of Datums, once per query
 *		for TOASTed values; probing stored filters through slices or in
 *		memory; the per-call cache that holds both.
 *
 * A probe like "(SELECT f FROM filters WHERE id = 1) @> col" passes the same
 * TOASTed filter to every row.  Detoasting a 12 MB value per row would make
 * the probe cost proportional to the filter size, so what a call site read
 * of a TOASTed value is kept for the rest of the query, keyed by its TOAST
 * pointer (filter_cache.c says why that key names one value, and for how
 * long).  In-line values cost nothing to detoast; one that stays the same
 * from row to row (an InitPlan's result, a literal) is validated once, by
 * the validation memo (see probe_view).
 *
 * Slices.  A probe needs the header and a few bytes (one 64-byte block of a
 * blocked bloom filter, k bytes of a classic one, each table's header and
 * two buckets of a cuckoo filter), so reading 12 MB, or 39 MB, to answer
 * one probe of a stored filter (a cache guard, a table of per-partition
 * filters) costs thousands of times what the answer needs.  A probe whose
 * filter is stored out of line and uncompressed (the types are STORAGE
 * external) therefore reads slices of it instead, PostgreSQL's slice
 * detoasting (detoast_attr_slice, as substr() does on external text): the
 * header first, validated by the format's one validator against the size
 * the TOAST pointer records, then what the probe touches, each slice a
 * TOAST index lookup and the one or two chunks that hold the range.
 * Compressed values, and layouts the slice readers do not know, are read
 * whole.
 *
 * The adaptive rule.  A slice costs a TOAST index descent; a whole-value read
 * costs its number of chunks, each worth AMQ_CHUNK_COST_SLICES slices
 * (measured; see below).  A call site
 * that keeps probing one value (a scan of 10M rows against one stored
 * filter) would pay far more in slices than one copy, so once the slices
 * read from a value would cost as much as reading it whole, the value is
 * read whole and probed in memory from then on, as before 0.2.  This is
 * the ski-rental rule: it never costs more than twice the better of the
 * two choices made in hindsight, and a long scan pays at most one whole
 * read's worth of slices on top of its old cost; a single probe never
 * reads more than its slices.  amqfilter.probe_read = 'slices' or 'whole'
 * fixes the choice (for tests and measurements).
 *
 * Stored values at one call site.  A call site keeps up to AMQ_SITE_VALUES
 * stored values, not one: a join of events to a table of filters
 * ("JOIN filters fl ON fl.f @> e.user_id") hands the call site the filters
 * in turn, row after row, and with one value kept each row read the
 * filter again (2M probes of two stored filters: 10.5 s, against 0.2 s
 * for a LATERAL form that probes one filter after the other).  Each value
 * is probed in one of three ways:
 *
 *	- sliced: through slices, its validated header kept;
 *	- shared: in memory, the whole value held by the transaction's cache
 *	  (filter_cache.c), pinned there while the call site keeps it;
 *	- own: in memory, a copy in the call site's memory (fn_mcxt), for a
 *	  value the transaction's cache has no room for.  One at a time: a call
 *	  site never holds more copies of its own than before 0.2.
 *
 * A value new to the call site is looked up in the transaction's cache
 * first: a whole value there is probed at once, a known header saves its
 * slice.  That is what makes a SQL function that is not inlined, a new
 * executor and so a new call site per row, probe memory.  The slices a
 * value costs are counted both at the call site and in the transaction's
 * cache, and the rule applies to each: once the transaction's slices of a
 * value would have paid for reading it, it is read whole into the
 * transaction's cache if that has room; once the call site's own slices
 * would have, it is read whole into the call site's copy if not.  So a
 * call site that makes one probe never reads a whole value, and values
 * that displace one another (in the site's few entries, its one copy, or
 * the transaction's cache) cost at most twice their slices, never a whole
 * read per row.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "nodes/primnodes.h"
#include "access/heaptoast.h"

#include "glue/filter_glue.h"

/* The per-call cache in fn_extra, created on first use. */
AmqCallCache *
amq_call_cache_new(FunctionCallInfo fcinfo)
{
	fcinfo->flinfo->fn_extra =
		MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(AmqCallCache));
	return (AmqCallCache *) fcinfo->flinfo->fn_extra;
}

/*
 * The bytes of filter argument argno.  A TOASTed value is detoasted once per
 * query into fn_mcxt (see the file header), with its data after the format's
 * header on a cache-line boundary; any other value is used in place.  Returns
 * true when the value is the cached one and the cache's view was already
 * filled by a previous call: the caller may use it as it is.  Otherwise the
 * caller validates the bytes; if they are the cache's (*data ==
 * cache->data), it may store the view and set cache->opened.
 */
bool
amq_filter_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
			   const AmqFormat *format, uint8 **data, size_t *len)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	struct varlena *detoasted;

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external toast_pointer;
		AmqToastKey key;

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, raw);
		amq_toast_key(&toast_pointer, &key);
		if (cache->valid && cache->xact == amq_xact_serial &&
			amq_toast_key_equal(&cache->key, &key))
		{
			*data = cache->data;
			*len = cache->len;
			return cache->opened;
		}
		if (cache->valid)
			pfree(cache->alloc);
		cache->valid = false;

		cache->len = amq_read_whole(fcinfo->flinfo->fn_mcxt, raw, &toast_pointer,
									format->header_size, &cache->alloc,
									&cache->data);
		cache->key = key;
		cache->xact = amq_cache_xact();
		cache->opened = false;
		cache->valid = true;
		*data = cache->data;
		*len = cache->len;
		return false;
	}

	detoasted = PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));
	*data = (uint8 *) VARDATA(detoasted);
	*len = VARSIZE(detoasted) - VARHDRSZ;
	return false;
}

/*
 * Opens filter argument argno with the format's validator, unless it is the
 * cached value validated before.  A value that fails validation here was
 * stored or built wrongly: data corruption.
 */
void
amq_filter_open_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
					const AmqFormat *format, void *view)
{
	uint8	   *data;
	size_t		len;

	Assert(format->view_size <= sizeof(cache->view));
	if (amq_filter_arg(fcinfo, argno, cache, format, &data, &len))
	{
		memcpy(view, &cache->view, format->view_size);
		return;
	}
	amq_open_or_error(format, data, len, AMQ_GATE_STORED, view);
	if (cache->valid && data == cache->data)
	{
		memcpy(&cache->view, view, format->view_size);
		cache->opened = true;
	}
}

/*
 * ----------------------------------------------------------------
 * Merges whose inputs repeat.  In
 *
 *	SELECT ... FROM t, (SELECT (SELECT bloom_agg(...) FROM a) |
 *							  (SELECT bloom_agg(...) FROM b) AS f) u
 *	 WHERE f @> t.col
 *
 * the planner pulls the subquery up, and the merge of the same two values
 * is evaluated again for every row of t.  So a merge call site remembers its
 * last result, in fn_mcxt, with what identifies its inputs, and returns it
 * again while the inputs are the same values:
 *
 *	- a TOASTed input is identified by its TOAST pointer (a TOAST value never
 *	  changes), at no cost;
 *	- a constant of the plan (a Const argument) by its address, which holds
 *	  the same value for the whole query;
 *	- any other input by its bytes, compared with a copy kept for that
 *	  purpose.  Its address alone proves nothing: memory is freed and
 *	  reused, within a row's memory and when an InitPlan is evaluated again
 *	  for new outer values.  The comparison costs one read of each input,
 *	  far less than the merge it saves, and stops at the first differing
 *	  byte when the inputs do change.
 *
 * A result is remembered only when a call's inputs sit where the previous
 * call's did (the same TOAST pointers, or the same addresses and lengths):
 * a merge over rows of different values then never copies anything.  A
 * call site whose remembered inputs keep failing to repeat stops trying.
 *
 * The remembered result is returned as it is, not copied: a function
 * result is read-only, and what keeps a value beyond the row it was
 * computed for copies it (results normally live in per-row memory).  It is
 * freed only when a later call remembers another one.
 * ----------------------------------------------------------------
 */

/* Misses beyond hits after which a call site stops remembering results. */
#define MERGE_CACHE_MAX_WASTE	8

typedef struct AmqMergeInput
{
	bool		is_const;		/* the argument is a Const of the plan */
	bool		toasted;		/* identified by its TOAST pointer */
	Oid			toastrelid;
	Oid			valueid;
	const void *ptr;			/* the previous call's datum */
	size_t		len;			/* its VARSIZE_ANY, 0 if not comparable */
	void	   *copy;			/* in fn_mcxt: its bytes, while a result is
								 * remembered for an input that is in line */
} AmqMergeInput;

typedef struct AmqMergeCache
{
	AmqMergeInput in[2];
	struct varlena *result;		/* in fn_mcxt, or NULL */
	int64		hits;
	int64		wasted;			/* remembered results never asked for again */
	bool		given_up;
} AmqMergeCache;

/* True if argument argno of the call is a Const node. */
static bool
arg_is_const(FmgrInfo *flinfo, int argno)
{
	Node	   *expr = flinfo->fn_expr;
	List	   *args;

	if (expr == NULL)
		return false;
	if (IsA(expr, FuncExpr))
		args = ((FuncExpr *) expr)->args;
	else if (IsA(expr, OpExpr))
		args = ((OpExpr *) expr)->args;
	else
		return false;
	return argno < list_length(args) && IsA(list_nth(args, argno), Const);
}

static AmqMergeCache *
merge_cache(FunctionCallInfo fcinfo)
{
	AmqCallCache *cache = amq_call_cache(fcinfo);

	if (cache->merge == NULL)
	{
		int			i;

		cache->merge = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt,
											  sizeof(AmqMergeCache));
		for (i = 0; i < 2; i++)
			cache->merge->in[i].is_const = arg_is_const(fcinfo->flinfo, i);
	}
	return cache->merge;
}

/* True if argument argno is the value the remembered result was made from. */
static bool
input_same(const AmqMergeInput *in, Datum arg)
{
	const struct varlena *raw = (const struct varlena *) DatumGetPointer(arg);

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external toast_pointer;

		if (!in->toasted)
			return false;
		VARATT_EXTERNAL_GET_POINTER(toast_pointer, raw);
		return in->toastrelid == toast_pointer.va_toastrelid &&
			in->valueid == toast_pointer.va_valueid;
	}
	if (in->toasted || in->copy == NULL || VARATT_IS_EXTERNAL(raw) ||
		VARSIZE_ANY(raw) != in->len)
		return false;
	if (in->is_const && raw == in->ptr)
		return true;
	return memcmp(in->copy, raw, in->len) == 0;
}

/*
 * The remembered result, if both inputs of this call are the values it was
 * made from; else NULL and the caller merges, then calls amq_merge_remember.
 */
struct varlena *
amq_merge_cached(FunctionCallInfo fcinfo)
{
	AmqMergeCache *mc = merge_cache(fcinfo);

	if (mc->result == NULL ||
		!input_same(&mc->in[0], PG_GETARG_DATUM(0)) ||
		!input_same(&mc->in[1], PG_GETARG_DATUM(1)))
		return NULL;
	mc->hits++;
	return mc->result;
}

/* Records where argument argno is; true if it is where the previous call's was. */
static bool
input_note(AmqMergeInput *in, Datum arg)
{
	const struct varlena *raw = (const struct varlena *) DatumGetPointer(arg);
	bool		repeated;

	if (VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external toast_pointer;

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, raw);
		repeated = in->toasted && in->toastrelid == toast_pointer.va_toastrelid &&
			in->valueid == toast_pointer.va_valueid;
		in->toasted = true;
		in->toastrelid = toast_pointer.va_toastrelid;
		in->valueid = toast_pointer.va_valueid;
		in->ptr = raw;
		in->len = 0;
		return repeated;
	}
	/* indirect and expanded values are not compared */
	repeated = !in->toasted && !VARATT_IS_EXTERNAL(raw) && in->ptr == raw &&
		in->len == VARSIZE_ANY(raw);
	in->toasted = false;
	in->ptr = raw;
	in->len = VARATT_IS_EXTERNAL(raw) ? 0 : VARSIZE_ANY(raw);
	return repeated;
}

/* Forgets the remembered result and the input copies. */
static void
merge_forget(AmqMergeCache *mc)
{
	int			i;

	if (mc->result != NULL)
		pfree(mc->result);
	mc->result = NULL;
	for (i = 0; i < 2; i++)
	{
		if (mc->in[i].copy != NULL)
			pfree(mc->in[i].copy);
		mc->in[i].copy = NULL;
	}
}

/*
 * After a merge that amq_merge_cached did not answer: remembers result if
 * this call's inputs sit where the previous call's did, and returns what the
 * caller returns (result, or its remembered copy).
 */
struct varlena *
amq_merge_remember(FunctionCallInfo fcinfo, struct varlena *result)
{
	AmqMergeCache *mc = merge_cache(fcinfo);
	bool		repeated;
	int			i;

	if (mc->result != NULL)
	{
		/* remembered for inputs that did not come again */
		mc->wasted++;
		merge_forget(mc);
		if (mc->wasted > mc->hits + MERGE_CACHE_MAX_WASTE)
			mc->given_up = true;
	}
	repeated = input_note(&mc->in[0], PG_GETARG_DATUM(0));
	repeated = input_note(&mc->in[1], PG_GETARG_DATUM(1)) && repeated;
	if (!repeated || mc->given_up)
		return result;

	for (i = 0; i < 2; i++)
	{
		AmqMergeInput *in = &mc->in[i];

		if (!in->toasted)
		{
			in->copy = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, in->len);
			memcpy(in->copy, in->ptr, in->len);
		}
	}
	mc->result = (struct varlena *)
		MemoryContextAlloc(fcinfo->flinfo->fn_mcxt, VARSIZE(result));
	memcpy(mc->result, result, VARSIZE(result));
	pfree(result);
	return mc->result;
}


/*
 * Slices that cost as much as one chunk of a whole-value read.  A slice is a
 * TOAST index descent, the relation opened and locked, and one or two
 * chunks copied: a few microseconds.  A whole read walks the index once but
 * copies every chunk twice (the detoasted value, then the aligned copy the
 * probes use) into freshly allocated memory, so it pays a page fault or so
 * per chunk.  bench/probe.sh measures both: on the 2-core development
 * machine a chunk read whole cost from half a slice (all in memory, idle
 * machine) to several slices (under load); 2 keeps the rule's slices within
 * a small share of a long scan either way.
 */
#define AMQ_CHUNK_COST_SLICES	2

#define EXTERNAL_SIZE(pointer)	VARATT_EXTERNAL_GET_EXTSIZE(pointer)

/* Stored values a call site keeps (see the file header). */
#define AMQ_SITE_VALUES			4

/* How a call site probes one stored value (see the file header). */
typedef enum SiteHow
{
	SITE_FREE,					/* the entry holds no value */
	SITE_SLICED,				/* through slices; view is of the header */
	SITE_SHARED,				/* the transaction's cache's copy, pinned */
	SITE_OWN					/* the call site's own copy, in alloc */
} SiteHow;

typedef struct AmqSiteValue
{
	AmqToastKey key;
	const AmqFormat *format;	/* the type it is read as */
	uint64		xact;			/* amq_xact_serial when it was opened */
	uint64		last_use;		/* the site's clock when last probed */
	uint8		how;			/* SiteHow */
	AmqCacheRef ref;			/* its entry in the transaction's cache, if
								 * any: pinned when shared */
	size_t		len;			/* the value's length */
	uint64		slice_reads;	/* slices read from it at this call site */
	uint64		slice_budget;	/* reads after which a copy is cheaper */
	void	   *alloc;			/* own: what to pfree */
	AmqAnyView	view;
} AmqSiteValue;

typedef struct AmqStoredSite
{
	AmqSiteValue values[AMQ_SITE_VALUES];
	AmqSiteValue *last;			/* the value of the last call */
	uint64		clock;
	void	   *reading;		/* an own copy being read (error cleanup) */
	MemoryContextCallback release;	/* unpins when fn_mcxt goes */
} AmqStoredSite;

/*
 * The core's read function for a sliced value (amq_read.h): len bytes at
 * offset, fetched with slice detoasting into the cache's slice buffer, and
 * counted for the adaptive rule.  The core asks only for ranges inside the
 * length its validator accepted, the length the TOAST pointer records; a
 * TOAST value that yields less is corrupt.
 */
static const uint8_t *
slice_read(void *ctx, size_t offset, size_t len)
{
	AmqFilterCache *cache = ctx;
	struct varlena *slice;

	if (len > AMQ_READ_MAX || offset > cache->slice_len ||
		len > cache->slice_len - offset)
		elog(ERROR, "%s slice of %zu bytes at %zu outside a value of %zu bytes",
			 cache->format->name, len, offset, cache->slice_len);
	slice = detoast_attr_slice(cache->pointer, (int32) offset, (int32) len);
	if (VARSIZE_ANY_EXHDR(slice) != len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid value of type %s", cache->format->name),
				 errdetail("The stored value is shorter than its TOAST pointer says.")));
	memcpy(cache->slice, VARDATA_ANY(slice), len);
	pfree(slice);
	cache->slicing->slice_reads++;
	amq_cache_count_slice(&cache->slicing->ref);
	return cache->slice;
}

/* Makes value v, behind the TOAST pointer raw, the one slice_read reads. */
static void
slice_target(AmqFilterCache *cache, AmqSiteValue *v, struct varlena *raw)
{
	cache->format = v->format;
	cache->pointer = raw;
	cache->slice_len = v->len;
	cache->slicing = v;
}

/*
 * Starts probing value v through slices: reads and validates its header
 * into v->view.  Returns false, having read no more than the header, when
 * its layout has no slice reader or validating it through slices would
 * cost more than reading it whole.  A header that fails is corruption, the
 * error any other read of the stored value gives.
 */
static bool
slice_begin(AmqFilterCache *cache, AmqSiteValue *v, struct varlena *raw)
{
	const AmqFormat *format = v->format;
	amq_status	status;

	slice_target(cache, v, raw);

	/*
	 * Validating through slices takes a read per table (and per counter
	 * entry) of a cuckoo filter: when that alone costs more than the whole
	 * read, which a crafted value of thousands of tables can make it, read
	 * the value whole instead, where validation reads memory.
	 */
	if (v->len >= format->header_size &&
		format->open_reads(slice_read(cache, 0, format->header_size)) > v->slice_budget)
		return false;

	status = format->open_read(slice_read, cache, v->len, &v->view);
	if (status != AMQ_OK)
		amq_report_invalid(format, status, AMQ_GATE_STORED, NULL);
	return format->probe_reads(&v->view);
}

/*
 * The validation memo.  A filter in memory, not TOASTed, is the same value
 * on every row of many queries: the result of an InitPlan ("(SELECT
 * bloom_agg(id, ...) FROM small) @> t.id", the join recipes), a literal, a
 * parameter.  Validating it again on every row cost 8-10% of such a scan
 * (perf: amq_bloom_open_header, amq_cuckoo_open_read).  Its address is no
 * proof that it is the same value (memory is reused from row to row), but
 * validation is a function of the value's length and of the bytes the
 * format's validator reads, through amq_read_fn reads of at most
 * AMQ_READ_MAX bytes each (a bloom filter's header; a cuckoo filter's
 * header, table headers and counter entries).  So the second time a call
 * site sees a value at the same address with the same length, it validates
 * it once more through reads that record what they return; from then on a
 * value there whose length and recorded bytes are the same validates the
 * same way into the same view, and the check is a comparison of those
 * bytes (64 for a bloom filter).  A value that needs more reads than the
 * memo holds, or whose bytes change at one address, is validated on every
 * row as before.
 */
#define AMQ_MEMO_MAX_READS	32

enum
{
	AMQ_MEMO_SEEN,				/* opened once at this address */
	AMQ_MEMO_HELD,				/* its reads are recorded */
	AMQ_MEMO_NEVER				/* too many reads, or changing bytes */
};

typedef struct AmqOpenMemo
{
	int			nreads;
	size_t		offset[AMQ_MEMO_MAX_READS];
	size_t		len[AMQ_MEMO_MAX_READS];
	uint8		bytes[AMQ_MEMO_MAX_READS][AMQ_READ_MAX];
} AmqOpenMemo;

typedef struct MemoRecorder
{
	const uint8 *data;
	AmqOpenMemo *memo;
	bool		overflow;
} MemoRecorder;

/* An amq_read_fn over a value in memory that records each read. */
static const uint8 *
memo_read(void *ctx, size_t offset, size_t len)
{
	MemoRecorder *rec = ctx;
	AmqOpenMemo *memo = rec->memo;

	Assert(len <= AMQ_READ_MAX);
	if (memo->nreads < AMQ_MEMO_MAX_READS && len <= AMQ_READ_MAX)
	{
		memo->offset[memo->nreads] = offset;
		memo->len[memo->nreads] = len;
		memcpy(memo->bytes[memo->nreads], rec->data + offset, len);
		memo->nreads++;
	}
	else
		rec->overflow = true;
	return rec->data + offset;
}

/* Whether data holds, everywhere validation read, what it read before. */
static bool
memo_matches(const AmqOpenMemo *memo, const uint8 *data)
{
	int			i;

	for (i = 0; i < memo->nreads; i++)
		if (memcmp(data + memo->offset[i], memo->bytes[i], memo->len[i]) != 0)
			return false;
	return true;
}

/*
 * Records what validating data (len bytes, validated just before) reads;
 * the new state of the memo.
 */
static uint8
memo_record(FunctionCallInfo fcinfo, AmqFilterCache *cache,
			const AmqFormat *format, const uint8 *data, size_t len)
{
	MemoRecorder rec;
	AmqAnyView	view;

	if (len < format->header_size ||
		format->open_reads(data) > AMQ_MEMO_MAX_READS)
		return AMQ_MEMO_NEVER;
	if (cache->memo == NULL)
		cache->memo = MemoryContextAlloc(fcinfo->flinfo->fn_mcxt,
										 sizeof(AmqOpenMemo));
	cache->memo->nreads = 0;
	rec.data = data;
	rec.memo = cache->memo;
	rec.overflow = false;
	if (format->open_read(memo_read, &rec, len, &view) != AMQ_OK || rec.overflow)
		return AMQ_MEMO_NEVER;
	return AMQ_MEMO_HELD;
}

/*
 * Opens filter argument argno, a value not stored out of line, for a
 * probe, and returns its view, left in the cache: a probe only reads it,
 * and a view copied for every row is the same work each time (368 bytes
 * for a bloom filter).  It is opened into cache->scratch and validated
 * once for as long as it stays the same (the validation memo above).
 */
static const void *
probe_view(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
		   const AmqFormat *format)
{
	struct varlena *detoasted = PG_DETOAST_DATUM(PG_GETARG_DATUM(argno));
	uint8	   *data = (uint8 *) VARDATA(detoasted);
	size_t		len = VARSIZE(detoasted) - VARHDRSZ;
	bool		again;

	Assert(format->view_size <= sizeof(cache->scratch));
	again = data == cache->memo_data && len == cache->memo_len;
	if (again && cache->memo_state == AMQ_MEMO_HELD)
	{
		if (memo_matches(cache->memo, data))
			return &cache->scratch;
		cache->memo_state = AMQ_MEMO_NEVER;
	}
	amq_open_or_error(format, data, len, AMQ_GATE_STORED, &cache->scratch);
	if (!again)
	{
		cache->memo_data = data;
		cache->memo_len = len;
		cache->memo_state = AMQ_MEMO_SEEN;
	}
	else if (cache->memo_state == AMQ_MEMO_SEEN)
		cache->memo_state = memo_record(fcinfo, cache, format, data, len);
	return &cache->scratch;
}

/*
 * ----------------------------------------------------------------
 * Stored values at one call site (see the file header).
 * ----------------------------------------------------------------
 */

/* Lets go of what site value v holds; it is free afterwards. */
static void
site_release(AmqSiteValue *v)
{
	if (v->how == SITE_SHARED)
		amq_cache_unpin(&v->ref);
	else if (v->how == SITE_OWN)
		pfree(v->alloc);
	v->how = SITE_FREE;
}

/*
 * A memory context callback: fn_mcxt, which holds the site, is going, and
 * the transaction's cache may drop the values it pinned.  (Nothing else
 * needs doing: the own copy goes with the context.)
 */
static void
site_gone(void *arg)
{
	AmqStoredSite *site = arg;
	int			i;

	for (i = 0; i < AMQ_SITE_VALUES; i++)
		if (site->values[i].how == SITE_SHARED)
			amq_cache_unpin(&site->values[i].ref);
}

/* The call site's stored values, created on first use. */
static AmqStoredSite *
stored_site(FunctionCallInfo fcinfo, AmqFilterCache *cache)
{
	AmqStoredSite *site;

	if (cache->stored != NULL)
		return cache->stored;
	site = MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(AmqStoredSite));
	site->release.func = site_gone;
	site->release.arg = site;
	MemoryContextRegisterResetCallback(fcinfo->flinfo->fn_mcxt, &site->release);
	cache->stored = site;
	return site;
}

/*
 * The site's entry for the value key names, read as format; if there is
 * none, a free entry set up for it (the least recently probed value is let
 * go when all are taken).  An entry of another transaction is let go: its
 * key is only safe within one.
 */
static AmqSiteValue *
site_find(AmqStoredSite *site, const AmqToastKey *key, const AmqFormat *format)
{
	AmqSiteValue *victim = NULL;
	int			i;

	for (i = 0; i < AMQ_SITE_VALUES; i++)
	{
		AmqSiteValue *v = &site->values[i];

		if (v->how != SITE_FREE && v->xact != amq_xact_serial)
			site_release(v);
		if (v->how != SITE_FREE && v->format == format &&
			amq_toast_key_equal(&v->key, key))
			return v;
		if (victim == NULL ||
			(victim->how != SITE_FREE &&
			 (v->how == SITE_FREE || v->last_use < victim->last_use)))
			victim = v;
	}
	site_release(victim);
	victim->key = *key;
	victim->format = format;
	victim->xact = amq_cache_xact();
	victim->ref.serial = 0;
	victim->slice_reads = 0;
	return victim;
}

/* Probes site value v in the transaction cache's copy, entry, from now on. */
static const void *
use_shared(AmqSiteValue *v, const AmqCacheEntry *entry)
{
	amq_cache_pin(&v->ref);
	memcpy(&v->view, &entry->view, v->format->view_size);
	v->how = SITE_SHARED;
	return &v->view;
}

/*
 * Probes site value v in a copy of the call site's own from now on: reads
 * the value behind raw whole into fn_mcxt, where any other own copy of the
 * site is let go first.
 */
static const void *
use_own(FunctionCallInfo fcinfo, AmqStoredSite *site, AmqSiteValue *v,
		struct varlena *raw, const struct varatt_external *external)
{
	const AmqFormat *format = v->format;
	uint8	   *data;
	size_t		len;
	int			i;

	for (i = 0; i < AMQ_SITE_VALUES; i++)
		if (site->values[i].how == SITE_OWN)
			site_release(&site->values[i]);

	/* the copy is freed if it fails validation, as filter_cache.c does */
	site->reading = NULL;
	PG_TRY();
	{
		len = amq_read_whole(fcinfo->flinfo->fn_mcxt, raw, external,
							 format->header_size, &site->reading, &data);
		amq_open_or_error(format, data, len, AMQ_GATE_STORED, &v->view);
	}
	PG_CATCH();
	{
		if (site->reading != NULL)
			pfree(site->reading);
		site->reading = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();
	v->alloc = site->reading;
	site->reading = NULL;
	v->how = SITE_OWN;
	return &v->view;
}

/*
 * Opens site value v, the value behind the TOAST pointer raw, for a probe
 * that its state (sliced, or new to the call site) does not answer from
 * memory yet: applies the adaptive rule (file header).  As
 * amq_filter_probe_arg.
 */
static amq_read_fn
stored_open(FunctionCallInfo fcinfo, AmqFilterCache *cache,
			AmqStoredSite *site, AmqSiteValue *v, struct varlena *raw,
			const struct varatt_external *external, const void **view)
{
	AmqCacheEntry *entry;
	bool		slices_only = amq_probe_read == AMQ_PROBE_READ_SLICES;

	if (v->how == SITE_FREE)
	{
		uint64		chunks;

		v->len = EXTERNAL_SIZE(*external);
		chunks = (v->len + TOAST_MAX_CHUNK_SIZE - 1) / TOAST_MAX_CHUNK_SIZE;
		v->slice_budget = chunks * AMQ_CHUNK_COST_SLICES;
		entry = amq_cache_lookup(&v->key, v->format, &v->ref);
	}
	else
		entry = amq_cache_deref(&v->ref);

	/* read whole by an earlier probe of the transaction */
	if (entry != NULL && entry->whole && !slices_only)
	{
		*view = use_shared(v, entry);
		return NULL;
	}

	if (amq_probe_read != AMQ_PROBE_READ_WHOLE &&
		!VARATT_EXTERNAL_IS_COMPRESSED(*external))
	{
		if (v->how == SITE_FREE && entry != NULL && !entry->whole)
		{
			/* its header is known: no need to read it again */
			memcpy(&v->view, &entry->view, v->format->view_size);
			v->how = SITE_SLICED;
		}
		else if (v->how == SITE_FREE && slice_begin(cache, v, raw))
		{
			v->how = SITE_SLICED;
			/* (an entry known here is a whole one, ignored: 'slices') */
			if (entry == NULL)
				entry = amq_cache_add_header(&v->key, v->format, v->len,
											 &v->view, &v->ref);
			if (entry != NULL)
				entry->slice_reads += v->slice_reads;
		}

		if (v->how == SITE_SLICED)
		{
			if (slices_only ||
				(v->slice_reads < v->slice_budget &&
				 (entry == NULL || entry->slice_reads < v->slice_budget)))
			{
				slice_target(cache, v, raw);
				*view = &v->view;
				return slice_read;
			}
			/* slices now cost more than a copy: the transaction's if it can */
			entry = amq_cache_read_whole(&v->key, v->format, raw, external,
										 &v->ref);
			if (entry != NULL)
				*view = use_shared(v, entry);
			else if (v->slice_reads >= v->slice_budget)
				*view = use_own(fcinfo, site, v, raw, external);
			else
			{
				/* only other call sites paid for a copy, and there is no room */
				slice_target(cache, v, raw);
				*view = &v->view;
				return slice_read;
			}
			return NULL;
		}
	}

	/* read whole: asked to, compressed, or not probed through slices */
	entry = amq_cache_read_whole(&v->key, v->format, raw, external, &v->ref);
	*view = entry != NULL ? use_shared(v, entry) :
		use_own(fcinfo, site, v, raw, external);
	return NULL;
}

/*
 * Opens filter argument argno for a probe.  A value stored out of line is
 * probed through slices or in memory, as the adaptive rule decides (see the
 * file header): through slices, *view is its validated header and the
 * result is the read function to probe it with, the cache being its
 * context.  Otherwise the result is NULL and *view points at the bytes.
 * *view lives in the cache: valid until the next call, not to be changed.
 */
amq_read_fn
amq_filter_probe_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
					 const AmqFormat *format, const void **view)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));
	struct varatt_external external;
	AmqToastKey key;
	AmqStoredSite *site;
	AmqSiteValue *v;

	if (!VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		*view = probe_view(fcinfo, argno, cache, format);
		return NULL;
	}

	VARATT_EXTERNAL_GET_POINTER(external, raw);
	amq_toast_key(&external, &key);
	site = stored_site(fcinfo, cache);
	v = site->last;
	if (v == NULL || v->how == SITE_FREE || v->xact != amq_xact_serial ||
		v->format != format || !amq_toast_key_equal(&v->key, &key))
	{
		v = site_find(site, &key, format);
		site->last = v;
	}
	v->last_use = ++site->clock;
	if (v->how == SITE_SHARED || v->how == SITE_OWN)
	{
		*view = &v->view;
		return NULL;
	}
	return stored_open(fcinfo, cache, site, v, raw, &external, view);
}
