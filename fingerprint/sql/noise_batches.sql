-- Each scope's figures per batch of its consecutive windows (noise_batch: scope, window w, batch b;
-- fingerprint/noise.py cuts them): the counts behind IOPS, MB/s, the read share, the mean size and
-- the flush rate, and the latency percentiles, reads and writes together ('all', as in
-- scope_quantiles) and each. A row counts in every scope whose windows hold its window. A batch
-- with no I/O has no row: noise.py counts it as zero I/Os.
SELECT nb.scope, nb.b,
    count(*) FILTER (WHERE i.data) AS ios,
    coalesce(sum(i.size) FILTER (WHERE i.data), 0)::BIGINT AS bytes,
    count(*) FILTER (WHERE i.op = 'read') AS reads,
    count(*) FILTER (WHERE i.op = 'flush' OR i.preflush OR i.fua) AS durability_points,
    quantile_disc(i.lat_ns, [0.5, 0.99, 0.999]) FILTER (WHERE i.op IN ('read', 'write')) AS lat_all,
    quantile_disc(i.lat_ns, 0.99) FILTER (WHERE i.op = 'read') AS lat_read_p99,
    quantile_disc(i.lat_ns, 0.99) FILTER (WHERE i.op = 'write') AS lat_write_p99
FROM scoped_io i JOIN noise_batch nb ON nb.w = i.w
GROUP BY nb.scope, nb.b
