-- SNIA PTS steady state on per-window IOPS: a 5-window group passes when max - min <= 20% of its
-- mean and the least-squares fit moves by at most 10% of the mean across it (|slope| * 4 windows).
-- A window is steady if it belongs to at least one passing group. Idle groups (mean 0) never pass.
WITH g AS (
    SELECT k,
        count(*) OVER f AS n,
        max(iops) OVER f AS hi,
        min(iops) OVER f AS lo,
        avg(iops) OVER f AS mean,
        regr_slope(iops, k) OVER f AS slope
    FROM series
    WINDOW f AS (ORDER BY k ROWS BETWEEN CURRENT ROW AND 4 FOLLOWING)
), pass AS (
    SELECT k AS g0 FROM g
    WHERE n = 5 AND mean > 0 AND hi - lo <= 0.2 * mean AND abs(slope * 4) <= 0.1 * mean
)
SELECT s.k, EXISTS (SELECT 1 FROM pass WHERE s.k BETWEEN pass.g0 AND pass.g0 + 4) AS steady
FROM series s
ORDER BY s.k
