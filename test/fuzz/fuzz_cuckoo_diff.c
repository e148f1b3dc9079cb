/*
 * fuzz_cuckoo_diff.c
 *		libFuzzer harness: differential test of the cuckoo filter against an
 *		exact multiset.
 *
 * Input: byte 0 picks the capacity n (1..24), byte 1 the target rate p from
 * a small table that includes 0.5 (4-bit fingerprints, so fingerprints and
 * bucket pairs collide and growth happens early); every further byte is an
 * operation on one of 64 keys (key = byte & 63, hash = a fixed mix of the
 * key, distinct per key):
 *
 *	op 0 (0x00..0x3f)  add the key
 *	op 1 (0x40..0x7f)  delete the key, only if the exact multiset holds it
 *	                   (else probe it)
 *	op 2 (0x80..0xbf)  probe the key
 *	op 3 (0xc0..0xff)  keys 0..7: union with a filter built from the same
 *	                   multiset (every multiplicity doubles); keys 8..63:
 *	                   a burst, 8 * (key / 8) copies of key mod 8, so that
 *	                   a few values get many copies while the other keys'
 *	                   fingerprints share their buckets
 *
 * The same operations run on a cuckoo filter (growing as the glue does, with
 * amq_cuckoo_add_growing; a filter that would pass LIMIT_BYTES ends the run)
 * and on the exact multiset (a count per key hash).  Checked after each
 * operation:
 *	- no false negative: may_contain is true and count >= the true
 *	  multiplicity for the key touched (and for every key after a union, a
 *	  growth and at the end), and count = the multiplicity exactly for a
 *	  key that shares its fingerprint and bucket pair with no other key;
 *	- adding a key that is already present never adds a table: its copies
 *	  are counted once its pair is full, whatever shares its buckets (but
 *	  for one table in a filter without counters whose growth table is
 *	  shorter than a counter section: it grows instead);
 *	- delete of a present key succeeds;
 *	- view.items equals the multiset's total;
 *	- the filter still passes amq_cuckoo_open on exactly view.bytes.
 *
 * Any violation traps (see fuzz_common.h).
 */
#include "fuzz_common.h"
#include "amq_cuckoo.h"

#define NKEYS			64
#define LIMIT_BYTES		(1024 * 1024)	/* stop growing past this: keeps runs fast */
#define LIMIT_UNION		1024			/* no union past this many items */

static const double rates[] = {0.5, 0.5, 0.3, 0.25, 0.1, 0.01, 0.001, 1e-6};

/*
 * Keys that share fingerprint and first-table bucket pair with another key
 * of this run's geometry: their counts may exceed their multiplicity.
 * Values that share them in a larger table share them in the first (tables
 * nest), so the others are exact in every table.
 */
static bool collides[NKEYS];

typedef struct filter
{
	uint8_t    *buf;
	size_t		room;
	amq_cuckoo_view v;
} filter;

static uint64_t
key_hash(unsigned key)
{
	uint64_t	s = UINT64_C(0x1234567) + key;

	return fuzz_splitmix(&s);
}

static void
reopen(filter *f)
{
	size_t		bytes = f->v.bytes;

	FUZZ_CHECK(amq_cuckoo_open(f->buf, bytes, &f->v) == AMQ_OK);
	FUZZ_CHECK(f->v.bytes == bytes);
}

static void
reserve(filter *f, size_t need)
{
	if (need <= f->room)
		return;
	f->buf = realloc(f->buf, need);
	if (f->buf == NULL)
		abort();
	f->room = need;
	reopen(f);
}

static bool
filter_new(filter *f, uint64_t n, double p)
{
	amq_cuckoo_params params;

	FUZZ_CHECK(amq_cuckoo_size(n, p, &params) == AMQ_OK);
	f->buf = fuzz_malloc(params.bytes);
	f->room = params.bytes;
	amq_cuckoo_init(f->buf, &params, n, p, AMQ_CUCKOO_DEFAULT_SEED);
	FUZZ_CHECK(amq_cuckoo_open(f->buf, params.bytes, &f->v) == AMQ_OK);
	FUZZ_CHECK(f->v.tables == 1 && f->v.items == 0);
	return true;
}

/* amq_cuckoo_add_growing's reserve function: room up to LIMIT_BYTES. */
static uint8_t *
reserve_within_limit(void *ctx, size_t need)
{
	filter	   *f = ctx;

	if (need > LIMIT_BYTES)
		return NULL;
	reserve(f, need);
	return f->buf;
}

/*
 * What a union may ask room for: no more than both filters' bytes, but for
 * the room a counter section needs while it is rebuilt larger.
 */
static size_t merge_limit;

/*
 * amq_cuckoo_merge_step's reserve function: exactly the room asked for, in
 * a fresh buffer (the old one freed, so that a stale base is caught), while
 * the union needs no more than both filters together.
 */
static uint8_t *
reserve_for_merge(void *ctx, size_t need)
{
	filter	   *f = ctx;
	uint8_t    *nbuf;

	FUZZ_CHECK(need > f->v.bytes && need <= merge_limit);
	reopen(f);
	nbuf = fuzz_malloc(need);
	memcpy(nbuf, f->buf, f->v.bytes);
	free(f->buf);
	f->buf = nbuf;
	f->room = need;
	return nbuf;
}

/*
 * Adds one hash, growing when full; false when growth would pass the limit.
 * A hash reported present already (its fingerprint is in its pair in some
 * table, or counted) must not need a table: its copy is counted if there is
 * no room, unless the filter has no counter section and a growth table
 * would be shorter than one (docs/format.md, step 4 of adding).
 */
static bool
filter_add(filter *f, uint64_t hash)
{
	uint32_t	tables = f->v.tables;
	bool		present = amq_cuckoo_may_contain(&f->v, hash);
	bool		tiny = f->v.counters == 0 &&
		amq_cuckoo_table_bytes(amq_cuckoo_growth_buckets(&f->v), f->v.fp_bits) <
		(size_t) AMQ_CUCKOO_MIN_COUNTERS * AMQ_CUCKOO_COUNTER_SIZE;
	size_t		done = 0;
	amq_status	st = amq_cuckoo_add_growing(&f->v, &hash, 1, 7,
											reserve_within_limit, f, &done);

	if (st == AMQ_ERR_TOO_LARGE)
	{
		FUZZ_CHECK(done == 0);
		return false;
	}
	FUZZ_CHECK(st == AMQ_OK && done == 1);
	if (present)
		FUZZ_CHECK(f->v.tables == tables || (tiny && f->v.tables == tables + 1));
	if (f->v.tables != tables)
		reopen(f);
	return true;
}

static void
mark_collisions(const filter *f)
{
	uint64_t	pair[NKEYS][2];
	uint32_t	fp[NKEYS];
	unsigned	i,
				j;

	for (i = 0; i < NKEYS; i++)
	{
		uint64_t	h = key_hash(i);
		uint64_t	b1 = amq_cuckoo_index(h, f->v.base_buckets);

		fp[i] = amq_cuckoo_fingerprint(h, f->v.fp_bits);
		pair[i][0] = b1;
		pair[i][1] = amq_cuckoo_alternate(b1, fp[i], f->v.base_buckets, 0);
		collides[i] = false;
	}
	for (i = 0; i < NKEYS; i++)
		for (j = i + 1; j < NKEYS; j++)
			if (fp[i] == fp[j] &&
				((pair[i][0] == pair[j][0] && pair[i][1] == pair[j][1]) ||
				 (pair[i][0] == pair[j][1] && pair[i][1] == pair[j][0])))
				collides[i] = collides[j] = true;
}

static void
check_key(const filter *f, const uint32_t *cnt, unsigned key)
{
	uint64_t	h = key_hash(key);

	if (cnt[key] > 0)
		FUZZ_CHECK(amq_cuckoo_may_contain(&f->v, h));
	if (collides[key])
		FUZZ_CHECK(amq_cuckoo_count(&f->v, h) >= cnt[key]);
	else
		FUZZ_CHECK(amq_cuckoo_count(&f->v, h) == cnt[key]);
	FUZZ_CHECK(amq_cuckoo_may_contain(&f->v, h) ==
			   (amq_cuckoo_count(&f->v, h) > 0));
}

static void
check_all(filter *f, const uint32_t *cnt, uint64_t total)
{
	unsigned	k;

	reopen(f);
	FUZZ_CHECK(f->v.items == total);
	for (k = 0; k < NKEYS; k++)
		check_key(f, cnt, k);
}

int
LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
	filter		a;
	uint32_t	cnt[NKEYS] = {0};
	uint64_t	total = 0;
	uint64_t	n;
	double		p;
	size_t		i;

	if (size < 2)
		return 0;
	n = 1 + data[0] % 24;
	p = rates[data[1] % (sizeof(rates) / sizeof(rates[0]))];
	filter_new(&a, n, p);
	mark_collisions(&a);

	for (i = 2; i < size; i++)
	{
		unsigned	op = data[i] >> 6;
		unsigned	key = data[i] & 63;
		uint64_t	h = key_hash(key);

		if (op == 1 && cnt[key] == 0)
			op = 2;
		if (op == 3 && key >= 8)
		{
			unsigned	copies = 8 * (key / 8);
			unsigned	c;

			key %= 8;
			h = key_hash(key);
			for (c = 0; c < copies; c++)
			{
				if (!filter_add(&a, h))
					break;
				cnt[key]++;
				total++;
			}
			if (c < copies)
				break;
			FUZZ_CHECK(a.v.items == total);
			reopen(&a);
			check_key(&a, cnt, key);
			continue;
		}

		if (op == 0)
		{
			if (!filter_add(&a, h))
				break;
			cnt[key]++;
			total++;
		}
		else if (op == 1)
		{
			FUZZ_CHECK(amq_cuckoo_delete(&a.v, h));
			cnt[key]--;
			total--;
		}
		else if (op == 3)
		{
			filter		b;
			amq_cuckoo_merge m;
			unsigned	k;
			uint32_t	c;
			bool		ok = true;

			if (total > LIMIT_UNION)
				continue;
			filter_new(&b, n, p);
			for (k = 0; k < NKEYS && ok; k++)
				for (c = 0; c < cnt[k] && ok; c++)
					ok = filter_add(&b, key_hash(k));
			if (ok)
			{
				bool		done = false;
				size_t		sum = a.v.bytes + b.v.bytes;

				check_all(&b, cnt, total);

				/*
				 * both filters, plus the old counter section while a larger
				 * one is rebuilt (at most both inputs' entries, rounded up)
				 */
				merge_limit = sum + 2 * ((size_t) a.v.counters + b.v.counters +
										 AMQ_CUCKOO_MIN_COUNTERS) * AMQ_CUCKOO_COUNTER_SIZE;
				FUZZ_CHECK(amq_cuckoo_merge_begin(&m, &a.v, &b.v,
												  reserve_for_merge, &a) == AMQ_OK);
				while (!done)
				{
					FUZZ_CHECK(amq_cuckoo_merge_step(&m, &a.v, &b.v, 1 + key,
													 &done) == AMQ_OK);
					FUZZ_CHECK(a.v.bytes <= a.room);
					reopen(&a);
				}
				FUZZ_CHECK(a.v.bytes <= merge_limit);
				for (k = 0; k < NKEYS; k++)
					cnt[k] *= 2;
				total *= 2;
				check_all(&a, cnt, total);
			}
			free(b.buf);
			continue;
		}

		/* after every operation */
		FUZZ_CHECK(a.v.items == total);
		reopen(&a);
		check_key(&a, cnt, key);
	}
	check_all(&a, cnt, total);
	free(a.buf);
	return 0;
}
