-- The vscsiStats histograms of every scope, from the exact value counts (value_counts.sql): each
-- distinct value counted in the bucket of the first limit at or above it (DuckDB's histogram's rule;
-- latency in µs), keyed by that limit, or 'inf' above the last. One row per scope, histogram (size,
-- inflight, lat), op ('all' or one op) and bucket. Sizes count sized requests only in 'all' (zero-size
-- flushes are not I/O sizes); latency's 'all' counts reads and writes only (a flush's or discard's
-- latency is not a data request's service time); in-flight's 'all' every request.
WITH b AS (
    SELECT rg, btw, op, m, n,
        coalesce(CASE m
            WHEN 0 THEN list_filter($lat_limits, lambda x: x >= v / 1000.0)[1]
            WHEN 1 THEN list_filter($size_limits, lambda x: x >= v)[1]
            ELSE list_filter($inflight_limits, lambda x: x >= v)[1] END, 'inf'::DOUBLE) AS "key",
        CASE m WHEN 0 THEN op IN ('read', 'write') WHEN 1 THEN v > 0 ELSE true END AS in_all
    FROM fp_values
    WHERE v IS NOT NULL
), o AS (
    SELECT rg, btw, m, op, "key", n FROM b
    UNION ALL
    SELECT rg, btw, m, 'all', "key", n FROM b WHERE in_all
)
SELECT s.scope, ['lat', 'size', 'inflight'][m + 1] AS hist, op, "key", sum(n)::BIGINT AS n
FROM o JOIN scope_map s USING (rg, btw)
GROUP BY ALL
