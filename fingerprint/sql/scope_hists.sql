-- The vscsiStats histograms of every scope, rolled up from the partials (scope_parts) through
-- scope_map: one row per scope, histogram (size, inflight, lat), op ('all' or one op) and bucket
-- limit. Sizes count sized requests only in 'all' (zero-size flushes are not I/O sizes); latency's
-- 'all' counts reads and writes only (a flush's or discard's latency is not a data request's
-- service time); in-flight's 'all' every request.
WITH e AS (
    SELECT rg, btw, op, 'size' AS hist, unnest(map_entries(size_hist), recursive := true), sized AS in_all
    FROM scope_parts
    UNION ALL
    SELECT rg, btw, op, 'inflight', unnest(map_entries(inflight_hist), recursive := true), true FROM scope_parts
    UNION ALL
    SELECT rg, btw, op, 'lat', unnest(map_entries(lat_hist), recursive := true), op IN ('read', 'write')
    FROM scope_parts
), o AS (
    SELECT rg, btw, hist, op, "key"::DOUBLE AS "key", "value" AS n FROM e
    UNION ALL
    SELECT rg, btw, hist, 'all', "key"::DOUBLE, "value" FROM e WHERE in_all
)
SELECT m.scope, hist, op, "key", sum(n)::BIGINT AS n
FROM o JOIN scope_map m USING (rg, btw)
GROUP BY m.scope, hist, op, "key"
