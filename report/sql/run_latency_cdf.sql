-- A run's latency distribution per kind of request (the report's CDFs): the nearest-rank latency at
-- each probability of $probs.
SELECT kind, count(*) AS n, quantile_disc(lat_ns, $probs) AS q_ns
FROM run_lat
WHERE lat_ns IS NOT NULL
GROUP BY kind
ORDER BY kind
