-- The constants the scoped_io view and the per-scope queries need, as a one-row table made from
-- bound parameters (a view takes none): the first and last arrival, the window width, the device
-- filter and the sorted device names, and the --between range on the trace clock (null when not
-- asked for).
CREATE OR REPLACE TEMP TABLE fp_params AS
SELECT $t0::BIGINT AS t0, $t1::BIGINT AS t1, $window_ns::BIGINT AS window_ns, $device::VARCHAR AS device,
    $devices::VARCHAR[] AS devices, $lo::BIGINT AS lo, $hi::BIGINT AS hi
