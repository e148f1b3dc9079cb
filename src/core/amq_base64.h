/*
 * amq_base64.h
 *		Strict, canonical base64 (RFC 4648, with padding, no whitespace).
 *
 * The text form of every amqfilter type is the base64 encoding of its
 * serialized bytes.  Decoding accepts exactly the strings the encoder
 * produces, so text -> value -> text is the identity and a value has one
 * text form.  Encoding and decoding work on independent 3-byte / 4-character
 * groups, so callers may process long inputs in slices (to check for
 * interrupts) as long as slice boundaries fall on group boundaries.
 */
#ifndef AMQ_BASE64_H
#define AMQ_BASE64_H

#include <stddef.h>
#include <stdint.h>

#include "amq_status.h"

/* Characters needed to encode len bytes (no terminator). */
extern size_t amq_base64_encoded_len(size_t len);

/* Encodes len bytes from src into dst (amq_base64_encoded_len(len) chars). */
extern void amq_base64_encode(const uint8_t *src, size_t len, char *dst);

/*
 * Decoded length of a base64 string of len characters, checking only its
 * shape (length a multiple of 4, padding only in the last group).  Returns
 * AMQ_ERR_BASE64 on a bad shape.
 */
extern amq_status amq_base64_decoded_len(const char *src, size_t len,
										 size_t *out_len);

/*
 * Decodes len characters into dst (which holds the decoded length).  Rejects
 * characters outside the alphabet, misplaced padding and nonzero pad bits.
 */
extern amq_status amq_base64_decode(const char *src, size_t len, uint8_t *dst);

#endif							/* AMQ_BASE64_H */
