-- The series the regime rule reads (regime_windows.sql), from the I/O rows of view `io`: per window
-- of $window_ns, counted from the first I/O of the selected device(s) up to the last, empty windows
-- included, its start on the trace clock, IOPS and MB/s (every op's bytes). The fingerprint computes
-- the same columns in fingerprint/sql/window_series.sql, in the one pass that also gives its other
-- per-window figures; tests/test_regimes.py checks that the two agree.
-- Parameters: $device (NULL = all devices), $window_ns.
WITH sel AS (
    SELECT ts_ns, size FROM io WHERE $device IS NULL OR device::VARCHAR = $device
), origin AS (
    SELECT min(ts_ns) AS t0, max(ts_ns) AS t1 FROM sel
), agg AS (
    SELECT (ts_ns - t0) // $window_ns AS k, count(*) AS ios, sum(size) AS bytes
    FROM sel, origin
    GROUP BY k
)
SELECT g.k AS k,
    (SELECT t0 FROM origin) + g.k * $window_ns AS start_ns,
    coalesce(a.ios, 0) * 1e9 / $window_ns AS iops,
    coalesce(a.bytes, 0) * 1e9 / $window_ns / 1e6 AS mbps
FROM range((SELECT (t1 - t0) // $window_ns + 1 FROM origin)) g(k) LEFT JOIN agg a ON a.k = g.k
ORDER BY g.k
