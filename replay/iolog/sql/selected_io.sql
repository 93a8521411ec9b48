-- The rows of a replay selection in replay order: its I/Os, and its replayed sync calls (temp table
-- `calls`). A write forced by a call (temp table `marks`) is moved to the call's start, ahead of the
-- call itself, so that the replayed call does its writeback again; a flush a call covers is left out
-- (the replayed call makes it). Ties keep the trace files' own order so the output is deterministic.
-- `opc`: 0 read, 1 write, 2 discard, 3 flush (a block flush without a call: fio's sync), 4 a sync
-- call replayed as fio's sync, 5 one replayed as fio's datasync; -1 = other. `commit`: the row goes
-- to its caller's commit job (a forced write, or a call of a process in $commit_pids).
-- Parameters: $device (NULL = all devices), $t_lo_ns, $t_hi_ns, $commit_pids.
SELECT ts_ns, "offset", size, opc, inflight, lat_ns, pid, commit
FROM (
    SELECT
        coalesce(c.ts_ns, io.ts_ns) AS ts_ns,
        0 AS kind,
        io.filename,
        io.file_row_number,
        io."offset",
        io.size,
        CASE io.op WHEN 'read' THEN 0 WHEN 'write' THEN 1 WHEN 'discard' THEN 2 WHEN 'flush' THEN 3 ELSE -1 END
            ::TINYINT AS opc,
        io.inflight,
        io.lat_ns,
        io.pid,
        m.kind IS NOT NULL AS commit
    FROM io
    LEFT JOIN marks AS m ON m.filename = io.filename AND m.file_row_number = io.file_row_number
    LEFT JOIN calls AS c ON m.kind = 'forced' AND c.call_id = m.call_id
    WHERE ($device IS NULL OR io.device = $device)
        AND io.ts_ns >= $t_lo_ns AND io.ts_ns < $t_hi_ns
        AND (m.kind IS NULL OR m.kind = 'forced')
    UNION ALL
    SELECT
        ts_ns, 1, '', call_id, 0, 0, CASE action WHEN 'datasync' THEN 5 ELSE 4 END::TINYINT, NULL,
        end_ns - ts_ns, pid, list_contains($commit_pids, pid)
    FROM calls
)
ORDER BY ts_ns, kind, filename, file_row_number
