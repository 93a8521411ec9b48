-- First and last arrival (trace clock) of the I/Os of $device (NULL = all) in view `io`: the span
-- window_rates.sql divides into windows, read first so that their number is checked before the
-- series is built (one row per window, empty or not).
SELECT min(ts_ns) AS t0, max(ts_ns) AS t1
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
