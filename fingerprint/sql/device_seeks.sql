-- One device's data I/Os in issue order, appended to dev_seeks (device_seeks_table.sql): a data I/O
-- is sequential when it starts where the previous data I/O on the same device ended (zero-size
-- requests such as flushes neither start nor break a run), and its vscsiStats seekDistance in
-- 512 B LBNs is this start - the last LBN of that previous I/O (+1 = sequential). One device at a
-- time ($dev, its rank): its rows arrive nearly in time order, so the sort by time is fast, where
-- one sort of every row by (device, time) took over twice as long (50 M rows, 2 devices: 7.7 s
-- against 18 s). Only the sort keys and an op code go through the sort; the window's regime code
-- and --between flag come from ts_ns after it (the regimes are known by now: storing the code,
-- not the window index, spares device_order a lookup per row in each of its reads).
INSERT INTO dev_seeks
WITH s AS (
    SELECT ts_ns, "offset", size,
        CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 ELSE 0 END::UTINYINT AS opc
    FROM io WHERE size > 0 AND dev = $dev ORDER BY ts_ns, "offset", size
), l AS (
    SELECT ts_ns, opc, "offset", lag("offset" + size) OVER () AS prev_end FROM s
)
SELECT getvariable('fp').regime[(ts_ns - getvariable('fp').t0) // getvariable('fp').window_ns + 1] AS rg,
    CASE WHEN ts_ns BETWEEN getvariable('fp').lo AND getvariable('fp').hi THEN true END AS btw,
    opc,
    coalesce("offset" = prev_end, false) AS seq,
    ("offset" - prev_end) // 512 + 1 AS seek_lbn
FROM l
