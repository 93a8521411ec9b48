"""Did a run reach steady state? The SNIA rule of iofp/regimes.py on the run's per-interval IOPS.

The series is fio's IOPS log (write_iops_log, one value per tenth of the runtime, summed over the
run's jobs): it is only judged here, never shown as a figure. fio logs the intervals that ended
by the end of the run, so a run has nine or ten. A run is steady when its last STEADY_WINDOWS windows (one
SNIA measurement window) are all steady by the shared rule; with fewer windows it is too short to
judge. A run that is not steady measured a device still changing (warming up, filling a cache,
collecting garbage): its figures are an average over that change.
"""

from __future__ import annotations

from pathlib import Path

import numpy as np

from iofp import regimes
from iofp.probe_result import Steadiness

STEADY_WINDOWS = 5


def iops_series(run_dir: Path) -> list[float]:
    """fio's per-interval IOPS of every job of the run (iops_iops.N.log), summed per interval, over
    the intervals every job logged. The n-th line of a job's log is its n-th interval: fio stamps
    each when it logs it, some ms after the interval's end and drifting (141, 242, ..., 966 ms for
    100 ms intervals), so the stamps would put two intervals in one window and leave another empty;
    and one job logs the interval that ends with the run while another does not (9 or 10 lines),
    which summed would be a drop in the last window that no job saw."""
    logs = [
        [float(p[1]) for p in (ln.split(",") for ln in log.read_text().splitlines()) if len(p) > 1]
        for log in sorted(run_dir.glob("iops_iops.*.log"))
    ]
    n = min((len(v) for v in logs), default=0)
    return [sum(v[k] for v in logs) for k in range(n)]


def judge(series: list[float], window_s: float) -> Steadiness:
    n = len(series)
    if n < STEADY_WINDOWS:
        return Steadiness("too short to judge", window_s, n, None, None, f"{n} windows < {STEADY_WINDOWS}")
    last = series[-STEADY_WINDOWS:]
    mean = sum(last) / STEADY_WINDOWS
    spread = (max(last) - min(last)) / mean if mean else None
    slope = _slope_share(last, mean)
    ios = np.asarray(series, float)  # one size: bytes follow I/Os
    reg = regimes.classify(regimes.Series(0, round(window_s * 1e9), "probe", ios, ios, 1.0, 1.0, 1.0))
    if (reg.classes[-STEADY_WINDOWS:] == regimes.STEADY).all():
        return Steadiness("steady", window_s, n, spread, slope)
    return Steadiness("not steady", window_s, n, spread, slope, f"last {STEADY_WINDOWS} of {n} windows")


def _slope_share(ys: list[float], mean: float) -> float | None:
    """How far the least-squares line moves across `ys`, as a share of their mean (for the message:
    the rule itself is the shared one)."""
    if not mean:
        return None
    n = len(ys)
    xm = (n - 1) / 2
    slope = sum((x - xm) * (y - mean) for x, y in enumerate(ys)) / sum((x - xm) ** 2 for x in range(n))
    return abs(slope) * (n - 1) / mean
