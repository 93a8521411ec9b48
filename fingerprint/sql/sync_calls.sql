-- fsync-family syscalls as the application saw them, per scope and call: count and nearest-rank
-- latency. A call belongs to the window it starts in (regime_w, scope_map); whole and the regimes
-- take the calls between the first and the last arrival of I/O, between those inside --between.
WITH s AS (
    SELECT y.call::VARCHAR AS call, y.lat_ns, r.rg,
        coalesce(y.ts_ns BETWEEN p.lo AND p.hi, false) AS btw, y.ts_ns <= p.t1 AS in_span
    FROM sync_src y CROSS JOIN fp_params p JOIN regime_w r ON r.w = (y.ts_ns - p.t0) // p.window_ns
    WHERE y.ts_ns >= p.t0
)
SELECT m.scope, call, count(*) AS calls, count(lat_ns) AS timed,
    quantile_disc(lat_ns, 0.5) AS p50_ns, quantile_disc(lat_ns, 0.99) AS p99_ns, avg(lat_ns) AS mean_ns
FROM s JOIN scope_map m USING (rg, btw)
WHERE m.scope = 'between' OR in_span
GROUP BY m.scope, call
ORDER BY m.scope, calls DESC, call
