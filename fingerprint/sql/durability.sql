-- Flush/FUA/sync flags where the trace has them (null flags give null counts, not zeros).
SELECT count(*) FILTER (WHERE op = 'flush') AS flush_ops,
    count(preflush) AS flags_known,
    count(*) FILTER (WHERE preflush) AS preflush,
    count(*) FILTER (WHERE fua) AS fua,
    count(*) FILTER (WHERE sync AND op = 'write') AS sync_writes,
    count(*) FILTER (WHERE op = 'write' AND sync IS NOT NULL) AS writes_flags_known,
    count(*) FILTER (WHERE op = 'flush' OR preflush OR fua) AS durability_points
FROM cur
