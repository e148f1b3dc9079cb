/*
 * amq_status.c
 *		The one wording of every amqfilter core status code.
 *
 * Kept apart from the code that returns the statuses so that every gate of
 * the glue (text input, binary input, bytea cast, aggregate deserialization,
 * a stored value failing its structural check) explains the same fault with
 * the same words.  The texts are lower-case fragments without a full stop,
 * meant for errdetail-like use after a message that names the gate.
 */
#include "amq_status.h"

/* Explains a status code in one short fragment; never returns NULL. */
const char *
amq_status_text(amq_status status)
{
	switch (status)
	{
		case AMQ_OK:
			return "no error";
		case AMQ_ERR_TRUNCATED:
			return "value is shorter than the fixed header of its format";
		case AMQ_ERR_MAGIC:
			return "value does not start with the magic bytes of its type";
		case AMQ_ERR_VERSION:
			return "value has a format version this build cannot read";
		case AMQ_ERR_LAYOUT:
			return "value has an unknown layout code";
		case AMQ_ERR_HASH_SCHEME:
			return "value has an unknown hash scheme code";
		case AMQ_ERR_RESERVED:
			return "value has nonzero flags or reserved bytes";
		case AMQ_ERR_GEOMETRY:
			return "value has a size, hash count, fingerprint width, capacity or target false-positive rate out of range";
		case AMQ_ERR_UNBOUND_COUNT:
			return "value counts additions but is bound to no element type";
		case AMQ_ERR_COUNT:
			return "value has a table that counts more items than it has slots";
		case AMQ_ERR_LENGTH:
			return "value length does not match the sizes in its header";
		case AMQ_ERR_BASE64:
			return "text is not canonical padded base64";
		case AMQ_ERR_PARAM_N:
			return "expected number of elements must be at least 1";
		case AMQ_ERR_PARAM_P:
			return "false-positive rate must be greater than 0 and less than 1";
		case AMQ_ERR_PARAM_P_SMALL:
			return "false-positive rate is below the smallest this filter type reaches";
		case AMQ_ERR_TOO_LARGE:
			return "filter would exceed the maximum size of about 1 GB";
		case AMQ_ERR_GEOMETRY_MISMATCH:
			return "filters differ in geometry or seed";
		case AMQ_ERR_FAMILY_MISMATCH:
			return "filters were built from values of different type families";
		case AMQ_ERR_NO_GEOMETRY:
			return "the sizeless empty filter cannot take values";
		case AMQ_FULL:
			return "filter is full and must grow";
	}
	/* a value outside the enum: say so rather than crash */
	return "unknown status code";
}
