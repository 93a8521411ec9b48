-- Each scope's data-request latency in buckets 10% wide (lb = round(10 ln(lat_ns)); a LogHistogram
-- in docs/fingerprint-schema.md), per op and for reads and writes together ('all', as the headline
-- latency is): the distribution `iofp diff` tests two fingerprints' latencies with. From the exact
-- latency value counts per (regime class, --between flag) part (fp_values, value_counts.sql: m 0),
-- a bucket being a function of the value, rolled up into scopes through scope_map: a few hundred
-- thousand rows where a pass over the requests took 2.5 s at 50 M rows.
WITH p AS (
    SELECT rg, btw, op, round(ln(v) * 10)::INTEGER AS lb, sum(n) AS n
    FROM fp_values
    WHERE m = 0 AND v > 0 AND op IN ('read', 'write')
    GROUP BY ALL
)
SELECT s.scope, p.op, p.lb, sum(p.n)::BIGINT AS n
FROM p JOIN scope_map s USING (rg, btw)
GROUP BY ALL
UNION ALL
SELECT s.scope, 'all' AS op, p.lb, sum(p.n)::BIGINT AS n
FROM p JOIN scope_map s USING (rg, btw)
GROUP BY ALL
