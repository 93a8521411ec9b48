-- How many 4 KiB blocks had each number of sized requests start in them (the hot-block share's
-- counts: compute takes the hottest 1% of the footprint's blocks from them), of every request
-- (scope 'whole') and of those inside --between ([$lo, $hi]). Per-block counts without a hash table
-- of every block: blocks are grouped four by four (g), and a request starting in block 4g + i adds
-- 2^(32 i) to its group's sum, so the sum holds the four blocks' counts as 32-bit fields, exact
-- while no block has 2^31 starts (compute uses start_counts_exact.sql beyond 2^31 requests). A
-- quarter of the groups a per-block count would hold.
WITH h AS (
    SELECT "offset" // 16384 AS g,
        sum(1::HUGEINT << (32 * ("offset" // 4096 % 4))::INTEGER) AS s,
        sum(1::HUGEINT << (32 * ("offset" // 4096 % 4))::INTEGER) FILTER (WHERE ts_ns BETWEEN $lo AND $hi) AS sb
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device)
    GROUP BY g
), f AS (
    SELECT unnest([s & 4294967295, (s >> 32) & 4294967295, (s >> 64) & 4294967295, s >> 96]) AS f,
        unnest([sb & 4294967295, (sb >> 32) & 4294967295, (sb >> 64) & 4294967295, sb >> 96]) AS fb
    FROM h
), c AS (
    SELECT f, fb, count(*) AS blocks FROM f GROUP BY GROUPING SETS ((f), (fb))
)
SELECT 'whole' AS scope, f::BIGINT AS starts, blocks FROM c WHERE f > 0
UNION ALL
SELECT 'between', fb::BIGINT, blocks FROM c WHERE fb > 0
