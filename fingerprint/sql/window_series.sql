-- The regime series (iofp/regimes.py's series_of) from the per-window table: per step k with data
-- requests (reads, writes, discards: zero-byte flushes are not I/Os, as iostat counts them), their
-- count and bytes; the same figures as iofp/sql/regime_series.sql reads from the rows (the size
-- moments: size_moments.sql).
SELECT k, sum(ios) AS ios, sum(bytes)::DOUBLE AS bytes
FROM fp_windows
WHERE op IN ('read', 'write', 'discard')
GROUP BY k
