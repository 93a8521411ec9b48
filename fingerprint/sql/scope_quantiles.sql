-- The exact value counts (value_counts.sql, size_values.sql) the scopes' nearest-rank percentiles are
-- read from (fingerprint/quantiles.py), sorted once by measure and value: per (regime class,
-- --between flag) part (rg * 2 + btw), measure m (0 latency, 1 size, 2 in-flight), op (its place in
-- $ops; 0 none) and value, the requests with that value. Sizes of sized requests only.
SELECT rg::INTEGER * 2 + btw::INTEGER AS part, m::INTEGER AS m,
    coalesce(list_position($ops, op), 0)::INTEGER AS o, v, n
FROM fp_values
WHERE v IS NOT NULL AND (m <> 1 OR v > 0)
ORDER BY m, v
