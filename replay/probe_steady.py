"""Did a run reach steady state? The SNIA rule of iofp/regimes.py on the run's per-interval IOPS.

The series is fio's IOPS log (write_iops_log, one value per tenth of the runtime, summed over the
run's jobs): it is only judged here, never shown as a figure. fio logs the intervals that ended
before the run did, so a run has nine. A run is steady when its last STEADY_WINDOWS windows (one
SNIA measurement window) are all steady by the shared rule; with fewer windows it is too short to
judge. A run that is not steady measured a device still changing (warming up, filling a cache,
collecting garbage): its figures are an average over that change.
"""

from __future__ import annotations

from pathlib import Path

import pyarrow as pa

from iofp import duck, regimes
from iofp.probe_result import Steadiness

STEADY_WINDOWS = 5


def iops_series(run_dir: Path, window_ms: int) -> list[float]:
    """fio's per-interval IOPS of every job of the run (iops_iops.N.log), summed per interval."""
    per_window: dict[int, float] = {}
    for log in sorted(run_dir.glob("iops_iops.*.log")):
        for line in log.read_text().splitlines():
            parts = line.split(",")
            if len(parts) < 2 or not parts[0].strip().isdigit():
                continue
            k = round(int(parts[0]) / window_ms) - 1  # fio stamps an interval at its end
            per_window[k] = per_window.get(k, 0.0) + float(parts[1])
    return [per_window.get(k, 0.0) for k in range(max(per_window, default=-1) + 1)]


def judge(series: list[float], window_s: float) -> Steadiness:
    n = len(series)
    if n < STEADY_WINDOWS:
        return Steadiness("too short to judge", window_s, n, None, None, f"{n} windows < {STEADY_WINDOWS}")
    last = series[-STEADY_WINDOWS:]
    mean = sum(last) / STEADY_WINDOWS
    spread = (max(last) - min(last)) / mean if mean else None
    slope = _slope_share(last, mean)
    table = pa.table({"k": list(range(n)), "iops": series, "mbps": series})  # one size: bytes follow I/Os
    con = duck.connect()
    try:
        steady = set(regimes.classify(con, table).steady)
    finally:
        con.close()
    if all(k in steady for k in range(n - STEADY_WINDOWS, n)):
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
