-- vscsiStats interarrival histogram (µs) and the coefficient of variation of the gaps.
SELECT count(iat_ns) AS gaps,
    avg(iat_ns) AS mean_ns,
    stddev_pop(iat_ns) AS std_ns,
    histogram(iat_ns / 1000.0, $limits) AS all_ops
FROM cur
WHERE iat_ns IS NOT NULL
