-- Nearest-rank percentiles (quantile_disc's, as fio reports them) per scope of the latency of each
-- op and of reads and writes together ('all'), the sized request size and the in-flight depth, from
-- exact value counts: the smallest value whose cumulative count reaches ceil(q * n). As exact as
-- sorting the values, but the counts are few (sizes, depths and latencies repeat) and a hash
-- aggregate spills to disk, where a quantile's buffer of every value would have to fit in memory
-- for every scope at once. Everything is grouped and sorted on small integer codes, named only in
-- the final few rows:
--   sc scope (scope_map's code: fingerprint/frame.py);
--   m  measure: 0 lat, 1 size, 2 inflight;
--   o  op (latency only): 0 all, 1 read, 2 write, 3 discard, 4 flush, 9 any other.
WITH p AS (
    SELECT rg, btw,
        CASE WHEN grouping(lat_ns) = 0 THEN 0 WHEN grouping(size) = 0 THEN 1 ELSE 2 END::UTINYINT AS m,
        CASE WHEN grouping(opc) = 0 THEN coalesce(opc, 9) ELSE 0 END::UTINYINT AS o,
        CASE WHEN grouping(lat_ns) = 0 THEN lat_ns WHEN grouping(size) = 0 THEN size ELSE inflight END AS v,
        count(*) AS n
    FROM (
        SELECT rg, btw, lat_ns, size, inflight,
            CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 WHEN 'discard' THEN 3 WHEN 'flush' THEN 4 END::UTINYINT
                AS opc
        FROM scoped_io
    )
    GROUP BY GROUPING SETS ((rg, btw, opc, lat_ns), (rg, btw, size), (rg, btw, inflight))
), c AS (
    -- the counts of each (regime class, --between flag) part, rolled up into scopes
    SELECT s.sc, p.m, p.o, p.v, sum(p.n) AS n
    FROM p JOIN scope_map s USING (rg, btw)
    WHERE p.v IS NOT NULL AND (p.m <> 1 OR p.v > 0)
    GROUP BY s.sc, p.m, p.o, p.v
), v AS (
    SELECT sc, m, o, v, n FROM c
    UNION ALL
    -- latency 'all' is the data I/O a caller waits on, reads and writes (see scope.DATA_LATENCY_OPS):
    -- zero-byte flushes and discards are summarised under their own op, not mixed into the headline
    SELECT sc, m, 0, v, sum(n) FROM c
    WHERE m = 0 AND o IN (1, 2)
    GROUP BY sc, m, v
), cum AS (
    SELECT sc, m, o, v,
        sum(n) OVER (PARTITION BY sc, m, o ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum,
        sum(n) OVER (PARTITION BY sc, m, o) AS total
    FROM v
), q AS (
    SELECT sc, m, o, any_value(total)::BIGINT AS n,
        min(v) FILTER (WHERE cum >= ceil(total * 0.5)) AS p50,
        min(v) FILTER (WHERE cum >= ceil(total * 0.99)) AS p99,
        min(v) FILTER (WHERE cum >= ceil(total * 0.999)) AS p99_9
    FROM cum
    GROUP BY sc, m, o
)
SELECT (SELECT any_value(scope) FROM scope_map s WHERE s.sc = q.sc) AS scope,
    ['lat', 'size', 'inflight'][m + 1] AS measure,
    CASE o WHEN 0 THEN 'all' WHEN 1 THEN 'read' WHEN 2 THEN 'write' WHEN 3 THEN 'discard' WHEN 4 THEN 'flush' END
        AS op,
    n, p50, p99, p99_9
FROM q
