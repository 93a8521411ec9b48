-- Processes by data requests per scope, where the trace names them (comm from the trace, by pid):
-- per-process streams, with their reads, writes, flushes and bytes. Partials per (regime class,
-- --between flag, pid) (one hash update per row) rolled up into scopes on their few rows.
WITH p AS (
    SELECT rg, btw, pid,
        count(*) FILTER (WHERE data) AS ios, coalesce(sum(size) FILTER (WHERE data), 0) AS bytes,
        count(*) FILTER (WHERE op = 'read') AS reads, count(*) FILTER (WHERE op = 'write') AS writes,
        count(*) FILTER (WHERE op = 'flush') AS flushes
    FROM scoped_io WHERE pid IS NOT NULL
    GROUP BY rg, btw, pid
), c AS (
    SELECT m.scope, pid, sum(ios)::BIGINT AS ios, sum(bytes)::BIGINT AS bytes, sum(reads)::BIGINT AS reads,
        sum(writes)::BIGINT AS writes, sum(flushes)::BIGINT AS flushes
    FROM p JOIN scope_map m USING (rg, btw)
    GROUP BY m.scope, pid
), top AS (
    SELECT *, row_number() OVER (PARTITION BY scope ORDER BY ios DESC, flushes DESC, pid) AS rank
    FROM c
    QUALIFY rank <= $limit
)
SELECT scope, pid, (SELECT any_value(comm) FROM io s WHERE s.pid = top.pid) AS comm, ios, bytes, reads,
    writes, flushes
FROM top ORDER BY scope, rank
