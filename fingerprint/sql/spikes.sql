-- Consecutive windows above either spike threshold (IOPS or MB/s), merged into spikes
-- (gaps-and-islands).
WITH hot AS (
    SELECT k, iops, mbps, k - row_number() OVER (ORDER BY k) AS island
    FROM series WHERE iops > $threshold OR mbps > $threshold_mb
)
SELECT min(k) AS first_k, max(k) AS last_k, max(iops) AS peak_iops, avg(iops) AS mean_iops,
    max(mbps) AS peak_mbps
FROM hot GROUP BY island ORDER BY first_k
