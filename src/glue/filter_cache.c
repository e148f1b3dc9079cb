/*
 * filter_cache.c
 *		The transaction's cache of stored filters: what the probes of one
 *		transaction learned about the filters they read out of TOAST (a
 *		validated header, how many slices were read, the whole value once
 *		it was worth reading), shared by all the call sites of the
 *		transaction, with a bounded amount of memory.
 *
 * Why.  A call site (filter_access.c) keeps what it read for as long as its
 * executor lives, and some query shapes make a new executor per row: a SQL
 * function that is not inlined ("SELECT f @> $1 FROM vip_filter" declared
 * STABLE, or written in PL/pgSQL) runs one for every call, so every call
 * read the filter's header and one block through two TOAST slices (perf,
 * 1M calls: three quarters of a 7 s scan was those slices; the same probe
 * written inline took 0.1 s).  This cache outlives the executors: a
 * value's header is read and validated once per transaction, the slices
 * every call site reads count towards reading the value whole (the
 * ski-rental rule of filter_access.c, applied to the transaction), and
 * once it was read whole, every later call site probes memory.
 *
 * The key.  An entry is found by the value's TOAST pointer, all of it: the
 * OID of the TOAST table and of the value there (va_toastrelid,
 * va_valueid), the value's raw size and its stored size with compression
 * method (va_rawsize, va_extinfo), and the filter type it is read as (a
 * user's binary-coercible cast could pass one pointer to both types).
 * Within the cache's lifetime that key names one byte string:
 *
 *	- A TOAST value is never changed: an UPDATE that changes the column
 *	  writes a new value under a new OID, one that does not keeps the old
 *	  pointer to the same bytes, and CLUSTER or VACUUM FULL copy a value
 *	  under its old pointer with the same bytes.
 *	- A value OID comes from the cluster-wide OID counter and is handed out
 *	  only if no row of the TOAST table, live or dead, carries it
 *	  (GetNewOidWithIndex reads the TOAST index with SnapshotAny).  So a
 *	  key can come to name other bytes only after its value was deleted,
 *	  the deletion committed, VACUUM removed every row of the value, and
 *	  the 32-bit OID counter (shared by every object and TOASTed value of
 *	  the cluster) went round to the same number, for a new value in the
 *	  same TOAST table with the very same sizes.
 *
 * The cache is dropped when its transaction ends (commit, abort, prepare),
 * and every call site's entries with it (amq_xact_serial).  What that buys:
 * all of the above has to happen while one transaction runs, not during
 * the life of a session (a pooled connection can outlive an OID
 * wraparound); in a REPEATABLE READ or SERIALIZABLE transaction it cannot
 * happen to a value the transaction read, because its snapshot keeps
 * VACUUM from removing any row it can see (only a value of an aborted
 * subtransaction, never visible to anyone else, could go); and a session
 * holds no memory of this cache between transactions.  XXX: a READ
 * COMMITTED transaction that runs while 2^32 OIDs are consumed, after the
 * value it cached was deleted and vacuumed, is the remaining case.
 * Values not stored out of line (in-line or in memory) never enter the
 * cache: a pointer into memory names nothing once that memory is reused.
 *
 * The bound.  The memory the cache's context holds (MemoryContextMemAllocated:
 * the whole values, the entry array, allocator overhead) is kept under
 * hash_mem, work_mem * hash_mem_multiplier (8 MB by default), the memory
 * PostgreSQL lets one hash table of a query hold: this cache holds what a
 * hash join would, the filter's bytes for probing, and a user who wants
 * larger filters kept raises the same setting.  At most AMQ_CACHE_SLOTS
 * values are known at a time.  The least recently used entry is dropped,
 * its memory freed, to make room; an entry a live call site probes in
 * memory is pinned (amq_cache_pin) and never dropped, so no call site is
 * left with freed bytes, and a value that does not fit beside the pinned
 * ones is not cached (the call site then keeps its own copy, as before
 * this cache).  A dropped entry restarts the ski-rental count of its value,
 * so values that keep displacing each other cost at most twice their
 * slices, never a whole read per probe.
 */
#include "postgres.h"

#include "access/detoast.h"
#include "access/heaptoast.h"
#include "access/table.h"
#include "access/tableam.h"
#include "access/xact.h"
#include "miscadmin.h"

#include "glue/filter_glue.h"

/* The most values the cache knows at a time (headers or whole). */
#define AMQ_CACHE_SLOTS			64

/* The first entry array's size; it doubles up to AMQ_CACHE_SLOTS. */
#define AMQ_CACHE_FIRST_SLOTS	8

/*
 * What a whole value costs the context beyond its request: the chunk and
 * block headers of a dedicated block.  Room is made for the request plus
 * this, so the memory held stays under the limit once it is allocated.
 */
#define AMQ_CACHE_ALLOC_SLACK	1024

typedef struct CacheSlot
{
	AmqCacheEntry entry;		/* what callers see */
	uint64		serial;			/* 0 while free; new for each value held */
	uint64		last_use;		/* the cache's clock when last found */
	int			pins;			/* call sites probing its bytes */
	void	   *alloc;			/* entry.whole: the bytes, in the context */
} CacheSlot;

static MemoryContext cache_cxt; /* NULL outside a transaction that used it */
static CacheSlot *slots;		/* in cache_cxt */
static int	nslots;				/* allocated; used ones have serial != 0 */
static uint64 cache_clock;
static uint64 next_serial = 1;	/* never reused in the backend's life */
static bool xact_callback_registered;

/*
 * The allocation of a whole read in progress, for the error path to free: a
 * static, not a local, because it is set inside PG_TRY and read after a
 * longjmp.
 */
static void *reading;

/* Changes when a transaction ends; see amq_cache_xact. */
uint64		amq_xact_serial = 1;

/* Forgets the cache, whose memory went with its transaction. */
static void
cache_forget(void)
{
	cache_cxt = NULL;
	slots = NULL;
	nslots = 0;
}

/* A memory context callback: the context is being freed. */
static void
cache_context_gone(void *arg)
{
	cache_forget();
}

/*
 * Drops the cache when its transaction ends.  The context is a child of
 * TopTransactionContext and would go with it; deleting it here returns the
 * memory at once and keeps the two ends of the lifetime in one place.
 */
static void
cache_xact_callback(XactEvent event, void *arg)
{
	switch (event)
	{
		case XACT_EVENT_COMMIT:
		case XACT_EVENT_PARALLEL_COMMIT:
		case XACT_EVENT_ABORT:
		case XACT_EVENT_PARALLEL_ABORT:
		case XACT_EVENT_PREPARE:
			amq_xact_serial++;
			if (cache_cxt != NULL)
				MemoryContextDelete(cache_cxt); /* calls cache_context_gone */
			cache_forget();
			break;
		default:
			break;
	}
}

/*
 * The serial of the current transaction, to stamp what a call site keeps
 * about a stored value: what was kept in another transaction is not used.
 * Call sites can outlive a transaction (PL/pgSQL's simple expressions in a
 * procedure that commits), and the key is only safe within one (file
 * header).  The serial is 64 bits so that it never comes round.
 */
uint64
amq_cache_xact(void)
{
	if (!xact_callback_registered)
	{
		RegisterXactCallback(cache_xact_callback, NULL);
		xact_callback_registered = true;
	}
	return amq_xact_serial;
}

/* The cache's memory limit in bytes: hash_mem (file header). */
static size_t
cache_limit(void)
{
	return get_hash_memory_limit();
}

static size_t
cache_held(void)
{
	return cache_cxt ? MemoryContextMemAllocated(cache_cxt, false) : 0;
}

/* The cache of this transaction, created on first use; false outside one. */
static bool
cache_open(void)
{
	MemoryContextCallback *cb;

	if (cache_cxt != NULL)
		return true;
	if (!IsTransactionState() || TopTransactionContext == NULL)
		return false;
	(void) amq_cache_xact();
	cache_cxt = AllocSetContextCreate(TopTransactionContext,
									  "amqfilter stored filters",
									  ALLOCSET_SMALL_SIZES);
	cb = MemoryContextAlloc(cache_cxt, sizeof(MemoryContextCallback));
	cb->func = cache_context_gone;
	cb->arg = NULL;
	MemoryContextRegisterResetCallback(cache_cxt, cb);
	slots = MemoryContextAllocZero(cache_cxt,
								   AMQ_CACHE_FIRST_SLOTS * sizeof(CacheSlot));
	nslots = AMQ_CACHE_FIRST_SLOTS;
	return true;
}

/* The slot ref names, if it still holds the value it held then. */
static inline CacheSlot *
slot_of(const AmqCacheRef *ref)
{
	if (slots == NULL || ref->slot < 0 || ref->slot >= nslots ||
		slots[ref->slot].serial != ref->serial || ref->serial == 0)
		return NULL;
	return &slots[ref->slot];
}

static void
slot_free(CacheSlot *slot)
{
	Assert(slot->pins == 0);
	if (slot->alloc != NULL)
		pfree(slot->alloc);
	memset(slot, 0, sizeof(CacheSlot));
}

/* The least recently used unpinned slot but keep, or NULL. */
static CacheSlot *
lru_victim(const CacheSlot *keep, bool whole_only)
{
	CacheSlot  *victim = NULL;
	int			i;

	for (i = 0; i < nslots; i++)
	{
		CacheSlot  *s = &slots[i];

		if (s->serial == 0 || s->pins > 0 || s == keep ||
			(whole_only && !s->entry.whole))
			continue;
		if (victim == NULL || s->last_use < victim->last_use)
			victim = s;
	}
	return victim;
}

/*
 * A free slot for a new value: a never used one, a new one (the array
 * doubles while under AMQ_CACHE_SLOTS and the limit), or the least recently
 * used unpinned one, dropped.  NULL when every slot is pinned.
 */
static CacheSlot *
slot_new(void)
{
	CacheSlot  *slot;
	int			i;

	for (i = 0; i < nslots; i++)
		if (slots[i].serial == 0)
			return &slots[i];
	if (nslots < AMQ_CACHE_SLOTS &&
		cache_held() + nslots * sizeof(CacheSlot) + AMQ_CACHE_ALLOC_SLACK <= cache_limit())
	{
		slots = repalloc(slots, 2 * nslots * sizeof(CacheSlot));
		memset(&slots[nslots], 0, nslots * sizeof(CacheSlot));
		nslots *= 2;
		return &slots[nslots / 2];
	}
	slot = lru_victim(NULL, false);
	if (slot != NULL)
		slot_free(slot);
	return slot;
}

static void
slot_fill(CacheSlot *slot, const AmqToastKey *key, const AmqFormat *format,
		  size_t len, AmqCacheRef *ref)
{
	slot->entry.key = *key;
	slot->entry.format = format;
	slot->entry.len = len;
	slot->serial = next_serial++;
	slot->last_use = ++cache_clock;
	ref->slot = (int) (slot - slots);
	ref->serial = slot->serial;
}

/*
 * The entry of the value key names, read as format, if the cache knows it;
 * *ref is then set to find it again.  Counts as a use for the LRU order.
 */
AmqCacheEntry *
amq_cache_lookup(const AmqToastKey *key, const AmqFormat *format,
				 AmqCacheRef *ref)
{
	int			i;

	for (i = 0; i < nslots; i++)
	{
		CacheSlot  *s = &slots[i];

		if (s->serial != 0 && s->entry.format == format &&
			amq_toast_key_equal(&s->entry.key, key))
		{
			s->last_use = ++cache_clock;
			ref->slot = i;
			ref->serial = s->serial;
			return &s->entry;
		}
	}
	return NULL;
}

/* The entry ref was set to, if the cache still holds that value. */
AmqCacheEntry *
amq_cache_deref(const AmqCacheRef *ref)
{
	CacheSlot  *slot = slot_of(ref);

	return slot ? &slot->entry : NULL;
}

/*
 * Remembers the validated header of a value probed through slices (view,
 * of the format's view size), with no slices counted yet.  Returns the new
 * entry, or NULL when there is no room (outside a transaction, or every
 * slot pinned).
 */
AmqCacheEntry *
amq_cache_add_header(const AmqToastKey *key, const AmqFormat *format,
					 size_t len, const void *view, AmqCacheRef *ref)
{
	CacheSlot  *slot;

	if (!cache_open() || (slot = slot_new()) == NULL)
		return NULL;
	slot_fill(slot, key, format, len, ref);
	memcpy(&slot->entry.view, view, format->view_size);
	return &slot->entry;
}

/*
 * Whether a whole value of bytes would be kept (rather than refused): it
 * fits under the limit beside the pinned values.  Drops nothing.
 */
static bool
room_for(size_t bytes, const CacheSlot *keep)
{
	size_t		limit = cache_limit();
	size_t		held = cache_held();
	size_t		freeable = 0;
	int			i;

	if (bytes > limit)
		return false;
	if (held + bytes <= limit)
		return true;
	for (i = 0; i < nslots; i++)
	{
		const CacheSlot *s = &slots[i];

		if (s->serial != 0 && s->pins == 0 && s != keep && s->alloc != NULL)
			freeable += GetMemoryChunkSpace(s->alloc);
	}
	return held - Min(held, freeable) + bytes <= limit;
}

/*
 * Reads the out-of-line value behind raw (pointer its TOAST pointer) whole
 * into the cache, validated as format, evicting least recently used values
 * to make room, and returns its entry (ref set to it); NULL, having read
 * nothing, when it does not fit beside the pinned values.  An entry the
 * value already has (its header) becomes the whole one, its slice count
 * kept.  A value that fails validation is corruption, reported as any read
 * of a stored value reports it; the memory read is freed first, so a caller
 * that catches the error (a PL/pgSQL exception block in a loop) cannot fill
 * the transaction's memory.
 */
AmqCacheEntry *
amq_cache_read_whole(const AmqToastKey *key, const AmqFormat *format,
					 struct varlena *raw, const struct varatt_external *pointer,
					 AmqCacheRef *ref)
{
	CacheSlot  *slot;
	size_t		need;
	size_t		len;
	uint8	   *data;
	AmqAnyView	view;

	if (!cache_open())
		return NULL;
	slot = slot_of(ref);
	if (slot != NULL && (slot->entry.whole || slot->entry.format != format ||
						 !amq_toast_key_equal(&slot->entry.key, key)))
		slot = NULL;

	/* what amq_read_whole asks for, whether compressed or not */
	need = amq_aligned_request((size_t) Max(pointer->va_rawsize, VARHDRSZ)) +
		AMQ_CACHE_ALLOC_SLACK;
	if (!room_for(need, slot))
		return NULL;
	/* a slot first (the array may grow), then room beside it */
	if (slot == NULL && (slot = slot_new()) == NULL)
		return NULL;
	while (cache_held() + need > cache_limit())
	{
		CacheSlot  *victim = lru_victim(slot, true);

		if (victim == NULL)
			return NULL;		/* the array grew past what room_for saw */
		slot_free(victim);
	}

	Assert(reading == NULL);
	PG_TRY();
	{
		len = amq_read_whole(cache_cxt, raw, pointer, format->header_size,
							 &reading, &data);
		amq_open_or_error(format, data, len, AMQ_GATE_STORED, &view);
	}
	PG_CATCH();
	{
		if (reading != NULL)
			pfree(reading);
		reading = NULL;
		PG_RE_THROW();
	}
	PG_END_TRY();

	if (slot->serial == 0)
		slot_fill(slot, key, format, len, ref);
	slot->last_use = ++cache_clock;
	slot->alloc = reading;
	reading = NULL;
	slot->entry.whole = true;
	memcpy(&slot->entry.view, &view, format->view_size);
	return &slot->entry;
}

/* Counts a slice read from the value of ref, if the cache still holds it. */
void
amq_cache_count_slice(const AmqCacheRef *ref)
{
	CacheSlot  *slot = slot_of(ref);

	if (slot != NULL)
		slot->entry.slice_reads++;
}

/*
 * Keeps the whole value of ref in the cache until amq_cache_unpin: a call
 * site probes its bytes.
 */
void
amq_cache_pin(const AmqCacheRef *ref)
{
	CacheSlot  *slot = slot_of(ref);

	Assert(slot != NULL && slot->entry.whole);
	if (slot != NULL)
		slot->pins++;
}

/*
 * Releases a pin.  Safe after the cache was dropped (a call site's memory
 * is freed after its transaction aborted): the ref then names nothing.
 */
void
amq_cache_unpin(const AmqCacheRef *ref)
{
	CacheSlot  *slot = slot_of(ref);

	if (slot != NULL && slot->pins > 0)
		slot->pins--;
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
size_t
amq_read_whole(MemoryContext cxt, struct varlena *raw,
			   const struct varatt_external *toast_pointer, size_t header_size,
			   void **alloc, uint8 **data)
{
	struct varlena *detoasted;
	size_t		bytes;

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
	detoasted = detoast_attr(raw);
	bytes = VARSIZE(detoasted) - VARHDRSZ;
	*data = amq_alloc_aligned(cxt, bytes, header_size, alloc);
	memcpy(*data, VARDATA(detoasted), bytes);
	pfree(detoasted);
	return bytes;
}
