-- Features of the arrival order (every device), per scope: the gap since the previous arrival
-- (vscsiStats interarrival, µs; its mean and CV) and whether a data I/O starts where the previous
-- record ended (the traces README's sequentiality). Equal timestamps are ordered by device, offset
-- and size, so results do not depend on file order. One sort on integer keys feeds streaming
-- lags (OVER () keeps the sorted order); nothing is materialised.
WITH s AS (
    SELECT ts_ns, "offset", size, rg, btw FROM io ORDER BY ts_ns, dev, "offset", size
), l AS (
    SELECT rg, btw, ts_ns - lag(ts_ns) OVER () AS iat_ns,
        CASE WHEN size > 0 THEN coalesce("offset" = lag("offset" + size) OVER (), false) END AS seq_any
    FROM s
)
SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
        WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
        ELSE 'whole' END AS scope,
    count(iat_ns) AS gaps,
    avg(iat_ns) AS iat_mean_ns,
    stddev_pop(iat_ns) AS iat_std_ns,
    histogram(iat_ns / 1000.0, $limits) FILTER (WHERE iat_ns IS NOT NULL) AS iat_hist,
    count(*) FILTER (WHERE seq_any) AS seq_any_ios
FROM l
GROUP BY GROUPING SETS ((), (rg), (btw))
