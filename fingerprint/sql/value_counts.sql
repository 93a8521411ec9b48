-- Exact value counts, the one grouped pass every percentile and vscsiStats histogram of the latency,
-- the size and the in-flight depth is read from (scope_quantiles.sql, scope_hists.sql): per regime
-- class (rg: its window's, from $classes, one per window of $window_ns from $t0), --between flag
-- (btw), op and value, the requests with that value. Sizes, depths and latencies repeat, so the
-- counts are few next to the rows, and a hash aggregate spills to disk where a quantile's buffer of
-- every value would have to fit in memory. m is the measure: 0 latency, 1 size, 2 in-flight.
CREATE OR REPLACE TEMP TABLE fp_values AS
SELECT rg, btw, op,
    CASE WHEN grouping(lat_ns) = 0 THEN 0 WHEN grouping(size) = 0 THEN 1 ELSE 2 END::UTINYINT AS m,
    CASE WHEN grouping(lat_ns) = 0 THEN lat_ns WHEN grouping(size) = 0 THEN size ELSE inflight END AS v,
    count(*) AS n
FROM (
    SELECT $classes[(ts_ns - $t0) // $window_ns + 1]::UTINYINT AS rg,
        coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, op::VARCHAR AS op, lat_ns, size, inflight
    FROM io
    WHERE $device IS NULL OR device::VARCHAR = $device
)
GROUP BY GROUPING SETS ((rg, btw, op, lat_ns), (rg, btw, op, size), (rg, btw, op, inflight))
