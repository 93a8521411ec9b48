-- Features of the arrival order (every device), per scope: the gap since the previous arrival
-- (vscsiStats interarrival, µs; its mean and CV) and whether a data I/O starts where the previous
-- record ended (the traces README's sequentiality). Equal timestamps are ordered by device, offset
-- and size, so results do not depend on file order. Only the integer sort keys go through the sort
-- (window index and --between flag come from ts_ns after it); streaming lags feed per-window
-- partials (count, sum, Welford moments, histogram), rolled up into scopes on a few rows: the
-- standard deviation by the parallel-variance formula (sum of M2 + n * (mean_i - mean)^2).
WITH s AS (
    SELECT ts_ns, dev, "offset", size FROM io ORDER BY ts_ns, dev, "offset", size
), l AS (
    SELECT ts_ns, ts_ns - lag(ts_ns) OVER () AS iat_ns,
        CASE WHEN size > 0 THEN coalesce("offset" = lag("offset" + size) OVER (), false) END AS seq_any
    FROM s
), p AS MATERIALIZED (
    SELECT getvariable('fp').regime[w + 1] AS rg, btw,
        count(iat_ns) AS n, sum(iat_ns) AS total, avg(iat_ns) AS mean, var_pop(iat_ns) * count(iat_ns) AS m2,
        histogram(iat_ns / 1000.0, $limits) FILTER (WHERE iat_ns IS NOT NULL) AS h,
        count(*) FILTER (WHERE seq_any) AS seq_any_ios
    FROM (
        SELECT (ts_ns - getvariable('fp').t0) // getvariable('fp').window_ns AS w,
            CASE WHEN ts_ns BETWEEN getvariable('fp').lo AND getvariable('fp').hi THEN true END AS btw,
            iat_ns, seq_any
        FROM l
    )
    GROUP BY w, btw
), c AS (
    SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
            WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
            ELSE 'whole' END AS scope,
        sum(n)::BIGINT AS gaps,
        sum(total) / nullif(sum(n), 0) AS iat_mean_ns,
        list(struct_pack(n := n, mean := mean, m2 := m2)) FILTER (WHERE n > 0) AS moments,
        sum(seq_any_ios)::BIGINT AS seq_any_ios
    FROM p
    GROUP BY GROUPING SETS ((), (rg), (btw))
), e AS (
    SELECT rg, btw, unnest(map_entries(h), recursive := true) FROM p WHERE h IS NOT NULL
), hm AS (
    SELECT scope, map(list("key" ORDER BY "key"), list(n ORDER BY "key")) AS iat_hist
    FROM (
        SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
                WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
                ELSE 'whole' END AS scope,
            "key", sum("value") AS n
        FROM e
        GROUP BY GROUPING SETS (("key"), (rg, "key"), (btw, "key"))
    )
    WHERE scope IS NOT NULL
    GROUP BY scope
)
SELECT c.scope, c.gaps, c.iat_mean_ns,
    sqrt(greatest(list_sum([m.m2 + m.n * (m.mean - c.iat_mean_ns) ** 2 FOR m IN c.moments]), 0) / c.gaps)
        AS iat_std_ns,
    hm.iat_hist, c.seq_any_ios
FROM c LEFT JOIN hm USING (scope)
WHERE c.scope IS NOT NULL
