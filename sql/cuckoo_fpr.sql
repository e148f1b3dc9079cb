-- Deterministic false-positive check: the hashes are seeded and evictions
-- are driven by the values' hashes, so the counts are the same on every run;
-- the bounds are what the sizing promises.
-- 100,000 keys, 1,000,000 probes of keys never added.  At p the model rate
-- of a filter at its design load is 0.74% (p = 1%) or 0.093% (p = 0.1%):
-- about 7,400 and 930 false positives, standard deviations about 86 and 30.

CREATE SCHEMA cuckoo_fpr;
SET search_path = cuckoo_fpr, public;

CREATE TABLE measured AS
  SELECT p, n, fp / 1000000.0 AS rate, (cuckoo_info(f)).*
    FROM (SELECT p, n, f, (SELECT count(*) FROM generate_series(100001, 1100000) g WHERE f @> g) AS fp
            FROM (SELECT p, n, cuckoo_agg(g, n, p) AS f
                    FROM generate_series(1, 100000) g,
                         (VALUES (0.01::float8), (0.001)) w(p),
                         (VALUES (100000::int8), (10000)) x(n)
                   GROUP BY p, n) s) t;

-- sized for the keys: the rate is below p but not far below (the filter is
-- not oversized), bits per key are what the sizing promises (below 11 at 1%),
-- and cuckoo_info's estimate is within 10% of the measured rate
SELECT p, tables, items,
       rate <= p AS fpr_within_target,
       rate > p / 4 AS fpr_not_far_below,
       round(bytes * 8 / 100000.0, 2) AS bits_per_key,
       bytes * 8 / 100000.0 <= CASE WHEN p = 0.01 THEN 11 ELSE 14 END AS bits_per_key_bound,
       abs(est_fpr - rate) < 0.1 * rate AS estimate_close
  FROM measured WHERE n = 100000
 ORDER BY p;

-- sized for a tenth of the keys: the filter grew, nothing failed, the rate
-- exceeds p (the price of growth), and cuckoo_info says so
SELECT p, tables > 1 AS grew, items,
       rate > p AS fpr_above_target,
       est_fpr > target_fpr AS estimate_above_target,
       abs(est_fpr - rate) < 0.1 * rate AS estimate_close
  FROM measured WHERE n = 10000
 ORDER BY p;
