"""The steady-state check of a probe run (replay/probe/steady.py): fio's IOPS logs, the SNIA rule."""

from __future__ import annotations

from replay.probe.steady import iops_series, judge


def test_intervals_are_summed_over_the_jobs_by_order_and_only_where_every_job_logged(tmp_path):
    # fio's stamps drift (the 9th interval of a 100 ms log at 966 ms) and one job logs a 10th
    (tmp_path / "iops_iops.1.log").write_text(
        "".join(f"{t}, 1000, 0, 0, 0\n" for t in (141, 242, 342, 442, 542, 643, 743, 843, 966))
    )
    (tmp_path / "iops_iops.2.log").write_text("".join(f"{t * 100}, {t}, 0, 0, 0\n" for t in range(1, 11)))
    assert iops_series(tmp_path) == [1000.0 + k for k in range(1, 10)]


def test_a_flat_run_is_steady():
    st = judge([1000, 1010, 990, 1005, 995, 1000, 1002, 998, 1001], 0.1)
    assert (st.verdict, st.windows, st.reason) == ("steady", 9, None)
    assert round(st.last_range_share, 4) == round(7 / 1001.2, 4)


def test_a_run_still_falling_is_not_steady():
    # a cache filling: the last five windows fall 1,000 -> 600 (range 48% of their mean 800)
    st = judge([1500, 1400, 1300, 1100, 1000, 900, 800, 700, 600], 0.1)
    assert (st.verdict, st.reason) == ("not steady", "last 5 of 9 windows")
    assert round(st.last_range_share, 2) == 0.5 and round(st.last_slope_share, 2) == 0.5


def test_fewer_than_five_windows_cannot_be_judged():
    st = judge([1000, 1000, 1000, 1000], 0.1)
    assert (st.verdict, st.reason, st.last_range_share) == ("too short to judge", "4 windows < 5", None)
