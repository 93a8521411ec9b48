-- The sync calls a replay replays (view `sync`, the trace's fsync-family syscalls), one row each, with
-- the window [ts_ns, end_ns] the caller spent in the call. Replayed: the calls that make data
-- durable (fsync, fdatasync, O_DSYNC writes, msync, sync, syncfs) that returned without error, in
-- the selected span; not sync_file_range (it starts writeback and waits for nothing: its writes are
-- replayed as the writes they are). With --device on a trace of several devices (the sync table
-- names no device) a call is this device's when its caller wrote or flushed the device inside it.
-- `action` is fio's: datasync for fdatasync and O_DSYNC writes (both are fdatasync semantics), sync
-- for the others.
-- Parameters: $device (NULL = all), $multi_device, $t_lo_ns, $t_hi_ns, $reads_only.
CREATE OR REPLACE TEMP TABLE calls AS
SELECT
    row_number() OVER (ORDER BY s.ts_ns, s.pid, s.tid) AS call_id,
    s.ts_ns,
    s.ts_ns + coalesce(s.lat_ns, 0) AS end_ns,
    s.call::VARCHAR AS call,
    CASE WHEN s.call IN ('fdatasync', 'dsync_write') THEN 'datasync' ELSE 'sync' END AS action,
    s.pid
FROM sync AS s
WHERE s.ts_ns >= $t_lo_ns AND s.ts_ns < $t_hi_ns
    AND NOT $reads_only
    AND s.call IN ('fsync', 'fdatasync', 'dsync_write', 'msync', 'sync', 'syncfs')
    AND coalesce(s.ret, 0) >= 0
    AND (
        $device IS NULL OR NOT $multi_device
        OR EXISTS (
            SELECT 1 FROM io
            WHERE io.pid = s.pid AND io.device = $device AND io.op IN ('write', 'flush')
                AND coalesce(io.queue_ns, io.ts_ns) BETWEEN s.ts_ns AND s.ts_ns + coalesce(s.lat_ns, 0)
        )
    )
