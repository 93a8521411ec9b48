-- Issue-to-completion latency of one op ($op; NULL = every op): nearest-rank percentiles (fio's
-- terms) and the vscsiStats latency histogram (µs). Only I/Os with a measured latency count.
-- One op per query: a percentile holds its group's values in memory, so grouping every op (and
-- the total) in one pass would hold them all at once.
SELECT count(*) AS ios, avg(lat_ns) AS mean_ns,
    quantile_disc(lat_ns, [0.5, 0.99, 0.999]) AS q_ns,
    max(lat_ns) AS max_ns,
    histogram(lat_ns / 1000.0, $limits) AS hist_us
FROM cur
WHERE lat_ns IS NOT NULL AND ($op IS NULL OR op = $op)
