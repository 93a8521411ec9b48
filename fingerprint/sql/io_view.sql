-- The selected I/O rows, with what every summary groups by computed on the fly (no materialised
-- copy: each query reads only the Parquet columns it needs):
--   dev  the device's rank among the trace's device names (an integer sort key in name order);
--   w    the --window index, counted from the first arrival;
--   rg   the window's regime: 1 steady, 2 spike, 0 neither (null until the regimes are known);
--   btw  true inside --between, else null.
-- The constants come from the session variable fp (set_params.sql).
CREATE OR REPLACE TEMP VIEW io AS
SELECT ts_ns, lat_ns, device::VARCHAR AS device, "offset", size, op::VARCHAR AS op,
    sync, fua, preflush, pid, inflight,
    list_position(getvariable('fp').devices, device::VARCHAR)::INTEGER AS dev,
    (ts_ns - getvariable('fp').t0) // getvariable('fp').window_ns AS w,
    getvariable('fp').regime[(ts_ns - getvariable('fp').t0) // getvariable('fp').window_ns + 1] AS rg,
    CASE WHEN ts_ns BETWEEN getvariable('fp').lo AND getvariable('fp').hi THEN true END AS btw
FROM io_src
WHERE getvariable('fp').device IS NULL OR device::VARCHAR = getvariable('fp').device
