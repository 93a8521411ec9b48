-- Both sides of a fidelity comparison as one keyed table: the demanded I/Os (`exp_all`, written by the
-- converter with target offsets and scaled times) and the replay's capture (`rep_all`).
-- Flushes have no range, so they are keyed (flush, 0, 0). `k` numbers the I/Os of one key in time
-- order: matching (key, k) pairs the n-th demanded I/O of a key with the n-th replayed one, so
-- counting matches is the multiset intersection and every match has a lateness.
-- The replay side keeps only I/Os submitted by $comm (NULL = all; rows without comm are kept) so that
-- other processes touching the target (udev's blkid after fio closes it) do not count as extras.
-- Parameters: $comm.
CREATE OR REPLACE TEMP TABLE sides AS
WITH tagged AS (
    SELECT 'exp' AS side, ts_ns, op::VARCHAR AS op, "offset", size, inflight FROM exp_all
    UNION ALL
    SELECT 'rep', ts_ns, op::VARCHAR, "offset", size, inflight FROM rep_all
    WHERE $comm IS NULL OR comm IS NULL OR comm = $comm
)
SELECT
    side,
    ts_ns,
    op,
    CASE WHEN op = 'flush' THEN 0 ELSE "offset" END AS o,
    CASE WHEN op = 'flush' THEN 0 ELSE size END AS s,
    inflight,
    row_number() OVER (PARTITION BY side, op, o, s ORDER BY ts_ns) AS k
FROM tagged
