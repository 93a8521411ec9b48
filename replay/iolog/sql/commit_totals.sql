-- What the sync table holds in the selected span and what of it a replay replays (temp tables
-- `calls`, `marks`), by call kind: the record says what became of every call and flush.
-- Parameters: $t_lo_ns, $t_hi_ns.
SELECT
    (SELECT count(*) FROM sync WHERE ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns) AS in_span,
    (SELECT count(*) FROM calls) AS replayed,
    (SELECT count(*) FROM sync WHERE ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns AND call = 'sync_file_range')
        AS sync_file_range,
    (SELECT count(*) FROM sync WHERE ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns AND coalesce(ret, 0) < 0 AND call <> 'sync_file_range')
        AS failed,
    (SELECT count(*) FROM marks WHERE kind = 'forced') AS forced_writes,
    (SELECT count(*) FROM marks WHERE kind = 'covered') AS covered_flushes,
    (SELECT list({'call': call, 'n': n} ORDER BY call) FROM (SELECT call, count(*) AS n FROM calls GROUP BY call))
        AS by_call
