-- Per op, what a run's capture (or a trace) measured: counts, bytes, the issue-time span and latency
-- percentiles (issue to completion, nearest rank as fio computes them); `all` is the data requests
-- (reads, writes, discards) together. Requests of processes other than $comm (NULL = all) are left
-- out, as in the fidelity comparison (udev's blkid after fio closes the target is not the replay's).
-- Parameters: $comm, $device (NULL = all), $t_lo_ns, $t_hi_ns (half-open, on the trace's clock).
WITH s AS (
    SELECT op::VARCHAR AS op, ts_ns, lat_ns, size FROM io
    WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm)
        AND ($device IS NULL OR device = $device)
        AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
)
SELECT
    op,
    count(*) AS count,
    sum(size) AS bytes,
    min(ts_ns) AS first_ns,
    max(ts_ns) AS last_ns,
    quantile_disc(lat_ns, 0.5) AS p50,
    quantile_disc(lat_ns, 0.99) AS p99,
    quantile_disc(lat_ns, 0.999) AS p999
FROM s
GROUP BY op
UNION ALL
SELECT
    'all', count(*), sum(size), min(ts_ns), max(ts_ns),
    quantile_disc(lat_ns, 0.5), quantile_disc(lat_ns, 0.99), quantile_disc(lat_ns, 0.999)
FROM s
WHERE op IN ('read', 'write', 'discard')
HAVING count(*) > 0
ORDER BY op
