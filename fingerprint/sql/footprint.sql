-- Footprint: distinct 4 KiB blocks touched by [offset, offset + size), from start_blocks (one
-- interval [lo, hi] per start block, reaching the furthest block of the I/Os starting there: the
-- union of these is the union of the I/Os' own, since those with the same start nest). Each
-- interval becomes bit masks over 64-block chunks (its start chunk, plus one row per further chunk
-- it spans: only I/Os crossing a 256 KiB boundary have any); OR-ing the masks per chunk and
-- counting bits gives the union exactly. A parallel hash aggregate over at most one group per
-- 64 blocks replaces a sort and a running maximum over every start block (a window without
-- partitions runs on one thread): 4.9 s -> 2.4 s at 50 M rows, the same count.
WITH p AS (
    SELECT lo // 64 AS c, lo % 64 AS a, CASE WHEN hi // 64 = lo // 64 THEN hi % 64 ELSE 63 END AS z
    FROM start_blocks
    UNION ALL
    SELECT c, 0 AS a, CASE WHEN c = hi // 64 THEN hi % 64 ELSE 63 END AS z
    FROM (SELECT hi, unnest(range(lo // 64 + 1, hi // 64 + 1)) AS c FROM start_blocks WHERE hi // 64 > lo // 64)
), m AS (
    -- z - a + 1 ones, shifted up to bit a (both shifts stay within 64 bits since z <= 63)
    SELECT bit_or((18446744073709551615::UBIGINT >> (63 - z + a)::INTEGER) << a::INTEGER) AS m
    FROM p GROUP BY c
)
SELECT coalesce(sum(bit_count(m)), 0)::BIGINT AS blocks FROM m
