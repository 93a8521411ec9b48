-- Features of each device's issue order, per scope, from dev_seeks (device_seeks.sql): sequential
-- counts and seek-distance histograms as partials per regime class and --between flag rolled up
-- into scopes (scope_map), and the exact nearest-rank median |seek| in two steps so that nothing
-- buffers every seek: counts per coarse bucket (monotone in |seek|) find, for each scope, the bucket
-- holding rank ceil(n/2) and the rank within it; only that bucket's seeks are then ranked. Runs =
-- sized requests - sequential ones. The seeks (a) are re-read rather than materialised (a scan of
-- dev_seeks is cheap, a copy is not), and only the rows of the median buckets reach the join with
-- their scopes (a list test against the few buckets costs a fraction of a join per row).
WITH p AS MATERIALIZED (
    SELECT rg, btw, opc,
        count(*) FILTER (WHERE seq) AS seq_ios,
        histogram(seek_lbn, $limits) FILTER (WHERE seek_lbn IS NOT NULL) AS h
    FROM dev_seeks
    GROUP BY rg, btw, opc
), c AS (
    SELECT m.scope,
        sum(seq_ios)::BIGINT AS seq_ios,
        coalesce(sum(seq_ios) FILTER (WHERE opc = 1), 0)::BIGINT AS seq_reads,
        coalesce(sum(seq_ios) FILTER (WHERE opc = 2), 0)::BIGINT AS seq_writes
    FROM p JOIN scope_map m USING (rg, btw)
    GROUP BY m.scope
), hk AS (
    SELECT m.scope, "key", sum("value") AS n_all,
        sum("value") FILTER (WHERE opc = 1) AS n_read,
        sum("value") FILTER (WHERE opc = 2) AS n_write,
        count(*) FILTER (WHERE opc = 1) AS parts_read,
        count(*) FILTER (WHERE opc = 2) AS parts_write
    FROM (SELECT rg, btw, opc, unnest(map_entries(h), recursive := true) FROM p WHERE h IS NOT NULL) e
        JOIN scope_map m USING (rg, btw)
    GROUP BY m.scope, "key"
), hm AS (
    SELECT scope,
        map(list("key" ORDER BY "key"), list(n_all ORDER BY "key")) AS seek_all,
        CASE WHEN max(parts_read) > 0
            THEN map(list("key" ORDER BY "key"), list(coalesce(n_read, 0) ORDER BY "key")) END AS seek_read,
        CASE WHEN max(parts_write) > 0
            THEN map(list("key" ORDER BY "key"), list(coalesce(n_write, 0) ORDER BY "key")) END AS seek_write
    FROM hk
    GROUP BY scope
), a AS NOT MATERIALIZED (
    -- |seek| and its coarse bucket: exact below 2^10 LBNs, then 1024 buckets per 2^10 range
    SELECT rg, btw, abs(seek_lbn) AS v,
        CASE WHEN abs(seek_lbn) < 1024 THEN abs(seek_lbn)
            WHEN abs(seek_lbn) < 1048576 THEN 1024 + abs(seek_lbn) // 1024
            WHEN abs(seek_lbn) < 1073741824 THEN 2048 + abs(seek_lbn) // 1048576
            ELSE 3072 + abs(seek_lbn) // 1073741824 END AS b
    FROM dev_seeks WHERE seek_lbn IS NOT NULL
), ab AS (
    -- bucket counts per (regime class, --between flag): one small hash aggregate of the rows
    SELECT rg, btw, b, count(*) AS n FROM a GROUP BY rg, btw, b
), bc AS (
    SELECT m.scope, b, sum(n) AS n FROM ab JOIN scope_map m USING (rg, btw) GROUP BY m.scope, b
), bcum AS (
    SELECT scope, b, n,
        sum(n) OVER (PARTITION BY scope ORDER BY b ROWS UNBOUNDED PRECEDING) AS cum,
        ceil(sum(n) OVER (PARTITION BY scope) * 0.5) AS target
    FROM bc
), t AS (
    -- the bucket holding the median of each scope, and the median's rank inside it
    SELECT scope, b, target - (cum - n) AS r FROM bcum WHERE cum >= target AND cum - n < target
), mv AS (
    SELECT t.scope, a.v, t.r,
        row_number() OVER (PARTITION BY t.scope ORDER BY a.v) AS i
    FROM (SELECT * FROM a WHERE list_contains((SELECT list(b) FROM t), b)) a
        JOIN scope_map m USING (rg, btw)
        JOIN t ON a.b = t.b AND t.scope = m.scope
)
SELECT c.scope, c.seq_ios, c.seq_reads, c.seq_writes, hm.seek_all, hm.seek_read, hm.seek_write,
    (SELECT v FROM mv WHERE mv.scope = c.scope AND mv.i = mv.r) AS median_abs_lbn
FROM c LEFT JOIN hm USING (scope)
