-- The submitting processes of a replay selection, grouped into replay streams: the $top_n pids with
-- the most I/Os each get a stream of their own, every other row (other pids, and rows the capture
-- could not attribute: pid NULL) goes to one "rest" stream (stream_pid NULL). Per stream: its I/O
-- counts, its own peak in-flight count (a sweep over issue +1 / completion -1 events, completions
-- first on a tie; NULL when a row has no latency) and the median gap between its issues.
-- The rows are what the data streams replay: the selected I/Os less those of commit groups (temp
-- table `marks`: forced writes and covered flushes go with their sync call), plus, as flushes, the
-- replayed sync calls (temp table `calls`) of processes that have no commit job ($commit_pids):
-- those go inline in their process's stream. A call is no block I/O: it counts, but not in flight.
-- Parameters: $device (NULL = all devices), $t_lo_ns, $t_hi_ns, $reads_only, $top_n, $commit_pids.
WITH sel AS (
    SELECT pid, ts_ns, lat_ns, op::VARCHAR AS op, false AS is_call FROM io
    WHERE ($device IS NULL OR device = $device)
        AND ts_ns >= $t_lo_ns AND ts_ns < $t_hi_ns
        AND (NOT $reads_only OR op = 'read')
        AND NOT EXISTS (
            SELECT 1 FROM marks AS m WHERE m.filename = io.filename AND m.file_row_number = io.file_row_number
        )
    UNION ALL
    SELECT pid, ts_ns, NULL, 'flush', true FROM calls WHERE NOT list_contains($commit_pids, pid)
),
top AS (
    SELECT pid FROM sel WHERE pid IS NOT NULL GROUP BY pid ORDER BY count(*) DESC, pid LIMIT $top_n
),
keyed AS (
    SELECT CASE WHEN pid IN (SELECT pid FROM top) THEN pid END AS stream_pid, ts_ns, lat_ns, op, is_call
    FROM sel
),
ev AS (
    SELECT stream_pid, ts_ns AS t, 1 AS d FROM keyed WHERE NOT is_call
    UNION ALL
    SELECT stream_pid, ts_ns + lat_ns, -1 FROM keyed WHERE lat_ns IS NOT NULL AND NOT is_call
),
depth AS (
    SELECT stream_pid, max(n) AS peak FROM (
        SELECT stream_pid, sum(d) OVER (PARTITION BY stream_pid ORDER BY t, d ROWS UNBOUNDED PRECEDING) AS n
        FROM ev
    ) GROUP BY stream_pid
),
gaps AS (
    SELECT stream_pid, ts_ns - lag(ts_ns) OVER (PARTITION BY stream_pid ORDER BY ts_ns) AS gap FROM keyed
)
SELECT
    k.stream_pid,
    count(*) AS ios,
    count(*) FILTER (WHERE op = 'read') AS reads,
    count(*) FILTER (WHERE op = 'write') AS writes,
    count(*) FILTER (WHERE op = 'flush') AS flushes,
    CASE WHEN count(lat_ns) = count(*) FILTER (WHERE NOT is_call) THEN any_value(d.peak) END AS peak_inflight,
    (SELECT median(gap) FROM gaps AS g WHERE g.stream_pid IS NOT DISTINCT FROM k.stream_pid) AS median_gap_ns
FROM keyed AS k
LEFT JOIN depth AS d ON d.stream_pid IS NOT DISTINCT FROM k.stream_pid
GROUP BY k.stream_pid
ORDER BY k.stream_pid IS NULL, ios DESC, k.stream_pid
