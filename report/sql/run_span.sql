-- The first and last timed request or call of a run (run_lat.sql): where its windows start.
SELECT min(ts_ns) AS t0, max(ts_ns) AS t1 FROM run_lat
