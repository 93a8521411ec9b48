-- How many devices each scope's requests went to, from the size counts (size_counts.sql keeps one
-- row per step, --between flag, op, device, size and depth): a step k lies in window k // $steps,
-- whose regime class is regime_w's.
SELECT m.scope, count(DISTINCT c.device) AS devices
FROM fp_sizes c JOIN regime_w r ON r.w = c.k // $steps JOIN scope_map m USING (rg, btw)
GROUP BY m.scope
