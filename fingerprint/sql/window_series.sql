-- The regime series (iofp/regimes.py's series_of) from the per-window table: per step k with data
-- requests (reads, writes, discards: zero-byte flushes are not I/Os, as iostat counts them), their
-- count, bytes and sums of size^2 and size^3; the same figures as iofp/sql/regime_series.sql reads
-- from the rows.
SELECT k, sum(ios) AS ios, sum(bytes)::DOUBLE AS bytes, sum(sq) AS sq, sum(cube) AS cube
FROM fp_windows
WHERE op IN ('read', 'write', 'discard')
GROUP BY k
