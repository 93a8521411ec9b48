-- Used when the trace's rows are out of time order (fingerprint/arrival.py reads them in one pass
-- otherwise, to the same figures).
-- Features of the arrival order (every device, every request), per scope: the gap since the previous
-- arrival (vscsiStats interarrival, µs; its mean and CV) and whether a sized request starts where the
-- previous record ended (the traces README's sequentiality). Equal timestamps are ordered by device,
-- offset and size, so results do not depend on file order. Only the integer sort keys go through the
-- sort (the window comes from ts_ns after it); streaming lags feed per-window partials (count, sum,
-- exact sum of squares, histogram), which take their window's regime class (regime_w) and roll up
-- into scopes (scope_map) on a few rows: the standard deviation by the parallel-variance formula
-- (sum of M2 + n * (mean_i - mean)^2, the windows in order). Every float is computed from exact
-- integer sums in a fixed order: DuckDB's var_pop and an unordered list summed the same trace's
-- partials in the order its threads finished, and the CV differed in its last bit between two runs
-- (the same trace's fingerprints were not equal).
WITH s AS (
    SELECT ts_ns, dev, "offset", size FROM scoped_io ORDER BY ts_ns, dev, "offset", size
), l AS (
    SELECT ts_ns, ts_ns - lag(ts_ns) OVER () AS iat_ns,
        CASE WHEN size > 0 THEN coalesce("offset" = lag("offset" + size) OVER (), false) END AS seq_any
    FROM s
), pw AS (
    SELECT (ts_ns - p.t0) // p.window_ns AS w, coalesce(ts_ns BETWEEN p.lo AND p.hi, false) AS btw,
        count(iat_ns) AS n, sum(iat_ns) AS total, sum(iat_ns::HUGEINT * iat_ns) AS sumsq,
        histogram(iat_ns / 1000.0, $limits) FILTER (WHERE iat_ns IS NOT NULL) AS h,
        count(*) FILTER (WHERE seq_any) AS seq_any_ios
    FROM l CROSS JOIN fp_params p
    GROUP BY ALL
), mw AS (
    -- a window's mean and M2 from its exact sums: sumsq - total^2/n, its integer part in HUGEINT
    -- (gaps are >= 0, so sumsq <= total^2 <= (2^63)^2 fits), the remainder's fraction in DOUBLE
    SELECT * EXCLUDE (sumsq), total / nullif(n, 0) AS mean,
        (sumsq - total * total // nullif(n, 0))::DOUBLE - (total * total % nullif(n, 0))::DOUBLE / n AS m2
    FROM pw
), p AS MATERIALIZED (
    SELECT m.scope, mw.* FROM mw JOIN regime_w USING (w) JOIN scope_map m USING (rg, btw)
), c AS (
    SELECT scope,
        sum(n)::BIGINT AS gaps,
        sum(total) / nullif(sum(n), 0) AS iat_mean_ns,
        list(struct_pack(n := n, mean := mean, m2 := m2) ORDER BY w, btw) FILTER (WHERE n > 0) AS moments,
        sum(seq_any_ios)::BIGINT AS seq_any_ios
    FROM p
    GROUP BY scope
), hm AS (
    SELECT scope, map(list("key" ORDER BY "key"), list(n ORDER BY "key")) AS iat_hist
    FROM (
        SELECT scope, "key", sum("value") AS n
        FROM (SELECT scope, unnest(map_entries(h), recursive := true) FROM p WHERE h IS NOT NULL)
        GROUP BY scope, "key"
    )
    GROUP BY scope
)
SELECT c.scope, c.gaps, c.iat_mean_ns,
    sqrt(greatest(list_sum([m.m2 + m.n * (m.mean - c.iat_mean_ns) ** 2 FOR m IN c.moments]), 0) / c.gaps)
        AS iat_std_ns,
    hm.iat_hist, c.seq_any_ios
FROM c LEFT JOIN hm USING (scope)
