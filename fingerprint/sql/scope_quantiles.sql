-- Nearest-rank percentiles (quantile_disc's, as fio reports them) per scope of the latency of each
-- op and of all ops, the data I/O size and the in-flight depth, from exact value counts: the
-- smallest value whose cumulative count reaches ceil(q * n). As exact as sorting the values, but
-- the counts are few (sizes, depths and latencies repeat) and a hash aggregate spills to disk,
-- where a quantile's buffer of every value would have to fit in memory for every scope at once.
WITH p AS (
    SELECT rg, btw,
        CASE WHEN grouping(lat_ns) = 0 THEN 'lat' WHEN grouping(size) = 0 THEN 'size' ELSE 'inflight' END
            AS measure,
        CASE WHEN grouping(op) = 0 THEN op ELSE 'all' END AS op,
        CASE WHEN grouping(lat_ns) = 0 THEN lat_ns WHEN grouping(size) = 0 THEN size ELSE inflight END AS v,
        count(*) AS n
    FROM io
    GROUP BY GROUPING SETS ((rg, btw, op, lat_ns), (rg, btw, size), (rg, btw, inflight))
), c AS (
    -- the counts of each (regime, --between flag) part, rolled up into scopes
    SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
            WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
            ELSE 'whole' END AS scope,
        measure, op, v, sum(n) AS n
    FROM p
    WHERE v IS NOT NULL AND (measure <> 'size' OR v > 0)
    GROUP BY GROUPING SETS ((measure, op, v), (rg, measure, op, v), (btw, measure, op, v))
), v AS (
    SELECT scope, measure, op, v, n FROM c WHERE scope IS NOT NULL
    UNION ALL
    SELECT scope, measure, 'all', v, sum(n) FROM c
    WHERE scope IS NOT NULL AND measure = 'lat'
    GROUP BY ALL
), cum AS (
    SELECT scope, measure, op, v,
        sum(n) OVER (PARTITION BY scope, measure, op ORDER BY v ROWS UNBOUNDED PRECEDING) AS cum,
        sum(n) OVER (PARTITION BY scope, measure, op) AS total
    FROM v
)
SELECT scope, measure, op, any_value(total)::BIGINT AS n,
    min(v) FILTER (WHERE cum >= ceil(total * 0.5)) AS p50,
    min(v) FILTER (WHERE cum >= ceil(total * 0.99)) AS p99,
    min(v) FILTER (WHERE cum >= ceil(total * 0.999)) AS p99_9
FROM cum
GROUP BY ALL
