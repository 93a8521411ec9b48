-- Per op: demanded, replayed and matched I/O counts (matched = same op, offset and size, as multisets:
-- the k-th demanded I/O of a key pairs with the k-th replayed one).
SELECT
    op,
    count(e.k) AS expected,
    count(r.k) AS replayed,
    count(e.k + r.k) AS matched
FROM (SELECT op, o, s, k FROM sides WHERE side = 'exp') AS e
FULL OUTER JOIN (SELECT op, o, s, k FROM sides WHERE side = 'rep') AS r USING (op, o, s, k)
GROUP BY op
ORDER BY op
