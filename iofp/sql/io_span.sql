-- First and last arrival (trace clock) of the requests of $device (NULL = all) in view `io`: the span
-- regime_series.sql divides into windows, every request counted (a flush opens a window as a read does).
SELECT min(ts_ns) AS t0, max(ts_ns) AS t1
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
