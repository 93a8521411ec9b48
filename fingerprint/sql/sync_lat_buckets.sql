-- Each scope's fsync-family calls per call in latency buckets 10% wide (lat_buckets.sql's), the
-- distribution `iofp diff` tests commit latency with. A call belongs to the window it starts in, as in
-- sync_calls.sql: whole and the regimes take the calls between the first and the last arrival of I/O,
-- between those inside --between.
WITH s AS (
    SELECT y.call::VARCHAR AS call, round(ln(y.lat_ns) * 10)::INTEGER AS lb, r.rg,
        coalesce(y.ts_ns BETWEEN p.lo AND p.hi, false) AS btw, y.ts_ns <= p.t1 AS in_span
    FROM sync_src y CROSS JOIN fp_params p JOIN regime_w r ON r.w = (y.ts_ns - p.t0) // p.window_ns
    WHERE y.ts_ns >= p.t0 AND y.lat_ns > 0
)
SELECT m.scope, call, lb, count(*) AS n
FROM s JOIN scope_map m USING (rg, btw)
WHERE m.scope = 'between' OR in_span
GROUP BY ALL
