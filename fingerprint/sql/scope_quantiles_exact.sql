-- The percentiles of scope_quantiles.sql (quant_steps) made final: each latency percentile is the
-- value of rank r inside its bucket, counting only the rows of that scope and op that fall in the
-- bucket. Only the rows of the few target buckets are read past the filter and counted by value,
-- so nothing holds every latency. Sizes and depths pass through.
WITH t AS (
    SELECT sc, o, unnest([1, 2, 3]) AS qi, unnest([p50, p99, p99_9]) AS b, unnest([r50, r99, r99_9]) AS r
    FROM quant_steps WHERE m = 0
), x AS (
    SELECT rg, btw, coalesce(
            CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 WHEN 'discard' THEN 3 WHEN 'flush' THEN 4 END, 9
        )::UTINYINT AS opc,
        lb AS b, lat_ns AS v, count(*) AS n
    FROM io
    WHERE lb IN (SELECT b FROM t)
    GROUP BY ALL
), mt AS (
    SELECT t.sc, t.o, t.qi, t.r, x.v, sum(x.n) AS n
    FROM t JOIN x ON x.b = t.b
        AND (t.sc = 0 OR (t.sc IN (1, 2) AND x.rg = t.sc) OR (t.sc = 3 AND x.btw))
        AND (t.o = 0 OR x.opc = t.o)
    GROUP BY ALL
), exact AS (
    SELECT sc, o,
        min(v) FILTER (WHERE qi = 1 AND cum >= r) AS p50,
        min(v) FILTER (WHERE qi = 2 AND cum >= r) AS p99,
        min(v) FILTER (WHERE qi = 3 AND cum >= r) AS p99_9
    FROM (SELECT *, sum(n) OVER (PARTITION BY sc, o, qi ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum FROM mt)
    GROUP BY sc, o
)
SELECT ['whole', 'steady', 'spike', 'between'][q.sc + 1] AS scope,
    ['lat', 'size', 'inflight'][q.m + 1] AS measure,
    CASE q.o WHEN 0 THEN 'all' WHEN 1 THEN 'read' WHEN 2 THEN 'write' WHEN 3 THEN 'discard' WHEN 4 THEN 'flush' END
        AS op,
    q.n,
    CASE WHEN q.m = 0 THEN e.p50 ELSE q.p50 END AS p50,
    CASE WHEN q.m = 0 THEN e.p99 ELSE q.p99 END AS p99,
    CASE WHEN q.m = 0 THEN e.p99_9 ELSE q.p99_9 END AS p99_9
FROM quant_steps q LEFT JOIN exact e ON q.m = 0 AND e.sc = q.sc AND e.o = q.o
