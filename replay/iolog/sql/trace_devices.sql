-- The devices of the trace's I/O rows (view `io`), by name: what a --device must be one of.
SELECT DISTINCT device::VARCHAR AS device FROM io ORDER BY 1
