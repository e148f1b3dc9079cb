/*
 * filter_access.c
 *		Getting the bytes of filter arguments out of Datums, once per query
 *		for TOASTed values; probing a stored filter through slices; the
 *		per-call cache that holds both.
 *
 * A probe like "(SELECT f FROM filters WHERE id = 1) @> col" passes the same
 * TOASTed filter to every row.  Detoasting a 12 MB value per row would make
 * the probe cost proportional to the filter size, so a TOASTed argument is
 * detoasted once into fn_mcxt and kept, keyed by its TOAST pointer (a TOAST
 * value never changes; its pointer identifies it for the whole query).
 * In-line values cost nothing to detoast; one that stays the same from row
 * to row (an InitPlan's result, a literal) is validated once, by the
 * validation memo (see probe_view).
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
 * TOAST index lookup and the one or two chunks that hold the range.  The
 * validated header is kept per call site, keyed by the TOAST pointer like
 * the copy, so repeated probes of one value read the header once.
 * Compressed and in-line values, and layouts the slice readers do not know,
 * take the copy path.
 *
 * The adaptive rule.  A slice costs a TOAST index descent; a whole-value read
 * costs its number of chunks, each worth AMQ_CHUNK_COST_SLICES slices
 * (measured; see below).  A call site
 * that keeps probing one value (a scan of 10M rows against one stored
 * filter) would pay far more in slices than one copy, so once the slices
 * read from a value would cost as much as reading it whole, the call site
 * reads it whole and probes the copy for the rest of the query, as before
 * 0.2.  This is the ski-rental rule: it never costs more than twice the
 * better of the two choices made in hindsight, and a long scan pays at most
 * one whole read's worth of slices on top of its old cost; a single probe
 * never reads more than its slices.  amqfilter.probe_read = 'slices' or
 * 'whole' fixes the choice (for tests and measurements).
 */
#include "postgres.h"

#include "access/detoast.h"
#include "nodes/primnodes.h"
#include "access/heaptoast.h"
#include "access/table.h"
#include "access/tableam.h"

#include "filter_glue.h"

/* The per-call cache in fn_extra, created on first use. */
AmqCallCache *
amq_call_cache(FunctionCallInfo fcinfo)
{
	if (fcinfo->flinfo->fn_extra == NULL)
		fcinfo->flinfo->fn_extra =
			MemoryContextAllocZero(fcinfo->flinfo->fn_mcxt, sizeof(AmqCallCache));
	return (AmqCallCache *) fcinfo->flinfo->fn_extra;
}

/*
 * Reads the out-of-line value behind raw whole into new memory of cxt, the
 * data after a header of header_size bytes on a cache-line boundary (2 MB
 * for a large filter, see amq_alloc_aligned); returns its length, with
 * *data and *alloc (what to pfree).  An uncompressed value is fetched from
 * its TOAST table straight into that memory, as detoasting does into its
 * own: no second copy, and a large filter's pages are faulted in 2 MB at a
 * time instead of 4 kB (a query probing a stored 4.7 MB filter once: 36 ->
 * 15 ms).  A compressed value is detoasted and copied.
 */
static size_t
read_whole(MemoryContext cxt, struct varlena *raw,
		   const struct varatt_external *toast_pointer, size_t header_size,
		   void **alloc, uint8 **data)
{
	struct varlena *detoasted;
	size_t		bytes;

#if PG_VERSION_NUM >= 140000
	if (!VARATT_EXTERNAL_IS_COMPRESSED(*toast_pointer))
	{
		struct varlena *result;
		Relation	toastrel;

		bytes = VARATT_EXTERNAL_GET_EXTSIZE(*toast_pointer);
		/* the fetch writes through a varlena whose data is the filter */
		result = (struct varlena *) amq_alloc_aligned(cxt, VARHDRSZ + bytes,
													  VARHDRSZ + header_size,
													  alloc);
		SET_VARSIZE(result, VARHDRSZ + bytes);
		if (bytes > 0)
		{
			toastrel = table_open(toast_pointer->va_toastrelid, AccessShareLock);
			table_relation_fetch_toast_slice(toastrel, toast_pointer->va_valueid,
											 (int32) bytes, 0, (int32) bytes,
											 result);
			table_close(toastrel, AccessShareLock);
		}
		*data = (uint8 *) VARDATA(result);
		return bytes;
	}
#endif
	detoasted = detoast_attr(raw);
	bytes = VARSIZE(detoasted) - VARHDRSZ;
	*data = amq_alloc_aligned(cxt, bytes, header_size, alloc);
	memcpy(*data, VARDATA(detoasted), bytes);
	pfree(detoasted);
	return bytes;
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

		VARATT_EXTERNAL_GET_POINTER(toast_pointer, raw);
		if (cache->valid &&
			cache->toastrelid == toast_pointer.va_toastrelid &&
			cache->valueid == toast_pointer.va_valueid)
		{
			*data = cache->data;
			*len = cache->len;
			return cache->opened;
		}
		if (cache->valid)
			pfree(cache->alloc);
		cache->valid = false;
		cache->sliced = false;

		cache->len = read_whole(fcinfo->flinfo->fn_mcxt, raw, &toast_pointer,
								format->header_size, &cache->alloc,
								&cache->data);
		cache->toastrelid = toast_pointer.va_toastrelid;
		cache->valueid = toast_pointer.va_valueid;
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

#if PG_VERSION_NUM >= 140000
#define EXTERNAL_SIZE(pointer)	VARATT_EXTERNAL_GET_EXTSIZE(pointer)
#else
#define EXTERNAL_SIZE(pointer)	((pointer).va_extsize)
#endif

/*
 * The core's read function for a sliced value (amq_read.h): len bytes at
 * offset, fetched with slice detoasting into the cache's slice buffer.  The
 * core asks only for ranges inside the length its validator accepted, the
 * length the TOAST pointer records; a TOAST value that yields less is
 * corrupt.
 */
static const uint8_t *
slice_read(void *ctx, size_t offset, size_t len)
{
	AmqFilterCache *cache = ctx;
	struct varlena *slice;

	if (len > AMQ_READ_MAX || offset > cache->len || len > cache->len - offset)
		elog(ERROR, "%s slice of %zu bytes at %zu outside a value of %zu bytes",
			 cache->format->name, len, offset, cache->len);
	slice = detoast_attr_slice(cache->pointer, (int32) offset, (int32) len);
	if (VARSIZE_ANY_EXHDR(slice) != len)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_CORRUPTED),
				 errmsg("invalid value of type %s", cache->format->name),
				 errdetail("The stored value is shorter than its TOAST pointer says.")));
	memcpy(cache->slice, VARDATA_ANY(slice), len);
	pfree(slice);
	cache->slice_reads++;
	return cache->slice;
}

/*
 * Starts probing the out-of-line value behind pointer through slices: reads
 * and validates its header.  Returns false, having read nothing more, when
 * its layout has no slice reader.  A header that fails is corruption, the
 * error any other read of the stored value gives.
 */
static bool
slice_begin(AmqFilterCache *cache, const AmqFormat *format,
			struct varlena *pointer, const struct varatt_external *external)
{
	amq_status	status;
	uint64		chunks;

	if (cache->valid)
		pfree(cache->alloc);
	cache->valid = false;
	cache->sliced = false;
	cache->format = format;
	cache->pointer = pointer;
	cache->len = EXTERNAL_SIZE(*external);
	cache->slice_reads = 0;

	/* slices cost as much as the whole read after this many (file header) */
	chunks = (cache->len + TOAST_MAX_CHUNK_SIZE - 1) / TOAST_MAX_CHUNK_SIZE;
	cache->slice_budget = chunks * AMQ_CHUNK_COST_SLICES;

	/*
	 * Validating through slices takes a read per table (and per counter
	 * entry) of a cuckoo filter: when that alone costs more than the whole
	 * read, which a crafted value of thousands of tables can make it, read
	 * the value whole instead, where validation reads memory.
	 */
	if (cache->len >= format->header_size &&
		format->open_reads(slice_read(cache, 0, format->header_size)) > cache->slice_budget)
		return false;

	status = format->open_read(slice_read, cache, cache->len, &cache->view);
	if (status != AMQ_OK)
		amq_report_invalid(format, status, AMQ_GATE_STORED, NULL);
	if (!format->probe_reads(&cache->view))
		return false;
	cache->toastrelid = external->va_toastrelid;
	cache->valueid = external->va_valueid;
	cache->sliced = true;
	return true;
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
 * Opens filter argument argno as amq_filter_open_arg does, but leaves the
 * view in the cache and returns it: a probe only reads it, and a view
 * copied for every row is the same work each time (368 bytes for a bloom
 * filter).  The cached value's view stays in cache->view; any other value
 * is opened into cache->scratch, which only this call uses, and validated
 * once for as long as it stays the same (the validation memo above).
 */
static const void *
probe_view(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
		   const AmqFormat *format)
{
	uint8	   *data;
	size_t		len;
	bool		again;

	Assert(format->view_size <= sizeof(cache->view));
	if (amq_filter_arg(fcinfo, argno, cache, format, &data, &len))
		return &cache->view;
	if (cache->valid && data == cache->data)
	{
		amq_open_or_error(format, data, len, AMQ_GATE_STORED, &cache->view);
		cache->opened = true;
		return &cache->view;
	}

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
 * Opens filter argument argno for a probe.  A value stored out of line and
 * uncompressed is probed through slices (see the file header): *view is
 * then its validated header, and the result is the read function to probe
 * it with, the cache being its context.  Any other value, or one the
 * adaptive rule now reads whole, is opened whole; the result is then NULL
 * and *view points at the bytes.  *view lives in the cache: valid until the
 * next call, not to be changed.
 */
amq_read_fn
amq_filter_probe_arg(FunctionCallInfo fcinfo, int argno, AmqFilterCache *cache,
					 const AmqFormat *format, const void **view)
{
	struct varlena *raw = (struct varlena *) DatumGetPointer(PG_GETARG_DATUM(argno));

	if (amq_probe_read != AMQ_PROBE_READ_WHOLE && VARATT_IS_EXTERNAL_ONDISK(raw))
	{
		struct varatt_external external;
		bool		same;

		VARATT_EXTERNAL_GET_POINTER(external, raw);
		same = cache->toastrelid == external.va_toastrelid &&
			cache->valueid == external.va_valueid;
		if (!VARATT_EXTERNAL_IS_COMPRESSED(external) &&
			!(cache->valid && same) &&
			((cache->sliced && same) ||
			 slice_begin(cache, format, raw, &external)))
		{
			if (amq_probe_read == AMQ_PROBE_READ_SLICES ||
				cache->slice_reads < cache->slice_budget)
			{
				cache->pointer = raw;
				*view = &cache->view;
				return slice_read;
			}
			/* slices now cost more than the copy: read it whole */
			cache->sliced = false;
		}
	}
	*view = probe_view(fcinfo, argno, cache, format);
	return NULL;
}
