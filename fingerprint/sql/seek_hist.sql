-- vscsiStats seekDistance histograms in 512 B LBNs (+1 = sequential), all, reads, writes.
SELECT histogram(seek_lbn, $limits) AS all_ops,
    histogram(seek_lbn, $limits) FILTER (WHERE op = 'read') AS reads,
    histogram(seek_lbn, $limits) FILTER (WHERE op = 'write') AS writes,
    quantile_disc(abs(seek_lbn), 0.5) AS median_abs_lbn
FROM cur
WHERE seek_lbn IS NOT NULL
