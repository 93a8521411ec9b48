-- Gaps between successive flush points (flush op, preflush or FUA), nearest-rank percentiles.
WITH f AS (
    SELECT ts_ns - lag(ts_ns) OVER (ORDER BY ts_ns) AS gap
    FROM cur WHERE op = 'flush' OR preflush OR fua
)
SELECT count(gap) AS gaps, quantile_disc(gap, 0.5) AS p50_ns, quantile_disc(gap, 0.99) AS p99_ns
FROM f WHERE gap IS NOT NULL
