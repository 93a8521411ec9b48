-- The constants the io view needs, as one session variable (a view takes no parameters): the
-- first arrival, the window width, the device filter and the sorted device names, the per-window
-- regime codes (index w + 1), and the --between range (null when not asked for).
SET VARIABLE fp = {
    't0': $t0::BIGINT, 'window_ns': $window_ns::BIGINT, 'device': $device::VARCHAR,
    'devices': $devices::VARCHAR[], 'regime': $regime::UTINYINT[], 'lo': $lo::BIGINT, 'hi': $hi::BIGINT
}
