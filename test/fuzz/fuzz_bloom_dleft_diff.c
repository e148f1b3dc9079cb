/*
 * fuzz_bloom_dleft_diff.c
 *		libFuzzer harness: the dleft layout of bloom against the exact
 *		multiset of keys it holds, under random add, delete, union and
 *		intersection sequences (see bloom_multiset_diff.h).
 */
#include "amq_bloom.h"

#define DIFF_LAYOUT AMQ_BLOOM_LAYOUT_DLEFT

#include "bloom_multiset_diff.h"
