-- The block flushes the replay's syncs made on the target (capture `rep_all`, requests of $comm):
-- reported beside the calls, not judged (the kernel merges flushes of overlapping calls).
-- Parameters: $comm.
SELECT count(*) AS flushes FROM rep_all WHERE ($comm IS NULL OR comm IS NULL OR comm = $comm) AND op = 'flush'
