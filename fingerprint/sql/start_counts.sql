-- Per group of eight 4 KiB blocks (g), the sized requests starting in each, packed: a request starting
-- in block 8g + i adds 2^(8 i), so the sum holds the eight blocks' counts in its eight bytes while no
-- block has 256 starts (fingerprint/footprint.py unpacks them, finds the groups where a count
-- overflowed its byte by the bytes' total against n, and counts those with start_counts_exact.sql).
-- Every request or, with [$lo, $hi], those inside --between. An eighth of the groups a hash table of
-- every block needs.
SELECT g, coalesce(CASE WHEN s < 18446744073709551616 THEN s END, 0)::UBIGINT AS s, s >= 18446744073709551616 AS over, n
FROM (
    SELECT "offset" // 32768 AS g, sum(1::UBIGINT << (8 * ("offset" // 4096 % 8))::INTEGER) AS s, count(*) AS n
    FROM io
    WHERE size > 0 AND ($device IS NULL OR device::VARCHAR = $device) AND ($lo IS NULL OR ts_ns BETWEEN $lo AND $hi)
    GROUP BY g
)
