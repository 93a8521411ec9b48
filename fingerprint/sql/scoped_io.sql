-- The selected I/O rows of view `io`, with what every summary groups by computed on the fly (no
-- materialised copy: each query reads only the Parquet columns it needs):
--   dev  the device's rank among the trace's device names (an integer sort key in name order);
--   w    the window index, counted from the first arrival;
--   rg   the window's regime class (registered table regime_w, one row per window: iofp/regimes.py);
--   btw  whether the row lies inside --between (false when not asked for);
--   data whether it is a data request (read, write, discard): what IOPS, MB/s and sizes count.
-- The constants come from fp_params (scope_params.sql).
CREATE OR REPLACE TEMP VIEW scoped_io AS
SELECT i.ts_ns, i.queue_ns, i.lat_ns, i.device::VARCHAR AS device, i."offset", i.size, i.op::VARCHAR AS op,
    i.sync, i.fua, i.preflush, i.pid, i.inflight,
    list_position(p.devices, i.device::VARCHAR)::INTEGER AS dev,
    r.w, r.rg,
    coalesce(i.ts_ns BETWEEN p.lo AND p.hi, false) AS btw,
    i.op::VARCHAR IN ('read', 'write', 'discard') AS data
FROM io i CROSS JOIN fp_params p JOIN regime_w r ON r.w = (i.ts_ns - p.t0) // p.window_ns
WHERE p.device IS NULL OR i.device::VARCHAR = p.device
