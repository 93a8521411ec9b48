-- The flush requests of one probe run, from iofp's capture of the target: those issued in
-- [$lo_ns, $hi_ns) (the run's span on the capture's clock) and their latency, issue to completion
-- (the device draining its cache), nearest rank as fio ranks.
SELECT
    count(*) AS flushes,
    quantile_disc(lat_ns, 0.5) AS p50_ns,
    quantile_disc(lat_ns, 0.99) AS p99_ns
FROM io
WHERE op::VARCHAR = 'flush' AND ts_ns >= $lo_ns AND ts_ns < $hi_ns
