-- Each scope's data calls (the trace's calls table: O_DIRECT reads and writes, libaio iocbs) as the
-- application waited for them, per op, in buckets 2% wide with each bucket's count, sum and maximum
-- (queue_buckets.sql's). A call belongs to the window it starts in, as a sync call does
-- (sync_calls.sql); with --device, the calls on that device's files.
WITH c AS (
    SELECT c.op::VARCHAR AS op, greatest(c.lat_ns, 1) AS l, r.rg,
        coalesce(c.ts_ns BETWEEN p.lo AND p.hi, false) AS btw, c.ts_ns <= p.t1 AS in_span
    FROM calls_src c CROSS JOIN fp_params p JOIN regime_w r ON r.w = (c.ts_ns - p.t0) // p.window_ns
    WHERE c.ts_ns >= p.t0 AND c.lat_ns IS NOT NULL AND c.ret >= 0
        AND (p.device IS NULL OR c.device::VARCHAR = p.device)
)
SELECT m.scope, op, round(ln(l) * 50)::INTEGER AS lb, count(*) AS n, sum(l)::DOUBLE AS sum_ns, max(l) AS max_ns
FROM c JOIN scope_map m USING (rg, btw)
WHERE m.scope = 'between' OR in_span
GROUP BY ALL
