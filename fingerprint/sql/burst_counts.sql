-- Data requests per bin of $per finest bins, per scope: the non-empty bins' count, sum, sum of
-- squares and maximum, and the first bin holding that maximum (its index from the first arrival:
-- when the busiest second was). Empty bins are accounted for by the caller, who knows how many bins a
-- scope spans.
WITH s AS (
    SELECT m.scope, b // $per AS bb, sum(n) AS n
    FROM burst_bins JOIN scope_map m USING (rg, btw)
    GROUP BY m.scope, bb
)
SELECT scope, count(*) AS bins, sum(n)::BIGINT AS total, sum(n * n)::HUGEINT AS sumsq, max(n)::BIGINT AS peak,
    arg_max(bb, n * 4294967296 - bb) AS peak_bin
FROM s
GROUP BY scope
