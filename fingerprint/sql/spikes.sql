-- The spike windows (`spike_windows`, from the shared regime rule iofp/sql/regime_windows.sql)
-- merged into spikes where consecutive (gaps-and-islands), with each spike's peak and mean from the
-- series.
WITH hot AS (
    SELECT k, iops, mbps, k - row_number() OVER (ORDER BY k) AS island
    FROM series WHERE k IN (SELECT k FROM spike_windows)
)
SELECT min(k) AS first_k, max(k) AS last_k, max(iops) AS peak_iops, avg(iops) AS mean_iops,
    max(mbps) AS peak_mbps
FROM hot GROUP BY island ORDER BY first_k
