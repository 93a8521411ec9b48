-- Exact value counts of the latency, the one grouped pass every latency percentile, vscsiStats
-- latency histogram and 10%-wide latency bucket is read from (fingerprint/quantiles.py,
-- scope_hists.sql, lat_buckets.sql): per regime class (rg: its window's, from $classes, one per
-- window of $window_ns from $t0), --between flag (btw), op and latency, the requests with that
-- latency. Latencies repeat, so the counts are fewer than the rows, and a hash aggregate spills to
-- disk where a quantile's buffer of every value would have to fit in memory. Only the latencies
-- outside [0, $limit): the one pass counts those inside in arrays indexed by value
-- (fingerprint/pass_counts.py, which adds them here; $limit 0 where it did not run), and the Parquet
-- statistics let the scan skip every row group without a latency outside. Sizes and depths are added
-- by size_values.sql (m is the measure: 0 latency, 1 size, 2 in-flight). The op is grouped as its
-- place in $ops (a byte, not a string: 0.8 s where the string key took 0.95 s at 12 M rows) and named
-- in the table's few rows.
CREATE OR REPLACE TEMP TABLE fp_values AS
SELECT rg, btw, $ops[o] AS op, 0::UTINYINT AS m, v, n
FROM (
    SELECT rg, btw, o, lat_ns AS v, count(*) AS n
    FROM (
        SELECT $classes[(ts_ns - $t0) // $window_ns + 1]::UTINYINT AS rg,
            coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw, list_position($ops, op::VARCHAR)::UTINYINT AS o,
            lat_ns
        FROM io
        WHERE lat_ns IS NOT NULL AND (lat_ns < 0 OR lat_ns >= $limit)
            AND ($device IS NULL OR device::VARCHAR = $device)
    )
    GROUP BY ALL
)
