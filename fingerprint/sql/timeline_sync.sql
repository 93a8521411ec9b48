-- The report's commit timeline: fsync-family calls per window of $window_ns from $t0 (a call belongs
-- to the window it starts in, as sync_calls.sql counts it) and their latency as the application saw
-- it, entry to return, nearest-rank p50 and p99. Windows without a call have no row.
SELECT (ts_ns - $t0) // $window_ns AS k, count(*) AS calls,
    quantile_disc(lat_ns, [0.5, 0.99]) AS lat_q
FROM sync_src
WHERE ts_ns >= $t0 AND (ts_ns - $t0) // $window_ns < $nwin
GROUP BY k
