-- Share of data I/Os landing on the hottest $top_blocks blocks, counting each I/O on the 4 KiB
-- block it starts in (one hash aggregate; no per-block expansion of large I/Os).
WITH c AS (SELECT count(*) AS n FROM cur WHERE size > 0 GROUP BY "offset" // 4096)
SELECT coalesce(sum(n), 0) AS top_ios FROM (SELECT n FROM c ORDER BY n DESC LIMIT $top_blocks)
