-- The selected I/O rows in the order the trace's files hold them (no ORDER BY: DuckDB keeps a scan's
-- insertion order), read in Arrow batches by fingerprint/arrival.py, which checks that they come in
-- time order and puts equal times in the order (device, offset, size) itself: a capture writes its
-- rows in time order, so the arrival order and every device's order come from this one scan, where a
-- sort of every row (arrival_order.sql) and one per device (device_stream.sql) took a third of the
-- fingerprint's time at 50 M rows. Only the columns the orders read: the device as its rank among the
-- selected device names ($devices, sorted), the pid, and an op code (1 read, 2 write, 0 other).
SELECT ts_ns, list_position($devices, device::VARCHAR)::INTEGER AS dev, "offset", size, pid,
    CASE op::VARCHAR WHEN 'read' THEN 1 WHEN 'write' THEN 2 ELSE 0 END::UTINYINT AS opc
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
