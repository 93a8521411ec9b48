-- What the safety check, the iodepth default and offset folding need to know about a selection.
-- Flushes carry no data range, so they do not count towards the footprint.
-- Parameters: $device (NULL = all devices), $t_lo_ns, $t_hi_ns, $reads_only.
SELECT
    count(*) AS rows,
    min(ts_ns) AS first_ns,
    max(ts_ns) AS last_ns,
    coalesce(max("offset" + size) FILTER (WHERE op <> 'flush'), 0) AS max_end,
    coalesce(max(size) FILTER (WHERE op <> 'flush'), 0) AS max_size,
    max(inflight) AS peak_inflight,
    count(*) FILTER (WHERE op = 'read') AS reads,
    count(*) FILTER (WHERE op = 'write') AS writes,
    count(*) FILTER (WHERE op = 'discard') AS discards,
    count(*) FILTER (WHERE op = 'flush') AS flushes,
    coalesce(sum(size) FILTER (WHERE op IN ('read', 'write')), 0) AS bytes,
    list(DISTINCT device ORDER BY device) AS devices
FROM io
WHERE ($device IS NULL OR device = $device)
    AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
    AND (NOT $reads_only OR op = 'read')
