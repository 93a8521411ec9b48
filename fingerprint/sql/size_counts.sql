-- How many requests had each size and in-flight depth, per step k of $step_ns from $t0 (the
-- per-window table's steps), --between flag (btw: inside [$lo, $hi]), op and device (for the devices
-- each scope's requests went to: scope_devices.sql): sizes and depths repeat,
-- so this is a small table. It gives the size moments the regime series' byte noise is scaled by
-- (size_moments.sql), before the regimes are known, and afterwards every scope's size and in-flight
-- percentiles and histograms (size_values.sql).
CREATE OR REPLACE TEMP TABLE fp_sizes AS
SELECT (ts_ns - $t0) // $step_ns AS k, coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, op::VARCHAR AS op,
    device::VARCHAR AS device, size, inflight, count(*) AS n
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
GROUP BY ALL
