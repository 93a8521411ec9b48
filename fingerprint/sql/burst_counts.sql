-- Data requests per bin of $bins finest bins (window_table.sql's b), per scope: the non-empty bins'
-- count, sum, sum of squares and maximum, and the first bin holding that maximum (its index from the
-- first arrival: when the busiest second was). A step k lies in window k // $steps (its regime class
-- is regime_w's); a bin that straddles two windows of different scopes is split between them, as its
-- requests are. Empty bins are accounted for by the caller, who knows how many bins a scope spans.
WITH s AS (
    SELECT m.scope, p.b // $bins AS bb, sum(p.ios) AS n
    FROM fp_windows p JOIN regime_w r ON r.w = p.k // $steps JOIN scope_map m USING (rg, btw)
    WHERE p.op IN ('read', 'write', 'discard')
    GROUP BY m.scope, bb
)
SELECT scope, count(*) AS bins, sum(n)::BIGINT AS total, sum(n * n)::HUGEINT AS sumsq, max(n)::BIGINT AS peak,
    arg_max(bb, n * 4294967296 - bb) AS peak_bin
FROM s
GROUP BY scope
