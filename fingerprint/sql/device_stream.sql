-- Used when the trace's rows are out of time order (fingerprint/arrival.py reads them in one pass
-- otherwise, to the same figures).
-- One device's sized requests in issue order ($dev: its rank among the trace's device names), read
-- in Arrow batches by fingerprint/device_order.py, which computes what depends on the order (the
-- previous request's end on the device and within the same process) in numpy. Only the sort keys,
-- the pid and an op code (1 read, 2 write, 0 other) go through the sort; the window's regime class
-- and --between flag come from ts_ns after it. One device at a time: its rows arrive nearly in time
-- order, so the sort by time is fast, where one sort of every row by (device, time) took over twice
-- as long (50 M rows, 2 devices: 7.7 s against 18 s). Equal times are ordered by offset and size,
-- so the figures do not depend on file order.
SELECT ts_ns, "offset", size, pid,
    CASE op WHEN 'read' THEN 1 WHEN 'write' THEN 2 ELSE 0 END::UTINYINT AS opc
FROM scoped_io
WHERE size > 0 AND dev = $dev
ORDER BY ts_ns, "offset", size
