-- Gaps between successive flush points (flush op, preflush or FUA) within each scope,
-- nearest-rank percentiles. Flush points are few: each is listed once per scope it belongs to.
WITH f AS (
    SELECT ts_ns, unnest(list_filter(['whole', CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END,
        CASE WHEN btw THEN 'between' END], lambda x: x IS NOT NULL)) AS scope
    FROM io WHERE op = 'flush' OR preflush OR fua
), g AS (
    SELECT scope, ts_ns - lag(ts_ns) OVER (PARTITION BY scope ORDER BY ts_ns) AS gap FROM f
)
SELECT scope, count(gap) AS gaps, quantile_disc(gap, 0.5) AS p50_ns, quantile_disc(gap, 0.99) AS p99_ns
FROM g WHERE gap IS NOT NULL
GROUP BY scope
