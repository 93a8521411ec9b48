-- First and last arrival and row count of the selected device(s): the origin of every window.
SELECT min(ts_ns) AS t0, max(ts_ns) AS t1, count(*) AS n
FROM io_src
WHERE $device IS NULL OR device::VARCHAR = $device
