-- Counts and bytes by op, size, flag and latency moments of every scope, rolled up from the per-window
-- table (window_table.sql: each step k lies in window k // $steps, whose regime class is regime_w's)
-- through scope_map (the devices each scope's requests went to: scope_devices.sql). I/Os
-- (`data_ios`) are data requests: reads, writes and discards, as iostat and fio count them; flushes
-- are counted on their own. Sizes, 4 KiB alignment and the sequential runs (fingerprint/device_order.py) are of
-- the sized requests (size > 0). Null flags give null counts, not zeros.
SELECT m.scope,
    sum(ios)::BIGINT AS requests,
    coalesce(sum(ios) FILTER (WHERE op IN ('read', 'write', 'discard')), 0)::BIGINT AS data_ios,
    coalesce(sum(ios) FILTER (WHERE op = 'read'), 0)::BIGINT AS reads,
    coalesce(sum(ios) FILTER (WHERE op = 'write'), 0)::BIGINT AS writes,
    coalesce(sum(ios) FILTER (WHERE op = 'discard'), 0)::BIGINT AS discards,
    coalesce(sum(ios) FILTER (WHERE op = 'flush'), 0)::BIGINT AS flushes,
    coalesce(sum(bytes) FILTER (WHERE op IN ('read', 'write', 'discard')), 0)::BIGINT AS bytes,
    coalesce(sum(bytes) FILTER (WHERE op = 'read'), 0)::BIGINT AS read_bytes,
    coalesce(sum(bytes) FILTER (WHERE op = 'write'), 0)::BIGINT AS write_bytes,
    coalesce(sum(bytes) FILTER (WHERE op = 'discard'), 0)::BIGINT AS discard_bytes,
    coalesce(sum(ios) FILTER (WHERE sized), 0)::BIGINT AS sized_ios,
    coalesce(sum(bytes) FILTER (WHERE sized), 0)::BIGINT AS sized_bytes,
    coalesce(sum(not_4k_sized) FILTER (WHERE sized), 0)::BIGINT AS not_4k_sized,
    coalesce(sum(not_4k_aligned) FILTER (WHERE sized), 0)::BIGINT AS not_4k_aligned,
    sum(flags_known)::BIGINT AS flags_known,
    sum(preflush)::BIGINT AS preflush,
    sum(fua)::BIGINT AS fua,
    coalesce(sum(sync) FILTER (WHERE op = 'write'), 0)::BIGINT AS sync_writes,
    coalesce(sum(sync_known) FILTER (WHERE op = 'write'), 0)::BIGINT AS writes_flags_known,
    sum(points)::BIGINT AS durability_points,
    sum(inflight_known)::BIGINT AS inflight_known,
    sum(inflight_sum) / sum(inflight_known) AS inflight_mean,
    max(inflight_max) AS inflight_max,
    -- 'all' latency is reads and writes, as in fingerprint/quantiles.py
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
FROM fp_windows p JOIN regime_w r ON r.w = p.k // $steps JOIN scope_map m USING (rg, btw)
GROUP BY m.scope
