-- Per group of eight 4 KiB blocks (g), one pass over the sized requests starting in it (every
-- request or, with [$lo, $hi], those inside --between), for the footprint and the hot-block share
-- (fingerprint/footprint.py), without a hash table of every block:
-- * s: the starts per block, packed: a request starting in block 8g + i adds 2^(8 i), so the sum
--   holds the eight blocks' counts in its eight bytes while no block has 256 starts (footprint.py
--   finds the groups where a count overflowed its byte by the bytes' total against n, and counts
--   those with start_counts_exact.sql);
-- * m: the mask of the group's own blocks its requests touch (from a start block to its last block
--   or the group's end), and reach: the furthest block any of them reaches. A request crossing into
--   later groups covers them from their first block on, so the group's requests cover, beyond it,
--   exactly the blocks up to reach (footprint.py takes the union in the groups' order).
-- The footprint ignores the device, as the traces README counts it.
SELECT g, coalesce(CASE WHEN s < 18446744073709551616 THEN s END, 0)::UBIGINT AS s,
    s >= 18446744073709551616 AS over, n, m::UTINYINT AS m, reach
FROM (
    SELECT lo // 8 AS g, sum(1::UBIGINT << (8 * (lo % 8))::INTEGER) AS s, count(*) AS n,
        -- z - a + 1 ones from bit a (a = lo % 8, z = the group's last block touched, <= 7)
        bit_or((255 >> (7 - least(hi - lo, 7 - lo % 8))::INTEGER) << (lo % 8)::INTEGER) AS m,
        max(hi) AS reach
    FROM (
        SELECT "offset" // 4096 AS lo, ("offset" + size - 1) // 4096 AS hi
        FROM io
        WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device) AND ($lo IS NULL OR ts_ns BETWEEN $lo AND $hi)
    )
    GROUP BY g
)
