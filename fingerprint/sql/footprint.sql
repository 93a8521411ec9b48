-- Footprint: the distinct 4 KiB blocks of fp_chunks (footprint_chunks.sql): each chunk's mask, and
-- the chunks after it up to its furthest block (all 64 blocks, the last up to that block), OR-ed per
-- chunk and their bits counted; the union of the requests' own [offset, offset + size), exactly.
WITH x AS (
    SELECT c, m FROM fp_chunks
    UNION ALL
    SELECT c, CASE WHEN c = reach // 64 THEN 18446744073709551615::UBIGINT >> (63 - reach % 64)::INTEGER
        ELSE 18446744073709551615::UBIGINT END
    FROM (SELECT reach, unnest(range(c + 1, reach // 64 + 1)) AS c FROM fp_chunks WHERE reach // 64 > c)
)
SELECT coalesce(sum(bit_count(m)), 0)::BIGINT AS blocks
FROM (SELECT bit_or(m) AS m FROM x GROUP BY c)
