-- The selected I/O rows in the order the trace's files hold them (no ORDER BY: DuckDB keeps a scan's
-- insertion order), read in Arrow batches by fingerprint/arrival.py, which checks that they come in
-- time order and puts equal times in the order (device, offset, size) itself: a capture writes its
-- rows in time order, so the arrival order and every device's order come from this one scan, where a
-- sort of every row (arrival_order.sql) and one per device (device_stream.sql) took a third of the
-- fingerprint's time at 50 M rows. Only the columns the one pass reads: the device as its rank among the
-- selected device names ($devices, sorted), the pid, the op as its place in $ops (0 none), the
-- latency and whether the row is a flush point, as flush_gaps.sql has it (fingerprint/pass_counts.py
-- counts processes, latencies and flush gaps from them too).
SELECT ts_ns, list_position($devices, device::VARCHAR)::INTEGER AS dev, "offset", size, pid,
    coalesce(list_position($ops, op::VARCHAR), 0)::UTINYINT AS o, lat_ns,
    coalesce(op::VARCHAR = 'flush' OR preflush OR fua, false) AS point
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
