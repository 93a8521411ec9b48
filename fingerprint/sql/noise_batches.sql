-- Each scope's requests per batch of its consecutive windows (noise_batch: scope, window w, batch
-- b; fingerprint/noise.py cuts them), by op and latency bucket: counts and bytes, the requests that
-- are flush or FUA points, and latency in buckets 2% wide (lb = round(50 ln(lat_ns))): enough to
-- measure how a percentile spreads from batch to batch, and a hash aggregate where exact
-- percentiles would sort every row again. A row counts in every scope whose windows hold its
-- window, except that the --between span's first and last windows count only the rows inside it. A
-- batch with no I/O has no row: noise.py counts it as zero I/Os.
SELECT nb.scope, nb.b, i.op,
    CASE WHEN i.lat_ns > 0 THEN round(ln(i.lat_ns) * 50)::INTEGER END AS lb,
    count(*) AS n,
    coalesce(sum(i.size), 0)::BIGINT AS bytes,
    count(*) FILTER (WHERE i.op = 'flush' OR i.preflush OR i.fua) AS points
FROM scoped_io i JOIN noise_batch nb ON nb.w = i.w
WHERE nb.scope <> 'between' OR i.btw
GROUP BY ALL
