-- Deterministic false-positive check: the hashes are seeded, so the counts
-- are the same on every run; the bounds are what the sizing promises.

-- 100,000 keys, 1,000,000 probes of keys never added.  At p the expected
-- number of false positives is 10,000 (p = 1%) or 1,000 (p = 0.1%), with a
-- standard deviation of about 100 and 32; the bound allows 10% over p.
SELECT layout, p,
       fp BETWEEN 1 AND p * 1000000 * 1.10 AS fpr_within_bound,
       round(bits_per_key::numeric, 2) >= round((1.44 * log(2, (1 / p)::numeric)), 2) AS above_lower_bound
  FROM (SELECT l AS layout, p,
               (SELECT count(*) FROM generate_series(100001, 1100000) g WHERE f @> g) AS fp,
               (bloom_info(f)).bits / 100000.0 AS bits_per_key
          FROM (SELECT l, p, bloom_agg(g, 100000, p, l) AS f
                  FROM generate_series(1, 100000) g,
                       (VALUES ('blocked'), ('classic')) v(l),
                       (VALUES (0.01::float8), (0.001)) w(p)
                 GROUP BY l, p) s) t
 ORDER BY layout, p;
