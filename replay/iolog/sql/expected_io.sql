-- A trace's data I/Os (view `io`) as a replay's demand (iolog.Expected.io), for comparing two traces.
SELECT ts_ns, "offset", size, op::VARCHAR AS op, inflight, lat_ns, false AS forced
FROM io
WHERE op::VARCHAR <> 'flush'
ORDER BY ts_ns
