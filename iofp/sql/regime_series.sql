-- The series the regime rule reads (iofp/regimes.py), from the I/O rows of view `io`: per window of
-- $window_ns counted from $t0 (the first arrival of the selected device(s), io_span.sql), the data
-- requests (reads, writes, discards: zero-byte flushes are not I/Os, as iostat counts them), their
-- bytes, and (on every row) the sums of size^2 and size^3 over all of them, which the bytes' counting
-- noise is scaled by: exact integers cast once, whatever order they were summed in. Only windows with
-- I/O are rows; the caller fills the empty ones in and sums runs of them into wider windows.
-- Parameters: $device (NULL = all), $window_ns, $t0.
SELECT (ts_ns - $t0) // $window_ns AS k,
    count(*) AS ios,
    sum(size)::DOUBLE AS bytes,
    (sum(sum(size::HUGEINT * size)) OVER ())::DOUBLE AS sq,
    (sum(sum(size::HUGEINT * size * size)) OVER ())::DOUBLE AS cube
FROM io
WHERE ($device IS NULL OR device::VARCHAR = $device) AND op::VARCHAR IN ('read', 'write', 'discard')
GROUP BY k
