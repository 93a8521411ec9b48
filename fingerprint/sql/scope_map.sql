-- The scopes, defined once: which scopes a row belongs to, from its window's regime class rg
-- (`regime_w`, iofp/regimes.py: 0 baseline, 1 steady, 2 spike) and whether it lies inside --between
-- (btw). Every per-scope query groups its rows or partials by (rg, btw), joins this table and
-- groups by scope, so a scope is a union of (rg, btw) parts and one part may count in several.
--   whole     every row
--   steady    rg 1: windows in a block passing the SNIA rule, in no spike
--   baseline  rg 0 or 1: every window in no spike (the steady ones included)
--   spike     rg 2: windows of a kept spike
--   between   btw: the --between span
-- With $baseline_is_steady (no window is baseline without being steady) the baseline holds exactly the
-- steady rows, so it is not summarised twice: compute copies the steady summary.
-- sc is the scope's code (its place in that list), for queries that sort or partition many rows by
-- scope: a small integer sorts far faster than a name.
CREATE OR REPLACE TEMP TABLE scope_map AS
SELECT rg::UTINYINT AS rg, btw, sc::UTINYINT AS sc, scope
FROM range(3) r(rg), (VALUES (false), (true)) b(btw),
    (VALUES (0, 'whole'), (1, 'steady'), (2, 'baseline'), (3, 'spike'), (4, 'between')) s(sc, scope)
WHERE scope = 'whole' OR (scope = 'steady' AND rg = 1)
    OR (scope = 'baseline' AND rg IN (0, 1) AND NOT $baseline_is_steady)
    OR (scope = 'spike' AND rg = 2) OR (scope = 'between' AND btw)
