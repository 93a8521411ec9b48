-- Nearest-rank percentiles (quantile_disc's, as fio reports them) per scope of the latency of each
-- op and of reads and writes together ('all'), the sized request size and the in-flight depth, from
-- the exact value counts (value_counts.sql): the smallest value whose cumulative count reaches
-- ceil(q * n). As exact as sorting the requests, but only each scope's distinct values are sorted.
-- Each (scope, measure, op) is one group g, a small integer (the scope's code sc from
-- fingerprint/frame.py, the measure m, the op's place in OPS; 0 for 'all'), named only in the final
-- rows. The cumulative count is one running sum over every group's values in (g, value) order, a
-- streaming window (a window partitioned by group sorts each partition with a frame per row: 2.6x
-- slower), less the counts of the groups before g.
WITH c AS (
    -- the counts of each (regime class, --between flag) part, rolled up into scopes; size and in-flight
    -- over every op (op 0, 'all'), sizes of sized requests only
    SELECT s.sc, p.m, CASE WHEN p.m = 0 THEN list_position($ops, p.op) ELSE 0 END AS o, p.v, sum(p.n) AS n
    FROM fp_values p JOIN scope_map s USING (rg, btw)
    WHERE p.v IS NOT NULL AND (p.m <> 1 OR p.v > 0)
    GROUP BY ALL
), v AS (
    SELECT sc * 256 + m * 16 + o AS g, v, n FROM c
    UNION ALL
    -- latency 'all' is the data I/O a caller waits on, reads and writes (see scope.DATA_LATENCY_OPS):
    -- zero-byte flushes and discards are summarised under their own op, not mixed into the headline
    SELECT sc * 256, v, sum(n) FROM c
    WHERE m = 0 AND o IN (list_position($ops, 'read'), list_position($ops, 'write'))
    GROUP BY sc, v
), t AS (
    SELECT g, total, sum(total) OVER (ORDER BY g) - total AS before
    FROM (SELECT g, sum(n) AS total FROM v GROUP BY g)
), r AS (
    SELECT g, v, sum(n) OVER (ROWS UNBOUNDED PRECEDING) AS run FROM (SELECT g, v, n FROM v ORDER BY g, v)
), q AS (
    SELECT g, any_value(total)::BIGINT AS n,
        min(v) FILTER (WHERE run - before >= ceil(total * 0.5)) AS p50,
        min(v) FILTER (WHERE run - before >= ceil(total * 0.99)) AS p99,
        min(v) FILTER (WHERE run - before >= ceil(total * 0.999)) AS p99_9
    FROM r JOIN t USING (g)
    GROUP BY g
)
SELECT (SELECT any_value(scope) FROM scope_map s WHERE s.sc = q.g // 256) AS scope,
    ['lat', 'size', 'inflight'][q.g // 16 % 16 + 1] AS measure,
    CASE WHEN q.g % 16 = 0 THEN 'all' ELSE $ops[q.g % 16] END AS op,
    n, p50, p99, p99_9
FROM q
