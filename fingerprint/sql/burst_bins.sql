-- Data requests (reads, writes, discards, as IOPS counts them) per bin of the finest burstiness width
-- ($width_ns, from the first arrival), per regime class and --between flag: a small table from which
-- every coarser width (a multiple of this one) and every scope is rolled up exactly (burst_counts).
CREATE OR REPLACE TEMP TABLE burst_bins AS
SELECT (ts_ns - p.t0) // $width_ns AS b, rg, btw, count(*) AS n
FROM scoped_io CROSS JOIN fp_params p
WHERE data
GROUP BY ALL
