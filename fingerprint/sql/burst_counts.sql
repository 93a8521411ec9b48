-- Arrivals per bin of $per finest bins, per scope: the non-empty bins' count, sum, sum of squares
-- and maximum. Empty bins are accounted for by the caller, who knows how many bins a scope spans.
WITH s AS (
    SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
            WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
            ELSE 'whole' END AS scope,
        sum(n) AS n
    FROM (SELECT b // $per AS bb, rg, btw, n FROM burst_bins)
    GROUP BY GROUPING SETS ((bb), (rg, bb), (btw, bb))
)
SELECT scope, count(*) AS bins, sum(n)::BIGINT AS total, sum(n * n)::HUGEINT AS sumsq, max(n)::BIGINT AS peak
FROM s
WHERE scope IS NOT NULL
GROUP BY scope
