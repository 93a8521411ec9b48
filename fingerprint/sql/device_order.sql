-- Features of each device's issue order, per scope: a data I/O is sequential when it starts where
-- the previous data I/O on the same device ended (zero-size requests such as flushes neither start
-- nor break a run), and its vscsiStats seekDistance in 512 B LBNs is this start - the last LBN of
-- that previous I/O (+1 = sequential). Each non-sequential data I/O starts a run, so runs =
-- data I/Os - sequential ones. One sort on integer keys feeds streaming lags.
WITH s AS (
    SELECT dev, ts_ns, "offset", size, op, rg, btw FROM io WHERE size > 0 ORDER BY dev, ts_ns, "offset", size
), l AS (
    SELECT rg, btw, op, "offset",
        CASE WHEN lag(dev) OVER () = dev THEN lag("offset" + size) OVER () END AS prev_end
    FROM s
), f AS (
    SELECT rg, btw, op, coalesce("offset" = prev_end, false) AS seq, ("offset" - prev_end) // 512 + 1 AS seek_lbn
    FROM l
)
SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
        WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
        ELSE 'whole' END AS scope,
    count(*) FILTER (WHERE seq) AS seq_ios,
    count(*) FILTER (WHERE seq AND op = 'read') AS seq_reads,
    count(*) FILTER (WHERE seq AND op = 'write') AS seq_writes,
    histogram(seek_lbn, $limits) FILTER (WHERE seek_lbn IS NOT NULL) AS seek_all,
    histogram(seek_lbn, $limits) FILTER (WHERE seek_lbn IS NOT NULL AND op = 'read') AS seek_read,
    histogram(seek_lbn, $limits) FILTER (WHERE seek_lbn IS NOT NULL AND op = 'write') AS seek_write,
    quantile_disc(abs(seek_lbn), 0.5) AS median_abs_lbn
FROM f
GROUP BY GROUPING SETS ((), (rg), (btw))
