-- The report's timeline, from the trace itself (view `io`): per window of $window_ns from $t0, every
-- window up to the last arrival, empty ones too. IOPS and MB/s count data requests (reads, writes,
-- discards), flushes/s the zero-byte flushes; latency percentiles are nearest-rank (quantile_disc),
-- as fio reports them: over reads and writes together (as the fingerprint's `latency.all`) and each
-- apart (iostat's r_await and w_await).
-- Parameters: $t0, $window_ns, $nwin, $device (NULL = all).
WITH agg AS (
    SELECT (ts_ns - $t0) // $window_ns AS k,
        count(*) FILTER (WHERE op::VARCHAR IN ('read', 'write', 'discard')) AS ios,
        coalesce(sum(size) FILTER (WHERE op::VARCHAR IN ('read', 'write', 'discard')), 0) AS bytes,
        count(*) FILTER (WHERE op::VARCHAR = 'read') AS reads,
        count(*) FILTER (WHERE op::VARCHAR = 'flush') AS flushes,
        avg(inflight) AS mean_inflight,
        quantile_disc(lat_ns, [0.5, 0.99]) FILTER (WHERE op::VARCHAR IN ('read', 'write')) AS lat_q,
        quantile_disc(lat_ns, [0.5, 0.99]) FILTER (WHERE op::VARCHAR = 'read') AS read_q,
        quantile_disc(lat_ns, [0.5, 0.99]) FILTER (WHERE op::VARCHAR = 'write') AS write_q
    FROM io
    WHERE $device IS NULL OR device::VARCHAR = $device
    GROUP BY k
)
SELECT g.k AS k,
    g.k * $window_ns / 1e9 AS start_s,
    coalesce(a.ios, 0) * 1e9 / $window_ns AS iops,
    coalesce(a.bytes, 0) * 1e9 / $window_ns / 1e6 AS mbps,
    coalesce(a.flushes, 0) * 1e9 / $window_ns AS flushes_per_s,
    a.reads / nullif(a.ios, 0) AS read_share,
    a.bytes / nullif(a.ios, 0) AS mean_size_bytes,
    a.mean_inflight AS mean_inflight,
    a.lat_q[1] / 1e3 AS lat_p50_us,
    a.lat_q[2] / 1e3 AS lat_p99_us,
    a.read_q[1] / 1e3 AS read_p50_us,
    a.read_q[2] / 1e3 AS read_p99_us,
    a.write_q[1] / 1e3 AS write_p50_us,
    a.write_q[2] / 1e3 AS write_p99_us
FROM range($nwin) g(k) LEFT JOIN agg a ON a.k = g.k
ORDER BY g.k
