/*
 * amq_bloom_size.c
 *		Sizing a bloom filter: the geometry whose model false-positive rate
 *		at n keys is at most p, for each layout.
 *
 * Its own file because it is the one part of the bloom core that is
 * numerical analysis rather than bytes: the models below decide a filter's
 * geometry, once, when it is created, and nothing that adds or probes
 * depends on them.  The d-left layout sizes itself (amq_bloom_dleft.c).
 *
 * The classic layout inverts the textbook approximation
 * (1 - e^(-kn/m))^k = p at k = round(log2(1/p)); the counting layout has
 * the same m counters.  Blocks fill unevenly (the keys per block are
 * Poisson distributed), so the blocked layout is sized with the
 * Poisson-weighted per-block model and a search over the number of blocks
 * and k.  Both do all size arithmetic in double and compare against the
 * limit before anything is converted to an integer, so absurd n or p give
 * AMQ_ERR_TOO_LARGE instead of an overflowed size.
 */
#include <math.h>

#include "amq_bloom.h"
#include "amq_bloom_layout.h"

/* k = round(log2(1/p)) clamped to [1, 64]: the classic optimum, rounded. */
static unsigned
classic_hashes(double p)
{
	double		k = floor(-log2(p) + 0.5);

	if (!(k >= 1.0))
		return 1;
	if (k > AMQ_BLOOM_MAX_HASHES)
		return AMQ_BLOOM_MAX_HASHES;
	return (unsigned) k;
}

/* Model false-positive rate of a classic filter: (1 - e^(-kn/m))^k. */
static double
classic_fpr(double n, double m, unsigned k)
{
	return amq_ipow(-expm1(-(double) k * n / m), k);
}

/*
 * Bits a classic filter needs for FPR p at n keys with k hashes, unrounded:
 * m = -kn / ln(1 - p^(1/k)), with p^(1/k) = exp(ln(p)/k) and ln(1-x) by
 * log1p so that p near 1 and tiny p both keep their precision.
 */
static double
classic_bits(double n, double p, unsigned k)
{
	return -(double) k * n / log1p(-exp(log(p) / k));
}

/*
 * Model FPR of a blocked filter whose keys per block are Poisson(lambda):
 * the sum over j of P(j keys in a block) * E[fill^k], fill being the share of
 * the block's 512 bits set by j keys' j*k bit choices.  The textbook model
 * takes E[fill^k] = E[fill]^k, which by Jensen's inequality understates it:
 * measured rates came out 1%, 2%, 6% and 10% above that model at p = 1e-2 ..
 * 1e-5.  A second-order (delta method) term corrects for the variance of the
 * fill:  E[f^k] ~ mu^k (1 + k(k-1)/2 var/mu^2), with mu and var from the
 * occupancy of t = j*k balls in 512 bins:
 *	 empty = 512 a, var(empty) = 512 a + 512*511 b - 512^2 a^2,
 *	 a = (1 - 1/512)^t, b = (1 - 2/512)^t.
 * The sum runs over lambda +- (10 sqrt(lambda) + 10), outside which the
 * Poisson mass is negligible; the pmf, a and b are carried by recurrence from
 * the first term, so each term costs a few multiplications.
 */
static double
blocked_fpr(double lambda, unsigned k)
{
	const double m = AMQ_BLOOM_BLOCK_BITS;
	double		spread = 10.0 * sqrt(lambda) + 10.0;
	double		jlo = floor(lambda - spread);
	double		jhi = ceil(lambda + spread);
	double		qa,
				qb;				/* per-key factors of a and b */
	double		a,
				b;
	double		pmf;
	double		sum = 0.0;
	double		j;

	if (jlo < 0.0)
		jlo = 0.0;
	qa = exp((double) k * log1p(-1.0 / m));
	qb = exp((double) k * log1p(-2.0 / m));
	a = exp(jlo * (double) k * log1p(-1.0 / m));
	b = exp(jlo * (double) k * log1p(-2.0 / m));
	pmf = exp(jlo * log(lambda) - lambda - lgamma(jlo + 1.0));

	for (j = jlo; j <= jhi; j += 1.0)
	{
		double		mu = 1.0 - a;

		if (mu > 0.0)
		{
			double		var = (m * a + m * (m - 1.0) * b - m * m * a * a) / (m * m);
			double		corr = 1.0 + 0.5 * (double) k * ((double) k - 1.0) * var / (mu * mu);

			sum += pmf * amq_ipow(mu, k) * corr;
		}
		pmf *= lambda / (j + 1.0);
		a *= qa;
		b *= qb;
	}
	return sum;
}

/*
 * Minimises blocked_fpr over k for one lambda, walking from *k (the FPR is
 * unimodal in k).  If stop_at >= 0, returns as soon as some k reaches it:
 * the search for the block count only needs "is p reachable".  On return
 * *k and *fpr hold the best k found and its FPR.
 */
static void
blocked_best_k(double lambda, double stop_at, unsigned *k, double *fpr)
{
	unsigned	best_k = *k;
	double		best = blocked_fpr(lambda, best_k);
	int			dir;

	if (best <= stop_at)
		goto done;

	/* find the downhill direction */
	dir = 0;
	if (best_k < AMQ_BLOOM_MAX_HASHES)
	{
		double		f = blocked_fpr(lambda, best_k + 1);

		if (f < best)
		{
			best = f;
			best_k++;
			dir = 1;
		}
	}
	if (dir == 0 && best_k > 1)
	{
		double		f = blocked_fpr(lambda, best_k - 1);

		if (f < best)
		{
			best = f;
			best_k--;
			dir = -1;
		}
	}

	/* walk while it keeps improving */
	while (dir != 0 && best > stop_at)
	{
		unsigned	next = best_k + dir;
		double		f;

		if (next < 1 || next > AMQ_BLOOM_MAX_HASHES)
			break;
		f = blocked_fpr(lambda, next);
		if (!(f < best))
			break;
		best = f;
		best_k = next;
	}

done:
	*k = best_k;
	*fpr = best;
}

/*
 * Sizes the blocked layout: the smallest block count (at least the classic
 * size) at which some k reaches p, found by geometric growth to a feasible
 * count and a binary search below it.  The classic size is a lower bound
 * because uneven block fill only costs bits, and starting there keeps the
 * search to a few dozen model evaluations.
 */
static amq_status
size_blocked(double n, double p, amq_bloom_params *out)
{
	const uint64_t max_blocks = AMQ_BLOOM_MAX_NBITS / AMQ_BLOOM_BLOCK_BITS;
	const unsigned classic_k = classic_hashes(p);
	unsigned	k = classic_k;
	double		m = classic_bits(n, p, k);
	double		lo_d;
	uint64_t	bad = 0;		/* largest block count known to miss p */
	uint64_t	good;			/* smallest block count known to reach p */
	uint64_t	cand;
	double		fpr;

	lo_d = ceil(m / AMQ_BLOOM_BLOCK_BITS);
	if (!(lo_d <= (double) max_blocks))
		return AMQ_ERR_TOO_LARGE;
	cand = (lo_d < 1.0) ? 1 : (uint64_t) lo_d;

	/* grow by 1/8 until p is reachable */
	for (;;)
	{
		blocked_best_k(n / (double) cand, p, &k, &fpr);
		if (fpr <= p)
			break;
		bad = cand;
		if (cand == max_blocks)
			return AMQ_ERR_TOO_LARGE;
		cand += (cand / 8 > 0) ? cand / 8 : 1;
		if (cand > max_blocks)
			cand = max_blocks;
	}
	good = cand;

	/* binary search in (bad, good] */
	while (bad != 0 && good - bad > 1)
	{
		uint64_t	mid = bad + (good - bad) / 2;
		unsigned	kmid = k;

		blocked_best_k(n / (double) mid, p, &kmid, &fpr);
		if (fpr <= p)
		{
			good = mid;
			k = kmid;
		}
		else
			bad = mid;
	}

	/* the best k at the chosen size, not just one that reaches p */
	blocked_best_k(n / (double) good, -1.0, &k, &fpr);

	/*
	 * When the filter is tiny (n much smaller than a block holds), the best k
	 * can be far above the classic log2(1/p): each extra hash still lowers
	 * the FPR, but every probe pays for it.  Take the classic k whenever it
	 * already reaches p at this size.
	 */
	if (k > classic_k)
	{
		double		f = blocked_fpr(n / (double) good, classic_k);

		if (f <= p)
		{
			k = classic_k;
			fpr = f;
		}
	}

	out->layout = AMQ_BLOOM_LAYOUT_BLOCKED;
	out->nbits = good * AMQ_BLOOM_BLOCK_BITS;
	out->hashes = k;
	out->expected_fpr = fpr;
	return AMQ_OK;
}

/*
 * Sizes the classic layout: the model's exact m, rounded up to 64 bits.
 * The counting layout has the same m counters of bits_per bits each.
 */
static amq_status
size_classic(double n, double p, unsigned bits_per, amq_bloom_params *out)
{
	const double limit = (double) (AMQ_BLOOM_MAX_NBITS / bits_per);
	unsigned	k = classic_hashes(p);
	double		m = classic_bits(n, p, k);
	double		fpr;

	m = ceil(m / 64.0) * 64.0;
	if (m < 64.0)
		m = 64.0;
	if (!(m <= limit))
		return AMQ_ERR_TOO_LARGE;

	/*
	 * Rounding up can only lower the FPR, but guard against the last ulp of
	 * the inverse landing just above p.
	 */
	fpr = classic_fpr(n, m, k);
	while (fpr > p)
	{
		m += 64.0;
		if (!(m <= limit))
			return AMQ_ERR_TOO_LARGE;
		fpr = classic_fpr(n, m, k);
	}

	out->layout = bits_per == 1 ? AMQ_BLOOM_LAYOUT_CLASSIC : AMQ_BLOOM_LAYOUT_COUNTING;
	out->nbits = (uint64_t) m * bits_per;
	out->hashes = k;
	out->expected_fpr = fpr;
	return AMQ_OK;
}

/* Validates n and p, then sizes the requested layout. */
amq_status
amq_bloom_size(uint64_t n, double p, int layout, amq_bloom_params *out)
{
	amq_status	status;

	if (n < 1)
		return AMQ_ERR_PARAM_N;
	if (!(p > 0.0 && p < 1.0))
		return AMQ_ERR_PARAM_P;

	if (layout == AMQ_BLOOM_LAYOUT_CLASSIC)
		status = size_classic((double) n, p, 1, out);
	else if (layout == AMQ_BLOOM_LAYOUT_COUNTING)
		status = size_classic((double) n, p, AMQ_BLOOM_COUNTER_BITS, out);
	else if (layout == AMQ_BLOOM_LAYOUT_DLEFT)
		status = amq_dleft_size((double) n, p, AMQ_BLOOM_MAX_NBITS, out);
	else if (layout == AMQ_BLOOM_LAYOUT_BLOCKED)
		status = size_blocked((double) n, p, out);
	else
		return AMQ_ERR_GEOMETRY;
	if (status != AMQ_OK)
		return status;

	out->bytes = AMQ_BLOOM_HEADER_SIZE + (size_t) (out->nbits / 8);
	out->bits_per_key = (double) out->nbits / (double) n;
	return AMQ_OK;
}
