-- The sums of size^2 and size^3 over the data requests (reads, writes, discards), exact integers cast
-- once (as iofp/sql/regime_series.sql casts its own), for the regime series' byte noise.
SELECT sum(n * size::HUGEINT * size)::DOUBLE AS sq, sum(n * size::HUGEINT * size * size)::DOUBLE AS cube
FROM fp_sizes
WHERE op IN ('read', 'write', 'discard')
