-- Step 2: one row per I/O in arrival order with what every later query needs, computed once:
--   w        the --window index, counted from the first arrival;
--   iat_ns   gap since the previous arrival (any device): the arrival process;
--   seq      starts where the previous data I/O on the same device ended (issue order; null for
--            zero-size requests);
--   seq_any  starts where the previous record (any device, any op) ended: the traces README's
--            definition;
--   seek_lbn vscsiStats seekDistance in 512 B LBNs: this start - last LBN of the previous data I/O
--            on the device, so a sequential I/O is +1.
-- Equal timestamps are ordered by device, offset and size, so results do not depend on file order.
CREATE OR REPLACE TABLE ev AS
WITH s AS (SELECT * FROM ev_dev ORDER BY ts_ns, device, "offset", size)
SELECT ts_ns, lat_ns, device, "offset", size, op, sync, fua, preflush, pid, inflight,
    ts_ns - lag(ts_ns) OVER () AS iat_ns,
    (ts_ns - $t0) // $window_ns AS w,
    CASE WHEN size > 0 THEN coalesce("offset" = prev_end, false) END AS seq,
    CASE WHEN size > 0 THEN coalesce("offset" = lag("offset" + size) OVER (), false) END AS seq_any,
    CASE WHEN size > 0 THEN ("offset" - prev_end) // 512 + 1 END AS seek_lbn
FROM s
