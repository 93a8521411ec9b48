-- Per sync call kind, what a run's capture (or a trace) measured: counts, the span and the latency
-- of each call from entry to return (what the caller waited: the writeback it forced and the flush),
-- nearest rank. `all` is every call that makes data durable (not sync_file_range, which waits for
-- nothing): the commit figure. Calls of processes other than $comm (NULL = all) are left out.
-- Parameters: $comm, $t_lo_ns, $t_hi_ns.
WITH s AS (
    SELECT call::VARCHAR AS call, ts_ns, lat_ns FROM sync
    WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm)
        AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
)
SELECT
    call,
    count(*) AS count,
    min(ts_ns) AS first_ns,
    max(ts_ns) AS last_ns,
    quantile_disc(lat_ns, 0.5) AS p50,
    quantile_disc(lat_ns, 0.99) AS p99,
    quantile_disc(lat_ns, 0.999) AS p999
FROM s
GROUP BY call
UNION ALL
SELECT
    'all', count(*), min(ts_ns), max(ts_ns),
    quantile_disc(lat_ns, 0.5), quantile_disc(lat_ns, 0.99), quantile_disc(lat_ns, 0.999)
FROM s
WHERE call <> 'sync_file_range'
HAVING count(*) > 0
ORDER BY call
