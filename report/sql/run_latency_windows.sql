-- A run's latency over time (the report of a replay): per window of $window_ns from the run's first
-- request or call, the nearest-rank p50 and p99 of each kind of request (`lat`: op, latency, time)
-- that the caller unions from the capture's block requests and its sync calls.
SELECT kind, (ts_ns - $t0) // $window_ns AS w, count(*) AS n,
    quantile_disc(lat_ns, 0.5) AS p50_ns, quantile_disc(lat_ns, 0.99) AS p99_ns
FROM run_lat
WHERE lat_ns IS NOT NULL
GROUP BY kind, w
ORDER BY kind, w
