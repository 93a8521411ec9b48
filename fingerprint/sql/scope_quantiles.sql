-- Nearest-rank percentiles (quantile_disc's, as fio reports them) per scope of the latency of each
-- op and of all ops, the data I/O size and the in-flight depth, from exact value counts: the
-- smallest value whose cumulative count reaches ceil(q * n). As exact as sorting the values, but
-- the counts are few (sizes and depths repeat) and a hash aggregate spills to disk, where a
-- quantile's buffer of every value would have to fit in memory for every scope at once.
-- Latencies rarely repeat (nanoseconds), so this first step counts their buckets (lb, io_view.sql)
-- and keeps, for each percentile, the bucket that holds it and its rank inside that bucket:
-- scope_quantiles_exact.sql then ranks only those buckets' values. Sizes and depths are final here.
-- Everything is grouped and sorted on small integer codes, named only by scope_quantiles_exact:
--   sc  scope: 0 whole, 1 steady, 2 spike, 3 between;  m  measure: 0 lat, 1 size, 2 inflight;
--   o   op (latency only): 0 all, 1 read, 2 write, 3 discard, 4 flush, 9 any other.
CREATE OR REPLACE TEMP TABLE quant_steps AS
WITH p AS (
    SELECT rg, btw,
        CASE WHEN grouping(lb) = 0 THEN 0 WHEN grouping(size) = 0 THEN 1 ELSE 2 END::UTINYINT AS m,
        CASE WHEN grouping(opc) = 0 THEN coalesce(opc, 9) ELSE 0 END::UTINYINT AS o,
        CASE WHEN grouping(lb) = 0 THEN lb WHEN grouping(size) = 0 THEN size ELSE inflight END AS v,
        count(*) AS n
    FROM (
        SELECT rg, btw, lb, size, inflight,
            CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 WHEN 'discard' THEN 3 WHEN 'flush' THEN 4 END::UTINYINT
                AS opc
        FROM io
    )
    GROUP BY GROUPING SETS ((rg, btw, opc, lb), (rg, btw, size), (rg, btw, inflight))
), c AS (
    -- the counts of each (regime, --between flag) part, rolled up into scopes
    SELECT CASE WHEN grouping(rg) = 0 THEN nullif(rg, 0) WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 3 END
            ELSE 0 END::UTINYINT AS sc,
        m, o, v, sum(n) AS n
    FROM p
    WHERE v IS NOT NULL AND (m <> 1 OR v > 0)
    GROUP BY GROUPING SETS ((m, o, v), (rg, m, o, v), (btw, m, o, v))
), v AS (
    SELECT sc, m, o, v, n FROM c WHERE sc IS NOT NULL
    UNION ALL
    SELECT sc, m, 0, v, sum(n) FROM c
    WHERE sc IS NOT NULL AND m = 0
    GROUP BY sc, m, v
), cum AS (
    SELECT sc, m, o, v, n,
        sum(n) OVER (PARTITION BY sc, m, o ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum,
        sum(n) OVER (PARTITION BY sc, m, o) AS total
    FROM v
)
-- p* the value (or, for latency, the bucket) holding rank ceil(q * n); r* that rank minus the
-- count below the bucket, i.e. the rank inside it
SELECT sc, m, o, any_value(total)::BIGINT AS n,
    min(v) FILTER (WHERE cum >= ceil(total * 0.5)) AS p50,
    min(v) FILTER (WHERE cum >= ceil(total * 0.99)) AS p99,
    min(v) FILTER (WHERE cum >= ceil(total * 0.999)) AS p99_9,
    arg_min(ceil(total * 0.5) - (cum - n), v) FILTER (WHERE cum >= ceil(total * 0.5))::BIGINT AS r50,
    arg_min(ceil(total * 0.99) - (cum - n), v) FILTER (WHERE cum >= ceil(total * 0.99))::BIGINT AS r99,
    arg_min(ceil(total * 0.999) - (cum - n), v) FILTER (WHERE cum >= ceil(total * 0.999))::BIGINT AS r99_9
FROM cum
GROUP BY sc, m, o
