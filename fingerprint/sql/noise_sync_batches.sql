-- Each scope's fsync-family calls per batch of its consecutive windows (noise_batch), per call: the
-- count and the p50 and p99 latency. A call belongs to the window it starts in, between the first and the
-- last arrival of I/O, as in sync_calls.sql.
SELECT nb.scope, nb.b, y.call::VARCHAR AS call, count(*) AS calls,
    quantile_disc(y.lat_ns, 0.5) AS p50_ns, quantile_disc(y.lat_ns, 0.99) AS p99_ns
FROM sync_src y CROSS JOIN fp_params p JOIN noise_batch nb ON nb.w = (y.ts_ns - p.t0) // p.window_ns
WHERE y.ts_ns >= p.t0 AND y.ts_ns <= p.t1
GROUP BY nb.scope, nb.b, y.call
