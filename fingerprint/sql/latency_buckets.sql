-- Request latencies per window of $window_ns from $t0 (w), --between flag (btw) and op, in buckets 2%
-- wide (lb = round(50 ln(lat_ns))): the noise batches' latency percentiles (noise_latency.sql), a hash
-- aggregate where exact percentiles per batch would sort every row again.
CREATE OR REPLACE TEMP TABLE fp_lat_buckets AS
SELECT (ts_ns - $t0) // $window_ns AS w, coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, op::VARCHAR AS op,
    round(ln(lat_ns) * 50)::INTEGER AS lb, count(*) AS n
FROM io
WHERE lat_ns > 0 AND ($device IS NULL OR device::VARCHAR = $device)
GROUP BY ALL
