-- Footprint: distinct 4 KiB blocks touched by [offset, offset + size), from start_blocks (one
-- interval per start block, reaching the furthest block of the I/Os starting there). Sorted by
-- first block, an interval adds the blocks past both its own start and the furthest block reached
-- so far (every earlier interval starts at or before it, so what they cover above its start is
-- one run up to that reach). One sort on one integer key, then streaming window functions: nothing
-- is expanded per block.
WITH b AS (
    SELECT lo, hi FROM start_blocks ORDER BY lo
), r AS (
    SELECT lo, hi, max(hi) OVER (ROWS UNBOUNDED PRECEDING) AS reach FROM b
), n AS (
    SELECT greatest(hi - greatest(lo - 1, coalesce(lag(reach) OVER (), lo - 1)), 0) AS added FROM r
)
SELECT coalesce(sum(added), 0)::BIGINT AS blocks FROM n
