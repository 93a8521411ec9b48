-- Counts and bytes by op, size, flag and latency moments of every scope, rolled up from the
-- per-window partials (scope_parts): GROUPING SETS over () (the whole trace), the window's regime
-- code rg (steady, spike) and the --between flag. Null flags give null counts, not zeros.
WITH p AS (SELECT *, getvariable('fp').regime[w + 1] AS rg FROM scope_parts)
SELECT CASE WHEN grouping(rg) = 0 THEN CASE rg WHEN 1 THEN 'steady' WHEN 2 THEN 'spike' END
        WHEN grouping(btw) = 0 THEN CASE WHEN btw THEN 'between' END
        ELSE 'whole' END AS scope,
    sum(ios)::BIGINT AS ios,
    coalesce(sum(ios) FILTER (WHERE op = 'read'), 0)::BIGINT AS reads,
    coalesce(sum(ios) FILTER (WHERE op = 'write'), 0)::BIGINT AS writes,
    coalesce(sum(ios) FILTER (WHERE op = 'discard'), 0)::BIGINT AS discards,
    coalesce(sum(ios) FILTER (WHERE op = 'flush'), 0)::BIGINT AS flushes,
    sum(bytes)::BIGINT AS bytes,
    coalesce(sum(bytes) FILTER (WHERE op = 'read'), 0)::BIGINT AS read_bytes,
    coalesce(sum(bytes) FILTER (WHERE op = 'write'), 0)::BIGINT AS write_bytes,
    count(DISTINCT device) AS devices,
    coalesce(sum(ios) FILTER (WHERE data), 0)::BIGINT AS data_ios,
    coalesce(sum(bytes) FILTER (WHERE data), 0)::BIGINT AS data_bytes,
    coalesce(sum(not_4k_sized) FILTER (WHERE data), 0)::BIGINT AS not_4k_sized,
    coalesce(sum(not_4k_aligned) FILTER (WHERE data), 0)::BIGINT AS not_4k_aligned,
    sum(flags_known)::BIGINT AS flags_known,
    sum(preflush)::BIGINT AS preflush,
    sum(fua)::BIGINT AS fua,
    coalesce(sum(sync) FILTER (WHERE op = 'write'), 0)::BIGINT AS sync_writes,
    coalesce(sum(sync_known) FILTER (WHERE op = 'write'), 0)::BIGINT AS writes_flags_known,
    sum(durability_points)::BIGINT AS durability_points,
    sum(inflight_known)::BIGINT AS inflight_known,
    sum(inflight_sum) / sum(inflight_known) AS inflight_mean,
    max(inflight_max) AS inflight_max,
    -- 'all' latency is reads and writes, as in scope_quantiles
    sum(lat_known) FILTER (WHERE op IN ('read', 'write'))::BIGINT AS lat_n_all,
    sum(lat_sum) FILTER (WHERE op IN ('read', 'write'))
        / sum(lat_known) FILTER (WHERE op IN ('read', 'write')) AS lat_mean_all,
    max(lat_max) FILTER (WHERE op IN ('read', 'write')) AS lat_max_all,
    sum(lat_sum) FILTER (WHERE op = 'read') / sum(lat_known) FILTER (WHERE op = 'read') AS lat_mean_read,
    max(lat_max) FILTER (WHERE op = 'read') AS lat_max_read,
    sum(lat_sum) FILTER (WHERE op = 'write') / sum(lat_known) FILTER (WHERE op = 'write') AS lat_mean_write,
    max(lat_max) FILTER (WHERE op = 'write') AS lat_max_write,
    sum(lat_sum) FILTER (WHERE op = 'discard') / sum(lat_known) FILTER (WHERE op = 'discard') AS lat_mean_discard,
    max(lat_max) FILTER (WHERE op = 'discard') AS lat_max_discard,
    sum(lat_sum) FILTER (WHERE op = 'flush') / sum(lat_known) FILTER (WHERE op = 'flush') AS lat_mean_flush,
    max(lat_max) FILTER (WHERE op = 'flush') AS lat_max_flush
FROM p
GROUP BY GROUPING SETS ((), (rg), (btw))
