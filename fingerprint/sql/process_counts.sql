-- Per process (pid, where the trace names one), window of $window_ns from $t0 (w) and --between
-- flag (btw): its data requests and their bytes, reads, writes and flushes, and a command name the
-- trace gives it (top_processes.sql).
CREATE OR REPLACE TEMP TABLE fp_procs AS
SELECT (ts_ns - $t0) // $window_ns AS w, coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, pid,
    count(*) FILTER (WHERE op::VARCHAR IN ('read', 'write', 'discard')) AS ios,
    coalesce(sum(size) FILTER (WHERE op::VARCHAR IN ('read', 'write', 'discard')), 0) AS bytes,
    count(*) FILTER (WHERE op::VARCHAR = 'read') AS reads,
    count(*) FILTER (WHERE op::VARCHAR = 'write') AS writes,
    count(*) FILTER (WHERE op::VARCHAR = 'flush') AS flushes,
    any_value(comm) AS comm
FROM io
WHERE pid IS NOT NULL AND ($device IS NULL OR device::VARCHAR = $device)
GROUP BY ALL
