-- Each data I/O in each device's issue order, reduced to integers: a data I/O is sequential when
-- it starts where the previous data I/O on the same device ended (zero-size requests such as
-- flushes neither start nor break a run), and its vscsiStats seekDistance in 512 B LBNs is this
-- start - the last LBN of that previous I/O (+1 = sequential). Only the sort keys and an op code
-- (1 read, 2 write, 0 other) go through the sort: the window index and --between flag are derived
-- from ts_ns after it. Materialised (a few narrow columns) because device_order reads it twice:
-- once for the per-window partials, once more for the few seeks near the median.
CREATE OR REPLACE TEMP TABLE dev_seeks AS
WITH s AS (
    SELECT dev, ts_ns, "offset", size,
        CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 ELSE 0 END::UTINYINT AS opc
    FROM io WHERE size > 0 ORDER BY dev, ts_ns, "offset", size
), l AS (
    SELECT ts_ns, opc, "offset",
        CASE WHEN lag(dev) OVER () = dev THEN lag("offset" + size) OVER () END AS prev_end
    FROM s
)
SELECT ((ts_ns - getvariable('fp').t0) // getvariable('fp').window_ns)::INTEGER AS w,
    CASE WHEN ts_ns BETWEEN getvariable('fp').lo AND getvariable('fp').hi THEN true END AS btw,
    opc,
    coalesce("offset" = prev_end, false) AS seq,
    ("offset" - prev_end) // 512 + 1 AS seek_lbn
FROM l
