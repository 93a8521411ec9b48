-- The demanded I/Os that no replayed I/O matched by (op, offset, size) but whose bytes the target saw
-- written all the same, in other shapes: the kernel split or merged the requests, or its writeback wrote
-- some of a buffered writer's dirty pages before the replayed sync did (the flusher under memory
-- pressure: the sync then writes the rest, and the one demanded write arrives as a kworker's piece and
-- fio's remainder). Per op: `reshaped` demanded I/Os, the `pieces` of fio's that wrote them and the
-- `writeback` writes of other tasks on the target that covered some of their bytes.
-- The leftovers (unmatched after fidelity_content's pairing) of both sides, and every write on the
-- target by a task other than $comm (the kernel's writeback of fio's pages: nothing else writes there),
-- are laid on the byte axis; a component is a maximal run of bytes that some of them cover. A component
-- holds reshaped I/Os when on each of its bytes fio wrote no more times than demanded and fio and the
-- writeback together at least as many times as demanded: the same bytes, each written as often, so a
-- write a replay dropped (bytes nobody wrote) or added (bytes fio wrote beyond the demand) still counts
-- as missing or extra. Writeback alone is never an extra: it is the kernel's, not demand.
-- Parameters: $comm (NULL: every task is fio's side, and nothing is writeback).
WITH ex AS (SELECT op, o, s, k FROM sides WHERE side = 'exp'),
rp AS (SELECT op, o, s, k FROM sides WHERE side = 'rep'),
pieces AS (
    SELECT op, o, s, 'e' AS who FROM ex ANTI JOIN rp USING (op, o, s, k) WHERE s > 0
    UNION ALL
    SELECT op, o, s, 'f' FROM rp ANTI JOIN ex USING (op, o, s, k) WHERE s > 0
    UNION ALL
    SELECT 'write', "offset", size, 'w' FROM rep_all
    WHERE $comm IS NOT NULL AND comm <> $comm AND op = 'write' AND size > 0
),
steps AS (
    SELECT op, pos, sum(d) FILTER (WHERE who = 'e') AS de, sum(d) FILTER (WHERE who = 'f') AS df,
        sum(d) FILTER (WHERE who = 'w') AS dw
    FROM (SELECT op, o AS pos, who, 1 AS d FROM pieces UNION ALL SELECT op, o + s, who, -1 FROM pieces)
    GROUP BY op, pos
),
segs AS (  -- between consecutive step positions: how many times each side wrote those bytes
    SELECT op, pos AS lo, lead(pos) OVER (PARTITION BY op ORDER BY pos) AS hi,
        sum(coalesce(de, 0)) OVER run AS e, sum(coalesce(df, 0)) OVER run AS f,
        sum(coalesce(dw, 0)) OVER run AS w
    FROM steps
    WINDOW run AS (PARTITION BY op ORDER BY pos ROWS UNBOUNDED PRECEDING)
),
runs AS (  -- a component starts at each covered segment that follows an uncovered one
    SELECT *, sum(starts) OVER (PARTITION BY op ORDER BY lo ROWS UNBOUNDED PRECEDING) AS comp
    FROM (SELECT *, CASE WHEN e + f + w > 0 AND coalesce(lag(e + f + w) OVER (PARTITION BY op ORDER BY lo), 0) = 0
                    THEN 1 ELSE 0 END AS starts FROM segs WHERE hi IS NOT NULL)
),
comps AS (
    SELECT op, comp, min(lo) AS lo, max(hi) AS hi, bool_and(f <= e AND e <= f + w) AS same_bytes
    FROM runs WHERE e + f + w > 0
    GROUP BY op, comp
),
held AS (  -- the pieces of the components with a demanded I/O that hold the same bytes
    SELECT * FROM (
        SELECT p.op, p.who, c.same_bytes, bool_or(p.who = 'e') OVER (PARTITION BY p.op, c.comp) AS demanded
        FROM pieces AS p JOIN comps AS c ON p.op = c.op AND p.o >= c.lo AND p.o < c.hi
    ) WHERE same_bytes AND demanded
)
SELECT op, count(*) FILTER (WHERE who = 'e') AS reshaped, count(*) FILTER (WHERE who = 'f') AS pieces,
    count(*) FILTER (WHERE who = 'w') AS writeback
FROM held
GROUP BY op
ORDER BY op
