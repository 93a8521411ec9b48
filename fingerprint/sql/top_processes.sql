-- Processes by data requests per scope, where the trace names them (pid, and a command name the
-- trace gives it): per-process streams, with their reads, writes, flushes and bytes, from
-- process_counts.sql's rows (per window and --between flag) rolled up into scopes.
WITH p AS (
    SELECT m.scope, f.pid, sum(f.ios)::BIGINT AS ios, sum(f.bytes)::BIGINT AS bytes, sum(f.reads)::BIGINT AS reads,
        sum(f.writes)::BIGINT AS writes, sum(f.flushes)::BIGINT AS flushes
    FROM fp_procs f JOIN regime_w r USING (w) JOIN scope_map m USING (rg, btw)
    GROUP BY m.scope, f.pid
), names AS (
    SELECT pid, any_value(comm) AS comm FROM fp_procs GROUP BY pid
), top AS (
    SELECT *, row_number() OVER (PARTITION BY scope ORDER BY ios DESC, flushes DESC, pid) AS rank
    FROM p
    QUALIFY rank <= $limit
)
SELECT scope, pid, names.comm, ios, bytes, reads, writes, flushes
FROM top JOIN names USING (pid)
ORDER BY scope, rank
