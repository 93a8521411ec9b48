-- The tail of each kind of request's latency, for an exceedance (1 - CDF) chart: nearest-rank
-- quantiles at $probs (quantile_disc, as fio's percentiles) and the count, for reads, writes and
-- flushes (view `io`, on $device or all) and the fsync-family calls (sync_src: the commits, entry
-- to return).
SELECT op::VARCHAR AS kind, count(lat_ns) AS n, quantile_disc(lat_ns, $probs) AS q_ns
FROM io
WHERE lat_ns IS NOT NULL AND op::VARCHAR IN ('read', 'write', 'flush')
    AND ($device IS NULL OR device::VARCHAR = $device)
GROUP BY kind
UNION ALL
SELECT 'sync calls', count(lat_ns), quantile_disc(lat_ns, $probs)
FROM sync_src
WHERE lat_ns IS NOT NULL
HAVING count(lat_ns) > 0
