-- The demanded sync calls (`exp_calls`: one per sync/datasync line of the log) against the calls fio
-- made, per the replay capture's sync table (`rep_sync`, calls of $comm), by kind: fio's sync is
-- fsync(2), its datasync fdatasync(2). A call is replayed when fio made it; it is not counted by block
-- flushes, which the kernel merges when calls overlap. Also the block flushes the target saw, which
-- stand in for the calls when the capture has no sync table ($by_flushes).
-- Parameters: $comm, $by_flushes.
WITH e AS (
    SELECT CASE WHEN $by_flushes THEN 'flush' ELSE call END AS op, count(*) AS n FROM exp_calls GROUP BY 1
),
r AS (
    SELECT call::VARCHAR AS op, count(*) AS n FROM rep_sync
    WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm) AND call IN ('fsync', 'fdatasync') AND NOT $by_flushes
    GROUP BY 1
    UNION ALL
    SELECT 'flush', count(*) FROM rep_all
    WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm) AND op = 'flush' AND $by_flushes
)
SELECT op, coalesce(e.n, 0) AS expected, coalesce(r.n, 0) AS replayed, least(coalesce(e.n, 0), coalesce(r.n, 0)) AS matched
FROM e FULL OUTER JOIN r USING (op)
WHERE coalesce(e.n, 0) + coalesce(r.n, 0) > 0
ORDER BY op
