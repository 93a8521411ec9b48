-- One row per I/O with what every later query needs, computed once:
--   w        the --window index, counted from the first arrival;
--   iat_ns   gap since the previous arrival (any device): the arrival process;
--   seq      starts where the previous data I/O on the same device ended (issue order; flushes
--            and other zero-size requests neither start nor break a run, they are null);
--   seq_any  the same against the previous record on any device (the traces README's definition);
--   seek_lbn vscsiStats seekDistance in 512 B LBNs: this start - last LBN of the previous I/O on
--            the device, so a sequential I/O is +1.
-- rn keeps the order the rows were stored in as the tie-break for equal timestamps.
CREATE OR REPLACE TEMP TABLE ev AS
WITH src AS (
    SELECT ts_ns, lat_ns, device::VARCHAR AS device, "offset", size, op::VARCHAR AS op,
           sync, fua, preflush, pid, comm, inflight, row_number() OVER () AS rn
    FROM io_src
    WHERE $device IS NULL OR device::VARCHAR = $device
), lagged AS (
    SELECT *,
        ts_ns - lag(ts_ns) OVER (ORDER BY ts_ns, rn) AS iat_ns,
        lag("offset" + size) OVER (PARTITION BY size > 0 ORDER BY ts_ns, rn) AS prev_end_any,
        lag("offset" + size) OVER (PARTITION BY device, size > 0 ORDER BY ts_ns, rn) AS prev_end
    FROM src
)
SELECT ts_ns, lat_ns, device, "offset", size, op, sync, fua, preflush, pid, comm, inflight, iat_ns,
    (ts_ns - $t0) // $window_ns AS w,
    CASE WHEN size > 0 THEN coalesce("offset" = prev_end, false) END AS seq,
    CASE WHEN size > 0 THEN coalesce("offset" = prev_end_any, false) END AS seq_any,
    CASE WHEN size > 0 THEN ("offset" - prev_end) // 512 + 1 END AS seek_lbn
FROM lagged
