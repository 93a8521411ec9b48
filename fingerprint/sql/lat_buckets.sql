-- Each scope's data-request latency in buckets 10% wide (lb = round(10 ln(lat_ns)); a LogHistogram
-- in docs/fingerprint-schema.md), per op and for reads and writes together ('all', as the headline
-- latency is): the distribution `iofp diff` tests two fingerprints' latencies with. A hash aggregate
-- over the (regime class, --between flag) parts, rolled up into scopes through scope_map.
WITH p AS (
    SELECT rg, btw, op, round(ln(lat_ns) * 10)::INTEGER AS lb, count(*) AS n
    FROM scoped_io
    WHERE lat_ns > 0 AND op IN ('read', 'write')
    GROUP BY ALL
)
SELECT s.scope, p.op, p.lb, sum(p.n)::BIGINT AS n
FROM p JOIN scope_map s USING (rg, btw)
GROUP BY ALL
UNION ALL
SELECT s.scope, 'all' AS op, p.lb, sum(p.n)::BIGINT AS n
FROM p JOIN scope_map s USING (rg, btw)
GROUP BY ALL
