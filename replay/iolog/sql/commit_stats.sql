-- Per calling process: its replayed sync calls by kind, and the writes they forced (temp tables
-- `calls` and `marks`), for the stream plan: a caller whose calls forced writes gets a commit job.
SELECT
    c.pid,
    count(*) AS calls,
    count(*) FILTER (WHERE c.action = 'datasync') AS datasync,
    count(*) FILTER (WHERE c.action = 'sync') AS sync,
    coalesce(sum(f.forced), 0)::BIGINT AS forced_writes,
    count(f.forced) AS calls_that_forced
FROM calls AS c
LEFT JOIN (
    SELECT call_id, count(*) AS forced FROM marks WHERE kind = 'forced' GROUP BY call_id
) AS f USING (call_id)
GROUP BY c.pid
ORDER BY calls DESC, c.pid
