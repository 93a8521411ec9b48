-- First and last arrival, row count and the sorted device names of the selected device(s): the
-- origin of every window, and the devices' integer sort keys.
SELECT min(ts_ns) AS t0, max(ts_ns) AS t1, count(*) AS n, list_sort(list(DISTINCT device::VARCHAR)) AS devices
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
