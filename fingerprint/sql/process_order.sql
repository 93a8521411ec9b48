-- Each submitting process's issue order on each device, per scope and pid: its sized requests and
-- how many start where the same process's previous sized request on that device ended (pseq,
-- computed in the device's own pass: device_seeks.sql). A WAL writer appending alone is sequential
-- here whatever other processes interleave with it on the device (device_order.sql's order, where
-- it may be 1% sequential). Rows without a pid (an import) are left out: the caller then has no
-- per-process figure. The partials per (regime class, --between flag, pid) roll up into scopes on
-- their few rows.
WITH p AS (
    SELECT rg, btw, pid, count(*) AS sized, count(*) FILTER (WHERE pseq) AS seq_ios
    FROM dev_seeks WHERE pid IS NOT NULL GROUP BY rg, btw, pid
)
SELECT m.scope, pid, sum(sized)::BIGINT AS sized, sum(seq_ios)::BIGINT AS seq_ios
FROM p JOIN scope_map m USING (rg, btw)
GROUP BY m.scope, pid
