-- Processes by I/O count, where the trace names them.
SELECT pid, any_value(comm) AS comm, count(*) AS ios, sum(size) AS bytes,
    count(*) FILTER (WHERE op = 'read') AS reads
FROM cur
WHERE pid IS NOT NULL OR comm IS NOT NULL
GROUP BY pid
ORDER BY ios DESC, pid
LIMIT $limit
