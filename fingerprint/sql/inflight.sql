-- vscsiStats outstandingIOs histogram (in flight at issue, the I/O itself included) where known.
SELECT count(inflight) AS known,
    avg(inflight) AS mean,
    quantile_disc(inflight, 0.99) AS p99,
    max(inflight) AS max,
    histogram(inflight, $limits) AS all_ops,
    histogram(inflight, $limits) FILTER (WHERE op = 'read') AS reads,
    histogram(inflight, $limits) FILTER (WHERE op = 'write') AS writes
FROM cur
WHERE inflight IS NOT NULL
