/*
 * bloom_io.c
 *		Text and binary input/output of the bloom type, and its bytea casts.
 *
 * The text form is the canonical base64 of the serialized bytes (FORMAT.md),
 * the binary form is those bytes as they are, and a cast to bytea yields them
 * too.  Every way in runs the core validator before the value is used.
 */
#include "postgres.h"

#include "libpq/pqformat.h"
#include "miscadmin.h"
#include "utils/builtins.h"

#include "amqfilter.h"
#include "core/amq_base64.h"

PG_FUNCTION_INFO_V1(bloom_in);
PG_FUNCTION_INFO_V1(bloom_out);
PG_FUNCTION_INFO_V1(bloom_recv);
PG_FUNCTION_INFO_V1(bloom_send);
PG_FUNCTION_INFO_V1(bloom_to_bytea);
PG_FUNCTION_INFO_V1(bloom_from_bytea);

/* base64 group sizes: slices must hold whole groups */
#define B64_BYTES_PER_SLICE	AMQ_SLICE_BYTES
#define B64_CHARS_PER_SLICE	(AMQ_SLICE_BYTES / 3 * 4)

/* bloom_in(cstring): base64 text -> validated value */
Datum
bloom_in(PG_FUNCTION_ARGS)
{
	char	   *str = PG_GETARG_CSTRING(0);
	Node	   *escontext = fcinfo->context;
	size_t		len = strlen(str);
	size_t		bytes;
	size_t		off;
	amq_status	status;
	amq_bloom_view view;
	struct varlena *result;

	status = amq_base64_decoded_len(str, len, &bytes);
	if (status != AMQ_OK)
	{
		amq_report_invalid("bloom", status, AMQ_GATE_TEXT, escontext);
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
			amq_report_invalid("bloom", status, AMQ_GATE_TEXT, escontext);
			return (Datum) 0;
		}
	}

	status = amq_bloom_open((uint8 *) VARDATA(result), bytes, &view);
	if (status != AMQ_OK)
	{
		amq_report_invalid("bloom", status, AMQ_GATE_TEXT, escontext);
		return (Datum) 0;
	}
	PG_RETURN_POINTER(result);
}

/* bloom_out(bloom): value -> base64 text */
Datum
bloom_out(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;
	size_t		bytes;
	size_t		off;
	char	   *result;

	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	bytes = amq_bloom_total_bytes(&view);
	result = palloc(amq_base64_encoded_len(bytes) + 1);
	for (off = 0; off < bytes; off += B64_BYTES_PER_SLICE)
	{
		CHECK_FOR_INTERRUPTS();
		amq_base64_encode(view.base + off, Min(bytes - off, B64_BYTES_PER_SLICE),
						  result + off / 3 * 4);
	}
	result[amq_base64_encoded_len(bytes)] = '\0';
	PG_RETURN_CSTRING(result);
}

/* bloom_recv(internal): the serialized bytes, validated; consumes the message */
Datum
bloom_recv(PG_FUNCTION_ARGS)
{
	StringInfo	buf = (StringInfo) PG_GETARG_POINTER(0);
	size_t		bytes = buf->len - buf->cursor;
	amq_bloom_view view;
	struct varlena *result;

	amq_bloom_open_or_error(buf->data + buf->cursor, bytes, AMQ_GATE_BINARY, &view);
	result = amq_bloom_to_varlena(&view);
	buf->cursor = buf->len;
	PG_RETURN_POINTER(result);
}

/* bloom_send(bloom): the serialized bytes */
Datum
bloom_send(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;
	StringInfoData buf;

	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	pq_begintypsend(&buf);
	pq_sendbytes(&buf, (char *) view.base, amq_bloom_total_bytes(&view));
	PG_RETURN_BYTEA_P(pq_endtypsend(&buf));
}

/* bytea(bloom): the serialized bytes, for tools outside the database */
Datum
bloom_to_bytea(PG_FUNCTION_ARGS)
{
	amq_bloom_view view;

	amq_bloom_arg(fcinfo, 0, &amq_call_cache(fcinfo)->filter[0], &view);
	PG_RETURN_BYTEA_P(amq_bloom_to_varlena(&view));
}

/* bloom(bytea): bytes built elsewhere, validated like binary input */
Datum
bloom_from_bytea(PG_FUNCTION_ARGS)
{
	bytea	   *raw = PG_GETARG_BYTEA_PP(0);
	amq_bloom_view view;

	amq_bloom_open_or_error(VARDATA_ANY(raw), VARSIZE_ANY_EXHDR(raw),
							AMQ_GATE_BINARY, &view);
	PG_RETURN_POINTER(amq_bloom_to_varlena(&view));
}
