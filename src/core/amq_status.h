/*
 * amq_status.h
 *		Status codes returned by the amqfilter core.
 *
 * The core never reports errors itself: every fallible call returns one of
 * these codes and the PostgreSQL glue turns it into an ereport with the
 * errcode that fits the gate the bytes came through (text input, binary
 * input, a stored value).  amq_status_text() gives the one sentence that
 * explains each code, so every gate words the same fault the same way.
 */
#ifndef AMQ_STATUS_H
#define AMQ_STATUS_H

typedef enum amq_status
{
	AMQ_OK = 0,

	/* validation of serialized filters: one code per rule, in check order */
	AMQ_ERR_TRUNCATED,			/* shorter than the fixed header */
	AMQ_ERR_MAGIC,				/* first four bytes are not the magic */
	AMQ_ERR_VERSION,			/* format version this build cannot read */
	AMQ_ERR_LAYOUT,				/* unknown layout code */
	AMQ_ERR_HASH_SCHEME,		/* unknown hash scheme code */
	AMQ_ERR_RESERVED,			/* flags or reserved bytes are not zero */
	AMQ_ERR_GEOMETRY,			/* bits, hashes or sizing out of range */
	AMQ_ERR_UNBOUND_COUNT,		/* no element family but a nonzero count */
	AMQ_ERR_COUNT,				/* cuckoo: a table counts more items than slots */
	AMQ_ERR_LENGTH,				/* total length differs from the header's */

	/* text form */
	AMQ_ERR_BASE64,				/* not canonical base64 */

	/* sizing parameters */
	AMQ_ERR_PARAM_N,			/* n < 1 */
	AMQ_ERR_PARAM_P,			/* p not in (0, 1) */
	AMQ_ERR_PARAM_P_SMALL,		/* p below what the filter type can reach */
	AMQ_ERR_TOO_LARGE,			/* filter would exceed the size limit */

	/* operations on two filters */
	AMQ_ERR_GEOMETRY_MISMATCH,	/* different geometry (layout, sizes, hashes, fingerprint width) or seed */
	AMQ_ERR_FAMILY_MISMATCH,	/* built from values of different type families */
	AMQ_ERR_NO_GEOMETRY,		/* the sizeless empty filter cannot take values */

	/* not an error: the operation needs a larger buffer (cuckoo growth) */
	AMQ_FULL
} amq_status;

extern const char *amq_status_text(amq_status status);

#endif							/* AMQ_STATUS_H */
