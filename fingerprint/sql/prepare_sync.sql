-- The fsync-family syscalls with their --window index, for scoping like the I/O rows.
CREATE OR REPLACE TEMP TABLE sy AS
SELECT ts_ns, lat_ns, call, pid, comm, (ts_ns - $t0) // $window_ns AS w FROM sync_src
