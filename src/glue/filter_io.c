/*
 * filter_io.c
 *		Text and binary input/output of the filter types, and their bytea
 *		casts.
 *
 * Both types share one scheme: the text form is the canonical base64 of the
 * serialized bytes (docs/format.md), the binary form is those bytes as they
 * are, and a cast to bytea yields them too.  Every way in runs the type's core
 * validator before the value is used.  The functions here are written once
 * against an AmqFormat; the type's own file expands AMQ_FORMAT_FUNCTIONS into
 * the SQL-visible one-line wrappers.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "glue/filter_glue.h"
#include "core/amq_base64.h"

/* base64 group sizes: slices must hold whole groups */
#define B64_BYTES_PER_SLICE	AMQ_SLICE_BYTES
#define B64_CHARS_PER_SLICE	(AMQ_SLICE_BYTES / 3 * 4)

/*
 * The bytes of a stored filter argument, validated (cheaply: validators
 * read headers only).  The cache's view is left alone: these functions need
 * only the bytes.
 */
static void
stored_arg(FunctionCallInfo fcinfo, const AmqFormat *format,
		   uint8 **data, size_t *len)
{
	AmqFilterCache *cache = &amq_call_cache(fcinfo)->filter[0];
	AmqAnyView	view;

	(void) amq_filter_arg(fcinfo, 0, cache, format, data, len);
	amq_open_or_error(format, *data, *len, AMQ_GATE_STORED, &view);
}

/* type_in(cstring): base64 text -> validated value */
Datum
amq_filter_in(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	char	   *str = PG_GETARG_CSTRING(0);
	Node	   *escontext = fcinfo->context;
	size_t		len = strlen(str);
	size_t		bytes;
	size_t		off;
	amq_status	status;
	AmqAnyView	view;
	struct varlena *result;

	status = amq_base64_decoded_len(str, len, &bytes);
	if (status != AMQ_OK)
	{
		amq_report_invalid(format, status, AMQ_GATE_TEXT, escontext);
		return (Datum) 0;
	}

	/* bounded by the input, which is already in memory */
	result = amq_varlena_alloc(bytes);
	for (off = 0; off < len; off += B64_CHARS_PER_SLICE)
	{
		size_t		chars = Min(len - off, B64_CHARS_PER_SLICE);

		CHECK_FOR_INTERRUPTS();
		status = amq_base64_decode(str + off, chars,
								   (uint8 *) VARDATA(result) + off / 4 * 3);
		if (status != AMQ_OK)
		{
			amq_report_invalid(format, status, AMQ_GATE_TEXT, escontext);
			return (Datum) 0;
		}
	}

	status = format->open((uint8 *) VARDATA(result), bytes, &view);
	if (status != AMQ_OK)
	{
		amq_report_invalid(format, status, AMQ_GATE_TEXT, escontext);
		return (Datum) 0;
	}
	PG_RETURN_POINTER(result);
}

/* type_out(value): value -> base64 text */
Datum
amq_filter_out(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	uint8	   *data;
	size_t		bytes;
	size_t		off;
	char	   *result;

	stored_arg(fcinfo, format, &data, &bytes);
	if (amq_base64_encoded_len(bytes) >= MaxAllocSize)
		ereport(ERROR,
				(errcode(ERRCODE_PROGRAM_LIMIT_EXCEEDED),
				 errmsg("%s value of %zu bytes is too large for its text form",
						format->name, bytes),
				 errdetail("Its base64 text would exceed the 1 GB value limit; amqfilter builds no filter above %zu bytes, but an older version did.",
						   AMQ_MAX_FILTER_BYTES),
				 errhint("Binary COPY and a cast to bytea carry it; rebuild it with a larger p or split it to dump it with pg_dump.")));
	result = palloc(amq_base64_encoded_len(bytes) + 1);
	for (off = 0; off < bytes; off += B64_BYTES_PER_SLICE)
	{
		CHECK_FOR_INTERRUPTS();
		amq_base64_encode(data + off, Min(bytes - off, B64_BYTES_PER_SLICE),
						  result + off / 3 * 4);
	}
	result[amq_base64_encoded_len(bytes)] = '\0';
	PG_RETURN_CSTRING(result);
}

/* type_recv(internal): the serialized bytes, validated; consumes the message */
Datum
amq_filter_recv(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	size_t		bytes = buf->len - buf->cursor;
	const uint8 *data = (const uint8 *) buf->data + buf->cursor;
	AmqAnyView	view;

	amq_open_or_error(format, data, bytes, AMQ_GATE_BINARY, &view);
	buf->cursor = buf->len;
	PG_RETURN_POINTER(amq_varlena_copy(data, bytes));
}

/* type_send(value): the serialized bytes */
Datum
amq_filter_send(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	uint8	   *data;
	size_t		bytes;
	StringInfoData buf;

	stored_arg(fcinfo, format, &data, &bytes);
	pq_begintypsend(&buf);
	pq_sendbytes(&buf, (char *) data, bytes);
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* bytea(value): the serialized bytes, for tools outside the database */
Datum
amq_filter_to_bytea(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	uint8	   *data;
	size_t		bytes;

	stored_arg(fcinfo, format, &data, &bytes);
	PG_RETURN_BYTEA_P(amq_varlena_copy(data, bytes));
}

/* type(bytea): bytes built elsewhere, validated like binary input */
Datum
amq_filter_from_bytea(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	const uint8 *data = (const uint8 *) VARDATA_ANY(raw);
	size_t		bytes = VARSIZE_ANY_EXHDR(raw);
	AmqAnyView	view;

	amq_open_or_error(format, data, bytes, AMQ_GATE_BINARY, &view);
	PG_RETURN_POINTER(amq_varlena_copy(data, bytes));
}
