-- Counts and bytes by op, the arrival span and the size moments of the scope.
SELECT count(*) AS ios,
    count(*) FILTER (WHERE op = 'read') AS reads,
    count(*) FILTER (WHERE op = 'write') AS writes,
    count(*) FILTER (WHERE op = 'discard') AS discards,
    count(*) FILTER (WHERE op = 'flush') AS flushes,
    coalesce(sum(size), 0) AS bytes,
    coalesce(sum(size) FILTER (WHERE op = 'read'), 0) AS read_bytes,
    coalesce(sum(size) FILTER (WHERE op = 'write'), 0) AS write_bytes,
    avg(size) FILTER (WHERE size > 0) AS mean_size,
    quantile_disc(size, 0.5) FILTER (WHERE size > 0) AS median_size,
    min(ts_ns) AS first_ns, max(ts_ns) AS last_ns,
    count(DISTINCT device) AS devices
FROM cur
