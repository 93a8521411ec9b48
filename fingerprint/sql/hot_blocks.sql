-- Share of data I/Os landing on the hottest $top_blocks blocks, counting each I/O on the 4 KiB
-- block it starts in (one hash aggregate; no per-block expansion of large I/Os), over the whole
-- trace or ($between) the --between rows.
WITH c AS (
    SELECT count(*) AS n FROM io WHERE size > 0 AND (NOT $between OR btw) GROUP BY "offset" // 4096
)
SELECT coalesce(sum(n), 0) AS top_ios FROM (SELECT n FROM c ORDER BY n DESC LIMIT $top_blocks)
