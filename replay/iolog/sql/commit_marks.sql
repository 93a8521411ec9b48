-- Which selected I/O rows belong to a replayed sync call (temp table `calls`), by their place in the
-- trace's files:
-- - `forced`: a write the caller issued inside its call (same pid; entered the block layer, queue_ns,
--   else issued, ts_ns, within [ts_ns, end_ns]): the writeback the call forced. The kernel submits
--   it in the caller's context, so block_io_start carries the caller's pid. A write inside two
--   windows of one process (two threads in sync calls) goes with the later call.
-- - `covered`: a flush issued inside any replayed call: the replayed call makes it again. Any
--   caller's: the kernel merges concurrent flushes and a capture names the newest asker. Matched on
--   ts_ns, not queue_ns: a flush request is the block layer's own and has no entry time of its own.
-- Parameters: $device (NULL = all devices), $t_lo_ns, $t_hi_ns.
CREATE OR REPLACE TEMP TABLE marks AS
WITH s AS (
    SELECT filename, file_row_number, pid, op::VARCHAR AS op, ts_ns, coalesce(queue_ns, ts_ns) AS start_ns
    FROM io
    WHERE ($device IS NULL OR device = $device)
        AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
        AND op IN ('write', 'flush')
)
SELECT s.filename, s.file_row_number, max(c.call_id) AS call_id, 'forced' AS kind
FROM s JOIN calls AS c ON s.pid = c.pid AND s.start_ns >= c.ts_ns AND s.start_ns <= c.end_ns
WHERE s.op = 'write'
GROUP BY s.filename, s.file_row_number
UNION ALL
SELECT s.filename, s.file_row_number, max(c.call_id), 'covered'
FROM s JOIN calls AS c ON s.ts_ns >= c.ts_ns AND s.ts_ns <= c.end_ns
WHERE s.op = 'flush'
GROUP BY s.filename, s.file_row_number
