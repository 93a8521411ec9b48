-- Issue-to-completion latency per op: nearest-rank percentiles (fio's terms) and the vscsiStats
-- latency histogram (µs). Only I/Os with a measured latency count.
SELECT op, count(*) AS ios, avg(lat_ns) AS mean_ns,
    quantile_disc(lat_ns, 0.5) AS p50_ns,
    quantile_disc(lat_ns, 0.99) AS p99_ns,
    quantile_disc(lat_ns, 0.999) AS p999_ns,
    max(lat_ns) AS max_ns,
    histogram(lat_ns / 1000.0, $limits) AS hist_us
FROM cur
WHERE lat_ns IS NOT NULL
GROUP BY GROUPING SETS ((op), ())
ORDER BY op NULLS FIRST
