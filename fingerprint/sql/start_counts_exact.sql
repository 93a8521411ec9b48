-- How many blocks had each number of starts, counted block by block, in the eight-block groups $groups
-- where footprint_groups.sql's packed bytes overflowed (a block with 256 starts or more).
SELECT n AS starts, count(*) AS blocks
FROM (
    SELECT "offset" // 4096 AS lo, count(*) AS n
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device) AND ($lo IS NULL OR ts_ns BETWEEN $lo AND $hi)
        AND list_contains($groups, "offset" // 32768)
    GROUP BY lo
)
GROUP BY n
