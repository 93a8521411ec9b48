-- Step 1 of preparing the I/O rows: each device's data I/Os in issue order (zero-size requests such
-- as flushes sorted after them, so they neither start nor break a run), with the end of the
-- previous data I/O on the same device. The ORDER BY feeds a streaming lag (OVER ()), which is
-- one sort instead of one per window function.
CREATE OR REPLACE TABLE ev_dev AS
WITH s AS (
    SELECT ts_ns, lat_ns, device::VARCHAR AS device, "offset", size, op::VARCHAR AS op,
        sync, fua, preflush, pid, inflight
    FROM io_src
    WHERE $device IS NULL OR device::VARCHAR = $device
    ORDER BY device, size = 0, ts_ns, "offset", size
)
SELECT *,
    CASE WHEN size > 0 AND lag(device) OVER () = device AND lag(size) OVER () > 0
        THEN lag("offset" + size) OVER () END AS prev_end
FROM s
