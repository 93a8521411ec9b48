-- Per-window time series at width $width_ns from $t0; every window up to the last arrival, empty
-- ones too. Latency percentiles are nearest-rank (quantile_disc), as fio reports them. k, iops and
-- mbps are the regime rule's input (iofp/regimes.py), defined as in iofp/sql/window_rates.sql (which
-- replay runs) and computed here in the same pass as the other columns, not in a scan of their own.
WITH agg AS (
    SELECT (ts_ns - $t0) // $width_ns AS k,
        count(*) AS ios,
        sum(size) AS bytes,
        count(*) FILTER (WHERE op = 'read') AS reads,
        avg(size) AS mean_size,
        avg(inflight) AS mean_inflight,
        -- one buffer of the window's read and write latencies for both (flushes left out, as in 'all')
        quantile_disc(lat_ns, [0.5, 0.99]) FILTER (WHERE op IN ('read', 'write')) AS lat_q
    FROM io
    GROUP BY k
)
SELECT g.k AS k,
    g.k * $width_ns / 1e9 AS start_s,
    coalesce(a.ios, 0) * 1e9 / $width_ns AS iops,
    coalesce(a.bytes, 0) * 1e9 / $width_ns / 1e6 AS mbps,
    a.reads / a.ios AS read_share,
    a.mean_size AS mean_size,
    a.mean_inflight AS mean_inflight,
    a.lat_q[1] AS lat_p50_ns,
    a.lat_q[2] AS lat_p99_ns
FROM range($nwin) g(k) LEFT JOIN agg a ON a.k = g.k
ORDER BY g.k
