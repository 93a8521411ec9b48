-- Footprint: distinct 4 KiB blocks touched by [offset, offset + size) of the sized requests (ignoring
-- the device, as the traces README counts it), of every request and of those inside --between
-- ([$lo, $hi]; 0 when not asked for). Each request becomes bit masks over 64-block chunks: its start
-- chunk, plus one row per further chunk it spans (only requests crossing a 256 KiB boundary have
-- any: the rows are read a second time for those alone, rather than held); OR-ing the masks per
-- chunk by a parallel hash aggregate (at most one group per 64 blocks) and counting bits gives the
-- union exactly.
WITH r AS NOT MATERIALIZED (
    SELECT "offset" // 4096 AS lo, ("offset" + size - 1) // 4096 AS hi, coalesce(ts_ns BETWEEN $lo AND $hi, false) AS btw
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device)
), p AS (
    SELECT lo // 64 AS c, lo % 64 AS a, CASE WHEN hi // 64 = lo // 64 THEN hi % 64 ELSE 63 END AS z, btw FROM r
    UNION ALL
    SELECT c, 0 AS a, CASE WHEN c = hi // 64 THEN hi % 64 ELSE 63 END AS z, btw
    FROM (SELECT hi, btw, unnest(range(lo // 64 + 1, hi // 64 + 1)) AS c FROM r WHERE hi // 64 > lo // 64)
), k AS (
    -- z - a + 1 ones, shifted up to bit a (both shifts stay within 64 bits since z <= 63)
    SELECT c, btw, (18446744073709551615::UBIGINT >> (63 - z + a)::INTEGER) << a::INTEGER AS mask FROM p
), m AS (
    SELECT bit_or(mask) AS m, bit_or(mask) FILTER (WHERE btw) AS mb FROM k GROUP BY c
)
SELECT coalesce(sum(bit_count(m)), 0)::BIGINT AS blocks, coalesce(sum(bit_count(mb)), 0)::BIGINT AS blocks_between
FROM m
