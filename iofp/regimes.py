"""The steady-state / spike regime rule, one for every stage (iofp/sql/regime_windows.sql says it).

The fingerprint summarises its steady and spike windows and lists its spikes; replay's `--regime`
selects a run of those same windows. Both call `classify` on their per-window series, so what a
fingerprint calls "spike windows 12-17" is what `iofp replay --regime spike` replays. The fingerprint
brings the series it has already computed (fingerprint/sql/window_series.sql); replay, which has none,
gets it from `window_rates`.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from iofp.sqlfiles import load_sql
from iofp.windows import check_window_ns

SQL = "iofp.sql"


@dataclass(frozen=True)
class Regimes:
    """Window indexes of each regime (disjoint: a spike window is never steady) and the spike
    thresholds with the median they stand on (of the steady windows, or of the non-empty ones when
    none is steady)."""

    steady: list[int]
    spike: list[int]
    median_iops: float
    sigma_iops: float  # 1.4826 x the MAD of IOPS
    threshold_iops: float
    median_mbps: float
    threshold_mbps: float


def window_rates(con: Any, window_ns: int, device: str | None = None) -> pa.Table:
    """The series `classify` reads, from the I/O rows of the connection's view `io`:
    k, start_ns (trace clock), iops, mbps per window, from the first I/O of `device` (or of all).
    A window outside the limits of every stage's --window (iofp/windows.py) is BadInput."""
    [(t0, t1)] = con.execute(load_sql(SQL, "io_span"), {"device": device}).fetchall()
    if t0 is None:  # no I/O: no windows
        t0 = nwin = 0
    else:
        check_window_ns(window_ns, t1 - t0)
        nwin = (t1 - t0) // window_ns + 1
    params = {"window_ns": window_ns, "device": device, "t0": t0, "nwin": nwin}
    return con.sql(load_sql(SQL, "window_rates"), params=params).to_arrow_table()


def classify(con: Any, series: pa.Table) -> Regimes:
    """The regimes of `series` (columns k, iops, mbps: every window from the first I/O to the last)."""
    con.register("regime_series", series.select(["k", "iops", "mbps"]))
    try:
        rows = con.sql(load_sql(SQL, "regime_windows")).to_arrow_table().to_pydict()
    finally:
        con.unregister("regime_series")

    def thr(col: str) -> float:  # the same on every row; no windows, no threshold
        return rows[col][0] if rows["k"] else 0.0

    return Regimes(
        steady=[k for k, s in zip(rows["k"], rows["steady"], strict=True) if s],
        spike=[k for k, s in zip(rows["k"], rows["spike"], strict=True) if s],
        median_iops=thr("med"),
        sigma_iops=thr("sigma"),
        threshold_iops=thr("threshold"),
        median_mbps=thr("med_mb"),
        threshold_mbps=thr("threshold_mb"),
    )
