-- The per-window table: one pass over the rows, no ordering, the sums every additive figure is
-- rolled up from. Per step of $step_ns from the first arrival $t0 (k: the default rule's first step,
-- or --window; a fingerprint's window is a run of whole steps), per bin of the finest burstiness
-- width $bin_ns (b), per --between flag (btw: inside [$lo, $hi]), op and sized/zero-size kind: the
-- requests and their bytes (the regime series: window_series.sql), and every count, sum and
-- maximum the scopes' stats (scope_stats.sql), burstiness (burst_counts.sql)
-- and noise batches (noise_batches.sql) read, once each window's regime is known. A few hundred
-- thousand rows for 50 M requests: the regime of a row is its window's, joined on these rows, not on
-- the requests. Its first and last times check the bounds $t0 and the last arrival, which come from
-- the files' footers (fingerprint/compute.py's _frame: a footer can disagree with its rows).
CREATE OR REPLACE TEMP TABLE fp_windows AS
SELECT (ts_ns - $t0) // $step_ns AS k,
    (ts_ns - $t0) // $bin_ns AS b,
    coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw,
    op::VARCHAR AS op,
    size > 0 AS sized,
    count(*) AS ios,
    min(ts_ns) AS ts_first,
    max(ts_ns) AS ts_last,
    coalesce(sum(size), 0) AS bytes,
    count(*) FILTER (WHERE size % 4096 <> 0) AS not_4k_sized,
    count(*) FILTER (WHERE "offset" % 4096 <> 0) AS not_4k_aligned,
    count(preflush) AS flags_known,
    count(*) FILTER (WHERE preflush) AS preflush,
    count(*) FILTER (WHERE fua) AS fua,
    count(*) FILTER (WHERE sync) AS sync,
    count(sync) AS sync_known,
    count(*) FILTER (WHERE op::VARCHAR = 'flush' OR preflush OR fua) AS points,
    count(inflight) AS inflight_known,
    sum(inflight) AS inflight_sum,
    max(inflight) AS inflight_max,
    count(lat_ns) AS lat_known,
    sum(lat_ns) AS lat_sum,
    max(lat_ns) AS lat_max
FROM io
WHERE $device IS NULL OR device::VARCHAR = $device
GROUP BY ALL
