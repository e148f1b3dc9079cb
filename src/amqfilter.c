/*
 * amqfilter.c
 *		Module magic, the one place where core status codes become errors,
 *		and the few fmgr helpers every type's functions share.
 *
 * Every gate that accepts bytes (text input, recv, the bytea cast, aggregate
 * deserialization, any read of a stored value) runs the same core validator
 * and reports its verdict through amq_report_invalid(), so one fault reads
 * the same wherever it is caught; only the errcode says which gate caught it.
 */
#include "postgres.h"

#include "fmgr.h"
#include "access/htup_details.h"
#include "funcapi.h"
#if PG_VERSION_NUM >= 160000
#include "nodes/miscnodes.h"
#endif

#include "amqfilter.h"

PG_MODULE_MAGIC;

/* errcode for a validation failure at a gate */
static int
invalid_errcode(amq_status status, AmqGate gate)
{
	if (status == AMQ_ERR_VERSION)
		return ERRCODE_FEATURE_NOT_SUPPORTED;
	switch (gate)
	{
		case AMQ_GATE_TEXT:
			return ERRCODE_INVALID_TEXT_REPRESENTATION;
		case AMQ_GATE_BINARY:
			return ERRCODE_INVALID_BINARY_REPRESENTATION;
		case AMQ_GATE_STORED:
			break;
	}
	return ERRCODE_DATA_CORRUPTED;
}

/*
 * Reports a value that failed validation.  With a soft-error context (text
 * input on PostgreSQL 16 and later) the error is saved there and false is
 * returned, so the caller returns NULL; otherwise it does not return.
 */
bool
amq_report_invalid(const AmqFormat *format, amq_status status, AmqGate gate,
				   Node *escontext)
{
	const char *typname = format->name;
	const char *what = gate == AMQ_GATE_TEXT ? "invalid input syntax for type"
		: "invalid value of type";

#if PG_VERSION_NUM >= 160000
	errsave(escontext,
			(errcode(invalid_errcode(status, gate)),
			 errmsg("%s %s: %s", what, typname, amq_status_text(status)),
			 status == AMQ_ERR_VERSION ?
			 errhint("This build of amqfilter reads format version %d.",
					 format->version) : 0));
#else
	(void) escontext;
	ereport(ERROR,
			(errcode(invalid_errcode(status, gate)),
			 errmsg("%s %s: %s", what, typname, amq_status_text(status)),
			 status == AMQ_ERR_VERSION ?
			 errhint("This build of amqfilter reads format version %d.",
					 format->version) : 0));
#endif
	return false;
}

/* Reports n, p or a size that the core refused before anything was allocated. */
void
amq_report_sizing(const char *typname, amq_status status, int64 n, double p)
{
	switch (status)
	{
		case AMQ_ERR_PARAM_N:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s capacity n must be at least 1", typname),
					 errdetail("n = " INT64_FORMAT " was given.", n)));
			break;
		case AMQ_ERR_PARAM_P:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s false-positive rate p must be greater than 0 and less than 1",
							typname),
					 errdetail("p = %g was given.", p)));
			break;
		case AMQ_ERR_PARAM_P_SMALL:
			ereport(ERROR,
					(errcode(ERRCODE_INVALID_PARAMETER_VALUE),
					 errmsg("%s false-positive rate p must be at least %g",
							typname, AMQ_CUCKOO_MIN_FPR),
					 errdetail("p = %g was given; 32-bit fingerprints reach no lower rate.", p),
					 errhint("Use a bloom filter for lower rates.")));
			break;
		case AMQ_ERR_TOO_LARGE:
			ereport(ERROR,
					(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
					 errmsg("%s for n = " INT64_FORMAT " at p = %g would exceed the 1 GB size limit",
							typname, n, p),
					 errhint("Use a larger p, a smaller n, or one filter per partition.")));
			break;
		default:
			elog(ERROR, "unexpected sizing status %d", (int) status);
	}
	pg_unreachable();
}

/* Reports two filters that cannot be merged, naming both geometries. */
void
amq_report_mismatch(amq_status status, const amq_bloom_view *a,
					const amq_bloom_view *b)
{
	if (status == AMQ_ERR_FAMILY_MISMATCH)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine bloom filters built from values of different types"),
				 errdetail("The filters hash their values with different hash operator families.")));
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("cannot combine bloom filters of different geometry"),
			 errdetail("Left: %s layout, " UINT64_FORMAT " bits, k = %u, seed %llx; "
					   "right: %s layout, " UINT64_FORMAT " bits, k = %u, seed %llx.",
					   amq_layout_name(a->layout), a->nbits, a->hashes,
					   (unsigned long long) a->seed,
					   amq_layout_name(b->layout), b->nbits, b->hashes,
					   (unsigned long long) b->seed),
			 errhint("Build both filters with the same n, p and layout.")));
	pg_unreachable();
}

/* Reports two cuckoo filters that cannot be merged, naming both geometries. */
void
amq_report_cuckoo_mismatch(amq_status status, const amq_cuckoo_view *a,
						   const amq_cuckoo_view *b)
{
	amq_cuckoo_table ta;
	amq_cuckoo_table tb;

	if (status == AMQ_ERR_FAMILY_MISMATCH)
		ereport(ERROR,
				(errcode(ERRCODE_DATA_EXCEPTION),
				 errmsg("cannot combine cuckoo filters built from values of different types"),
				 errdetail("The filters hash their values with different hash operator families.")));
	amq_cuckoo_table_at(a, 0, &ta);
	amq_cuckoo_table_at(b, 0, &tb);
	ereport(ERROR,
			(errcode(ERRCODE_DATA_EXCEPTION),
			 errmsg("cannot combine cuckoo filters of different geometry"),
			 errdetail("Left: " UINT64_FORMAT " buckets, %u-bit fingerprints, seed %llx; "
					   "right: " UINT64_FORMAT " buckets, %u-bit fingerprints, seed %llx.",
					   ta.buckets, a->fp_bits, (unsigned long long) a->seed,
					   tb.buckets, b->fp_bits, (unsigned long long) b->seed),
			 errhint("Build both filters with the same n and p.")));
	pg_unreachable();
}

/* Builds the composite result of a record-returning function. */
Datum
amq_return_record(FunctionCallInfo fcinfo, Datum *values, bool *nulls)
{
	TupleDesc	tupdesc;

	if (get_call_result_type(fcinfo, NULL, &tupdesc) != TYPEFUNC_COMPOSITE)
		elog(ERROR, "return type must be a row type");
	tupdesc = BlessTupleDesc(tupdesc);
	return HeapTupleGetDatum(heap_form_tuple(tupdesc, values, nulls));
}

/* The aggregate context, or an error for a call outside an aggregate. */
MemoryContext
amq_aggregate_context(FunctionCallInfo fcinfo, const char *fname)
{
	MemoryContext aggcxt;

	if (!AggCheckCallContext(fcinfo, &aggcxt))
		elog(ERROR, "%s called in non-aggregate context", fname);
	return aggcxt;
}
