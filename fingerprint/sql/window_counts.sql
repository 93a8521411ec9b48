-- Arrivals per bin of width $width_ns (from the first arrival): the non-empty bins' count, sum,
-- sum of squares and maximum. Empty bins are accounted for by the caller, who knows how many bins
-- the scope spans.
WITH c AS (SELECT count(*) AS n FROM cur GROUP BY (ts_ns - $t0) // $width_ns)
SELECT count(*) AS bins, coalesce(sum(n), 0) AS total, coalesce(sum(n * n), 0) AS sumsq,
    coalesce(max(n), 0) AS peak
FROM c
