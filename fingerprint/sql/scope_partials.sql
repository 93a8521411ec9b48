-- Partial sums, one pass over the rows, no ordering: every count, sum, maximum and vscsiStats
-- histogram (ioLength, outstandingIOs, latency µs) of the rows of one regime class, --between flag,
-- op, device and sized/zero-size kind. Scopes are unions of (rg, btw) parts (scope_map: fingerprint/frame.py), so
-- scope_stats and scope_hists roll these few rows up into every scope exactly; each row updates each
-- aggregate once, where per-scope FILTERs would update it once per scope.
CREATE OR REPLACE TEMP TABLE scope_parts AS
SELECT rg, btw, op, device, size > 0 AS sized,
    count(*) AS ios,
    coalesce(sum(size), 0) AS bytes,
    count(*) FILTER (WHERE size % 4096 <> 0) AS not_4k_sized,
    count(*) FILTER (WHERE "offset" % 4096 <> 0) AS not_4k_aligned,
    count(preflush) AS flags_known,
    count(*) FILTER (WHERE preflush) AS preflush,
    count(*) FILTER (WHERE fua) AS fua,
    count(*) FILTER (WHERE sync) AS sync,
    count(sync) AS sync_known,
    count(*) FILTER (WHERE op = 'flush' OR preflush OR fua) AS durability_points,
    count(inflight) AS inflight_known,
    sum(inflight) AS inflight_sum,
    max(inflight) AS inflight_max,
    count(lat_ns) AS lat_known,
    sum(lat_ns) AS lat_sum,
    max(lat_ns) AS lat_max,
    histogram(size, $size_limits) AS size_hist,
    histogram(inflight, $inflight_limits) FILTER (WHERE inflight IS NOT NULL) AS inflight_hist,
    histogram(lat_ns / 1000.0, $lat_limits) FILTER (WHERE lat_ns IS NOT NULL) AS lat_hist
FROM scoped_io
GROUP BY ALL
