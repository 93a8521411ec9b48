-- Arrivals per bin of the finest burstiness width ($width_ns, from the first arrival), per window
-- regime and --between flag: a small table from which every coarser width (a multiple of this one)
-- and every scope is rolled up exactly (burst_counts).
CREATE OR REPLACE TEMP TABLE burst_bins AS
SELECT (ts_ns - getvariable('fp').t0) // $width_ns AS b, rg, btw, count(*) AS n
FROM io
GROUP BY ALL
