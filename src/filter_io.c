/*
 * filter_io.c
 *		Text and binary input/output of the filter types, and their bytea
 *		casts.
 *
 * Both types share one scheme: the text form is the canonical base64 of the
 * serialized bytes (FORMAT.md), the binary form is those bytes as they are,
 * and a cast to bytea yields them too.  Every way in runs the type's core
 * validator before the value is used.  The functions here are written once
 * against an AmqFormat; each SQL-visible function is a one-line wrapper.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "amqfilter.h"
#include "core/amq_base64.h"

/* base64 group sizes: slices must hold whole groups */
#define B64_BYTES_PER_SLICE	AMQ_SLICE_BYTES
#define B64_CHARS_PER_SLICE	(AMQ_SLICE_BYTES / 3 * 4)

static amq_status
bloom_validate(const uint8 *buf, size_t len)
{
	amq_bloom_view view;

	return amq_bloom_open(buf, len, &view);
}

static amq_status
cuckoo_validate(const uint8 *buf, size_t len)
{
	amq_cuckoo_view view;

	return amq_cuckoo_open(buf, len, &view);
}

const AmqFormat amq_bloom_format = {
	"bloom", AMQ_BLOOM_VERSION, AMQ_BLOOM_HEADER_SIZE, bloom_validate
};

const AmqFormat amq_cuckoo_format = {
	"cuckoo", AMQ_CUCKOO_VERSION, AMQ_CUCKOO_HEADER_SIZE, cuckoo_validate
};

/* A palloc'd varlena holding a copy of len bytes. */
static struct varlena *
bytes_to_varlena(const uint8 *data, size_t len)
{
	struct varlena *result = palloc(VARHDRSZ + len);

	SET_VARSIZE(result, VARHDRSZ + len);
	memcpy(VARDATA(result), data, len);
	return result;
}

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
	amq_status	status;

	(void) amq_filter_arg(fcinfo, 0, cache, format, data, len);
	status = format->validate(*data, *len);
	if (status != AMQ_OK)
		amq_report_invalid(format, status, AMQ_GATE_STORED, NULL);
}

/* type_in(cstring): base64 text -> validated value */
static Datum
filter_in(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	char	   *str = PG_GETARG_CSTRING(0);
	Node	   *escontext = fcinfo->context;
	size_t		len = strlen(str);
	size_t		bytes;
	size_t		off;
	amq_status	status;
	struct varlena *result;

	status = amq_base64_decoded_len(str, len, &bytes);
	if (status != AMQ_OK)
	{
		amq_report_invalid(format, status, AMQ_GATE_TEXT, escontext);
		return (Datum) 0;
	}

	/* bounded by the input, which is already in memory */
	result = palloc(VARHDRSZ + bytes);
	SET_VARSIZE(result, VARHDRSZ + bytes);
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

	status = format->validate((uint8 *) VARDATA(result), bytes);
	if (status != AMQ_OK)
	{
		amq_report_invalid(format, status, AMQ_GATE_TEXT, escontext);
		return (Datum) 0;
	}
	PG_RETURN_POINTER(result);
}

/* type_out(value): value -> base64 text */
static Datum
filter_out(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	uint8	   *data;
	size_t		bytes;
	size_t		off;
	char	   *result;

	stored_arg(fcinfo, format, &data, &bytes);
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
static Datum
filter_recv(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	size_t		bytes = buf->len - buf->cursor;
	const uint8 *data = (const uint8 *) buf->data + buf->cursor;
	amq_status	status = format->validate(data, bytes);

	if (status != AMQ_OK)
		amq_report_invalid(format, status, AMQ_GATE_BINARY, NULL);
	buf->cursor = buf->len;
	PG_RETURN_POINTER(bytes_to_varlena(data, bytes));
}

/* type_send(value): the serialized bytes */
static Datum
filter_send(FunctionCallInfo fcinfo, const AmqFormat *format)
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
static Datum
filter_to_bytea(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	uint8	   *data;
	size_t		bytes;

	stored_arg(fcinfo, format, &data, &bytes);
	PG_RETURN_BYTEA_P(bytes_to_varlena(data, bytes));
}

/* type(bytea): bytes built elsewhere, validated like binary input */
static Datum
filter_from_bytea(FunctionCallInfo fcinfo, const AmqFormat *format)
{
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	const uint8 *data = (const uint8 *) VARDATA_ANY(raw);
	size_t		bytes = VARSIZE_ANY_EXHDR(raw);
	amq_status	status = format->validate(data, bytes);

	if (status != AMQ_OK)
		amq_report_invalid(format, status, AMQ_GATE_BINARY, NULL);
	PG_RETURN_POINTER(bytes_to_varlena(data, bytes));
}

/* The SQL-visible functions of both types. */
#define AMQ_IO_FUNCTIONS(type) \
PG_FUNCTION_INFO_V1(type##_in); \
Datum type##_in(PG_FUNCTION_ARGS) { return filter_in(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_out); \
Datum type##_out(PG_FUNCTION_ARGS) { return filter_out(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_recv); \
Datum type##_recv(PG_FUNCTION_ARGS) { return filter_recv(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_send); \
Datum type##_send(PG_FUNCTION_ARGS) { return filter_send(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_to_bytea); \
Datum type##_to_bytea(PG_FUNCTION_ARGS) { return filter_to_bytea(fcinfo, &amq_##type##_format); } \
PG_FUNCTION_INFO_V1(type##_from_bytea); \
Datum type##_from_bytea(PG_FUNCTION_ARGS) { return filter_from_bytea(fcinfo, &amq_##type##_format); }

AMQ_IO_FUNCTIONS(bloom)
AMQ_IO_FUNCTIONS(cuckoo)
