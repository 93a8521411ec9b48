-- The commits of one probe run, from iofp's capture of the target: its fsync and fdatasync calls
-- entered in [$lo_ns, $hi_ns) (the run's span on the capture's clock; the capture keeps only calls
-- on files of the target), the span from the first entry to the last return (what commits/s divides
-- by), and their latency, entry to return, nearest rank as fio ranks.
SELECT
    count(*) AS calls,
    max(ts_ns + lat_ns) - min(ts_ns) AS span_ns,
    quantile_disc(lat_ns, 0.5) AS p50_ns,
    quantile_disc(lat_ns, 0.99) AS p99_ns,
    quantile_disc(lat_ns, 0.999) AS p999_ns
FROM sync
WHERE call::VARCHAR IN ('fsync', 'fdatasync') AND ts_ns >= $lo_ns AND ts_ns < $hi_ns
