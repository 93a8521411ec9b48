-- Both sides of a fidelity comparison as one keyed table: the demanded data I/Os (`exp_all`, the
-- converter's, with target offsets and scaled times) and the replay's capture (`rep_all`). Flushes are
-- left out of both: a sync is judged by the call fio made (fidelity_calls.sql), since the kernel
-- merges concurrent flushes into one request. `k` numbers the I/Os of one key (op, offset, size) in
-- time order: matching (key, k) pairs the n-th demanded I/O of a key with the n-th replayed one, so
-- counting matches is the multiset intersection and every match has a lateness.
-- The replay side keeps only I/Os submitted by $comm (NULL = all; rows without comm are kept) so that
-- other processes touching the target (udev's blkid after fio closes it) do not count as extras.
-- Parameters: $comm.
CREATE OR REPLACE TEMP TABLE sides AS
WITH tagged AS (
    SELECT 'exp' AS side, ts_ns, op::VARCHAR AS op, "offset", size, inflight FROM exp_all
    WHERE op <> 'flush'
    UNION ALL
    SELECT 'rep', ts_ns, op::VARCHAR, "offset", size, inflight FROM rep_all
    WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm) AND op <> 'flush'
)
SELECT
    side,
    ts_ns,
    op,
    "offset" AS o,
    size AS s,
    inflight,
    row_number() OVER (PARTITION BY side, op, o, s ORDER BY ts_ns) AS k
FROM tagged
