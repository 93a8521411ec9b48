-- The blocks sized requests touch, per 64-block chunk of 4 KiB blocks (c), in one pass over the rows
-- (ignoring the device, as the traces README counts the footprint), of every request or, with
-- [$lo, $hi], of those inside --between: the mask of the chunk's blocks the requests starting in it
-- touch (from its start block to its last block or the chunk's end), and the furthest block any of
-- them reaches. A request crossing into later chunks covers them from their first block on, so the
-- requests starting in a chunk cover, beyond it, exactly the blocks up to that furthest one:
-- footprint.sql adds those without a row per further chunk and request.
CREATE OR REPLACE TEMP TABLE fp_chunks AS
SELECT lo // 64 AS c,
    -- z - a + 1 ones from bit a (both shifts stay within 64 bits since z <= 63)
    bit_or((18446744073709551615::UBIGINT >> (63 - least(hi - lo, 63 - lo % 64))::INTEGER) << (lo % 64)::INTEGER) AS m,
    max(hi) AS reach
FROM (
    SELECT "offset" // 4096 AS lo, ("offset" + size - 1) // 4096 AS hi
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device) AND ($lo IS NULL OR ts_ns BETWEEN $lo AND $hi)
)
GROUP BY c
