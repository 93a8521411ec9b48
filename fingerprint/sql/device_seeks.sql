-- One device's sized requests in issue order, appended to dev_seeks (device_seeks_table.sql): a
-- request is sequential when it starts where the previous sized request on the same device ended
-- (zero-size requests such as flushes neither start nor break a run), and its vscsiStats
-- seekDistance in 512 B LBNs is this start - the last LBN of that previous request (+1 =
-- sequential). One device at a time ($dev, its rank): its rows arrive nearly in time order, so the
-- sort by time is fast, where one sort of every row by (device, time) took over twice as long
-- (50 M rows, 2 devices: 7.7 s against 18 s). Only the sort keys, the pid and an op code go through
-- the sort; the window's regime class (regime_w) and --between flag come from ts_ns after it, so
-- device_order needs no lookup per row in each of its reads.
-- The same pass gives each submitting process's own issue order on the device (pseq: it starts
-- where the same process's previous sized request on this device ended; null without a pid), read
-- by process_order.sql: the process order is the device order's rows partitioned by pid, so it
-- needs no scan and filter of its own (a separate query partitioned by device and pid cost 15% more
-- CPU for the two orders, and ran on one core where this runs a partition per process on both).
INSERT INTO dev_seeks
WITH s AS (
    SELECT ts_ns, "offset", size, pid,
        CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 ELSE 0 END::UTINYINT AS opc
    FROM scoped_io WHERE size > 0 AND dev = $dev ORDER BY ts_ns, "offset", size
), l AS (
    SELECT ts_ns, opc, "offset", pid, lag("offset" + size) OVER () AS prev_end,
        CASE WHEN pid IS NOT NULL THEN coalesce("offset" = lag("offset" + size) OVER (
            PARTITION BY pid ORDER BY ts_ns, "offset", size), false) END AS pseq
    FROM s
)
SELECT r.rg,
    coalesce(l.ts_ns BETWEEN p.lo AND p.hi, false) AS btw,
    l.opc,
    coalesce(l."offset" = l.prev_end, false) AS seq,
    (l."offset" - l.prev_end) // 512 + 1 AS seek_lbn,
    l.pid,
    l.pseq
FROM l CROSS JOIN fp_params p JOIN regime_w r ON r.w = (l.ts_ns - p.t0) // p.window_ns
