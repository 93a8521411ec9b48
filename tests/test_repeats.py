"""The repeat rules (iofp/repeats.py): a figure is its median and range, a verdict is stated only where
the conclusive runs agree, a run far from the rest is an outlier (hyperfine's modified z-score)."""

from __future__ import annotations

from iofp import repeats


def test_a_figure_of_runs_is_its_median_and_range():
    s = repeats.spread([300.0, None, 100.0, 200.0])
    assert (s.median, s.lo, s.hi, s.n, s.outliers) == (200.0, 100.0, 300.0, 3, [])
    assert s.rel_range == 1.0
    assert repeats.spread([None, None]) is None


def test_a_run_far_from_the_rest_is_an_outlier():
    # MAD of (100, 101, 160) is 1: 160 is 59 MADs out (beyond hyperfine's 10 x 1.4826)
    assert repeats.outliers([100.0, 160.0, 101.0]) == [1]
    assert repeats.outliers([100.0, 120.0, 140.0]) == []  # evenly spread: none stands out
    assert repeats.outliers([100.0, 100.0, 130.0]) == [2]  # two identical runs: 30% off is out
    assert repeats.outliers([100.0, 100.0, 105.0]) == []
    assert repeats.outliers([100.0, 400.0]) == []  # two runs: no majority to be far from


def test_a_verdict_is_stated_only_where_the_conclusive_runs_agree():
    a = repeats.agree(["pass", "pass", "pass"])
    assert (a.verdict, a.agreed, a.why) == ("pass", True, "")
    a = repeats.agree(["FAIL", "inconclusive: the host's CPU was busy", "FAIL"])
    assert (a.verdict, a.why) == ("FAIL", "1 of 3 runs inconclusive (the host)")
    a = repeats.agree(["pass", "FAIL", "pass"])
    assert (a.verdict, a.agreed) == ("inconclusive", False)
    assert a.why == "the runs disagree: pass in 2, FAIL in 1 of 3"
    a = repeats.agree(["inconclusive: host", "inconclusive: host"])
    assert (a.verdict, a.why) == ("inconclusive", "2 of 2 runs inconclusive (the host)")


def test_a_short_run_is_repeated_three_times_by_default():
    assert repeats.default_repeat(6.0) == 3 and repeats.default_repeat(600.0) == 1
    assert repeats.default_repeat(None) == 1
