-- Duration and in-flight distribution of each side; the replay's span starts at its anchor ($tr0).
-- Parameters: $tr0.
SELECT
    side,
    count(*) AS ios,
    max(ts_ns) - CASE side WHEN 'exp' THEN min(ts_ns) ELSE $tr0 END AS span_ns,
    avg(inflight) AS inflight_mean,
    quantile_disc(inflight, 0.99) AS inflight_p99,
    max(inflight) AS inflight_max
FROM sides
GROUP BY side
ORDER BY side
