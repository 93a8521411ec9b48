-- The regime of every window: steady, spike or neither, and the spike thresholds that decided it
-- (the same on every row). The one rule of the fingerprint's steady/spike scopes and of replay's
-- --regime (iofp/regimes.py runs it for both), so the windows a fingerprint lists are the windows a
-- replay can select.
--
-- Input: `regime_series` (k, iops, mbps), one row per window k = 0, 1, ... from the first I/O of
-- the selected device(s) to the last, empty windows included as 0 (iofp/sql/window_rates.sql).
--
--   steady: the SNIA PTS rule on IOPS. A block of 5 consecutive windows passes when max - min <= 20%
--     of its mean and the least-squares fit moves by at most 10% of the mean across it (|slope| * 4
--     windows); a window is steady when a passing block covers it and it is not a spike. Idle blocks
--     (mean 0) never pass.
--   spike: IOPS above median + max(3 * 1.4826 * MAD, 0.5 * median), or MB/s above the same on MB/s.
--     The base of median and MAD is the SNIA-steady windows, so the threshold measures "well above the
--     steady state": over all windows the idle ones would drag the median to 0 and call every busy
--     window a spike. With no steady window the base is the non-empty windows, so a mostly idle trace
--     is not all "spike" against a median of zero. The MAD is scaled by 1.4826 to estimate a standard
--     deviation; the half-median floor stops a very flat steady state from calling noise a spike. MB/s
--     has its own threshold because a peak of large I/Os (a backup, a batch scan, a checkpoint) can
--     double the bytes without moving the I/O count.
--   A plateau that is steady by the SNIA rule but above the threshold (market open: 6 s at 4x the
--     load) is a spike, never both.
WITH block AS (
    SELECT k,
        count(*) OVER b AS n,
        max(iops) OVER b AS hi,
        min(iops) OVER b AS lo,
        avg(iops) OVER b AS mean,
        regr_slope(iops, k) OVER b AS slope
    FROM regime_series
    WINDOW b AS (ORDER BY k ROWS BETWEEN CURRENT ROW AND 4 FOLLOWING)
), passing AS (
    SELECT k, n = 5 AND mean > 0 AND hi - lo <= 0.2 * mean AND abs(slope * 4) <= 0.1 * mean AS ok
    FROM block
), snia AS (
    -- covered by a passing block that starts at most 4 windows earlier
    SELECT s.k, s.iops, s.mbps,
        coalesce(bool_or(p.ok) OVER (ORDER BY s.k ROWS BETWEEN 4 PRECEDING AND CURRENT ROW), false) AS steady
    FROM regime_series s JOIN passing p USING (k)
), base AS (
    SELECT iops, mbps FROM snia
    WHERE CASE WHEN (SELECT bool_or(steady) FROM snia) THEN steady ELSE iops > 0 END
), m AS (
    SELECT median(iops) AS med, median(mbps) AS med_mb FROM base
), mad AS (
    SELECT median(abs(iops - (SELECT med FROM m))) AS mad,
        median(abs(mbps - (SELECT med_mb FROM m))) AS mad_mb
    FROM base
), thr AS (
    SELECT coalesce(med, 0) AS med, coalesce(mad, 0) * 1.4826 AS sigma,
        coalesce(med + greatest(3 * mad * 1.4826, 0.5 * med), 0) AS threshold,
        coalesce(med_mb, 0) AS med_mb,
        coalesce(med_mb + greatest(3 * mad_mb * 1.4826, 0.5 * med_mb), 0) AS threshold_mb
    FROM m, mad
)
SELECT k,
    steady AND NOT (iops > threshold OR mbps > threshold_mb) AS steady,
    iops > threshold OR mbps > threshold_mb AS spike,
    med, sigma, threshold, med_mb, threshold_mb
FROM snia, thr
ORDER BY k
