-- Each scope's fsync-family calls per batch of its consecutive windows (noise_batch), per call and
-- latency bucket (2% wide, as in noise_batches.sql). A call belongs to the window it starts in,
-- between the first and the last arrival of I/O, as in sync_calls.sql; the --between span's, inside it.
SELECT nb.scope, nb.b, y.call::VARCHAR AS call,
    CASE WHEN y.lat_ns > 0 THEN round(ln(y.lat_ns) * 50)::INTEGER END AS lb,
    count(*) AS n
FROM sync_src y CROSS JOIN fp_params p JOIN noise_batch nb ON nb.w = (y.ts_ns - p.t0) // p.window_ns
WHERE y.ts_ns >= p.t0 AND y.ts_ns <= p.t1 AND (nb.scope <> 'between' OR y.ts_ns BETWEEN p.lo AND p.hi)
GROUP BY ALL
