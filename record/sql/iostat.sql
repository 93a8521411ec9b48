-- The recorder's per-second summary (`summary`, record/summary.py's rows) over [$lo, $hi) in steps of
-- $step seconds, per step, device and op: counts, bytes and latency sums (exact), the seconds the
-- recorder covered in the step (rates are per covered second), and the p50/p99/p99.9 bins of the
-- histograms merged over the step (nearest rank: the first bin whose running count reaches
-- ceil(n x fraction), in integers). A second recorded with no I/O (op 'none') counts as covered.
WITH r AS (
    SELECT ($lo + (t - $lo) // $step * $step) AS k, t, device, op, count, bytes, lat_sum_ns, lat_max_ns,
           lat_unknown, inflight_max, bins, bin_counts
    FROM summary
    WHERE t >= $lo AND t < $hi
),
covered AS (
    SELECT k, count(DISTINCT t) AS seconds FROM r GROUP BY k
),
sums AS (
    SELECT k, device, op, sum(count) AS n, sum(bytes) AS bytes, sum(lat_sum_ns) AS lat_sum_ns,
           sum(count - lat_unknown) AS timed, max(lat_max_ns) AS lat_max_ns, max(inflight_max) AS inflight_max
    FROM r
    WHERE op <> 'none'
    GROUP BY k, device, op
),
bins AS (
    SELECT k, device, op, unnest(bins) AS bin, unnest(bin_counts) AS n FROM r WHERE op <> 'none'
),
hist AS (
    SELECT k, device, op, bin, sum(n) AS n FROM bins GROUP BY k, device, op, bin
),
cum AS (
    SELECT *, sum(n) OVER (PARTITION BY k, device, op ORDER BY bin) AS c,
              sum(n) OVER (PARTITION BY k, device, op) AS total
    FROM hist
),
pct AS (
    SELECT k, device, op,
           min(bin) FILTER (WHERE 2 * c >= total) AS p50_bin,
           min(bin) FILTER (WHERE 100 * c >= 99 * total) AS p99_bin,
           min(bin) FILTER (WHERE 1000 * c >= 999 * total) AS p999_bin
    FROM cum
    GROUP BY k, device, op
)
SELECT covered.k, covered.seconds, sums.device, sums.op, sums.n, sums.bytes, sums.lat_sum_ns, sums.timed,
       sums.lat_max_ns, sums.inflight_max, pct.p50_bin, pct.p99_bin, pct.p999_bin
FROM covered
LEFT JOIN sums USING (k)
LEFT JOIN pct USING (k, device, op)
ORDER BY covered.k, sums.device, sums.op
