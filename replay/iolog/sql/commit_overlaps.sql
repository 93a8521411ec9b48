-- Pairs of calling processes (among $pids, the callers that get a commit job) whose replayed sync
-- calls (temp table `calls`) overlapped in time: one started while the other's call was running.
-- Callers that never overlapped were serialized by the application (PostgreSQL's backends take the
-- WAL write lock around their write and fdatasync) and can share one commit job, which keeps them
-- serialized; callers that did overlap need jobs of their own. Each pair once, pid_a < pid_b.
-- Parameters: $pids.
SELECT DISTINCT least(a.pid, b.pid) AS pid_a, greatest(a.pid, b.pid) AS pid_b
FROM calls AS a
JOIN calls AS b ON b.ts_ns >= a.ts_ns AND b.ts_ns < a.end_ns AND a.pid <> b.pid
WHERE list_contains($pids, a.pid) AND list_contains($pids, b.pid)
ORDER BY pid_a, pid_b
