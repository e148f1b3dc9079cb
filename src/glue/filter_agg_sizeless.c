/*
 * filter_agg_sizeless.c
 *		The aggregates that size their filter from the values they see:
 *		bloom_agg(value, p [, layout]) and cuckoo_agg(value, p).
 *
 * The size a filter needs is the number of distinct values it will hold,
 * which the caller of bloom_agg(value, n, p) must know in advance and
 * usually does not: too small a filter answers "maybe" to everything.
 * Here the aggregate keeps the values' hashes until the end, counts the
 * distinct ones, and only then creates the filter, sized for them, and adds
 * the hashes.
 *
 * Counting.  A HyperLogLog of 2^14 six-bit registers (16 kB) sees every
 * hash; its estimate, with Ertl's improved estimator (no bias tables, good
 * from one value to billions), has a relative standard error of 1.04 /
 * sqrt(2^14) = 0.8%.  The filter is sized for the estimate plus three of
 * those (2.4%), so its rate stays at or under p unless the estimate is off
 * by more than three standard errors, and its bytes exceed those of a filter
 * sized for the exact count by about that much.  The registers merge by
 * maximum, so partial states of a parallel build give the serial estimate,
 * and every hash reaches the same filter: a parallel build yields the bytes
 * a serial one does.
 *
 * Memory.  Hashes are kept in memory up to work_mem.  A batch that fills it
 * is, for layouts that hold a set (blocked and classic bloom: a value added
 * twice sets the same bits), sorted and rid of duplicates when the distinct
 * values counted so far fit in half of it; otherwise it goes to a temporary
 * file, read back once at the end.  Layouts that count copies (counting, dleft, cuckoo) keep
 * every hash.  Partial states of a parallel build carry their hashes to the
 * leader (8 bytes a value, in memory on both sides), so a parallel build
 * of a very large input is better sized by hand: bloom_agg(value, n, p).
 *
 * The final function reads the temporary file, so it is declared
 * READ_WRITE: PostgreSQL then never calls it twice on one state.
 */
#include "postgres.h"

#include <math.h>

#include "lib/stringinfo.h"
#include "libpq/pqformat.h"
#include "fmgr.h"
#include "miscadmin.h"
#include "storage/buffile.h"
#include "utils/memutils.h"

#include "glue/filter_glue.h"
#include "core/amq_hash.h"

#define HLL_BITS		14
#define HLL_REGISTERS	(1 << HLL_BITS)
/* the estimate's relative standard error, and the margin the size adds */
#define HLL_REL_ERROR	(1.04 / 128.0)
#define SIZE_MARGIN		(1.0 + 3.0 * HLL_REL_ERROR)
/* hashes read back from the temporary file at a time */
#define READ_BATCH		AMQ_AGG_BATCH
/* format version of a serialized partial state */
#define STATE_VERSION	1

typedef struct SizelessState
{
	const AmqAggType *type;
	AmqAggSizing sizing;		/* p and layout; n is what this finds */
	bool		counts_copies;	/* keep duplicates: the filter counts them */
	AmqHasher  *hasher;
	uint64		seed;
	uint32		family;
	MemoryContext cxt;
	uint8		registers[HLL_REGISTERS];
	uint64	   *hashes;			/* in memory, in cxt */
	int64		nhashes;
	int64		limit;			/* in memory at most: work_mem */
	BufFile    *spill;			/* beyond it */
	int64		nspilled;
	uint64		nduplicates;	/* sorted away (sets only) */
} SizelessState;

/*
 * ----------------------------------------------------------------
 * HyperLogLog
 * ----------------------------------------------------------------
 */

static void
hll_add(uint8 *registers, uint64 hash)
{
	uint64		x = amq_fmix64(hash);
	uint32		index = (uint32) (x >> (64 - HLL_BITS));
	uint64		rest = (x << HLL_BITS) | ((uint64) 1 << (HLL_BITS - 1));
	uint8		rank = (uint8) (__builtin_clzll(rest) + 1);

	if (rank > registers[index])
		registers[index] = rank;
}

/* Ertl's sigma and tau, the corrections of the improved estimator */
static double
hll_sigma(double x)
{
	double		y = 1.0;
	double		z = x;
	double		prev;

	if (x == 1.0)
		return INFINITY;
	do
	{
		x *= x;
		prev = z;
		z += x * y;
		y += y;
	} while (z != prev);
	return z;
}

static double
hll_tau(double x)
{
	double		y = 1.0;
	double		z = 1.0 - x;
	double		prev;

	if (x == 0.0 || x == 1.0)
		return 0.0;
	do
	{
		x = sqrt(x);
		prev = z;
		y *= 0.5;
		z -= (1.0 - x) * (1.0 - x) * y;
	} while (z != prev);
	return z / 3.0;
}

/* The distinct hashes the registers have seen, estimated (Ertl, 2017). */
static double
hll_estimate(const uint8 *registers)
{
	const int	q = 64 - HLL_BITS;
	const double m = HLL_REGISTERS;
	int			counts[66];
	double		z;
	int			k;
	int			i;

	memset(counts, 0, sizeof(counts));
	for (i = 0; i < HLL_REGISTERS; i++)
		counts[Min(registers[i], q + 1)]++;
	if (counts[0] == HLL_REGISTERS)
		return 0.0;
	z = m * hll_tau(1.0 - (double) counts[q + 1] / m);
	for (k = q; k >= 1; k--)
		z = 0.5 * (z + counts[k]);
	z += m * hll_sigma((double) counts[0] / m);
	return (m * m / (2.0 * log(2.0))) / z;
}

/*
 * ----------------------------------------------------------------
 * Keeping hashes
 * ----------------------------------------------------------------
 */

static void close_spill(Datum arg);

static SizelessState *
state_new(FunctionCallInfo fcinfo, MemoryContext cxt, const AmqAggType *type,
		  const AmqAggSizing *sizing, bool counts_copies, uint64 seed)
{
	SizelessState *state = MemoryContextAllocZero(cxt, sizeof(SizelessState));

	state->type = type;
	state->sizing = *sizing;
	state->counts_copies = counts_copies;
	state->seed = seed;
	state->cxt = cxt;
	if (AggCheckCallContext(fcinfo, NULL) == AGG_CONTEXT_AGGREGATE)
		AggRegisterCallback(fcinfo, close_spill, PointerGetDatum(state));
	state->limit = Max((int64) work_mem * 1024 / (int64) sizeof(uint64), AMQ_AGG_BATCH);
	return state;
}

static int
hash_cmp(const void *a, const void *b)
{
	uint64		x = *(const uint64 *) a;
	uint64		y = *(const uint64 *) b;

	return x < y ? -1 : x > y ? 1 : 0;
}

/* Writes the hashes in memory to the temporary file. */
static void
spill(SizelessState *state)
{
	MemoryContext old = MemoryContextSwitchTo(state->cxt);

	/*
	 * Only ever appended to: the file is read once, at the end (final,
	 * serialize, or a combine that takes the state over), and never written
	 * after, so its position is always its end here.
	 */
	if (state->spill == NULL)
		state->spill = BufFileCreateTemp(false);
	BufFileWrite(state->spill, state->hashes, state->nhashes * sizeof(uint64));
	MemoryContextSwitchTo(old);
	state->nspilled += state->nhashes;
	state->nhashes = 0;
}

/* Keeps one more hash; makes room when work_mem is full. */
static void
keep(SizelessState *state, uint64 hash)
{
	if (state->nhashes == state->limit)
	{
		/*
		 * A set whose distinct values, as counted so far, fit in half the
		 * room: sorting the duplicates away frees at least half, so sorts
		 * come at most once per limit / 2 hashes.  With more distinct
		 * values than that a batch holds few duplicates of its own, and
		 * sorting it would cost more than writing it out.
		 */
		if (!state->counts_copies &&
			hll_estimate(state->registers) * SIZE_MARGIN <= (double) (state->limit / 2))
		{
			int64		kept = 0;
			int64		i;

			qsort(state->hashes, state->nhashes, sizeof(uint64), hash_cmp);
			for (i = 0; i < state->nhashes; i++)
				if (kept == 0 || state->hashes[kept - 1] != state->hashes[i])
					state->hashes[kept++] = state->hashes[i];
			/* counted still: the filter's additions are every row's */
			state->nduplicates += state->nhashes - kept;
			state->nhashes = kept;
		}
		if (state->nhashes > state->limit / 2)
			spill(state);
	}
	if (state->hashes == NULL)
		state->hashes = MemoryContextAllocHuge(state->cxt, state->limit * sizeof(uint64));
	state->hashes[state->nhashes++] = hash;
	hll_add(state->registers, hash);
}

/* Reads exactly size bytes of the temporary file, or errors. */
static void
read_exact(BufFile *file, void *ptr, size_t size)
{
	BufFileReadExact(file, ptr, size);
}

/*
 * Closes the temporary file.  Called when the file has been read for the
 * last time, and by the executor when the aggregate's memory goes at the
 * end of a group or a query, for states never finalized (a LIMIT, a
 * partial state serialized).  Not called on error: the transaction's
 * resource owner closes the file then.
 */
static void
close_spill(Datum arg)
{
	SizelessState *state = (SizelessState *) DatumGetPointer(arg);

	if (state->spill != NULL)
		BufFileClose(state->spill);
	state->spill = NULL;
	state->nspilled = 0;
}

/*
 * Adds every kept hash to an owned filter, in batches, in the order they
 * came: the temporary file holds the earlier ones.  (Cuckoo filters and the
 * dleft layout place a value where earlier values left room: the order
 * decides their bytes, not what they hold.)
 */
static void
add_all(const SizelessState *state, void *filter)
{
	uint64		buf[READ_BATCH];
	int64		done;

	if (state->spill != NULL)
	{
		BufFileSeek(state->spill, 0, 0, SEEK_SET);
		for (done = 0; done < state->nspilled; done += READ_BATCH)
		{
			int			n = (int) Min(READ_BATCH, state->nspilled - done);

			CHECK_FOR_INTERRUPTS();
			read_exact(state->spill, buf, n * sizeof(uint64));
			state->type->add_hashes(filter, buf, n, state->family, false);
		}
	}
	for (done = 0; done < state->nhashes; done += READ_BATCH)
	{
		CHECK_FOR_INTERRUPTS();
		state->type->add_hashes(filter, state->hashes + done,
								(int) Min(READ_BATCH, state->nhashes - done),
								state->family, false);
	}
}

/*
 * ----------------------------------------------------------------
 * The aggregate's functions, written once against an AmqAggType
 * ----------------------------------------------------------------
 */

/*
 * Transition (internal, anyelement, p [, layout]).  counts_copies says
 * whether the filter counts copies of a value (then every hash is kept).
 */
Datum
amq_sizeless_transfn(FunctionCallInfo fcinfo, const AmqAggType *type,
					 AmqAggReadSizing read_sizing, bool (*counts_copies) (int layout),
					 uint64 seed)
{
	SizelessState *state = PG_ARGISNULL(0) ? NULL : (SizelessState *) PG_GETARG_POINTER(0);

	if (unlikely(state == NULL))
	{
		MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
		AmqAggSizing sizing;

		/* n and p checked before anything is kept: n = 1 stands for any */
		read_sizing(fcinfo, &sizing);
		type->free(type->create(CurrentMemoryContext, &sizing));
		state = state_new(fcinfo, aggcxt, type, &sizing, counts_copies(sizing.layout), seed);
	}
	if (PG_ARGISNULL(1))
		PG_RETURN_POINTER(state);
	if (unlikely(state->hasher == NULL))
	{
		state->hasher = amq_hasher_get(fcinfo, 1);
		state->family = state->hasher->family;
	}
	keep(state, amq_hash_datum(state->hasher, PG_GETARG_DATUM(1), state->seed,
							   state->family));
	PG_RETURN_POINTER(state);
}

/* The filter of a state: sized for its distinct hashes, holding them all. */
static struct varlena *
state_filter(SizelessState *state)
{
	AmqAggSizing sizing = state->sizing;
	double		estimate = hll_estimate(state->registers);
	void	   *filter;
	struct varlena *result;

	if (state->nhashes + state->nspilled == 0)
		return amq_empty_varlena(state->type->format);
	sizing.n = (int64) Max(1.0, ceil(estimate * SIZE_MARGIN));
	filter = state->type->create(CurrentMemoryContext, &sizing);
	Assert(state->type->seed(filter) == state->seed);
	add_all(state, filter);
	if (state->nduplicates > 0)
		state->type->count_duplicates(filter, state->nduplicates);
	/* the final function may change its state (READ_WRITE): read once */
	close_spill(PointerGetDatum(state));
	result = state->type->to_varlena(filter, NULL, 0, state->family);
	state->type->free(filter);
	return result;
}

/* Final (internal) -> filter: the sizeless empty filter over no values. */
Datum
amq_sizeless_final(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	if (PG_ARGISNULL(0))
		PG_RETURN_POINTER(amq_empty_varlena(type->format));
	PG_RETURN_POINTER(state_filter((SizelessState *) PG_GETARG_POINTER(0)));
}

/* Adds every hash of src to state (registers by maximum). */
static void
absorb(SizelessState *state, SizelessState *src)
{
	uint64		buf[READ_BATCH];
	int64		done;
	int			i;

	if (state->hasher == NULL)
	{
		state->hasher = src->hasher;
		state->family = src->family;
	}
	if (src->spill != NULL)
	{
		BufFileSeek(src->spill, 0, 0, SEEK_SET);
		for (done = 0; done < src->nspilled; done += READ_BATCH)
		{
			int			n = (int) Min(READ_BATCH, src->nspilled - done);
			int			j;

			CHECK_FOR_INTERRUPTS();
			read_exact(src->spill, buf, n * sizeof(uint64));
			for (j = 0; j < n; j++)
				keep(state, buf[j]);
		}
	}
	close_spill(PointerGetDatum(src));
	state->nduplicates += src->nduplicates;
	for (done = 0; done < src->nhashes; done++)
		keep(state, src->hashes[done]);
	/* the hashes kept above updated the registers; src's may know more */
	for (i = 0; i < HLL_REGISTERS; i++)
		state->registers[i] = Max(state->registers[i], src->registers[i]);
}

/* Combine: rows seen by different workers must agree on p and the layout. */
Datum
amq_sizeless_combine(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
	SizelessState *s1 = PG_ARGISNULL(0) ? NULL : (SizelessState *) PG_GETARG_POINTER(0);
	SizelessState *s2 = PG_ARGISNULL(1) ? NULL : (SizelessState *) PG_GETARG_POINTER(1);

	if (s2 == NULL)
	{
		if (s1 == NULL)
			PG_RETURN_NULL();
		PG_RETURN_POINTER(s1);
	}
	if (s1 == NULL)
		s1 = state_new(fcinfo, aggcxt, type, &s2->sizing, s2->counts_copies, s2->seed);
	else if (s1->sizing.p != s2->sizing.p || s1->sizing.layout != s2->sizing.layout)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
				 errmsg("%s arguments p and layout must be the same for every row of a group",
						type->agg_name)));
	absorb(s1, s2);
	PG_RETURN_POINTER(s1);
}

/*
 * Serialize (internal) -> bytea: version, p, layout, whether copies count,
 * seed, family, the registers, the duplicates sorted away, the hashes.
 */
Datum
amq_sizeless_serialize(FunctionCallInfo fcinfo)
{
	SizelessState *state = (SizelessState *) PG_GETARG_POINTER(0);
	StringInfoData buf;
	uint64		total = (uint64) (state->nhashes + state->nspilled);
	uint64		chunk[READ_BATCH];
	int64		i;

	if (total > (MaxAllocSize - HLL_REGISTERS - 64) / sizeof(uint64))
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s cannot pass " UINT64_FORMAT " values between parallel workers",
						state->type->agg_name, total),
				 errhint("Give the size: %s(value, n, p), or turn parallel aggregation off for this query.",
						 state->type->agg_name)));
	pq_begintypsend(&buf);
	pq_sendbyte(&buf, STATE_VERSION);
	pq_sendfloat8(&buf, state->sizing.p);
	pq_sendint32(&buf, state->sizing.layout);
	pq_sendbyte(&buf, state->counts_copies ? 1 : 0);
	pq_sendint64(&buf, state->seed);
	pq_sendint32(&buf, state->family);
	pq_sendbytes(&buf, (const char *) state->registers, HLL_REGISTERS);
	pq_sendint64(&buf, (int64) state->nduplicates);
	pq_sendint64(&buf, total);
	if (state->spill != NULL)
	{
		BufFileSeek(state->spill, 0, 0, SEEK_SET);
		for (i = 0; i < state->nspilled; i += READ_BATCH)
		{
			int			n = (int) Min(READ_BATCH, state->nspilled - i);
			int			j;

			read_exact(state->spill, chunk, n * sizeof(uint64));
			for (j = 0; j < n; j++)
				pq_sendint64(&buf, chunk[j]);
		}
	}
	for (i = 0; i < state->nhashes; i++)
		pq_sendint64(&buf, state->hashes[i]);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* Deserialize (bytea, internal) -> internal, checking what it reads. */
Datum
amq_sizeless_deserialize(FunctionCallInfo fcinfo, const AmqAggType *type)
{
	MemoryContext aggcxt = amq_aggregate_context(fcinfo, type->agg_name);
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	StringInfoData buf;
	AmqAggSizing sizing;
	SizelessState *state;
	bool		copies;
	uint64		seed;
	uint32		family;
	uint64		total;
	uint64		i;

	buf.data = VARDATA_ANY(raw);
	buf.len = VARSIZE_ANY_EXHDR(raw);
	buf.maxlen = buf.len;
	buf.cursor = 0;
	if (buf.len < 1 + 8 + 4 + 1 + 8 + 4 + HLL_REGISTERS + 8 + 8 ||
		pq_getmsgbyte(&buf) != STATE_VERSION)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid partial state of %s", type->agg_name)));
	memset(&sizing, 0, sizeof(sizing));
	sizing.n = 1;
	sizing.p = pq_getmsgfloat8(&buf);
	sizing.layout = pq_getmsgint(&buf, 4);
	copies = pq_getmsgbyte(&buf) != 0;
	seed = (uint64) pq_getmsgint64(&buf);
	family = pq_getmsgint(&buf, 4);
	/* the sizing a transition would accept, or its error */
	type->free(type->create(CurrentMemoryContext, &sizing));
	state = state_new(fcinfo, aggcxt, type, &sizing, copies, seed);
	state->family = family;
	memcpy(state->registers, pq_getmsgbytes(&buf, HLL_REGISTERS), HLL_REGISTERS);
	for (i = 0; i < HLL_REGISTERS; i++)
		if (state->registers[i] > 64 - HLL_BITS + 1)
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
					 errmsg("invalid partial state of %s", type->agg_name)));
	state->nduplicates = (uint64) pq_getmsgint64(&buf);
	if (copies && state->nduplicates != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid partial state of %s", type->agg_name)));
	total = (uint64) pq_getmsgint64(&buf);
	if (total != (uint64) (buf.len - buf.cursor) / sizeof(uint64) ||
		(buf.len - buf.cursor) % sizeof(uint64) != 0)
		ereport(ERROR,
				(errcode(ERRCODE_INVALID_BINARY_REPRESENTATION),
				 errmsg("invalid partial state of %s", type->agg_name)));
	for (i = 0; i < total; i++)
	{
		uint64		hash = (uint64) pq_getmsgint64(&buf);

		/* the registers came with the state: keep() only raises them */
		keep(state, hash);
	}
	pq_getmsgend(&buf);
	PG_RETURN_POINTER(state);
}
