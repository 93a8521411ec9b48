-- start_counts.sql's counts with a hash table of every block: for traces of 2^31 sized requests and
-- more, where one block's count could overflow start_counts' 32-bit fields. Slower, the same counts.
WITH b AS (
    SELECT "offset" // 4096 AS lo, count(*) AS n, count(*) FILTER (WHERE ts_ns BETWEEN $lo AND $hi) AS nb
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device)
    GROUP BY lo
), c AS (
    SELECT n, nb, count(*) AS blocks FROM b GROUP BY GROUPING SETS ((n), (nb))
)
SELECT 'whole' AS scope, n AS starts, blocks FROM c WHERE n > 0
UNION ALL
SELECT 'between', nb, blocks FROM c WHERE nb > 0
