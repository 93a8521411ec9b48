-- fsync-family calls per scope and calling process (its commits per second, as a stream of its
-- own), counted as sync_calls.sql counts them: a call belongs to the window it starts in.
WITH s AS (
    SELECT y.pid, r.rg, coalesce(y.ts_ns BETWEEN p.lo AND p.hi, false) AS btw, y.ts_ns <= p.t1 AS in_span
    FROM sync_src y CROSS JOIN fp_params p JOIN regime_w r ON r.w = (y.ts_ns - p.t0) // p.window_ns
    WHERE y.ts_ns >= p.t0 AND y.pid IS NOT NULL
)
SELECT m.scope, pid, count(*) AS calls
FROM s JOIN scope_map m USING (rg, btw)
WHERE m.scope = 'between' OR in_span
GROUP BY m.scope, pid
