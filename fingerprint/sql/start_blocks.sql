-- The 4 KiB blocks sized requests start in (ignoring the device, as the traces README counts the
-- footprint), over the whole trace or ($between) the --between rows: per start block, how many
-- requests start there and the furthest block any of them reaches. One hash aggregate feeds both the
-- footprint (the union of [block, reach] intervals is the union of the requests' own, since those
-- with the same start nest) and the hot-block share (the counts), so the rows are read once for both.
CREATE OR REPLACE TEMP TABLE start_blocks AS
SELECT "offset" // 4096 AS lo, max(("offset" + size - 1) // 4096) AS hi, count(*) AS n
FROM scoped_io WHERE size > 0 AND (NOT $between OR btw)
GROUP BY lo
