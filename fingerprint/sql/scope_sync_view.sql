-- The fsync-family syscalls inside the scope being summarised.
CREATE OR REPLACE TEMP VIEW cur_sync AS
SELECT sy.* FROM sy SEMI JOIN scope_w USING (w)
WHERE sy.ts_ns BETWEEN (SELECT lo FROM scope_range) AND (SELECT hi FROM scope_range)
