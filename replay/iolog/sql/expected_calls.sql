-- A trace's sync calls as a replay's demand (iolog.Expected.calls), by fio's kind: fdatasync for
-- fdatasync and O_DSYNC writes, fsync for the others that make data durable; from the sync table
-- ($from_sync), else one fsync per block flush (view `io`).
-- Parameters: $from_sync.
SELECT ts_ns, CASE WHEN call IN ('fdatasync', 'dsync_write') THEN 'fdatasync' ELSE 'fsync' END AS call
FROM sync
WHERE $from_sync AND call <> 'sync_file_range'
UNION ALL
SELECT ts_ns, 'fsync' FROM io WHERE NOT $from_sync AND op::VARCHAR = 'flush'
ORDER BY ts_ns
