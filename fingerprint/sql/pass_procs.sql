-- fp_procs (process_counts.sql's table) from the one pass's counts per batch (fp_proc_parts:
-- fingerprint/pass_counts.py), summed over the batches, with each process's command name as
-- process_counts.sql takes it from the rows (a trace that names none: its Parquet statistics say so
-- without a row read).
CREATE OR REPLACE TEMP TABLE fp_procs AS
WITH names AS (
    SELECT pid, any_value(comm) AS comm
    FROM io
    WHERE pid IS NOT NULL AND comm IS NOT NULL AND ($device IS NULL OR device::VARCHAR = $device)
    GROUP BY pid
)
SELECT w, btw, pid::INTEGER AS pid, sum(ios)::BIGINT AS ios, sum(bytes)::HUGEINT AS bytes,
    sum(reads)::BIGINT AS reads, sum(writes)::BIGINT AS writes, sum(flushes)::BIGINT AS flushes, names.comm
FROM fp_proc_parts LEFT JOIN names USING (pid)
GROUP BY w, btw, pid, names.comm
