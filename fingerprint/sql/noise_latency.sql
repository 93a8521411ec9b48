-- Each scope's request latencies per batch of its consecutive windows (noise_batch), by op, in
-- buckets 2% wide (lb = round(50 ln(lat_ns)): latency_buckets.sql): enough to measure
-- how a percentile spreads from batch to batch, where exact percentiles would sort every row again.
-- The --between span's first and last windows count only the rows inside it, as in noise_batches.sql.
SELECT nb.scope, nb.b, f.op, f.lb, sum(f.n)::BIGINT AS n
FROM fp_lat_buckets f JOIN noise_batch nb ON nb.w = f.w
WHERE nb.scope <> 'between' OR f.btw
GROUP BY ALL
