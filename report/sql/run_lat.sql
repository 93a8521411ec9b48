-- Every timed request of a run's capture as (kind, ts_ns, lat_ns): its block reads, writes and
-- flushes by op, and its application sync calls as `sync calls` (each timed entry to return).
CREATE OR REPLACE TEMP VIEW run_lat AS
SELECT op::VARCHAR AS kind, ts_ns, lat_ns FROM run_io WHERE op::VARCHAR IN ('read', 'write', 'flush')
UNION ALL
SELECT 'sync calls' AS kind, ts_ns, lat_ns FROM run_sync
