/*
 * micro.c
 *		Micro-benchmark of the filter cores, without PostgreSQL: nanoseconds
 *		per added and per probed hash for every bloom layout and the cuckoo
 *		filter, next to two floors measured in the same run on an array of
 *		the same size: the memory floor (one prefetched write, or one read,
 *		of a random cache line per hash) and the loop floor (the hashes
 *		read and summed).  What a layout costs above its memory floor is
 *		its own work; what the floor costs is the machine's.
 *
 *		PostgreSQL probes one row at a time, with a row's executor work
 *		between two probes, so one probe's cache misses cannot overlap the
 *		next one's.  "One at a time" measures that: each probe completes
 *		before the next starts.  Its floor reads, one key at a time,
 *		as many random cache lines as a present key's probe reads (blocked
 *		1, classic and counting k, dleft its d = 4 buckets, cuckoo its 2
 *		buckets), requested together: what a layout's probe costs in SQL at
 *		least, whatever the code.
 *
 *		make micro-bench [MICRO_N=10000000] [MICRO_P=0.01]
 *
 * Hashes are splitmix64 of 1..n (adds, then probes of present keys) and of
 * n+1..2n (probes of absent keys), added 256 at a time as the aggregates
 * do.  Each figure is the median of 5 runs.
 */
#define _POSIX_C_SOURCE 199309L

#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "amq_bloom.h"
#include "amq_bytes.h"
#include "amq_cuckoo.h"
#include "amq_status.h"

#define BATCH 256
#define RUNS 5

static uint64_t
splitmix64(uint64_t x)
{
	x += 0x9e3779b97f4a7c15ULL;
	x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
	x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
	return x ^ (x >> 31);
}

static double
now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e9 + ts.tv_nsec;
}

static int
cmp_double(const void *a, const void *b)
{
	double		x = *(const double *) a,
				y = *(const double *) b;

	return (x > y) - (x < y);
}

static double
median(double *v)
{
	qsort(v, RUNS, sizeof(double), cmp_double);
	return v[RUNS / 2];
}

static uint64_t *adds;
static uint64_t *probes;
static uint64_t n;
static volatile uint64_t sink;

/*
 * Waits until every instruction before it has completed (lfence on x86-64),
 * as a probe in SQL waits for its misses before the executor reaches the
 * next row's probe.  A data dependency on the answer would not do: the
 * answer comes out of predicted branches, so the next probe would start
 * before the misses of this one are resolved.  Elsewhere a compiler barrier
 * only, and "one at a time" is then no different from the probe loop.
 */
static inline void
one_at_a_time(void)
{
#if defined(__x86_64__) && (defined(__GNUC__) || defined(__clang__))
	__builtin_ia32_lfence();
#elif defined(__GNUC__) || defined(__clang__)
	__asm__ __volatile__("":::"memory");
#endif
}

/* Stops the benchmark: a filter the core refused to build or fill. */
static void
fail(const char *name, const char *what, amq_status status)
{
	fprintf(stderr, "%s: %s: %s\n", name, what, amq_status_text(status));
	exit(1);
}

static void *
xmalloc(size_t bytes)
{
	void	   *p = malloc(bytes);

	if (p == NULL)
	{
		fprintf(stderr, "out of memory (%zu bytes)\n", bytes);
		exit(1);
	}
	return p;
}

/*
 * The floors over an array of the given bytes: adds (writes), probes
 * (reads), probes one at a time reading lines_per_probe lines each, and the
 * bare loop.
 */
static void
floors(size_t bytes, unsigned lines_per_probe, double *add_ns,
	   double *probe_ns, double *serial_ns, double *loop_ns)
{
	uint8_t    *a = xmalloc(bytes);
	uint64_t	lines = bytes / 64;
	double		t_add[RUNS], t_probe[RUNS], t_serial[RUNS], t_loop[RUNS];
	int			r;

	memset(a, 0, bytes);
	for (r = 0; r < RUNS; r++)
	{
		double		t0 = now_ns();
		uint64_t	i, s = 0;

		for (i = 0; i < n; i++)
		{
			if (i + 8 < n)
				__builtin_prefetch(a + fastrange64(adds[i + 8], lines) * 64, 1);
			a[fastrange64(adds[i], lines) * 64 + (adds[i] & 63)] |= 1;
		}
		t_add[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		for (i = 0; i < n; i++)
			s += a[fastrange64(probes[i], lines) * 64 + (probes[i] & 63)];
		t_probe[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		for (i = 0; i < n; i++)
		{
			uint64_t	got = 0;
			unsigned	l;

			/* the lines of one key are independent: their misses overlap */
			for (l = 0; l < lines_per_probe; l++)
				got += a[fastrange64(adds[i] + l * UINT64_C(0x9e3779b97f4a7c15), lines) * 64];
			s += got;
			one_at_a_time();
		}
		t_serial[r] = (now_ns() - t0) / n;
		t0 = now_ns();
		for (i = 0; i < n; i++)
			s += probes[i] >> 63;
		t_loop[r] = (now_ns() - t0) / n;
		sink += s;
	}
	*add_ns = median(t_add);
	*probe_ns = median(t_probe);
	*serial_ns = median(t_serial);
	*loop_ns = median(t_loop);
	free(a);
}

static void
report(const char *name, size_t bytes, double add, double present,
	   double absent, double serial, unsigned lines_per_probe)
{
	double		fadd, fprobe, fserial, floop;

	floors(bytes, lines_per_probe, &fadd, &fprobe, &fserial, &floop);
	printf("| %s | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %.1f | %u | %.1f | %.1f |\n",
		   name, bytes / 1048576.0, add, fadd, present, absent, fprobe,
		   serial, lines_per_probe, fserial, floop);
}

static uint64_t
bloom_probe(const void *view, uint64_t hash)
{
	return amq_bloom_may_contain((const amq_bloom_view *) view, hash);
}

static uint64_t
cuckoo_probe(const void *view, uint64_t hash)
{
	return amq_cuckoo_may_contain((const amq_cuckoo_view *) view, hash);
}

/*
 * The probe timings of one filter, ns per probe: present keys in a tight
 * loop, absent keys in a tight loop, present keys one at a time.  Inline,
 * so that each caller's probe function is called directly.  Exits on a
 * false negative.
 */
static inline void
time_probes(const char *name, uint64_t (*probe) (const void *, uint64_t),
			const void *view, double *present, double *absent, double *serial)
{
	double		t0;
	uint64_t	i,
				hits = 0,
				serial_hits = 0;

	t0 = now_ns();
	for (i = 0; i < n; i++)
		hits += probe(view, adds[i]);
	*present = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++)
		sink += probe(view, probes[i]);
	*absent = (now_ns() - t0) / n;
	t0 = now_ns();
	for (i = 0; i < n; i++)
	{
		serial_hits += probe(view, adds[i]);
		one_at_a_time();
	}
	*serial = (now_ns() - t0) / n;
	if (hits != n || serial_hits != n)
	{
		fprintf(stderr, "%s: a false negative\n", name);
		exit(1);
	}
}

static void
bench_bloom(const char *name, int layout, double p)
{
	amq_bloom_params params;
	double		t_add[RUNS], t_present[RUNS], t_probe[RUNS], t_serial[RUNS];
	uint8_t    *buf = NULL;
	amq_bloom_view view;
	amq_status	status;
	int			r;

	if ((status = amq_bloom_size(n, p, layout, &params)) != AMQ_OK)
	{
		printf("| %s | (%s) |\n", name, amq_status_text(status));
		return;
	}
	for (r = 0; r < RUNS; r++)
	{
		double		t0;
		uint64_t	i;

		free(buf);
		buf = xmalloc(params.bytes);
		amq_bloom_init(buf, &params, n, p, 0);
		if ((status = amq_bloom_open(buf, params.bytes, &view)) != AMQ_OK)
			fail(name, "open", status);
		t0 = now_ns();
		for (i = 0; i < n; i += BATCH)
			if ((status = amq_bloom_add_many(&view, adds + i,
											 n - i < BATCH ? n - i : BATCH, 1)) != AMQ_OK)
				fail(name, "add", status);
		t_add[r] = (now_ns() - t0) / n;
		time_probes(name, bloom_probe, &view, &t_present[r], &t_probe[r],
					&t_serial[r]);
	}
	free(buf);
	report(name, params.bytes, median(t_add), median(t_present), median(t_probe),
		   median(t_serial),
		   layout == AMQ_BLOOM_LAYOUT_BLOCKED ? 1 :
		   layout == AMQ_BLOOM_LAYOUT_DLEFT ? AMQ_BLOOM_DLEFT_TABLES : view.hashes);
}

static void
bench_cuckoo(double p)
{
	amq_cuckoo_params params;
	double		t_add[RUNS], t_present[RUNS], t_probe[RUNS], t_serial[RUNS];
	uint8_t    *buf = NULL;
	amq_cuckoo_view view;
	amq_status	status;
	int			r;

	if ((status = amq_cuckoo_size(n, p, &params)) != AMQ_OK)
	{
		printf("| cuckoo | (%s) |\n", amq_status_text(status));
		return;
	}
	for (r = 0; r < RUNS; r++)
	{
		double		t0;
		uint64_t	i;

		free(buf);
		buf = xmalloc(params.bytes);
		amq_cuckoo_init(buf, &params, n, p, 0);
		if ((status = amq_cuckoo_open(buf, params.bytes, &view)) != AMQ_OK)
			fail("cuckoo", "open", status);
		t0 = now_ns();
		for (i = 0; i < n; i += BATCH)
		{
			size_t		done;
			size_t		count = n - i < BATCH ? n - i : BATCH;

			if (amq_cuckoo_add_many(&view, adds + i, count, 1, &done) != AMQ_OK)
			{
				fprintf(stderr, "cuckoo: full after %llu adds\n",
						(unsigned long long) (i + done));
				exit(1);
			}
		}
		t_add[r] = (now_ns() - t0) / n;
		time_probes("cuckoo", cuckoo_probe, &view, &t_present[r], &t_probe[r],
					&t_serial[r]);
	}
	free(buf);
	report("cuckoo", params.bytes, median(t_add), median(t_present), median(t_probe),
		   median(t_serial), 2);
}

int
main(void)
{
	const char *env_n = getenv("MICRO_N");
	const char *env_p = getenv("MICRO_P");
	double		p = env_p ? atof(env_p) : 0.01;
	uint64_t	i;

	n = env_n ? strtoull(env_n, NULL, 10) : 10000000;
	/* two arrays of n hashes: up to 2^30 keys, 16 GB */
	if (n < 1 || n > (UINT64_C(1) << 30) || !(p > 0.0 && p < 1.0))
	{
		fprintf(stderr, "MICRO_N must be 1 to 2^30 and MICRO_P between 0 and 1 (got %s, %s)\n",
				env_n ? env_n : "default", env_p ? env_p : "default");
		return 2;
	}
	adds = xmalloc(n * sizeof(uint64_t));
	probes = xmalloc(n * sizeof(uint64_t));
	for (i = 0; i < n; i++)
	{
		adds[i] = splitmix64(i + 1);
		probes[i] = splitmix64(n + i + 1);
	}
	printf("n = %llu, p = %g; ns per hash, median of %d runs\n\n",
		   (unsigned long long) n, p, RUNS);
	printf("| filter | MB | add | add floor | probe, present | probe, absent | probe floor | present, one at a time | lines | one at a time floor | loop floor |\n");
	printf("|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|\n");
	bench_bloom("bloom blocked", AMQ_BLOOM_LAYOUT_BLOCKED, p);
	bench_bloom("bloom classic", AMQ_BLOOM_LAYOUT_CLASSIC, p);
	bench_bloom("bloom counting", AMQ_BLOOM_LAYOUT_COUNTING, p);
	bench_bloom("bloom dleft", AMQ_BLOOM_LAYOUT_DLEFT, p);
	bench_cuckoo(p);
	return 0;
}
