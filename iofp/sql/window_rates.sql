-- The series the regime rule reads (regime_windows.sql), from the I/O rows of view `io`: per window
-- of $window_ns, counted from $t0 (the first I/O of the selected device(s), iofp/sql/io_span.sql) for
-- $nwin windows up to the last, empty windows included, its start on the trace clock, IOPS and MB/s
-- (every op's bytes). The fingerprint computes the same columns in fingerprint/sql/window_series.sql,
-- in the one pass that also gives its other per-window figures; tests/test_regimes.py checks that the
-- two agree.
-- Parameters: $device (NULL = all devices), $window_ns, $t0, $nwin.
WITH agg AS (
    SELECT (ts_ns - $t0) // $window_ns AS k, count(*) AS ios, sum(size) AS bytes
    FROM io
    WHERE $device IS NULL OR device::VARCHAR = $device
    GROUP BY k
)
SELECT g.k AS k,
    $t0 + g.k * $window_ns AS start_ns,
    coalesce(a.ios, 0) * 1e9 / $window_ns AS iops,
    coalesce(a.bytes, 0) * 1e9 / $window_ns / 1e6 AS mbps
FROM range($nwin) g(k) LEFT JOIN agg a ON a.k = g.k
ORDER BY g.k
