-- Per-window IOPS of the trace (one device, or all) with the steady-state and spike flags a replay
-- selection picks from. Windows start at the first I/O; empty windows count (as IOPS 0).
--
-- The rule is the project's (BRIEF "Why it exists"; notes/workload-characterisation.md 1.6), kept
-- identical to the fingerprint stage's without importing it:
--   steady: a block of 5 consecutive windows whose IOPS range (max - min) is <= 20% of its mean and
--           whose least-squares fit moves by <= 10% of the mean across the block (SNIA SSS PTS data and
--           slope excursion); a window is steady when some passing block covers it.
--   spike:  IOPS, or MB/s, above median + max(3 * 1.4826 * MAD, 0.5 * median) over all windows of
--           the trace (MB/s too: a peak of large I/Os can double the bytes at the same I/O count).
-- Parameters: $device (NULL = all devices), $window_ns.
WITH sel AS (
    SELECT ts_ns, size FROM io WHERE $device IS NULL OR device = $device
),
origin AS (
    SELECT min(ts_ns) AS t0, max(ts_ns) AS t1 FROM sel
),
counts AS (
    SELECT (ts_ns - t0) // $window_ns AS w, count(*) AS n, sum(size) AS bytes
    FROM sel, origin
    GROUP BY w
),
series AS (
    SELECT g.w, coalesce(c.n, 0) / ($window_ns / 1e9) AS iops,
        coalesce(c.bytes, 0) / ($window_ns / 1e9) / 1e6 AS mbps
    FROM generate_series(0, (SELECT (t1 - t0) // $window_ns FROM origin)) AS g(w)
    LEFT JOIN counts AS c ON c.w = g.w
),
blocks AS (
    SELECT
        w,
        iops,
        mbps,
        count(*) OVER b AS k,
        avg(iops) OVER b AS mean_iops,
        max(iops) OVER b - min(iops) OVER b AS range_iops,
        regr_slope(iops, w) OVER b AS slope
    FROM series
    WINDOW b AS (ORDER BY w ROWS BETWEEN CURRENT ROW AND 4 FOLLOWING)
),
passing AS (
    SELECT
        w,
        iops,
        mbps,
        coalesce(
            k = 5 AND mean_iops > 0
            AND range_iops <= 0.2 * mean_iops
            AND abs(coalesce(slope, 0) * 4) <= 0.1 * mean_iops,
            false
        ) AS block_ok
    FROM blocks
),
med AS (
    SELECT median(iops) AS m, median(mbps) AS m_mb FROM series
),
mad AS (
    SELECT median(abs(iops - m)) AS d, median(abs(mbps - m_mb)) AS d_mb FROM series, med
)
SELECT
    w,
    (SELECT t0 FROM origin) + w * $window_ns AS start_ns,
    iops,
    bool_or(block_ok) OVER (ORDER BY w ROWS BETWEEN 4 PRECEDING AND CURRENT ROW) AS steady,
    iops > m + greatest(3 * 1.4826 * d, 0.5 * m)
        OR mbps > m_mb + greatest(3 * 1.4826 * d_mb, 0.5 * m_mb) AS spike
FROM passing, med, mad
ORDER BY w
