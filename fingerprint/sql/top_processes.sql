-- Processes by I/O count per scope, where the trace names them (comm from the trace, by pid).
-- Per-window partials (one hash update per row) rolled up into scopes on their few rows.
WITH p AS (
    SELECT getvariable('fp').regime[w + 1] AS rg, btw, pid,
        count(*) AS ios, sum(size) AS bytes, count(*) FILTER (WHERE op = 'read') AS reads
    FROM io WHERE pid IS NOT NULL
    GROUP BY w, btw, pid
), c AS (
    SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
            WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
            ELSE 'whole' END AS scope,
        pid, sum(ios)::BIGINT AS ios, sum(bytes) AS bytes, sum(reads)::BIGINT AS reads
    FROM p
    GROUP BY GROUPING SETS ((pid), (rg, pid), (btw, pid))
), top AS (
    SELECT *, row_number() OVER (PARTITION BY scope ORDER BY ios DESC, pid) AS rank
    FROM c WHERE scope IS NOT NULL
    QUALIFY rank <= $limit
)
SELECT scope, pid, (SELECT any_value(comm) FROM io_src s WHERE s.pid = top.pid) AS comm, ios, bytes, reads
FROM top ORDER BY scope, rank
