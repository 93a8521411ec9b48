-- The size and in-flight counts (size_counts.sql) per regime class, added to the latency's in
-- fp_values (value_counts.sql): a step k lies in window k // $steps, whose class is regime_w's.
INSERT INTO fp_values
WITH s AS (
    SELECT r.rg, c.btw, c.op, c.size, c.inflight, c.n FROM fp_sizes c JOIN regime_w r ON r.w = c.k // $steps
)
SELECT rg, btw, op, 1, size, sum(n) FROM s GROUP BY rg, btw, op, size
UNION ALL
SELECT rg, btw, op, 2, inflight, sum(n) FROM s GROUP BY rg, btw, op, inflight
