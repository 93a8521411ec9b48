"""The recorder's latency histogram (record/histogram.py): fio's bins, and percentiles within its stated
error of the exact nearest-rank value that compare's quantile_disc gives."""

from __future__ import annotations

import numpy as np
import pytest

from iofp.duck import connect
from record import histogram as h


def test_bins_are_contiguous_and_hold_their_values():
    v = np.concatenate([np.arange(0, 20_000), np.random.default_rng(1).integers(0, 2**45, 100_000), [2**62]])
    b = h.bucket(v)
    assert ((h.lower(b) <= v) & (v < h.lower(b) + h.width(b))).all()
    idx = np.arange(0, int(h.bucket(np.array([2**62]))[0]))  # every bin an int64 latency can fall in
    assert (h.lower(idx[1:]) == h.lower(idx[:-1]) + h.width(idx[:-1])).all()
    assert (h.width(idx) <= np.maximum(1, h.lower(idx) / h.SUB)).all()  # at most 1/64 of the lower edge


def test_a_reported_percentile_is_within_the_stated_error_of_the_exact_one():
    rng = np.random.default_rng(7)
    for v in (rng.lognormal(11, 1.5, 50_000).astype(np.int64), rng.integers(10_000, 20_000, 999)):
        idx, n = np.unique(h.bucket(v), return_counts=True)
        for pct in h.PCT_FRACTIONS:
            exact = h.exact(v, pct)
            assert abs(h.percentile(idx, n, pct) - exact) <= exact * h.ERROR


@pytest.mark.parametrize("n", [1, 3, 7, 100, 150, 1000, 1999])
def test_the_nearest_rank_is_duckdbs_quantile_disc(n):
    con = connect()
    try:
        got = con.execute("SELECT quantile_disc(x, 0.5), quantile_disc(x, 0.99), quantile_disc(x, 0.999) "
                          "FROM range(1, $n + 1) t(x)", {"n": n}).fetchall()[0]  # fmt: skip
    finally:
        con.close()
    assert [h.exact(np.arange(1, n + 1), p) for p in ("p50", "p99", "p99.9")] == list(got)
