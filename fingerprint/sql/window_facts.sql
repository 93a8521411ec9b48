-- What the per-window table leaves out, in one more pass over the rows, per window of $window_ns from
-- $t0 (w) and --between flag (btw), in three groupings (set: which one a row is):
--   0  per process (pid): data requests and their bytes, reads, writes and flushes, and a command
--      name the trace gives it (top_processes.sql);
--   1  per device: the scopes' device counts (scope_stats.sql);
--   2  per op and latency bucket 2% wide (lb = round(50 ln(lat_ns))): the noise batches' latency
--      percentiles (noise_batches.sql), a hash aggregate where exact percentiles per batch would sort
--      every row again.
CREATE OR REPLACE TEMP TABLE fp_facts AS
SELECT CASE WHEN grouping(pid) = 0 THEN 0 WHEN grouping(device) = 0 THEN 1 ELSE 2 END::UTINYINT AS set,
    w, btw, pid, device, op, lb,
    count(*) AS n,
    count(*) FILTER (WHERE data) AS ios,
    coalesce(sum(size) FILTER (WHERE data), 0) AS bytes,
    count(*) FILTER (WHERE op = 'read') AS reads,
    count(*) FILTER (WHERE op = 'write') AS writes,
    count(*) FILTER (WHERE op = 'flush') AS flushes,
    any_value(comm) AS comm
FROM (
    SELECT (ts_ns - $t0) // $window_ns AS w, coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, pid,
        device::VARCHAR AS device, op::VARCHAR AS op, op::VARCHAR IN ('read', 'write', 'discard') AS data,
        size, comm, CASE WHEN lat_ns > 0 THEN round(ln(lat_ns) * 50)::INTEGER END AS lb
    FROM io
    WHERE $device IS NULL OR device::VARCHAR = $device
)
GROUP BY GROUPING SETS ((w, btw, pid), (w, btw, device), (w, btw, op, lb))
