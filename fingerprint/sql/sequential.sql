-- Sequential share and run lengths. Each non-sequential data I/O starts a run on its device and
-- each sequential one extends it, so runs = non-sequential data I/Os.
SELECT count(*) FILTER (WHERE size > 0) AS data_ios,
    count(*) FILTER (WHERE seq) AS seq_ios,
    count(*) FILTER (WHERE seq_any) AS seq_any_ios,
    count(*) FILTER (WHERE seq AND op = 'read') AS seq_reads,
    count(*) FILTER (WHERE seq AND op = 'write') AS seq_writes,
    count(*) FILTER (WHERE size > 0 AND NOT seq) AS runs,
    coalesce(sum(size) FILTER (WHERE size > 0), 0) AS data_bytes
FROM cur
