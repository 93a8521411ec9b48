"""The report's timeline: per-window figures drawn from the trace itself, in a fingerprint's windows.

A fingerprint that travels holds no per-window series (it stays kilobytes); whoever has the trace
draws the timeline from it, in the windows the fingerprint names (its `params.window_ns`, from its
first arrival, on its device), with each window's regime class as the fingerprint resolved it, and
each latency's tail (its exceedance: the share of requests slower than each latency).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

import pyarrow as pa

from iofp import duck
from iofp.sqlfiles import load_sql

if TYPE_CHECKING:
    from fingerprint.frame import Frame

SQL = "fingerprint.sql"
# The exceedance levels a tail is read at: 1 - p from 1 down to one in a million, ten per decade (a
# log axis shows each decade alike; p99 and p99.9 are two of them).
EXCEEDANCE = [10 ** (-k / 10) for k in range(0, 61)]
PROBS = [round(1 - e, 12) for e in EXCEEDANCE]


@dataclass(frozen=True)
class Timeline:
    """Columns of equal length, one row per window: start_s (from the first arrival), iops, mbps,
    flushes_per_s, read_share, mean_size_bytes, mean_inflight, lat_p50_us and lat_p99_us (reads and
    writes), read_p50_us, read_p99_us, write_p50_us, write_p99_us, commits_per_s, commit_p50_us and
    commit_p99_us (the fsync-family calls, entry to return), regime (iofp/regimes.py's class: 0
    baseline, 1 steady, 2 spike) and hot (above the fingerprint's hot thresholds); and `tails`:
    per kind of request (read, write, flush, sync calls) its latency in µs at each of PROBS, and
    how many requests that is over."""

    window_s: float
    columns: dict[str, list[Any]]
    tails: dict[str, tuple[list[float], int]] = field(default_factory=dict)

    def __len__(self) -> int:
        return len(self.columns["start_s"])


def timeline(con: Any, f: Frame) -> Timeline:
    """The timeline of view `io` (and the calls of `sync_src`) in the windows of frame `f` (the
    fingerprint's: compute.frame)."""
    nwin = len(f.reg.classes)
    params = {"t0": f.t0, "window_ns": f.window_ns, "nwin": nwin, "device": f.options.device}
    cols: dict[str, list[Any]] = (
        con.sql(load_sql(SQL, "timeline"), params=params).to_arrow_table().to_pydict()
    )
    cols.pop("k")
    w_s = f.window_ns / 1e9
    sync_params = {k: params[k] for k in ("t0", "window_ns", "nwin")}
    calls = {r["k"]: r for r in duck.query(con, SQL, "timeline_sync", sync_params)}

    def q(k: int, i: int) -> float | None:
        v = calls[k]["lat_q"][i] if k in calls else None
        return None if v is None else v / 1e3

    cols["commits_per_s"] = [calls[k]["calls"] / w_s if k in calls else 0.0 for k in range(nwin)]
    cols["commit_p50_us"] = [q(k, 0) for k in range(nwin)]
    cols["commit_p99_us"] = [q(k, 1) for k in range(nwin)]
    cols["regime"] = pa.array(f.reg.classes).to_pylist()
    hot = f.reg.hot
    cols["hot"] = [False] * nwin if hot is None else [bool(h) for h in hot]
    tails = {r["kind"]: ([q / 1e3 for q in r["q_ns"]], r["n"])
             for r in duck.query(con, SQL, "latency_tails", {"probs": PROBS, "device": f.options.device})}
    return Timeline(w_s, cols, tails)
