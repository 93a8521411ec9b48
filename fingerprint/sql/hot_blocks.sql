-- Share of data I/Os landing on the hottest $top_blocks blocks, counting each I/O on the 4 KiB
-- block it starts in (no per-block expansion of large I/Os), from start_blocks' counts.
SELECT coalesce(sum(n), 0) AS top_ios FROM (SELECT n FROM start_blocks ORDER BY n DESC LIMIT $top_blocks)
