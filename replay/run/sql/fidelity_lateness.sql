-- Per-I/O lateness of the replay: each demanded I/O is paired with the replayed I/O of the same key and
-- rank; lateness = (replay time - replay anchor) - (demanded time - demanded anchor), in ns. The demanded
-- anchor is the first demanded I/O; the replay anchor is that time plus a median offset (replayed -
-- demanded), so one I/O's wake-up jitter (up to ~1-2 ms for the first I/O of a replay here) does not
-- shift the lateness of all the others: the lower of the medians of the I/Os demanded in the first
-- $anchor_ns and of the first tenth of the matched I/Os (demanded order). A stall at fio's start (11 ms
-- once, on a busy machine, the I/Os after it on time) raises the first and not the second; a replay
-- that falls behind steadily raises the second and not the first. Either only delays I/Os, so the
-- lower median is the replay's clock.
-- The inter-arrival error is the change of the gap between consecutive matched I/Os (demanded order).
-- The lateness growth is the median lateness of the last tenth of the matched I/Os (demanded order)
-- minus that of the first tenth: how far the replay fell behind over the run, robust to any one I/O.
-- Nearest-rank quantiles (quantile_disc), as fio reports its percentiles.
WITH m AS (
    SELECT e.ts_ns AS te, r.ts_ns AS tr
    FROM sides AS e
    JOIN sides AS r ON e.op = r.op AND e.o = r.o AND e.s = r.s AND e.k = r.k AND r.side = 'rep'
    WHERE e.side = 'exp'
),
start AS (
    SELECT min(te) AS te0 FROM m
),
ranked AS (
    -- the tenths of the matched I/Os in demanded order: the anchor's first and the growth's
    SELECT te, tr, ntile(10) OVER (ORDER BY te, tr) AS tenth FROM m
),
anchor AS (
    SELECT
        any_value(te0) AS te0,
        any_value(te0) + least(
            quantile_disc(tr - te, 0.5) FILTER (WHERE te < te0 + $anchor_ns),
            quantile_disc(tr - te, 0.5) FILTER (WHERE tenth = 1)
        ) AS tr0
    FROM ranked, start
),
late AS (
    SELECT te, tr, tenth, (tr - tr0) - (te - te0) AS late_ns FROM ranked, anchor
),
iat AS (
    SELECT abs((tr - lag(tr) OVER w) - (te - lag(te) OVER w)) AS err_ns
    FROM late
    WINDOW w AS (ORDER BY te, tr)
)
SELECT
    count(*) AS matched,
    (SELECT te0 FROM anchor) AS te0,
    (SELECT tr0 FROM anchor) AS tr0,
    quantile_disc(late_ns, 0.5) AS late_p50_ns,
    quantile_disc(late_ns, 0.99) AS late_p99_ns,
    -- |lateness|: an I/O 1 ms early is as far off its time as one 1 ms late (judged in fidelity.py)
    quantile_disc(abs(late_ns), 0.5) AS abs_late_p50_ns,
    quantile_disc(abs(late_ns), 0.99) AS abs_late_p99_ns,
    max(late_ns) AS late_max_ns,
    min(late_ns) AS late_min_ns,
    arg_max(late_ns, te) AS final_drift_ns,
    count(*) FILTER (WHERE abs(late_ns) > 1000000) AS late_over_1ms,
    (SELECT quantile_disc(err_ns, 0.5) FROM iat) AS iat_err_p50_ns,
    (SELECT quantile_disc(err_ns, 0.99) FROM iat) AS iat_err_p99_ns,
    (SELECT quantile_disc(late_ns, 0.5) FILTER (WHERE tenth = 10) - quantile_disc(late_ns, 0.5) FILTER (WHERE tenth = 1)
     FROM late) AS late_growth_ns
FROM late
