-- The rows of the scope being summarised: its windows (scope_w) within its time range.
CREATE OR REPLACE TEMP VIEW cur AS
SELECT ev.* FROM ev SEMI JOIN scope_w USING (w)
WHERE ev.ts_ns BETWEEN (SELECT lo FROM scope_range) AND (SELECT hi FROM scope_range)
