-- Gaps between successive flush points (flush op, preflush or FUA) within each scope, nearest-rank
-- percentiles. Each flush point is listed once per scope it belongs to (scope_map), by the scope's
-- small integer code: a flush-heavy trace has millions of them to sort.
WITH f AS (
    SELECT ts_ns, s.sc FROM scoped_io JOIN scope_map s USING (rg, btw)
    WHERE op = 'flush' OR preflush OR fua
), g AS (
    SELECT sc, ts_ns - lag(ts_ns) OVER (PARTITION BY sc ORDER BY ts_ns) AS gap FROM f
), q AS (
    SELECT sc, count(gap) AS gaps, quantile_disc(gap, 0.5) AS p50_ns, quantile_disc(gap, 0.99) AS p99_ns
    FROM g WHERE gap IS NOT NULL
    GROUP BY sc
)
SELECT (SELECT any_value(scope) FROM scope_map s WHERE s.sc = q.sc) AS scope, gaps, p50_ns, p99_ns FROM q
