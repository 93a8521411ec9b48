-- Each scope's requests per batch of its consecutive windows (noise_batch: scope, window w, batch
-- b; fingerprint/noise.py cuts them), by op: counts, bytes and the requests that are flush or FUA
-- points, from the per-window table (a step k lies in window k // $steps). A row counts in every
-- scope whose windows hold its window, except that the --between span's first and last windows
-- count only the rows inside it. A batch with no I/O has no row: noise.py counts it as zero I/Os.
SELECT nb.scope, nb.b, p.op, sum(p.ios)::BIGINT AS n, sum(p.bytes)::BIGINT AS bytes,
    sum(p.points)::BIGINT AS points
FROM fp_windows p JOIN noise_batch nb ON nb.w = p.k // $steps
WHERE nb.scope <> 'between' OR p.btw
GROUP BY ALL
