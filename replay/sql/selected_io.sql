-- The I/Os of a replay selection in issue order; ties keep the trace files' own order so the
-- output is deterministic. `opc` indexes iofp.contract.OPS (read, write, discard, flush); -1 = other.
-- Parameters: $device (NULL = all devices), $t_lo_ns, $t_hi_ns (half-open, trace clock).
SELECT
    ts_ns,
    "offset",
    size,
    CASE op WHEN 'read' THEN 0 WHEN 'write' THEN 1 WHEN 'discard' THEN 2 WHEN 'flush' THEN 3 ELSE -1 END::TINYINT
        AS opc,
    inflight,
    lat_ns,
    pid
FROM io
WHERE ($device IS NULL OR device = $device)
    AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
ORDER BY ts_ns, filename, file_row_number
