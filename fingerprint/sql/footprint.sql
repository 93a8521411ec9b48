-- Footprint: distinct 4 KiB blocks touched by [offset, offset + size), ignoring the device (as
-- the traces README counts it). Each I/O covers a block interval; the union of the intervals is
-- measured by merging overlapping ones (gaps-and-islands), so nothing is expanded per block.
WITH b AS (
    SELECT "offset" // 4096 AS lo, ("offset" + size - 1) // 4096 AS hi
    FROM cur WHERE size > 0
), r AS (
    SELECT lo, hi, max(hi) OVER (ORDER BY lo, hi ROWS BETWEEN UNBOUNDED PRECEDING AND 1 PRECEDING) AS reach
    FROM b
), i AS (
    SELECT lo, hi, sum(CASE WHEN reach IS NULL OR lo > reach + 1 THEN 1 ELSE 0 END)
        OVER (ORDER BY lo, hi ROWS UNBOUNDED PRECEDING) AS island
    FROM r
)
SELECT coalesce(sum(span), 0) AS blocks FROM (SELECT max(hi) - min(lo) + 1 AS span FROM i GROUP BY island)
