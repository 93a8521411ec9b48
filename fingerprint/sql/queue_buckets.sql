-- Each scope's time before issue of its data requests (btt's Q2D: issue ts_ns - queue_ns, the
-- request's entry into the block layer): the time the scheduler or a plug held them before the
-- driver had them. Per op, in buckets 2% wide (lb = round(50 ln(ns)), 0 ns counted at 1 ns) with each
-- bucket's count, sum and maximum: percentiles within 1% and exact means, from a hash aggregate.
-- Requests without an entry time (a flush; an import that has none) are left out.
WITH p AS (
    SELECT rg, btw, op, greatest(ts_ns - queue_ns, 1) AS q
    FROM scoped_io
    WHERE queue_ns IS NOT NULL AND ts_ns >= queue_ns AND op IN ('read', 'write')
)
SELECT s.scope, p.op, round(ln(p.q) * 50)::INTEGER AS lb, count(*) AS n, sum(p.q)::DOUBLE AS sum_ns,
    max(p.q) AS max_ns
FROM p JOIN scope_map s USING (rg, btw)
GROUP BY ALL
