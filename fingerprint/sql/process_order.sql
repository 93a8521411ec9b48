-- Each submitting process's issue order on each device, per scope and pid: its sized requests and
-- how many start where the same process's previous sized request on that device ended. A WAL writer
-- appending alone is sequential here whatever other processes interleave with it on the device
-- (device_seeks.sql's order, where it may be 1% sequential). Rows without a pid (an import) are left
-- out: the caller then has no per-process figure. Only the sort keys go through the window's sort;
-- the partials per (regime class, --between flag, pid) roll up into scopes on their few rows.
WITH l AS (
    SELECT rg, btw, pid,
        coalesce("offset" = lag("offset" + size) OVER (
            PARTITION BY dev, pid ORDER BY ts_ns, "offset", size), false) AS seq
    FROM scoped_io WHERE size > 0 AND pid IS NOT NULL
), p AS (
    SELECT rg, btw, pid, count(*) AS sized, count(*) FILTER (WHERE seq) AS seq_ios
    FROM l GROUP BY rg, btw, pid
)
SELECT m.scope, pid, sum(sized)::BIGINT AS sized, sum(seq_ios)::BIGINT AS seq_ios
FROM p JOIN scope_map m USING (rg, btw)
GROUP BY m.scope, pid
