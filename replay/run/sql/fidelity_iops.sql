-- Per-window IOPS of the demanded and the replayed I/Os, each aligned at its anchor ($te0, $tr0: the
-- first demanded I/O and its replayed match), every window from the first to the last of either side.
-- Parameters: $te0, $tr0, $window_ns.
WITH w AS (
    SELECT side, (ts_ns - CASE side WHEN 'exp' THEN $te0 ELSE $tr0 END) // $window_ns AS w
    FROM sides
),
counts AS (
    SELECT w, count(*) FILTER (WHERE side = 'exp') AS e, count(*) FILTER (WHERE side = 'rep') AS r
    FROM w
    WHERE w >= 0
    GROUP BY w
)
SELECT g.w, coalesce(c.e, 0) * 1e9 / $window_ns AS expected_iops, coalesce(c.r, 0) * 1e9 / $window_ns AS replayed_iops
FROM generate_series(0, (SELECT coalesce(max(w), 0) FROM counts)) AS g(w)
LEFT JOIN counts AS c ON c.w = g.w
ORDER BY g.w
