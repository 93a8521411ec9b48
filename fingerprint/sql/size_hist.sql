-- vscsiStats ioLength histograms (a bucket counts sizes <= its limit) for all data I/O, reads, writes.
SELECT histogram(size, $limits) FILTER (WHERE size > 0) AS all_ops,
    histogram(size, $limits) FILTER (WHERE op = 'read') AS reads,
    histogram(size, $limits) FILTER (WHERE op = 'write') AS writes,
    count(*) FILTER (WHERE size > 0 AND size % 4096 <> 0) AS not_4k_sized,
    count(*) FILTER (WHERE size > 0 AND "offset" % 4096 <> 0) AS not_4k_aligned
FROM cur
