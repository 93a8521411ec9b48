"""The report's timeline: per-window figures drawn from the trace itself, in a fingerprint's windows.

A fingerprint that travels holds no per-window series (it stays kilobytes); whoever has the trace
draws the timeline from it, in the windows the fingerprint names (its `params.window_ns`, from its
first arrival, on its device), with each window's regime class as the fingerprint resolved it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pyarrow as pa

from fingerprint.frame import Frame
from iofp.sqlfiles import load_sql

SQL = "fingerprint.sql"


@dataclass(frozen=True)
class Timeline:
    """Columns of equal length, one row per window: start_s (from the first arrival), iops, mbps,
    flushes_per_s, read_share, mean_size_bytes, mean_inflight, lat_p50_us, lat_p99_us (reads and
    writes) and regime (iofp/regimes.py's class: 0 baseline, 1 steady, 2 spike)."""

    window_s: float
    columns: dict[str, list[Any]]

    def __len__(self) -> int:
        return len(self.columns["start_s"])


def timeline(con: Any, f: Frame) -> Timeline:
    """The timeline of view `io` in the windows of frame `f` (the fingerprint's: compute.frame)."""
    params = {"t0": f.t0, "window_ns": f.window_ns, "nwin": len(f.reg.classes), "device": f.options.device}
    cols: dict[str, list[Any]] = (
        con.sql(load_sql(SQL, "timeline"), params=params).to_arrow_table().to_pydict()
    )
    cols.pop("k")
    cols["regime"] = pa.array(f.reg.classes).to_pylist()
    return Timeline(f.window_ns / 1e9, cols)
