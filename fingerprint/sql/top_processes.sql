-- Processes by I/O count, where the trace names them (comm from the trace, by pid).
WITH c AS (
    SELECT pid, count(*) AS ios, sum(size) AS bytes, count(*) FILTER (WHERE op = 'read') AS reads
    FROM cur WHERE pid IS NOT NULL GROUP BY pid ORDER BY ios DESC, pid LIMIT $limit
)
SELECT c.pid, (SELECT any_value(comm) FROM io_src s WHERE s.pid = c.pid) AS comm, c.ios, c.bytes, c.reads
FROM c ORDER BY c.ios DESC, c.pid
