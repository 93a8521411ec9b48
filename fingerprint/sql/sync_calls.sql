-- fsync-family syscalls as the application saw them: count and nearest-rank latency per call.
SELECT call::VARCHAR AS call, count(*) AS calls, count(lat_ns) AS timed,
    quantile_disc(lat_ns, 0.5) AS p50_ns, quantile_disc(lat_ns, 0.99) AS p99_ns,
    avg(lat_ns) AS mean_ns
FROM cur_sync
GROUP BY ALL
ORDER BY calls DESC
