-- The vscsiStats histograms of every scope, rolled up from the per-window partials (scope_parts):
-- one row per scope, histogram (size, inflight, lat), op ('all' or one op) and bucket limit.
-- Sizes count data I/O only in 'all' (zero-size flushes are not I/O sizes); latency's 'all' counts
-- reads and writes only (a flush's or discard's latency is not a data request's service time).
WITH p AS (SELECT *, getvariable('fp').regime[w + 1] AS rg FROM scope_parts),
e AS (
    SELECT rg, btw, op, 'size' AS hist, unnest(map_entries(size_hist), recursive := true), data FROM p
    UNION ALL
    SELECT rg, btw, op, 'inflight', unnest(map_entries(inflight_hist), recursive := true), true FROM p
    UNION ALL
    SELECT rg, btw, op, 'lat', unnest(map_entries(lat_hist), recursive := true), op IN ('read', 'write') FROM p
), o AS (
    SELECT rg, btw, hist, op, "key"::DOUBLE AS "key", "value" AS n FROM e
    UNION ALL
    SELECT rg, btw, hist, 'all', "key"::DOUBLE, "value" FROM e WHERE data
)
SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
        WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
        ELSE 'whole' END AS scope,
    hist, op, "key", sum(n)::BIGINT AS n
FROM o
GROUP BY GROUPING SETS ((hist, op, "key"), (rg, hist, op, "key"), (btw, hist, op, "key"))
