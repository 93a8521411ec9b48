-- Per op, what a replay's capture measured on the candidate device: counts, bytes, the issue-time span
-- and latency percentiles (issue to completion, nearest rank like fio).
-- The I/Os of processes other than $comm (NULL = all) are left out, as in the fidelity comparison.
SELECT
    op::VARCHAR AS op,
    count(*) AS ios,
    sum(size) AS bytes,
    min(ts_ns) AS first_ns,
    max(ts_ns) AS last_ns,
    quantile_disc(lat_ns, 0.5) AS p50_ns,
    quantile_disc(lat_ns, 0.99) AS p99_ns,
    quantile_disc(lat_ns, 0.999) AS p999_ns
FROM io
WHERE $comm IS NULL OR comm IS NULL OR comm = $comm
GROUP BY op
ORDER BY op
