"""How much a scope's headline figures vary within its own trace: the noise `iofp diff` measures a
change against (a `fingerprint_doc.Noise` per scope).

Batch means, the standard way to put an error bar on a figure of one autocorrelated run: a scope's
windows are cut, in time order, into up to NOISE_BATCHES runs of consecutive windows; each figure is
computed in each batch as it is for the scope (a rate over the batch's seconds, a percentile of the
batch's I/Os, read from latency buckets 2% wide: a hash aggregate, where exact percentiles would
sort every row again), and its standard error is the standard deviation over the batches /
sqrt(batches).
Consecutive windows keep the within-run correlation (a flush storm that spans seconds) inside one
batch, so the spread between batches is the honest one. Both are kept: the standard deviation
over the batches (`sd`, the spread of a figure measured over a few seconds) and the standard error
of the scope's figure (`se`). Fewer than MIN_BATCHES batches give neither (null): the figure is
then shown but not judged.
"""

from __future__ import annotations

import math
from collections import Counter
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import pyarrow as pa

from fingerprint.frame import Frame
from iofp import duck
from iofp import fingerprint_doc as doc

SQL = "fingerprint.sql"
NOISE_BATCHES = 10
MIN_BATCHES = 3
METHOD = (
    f"batch means: the scope's windows cut in time order into up to {NOISE_BATCHES} runs of consecutive "
    "windows; sd is a figure's standard deviation over the batches, se = sd / sqrt(batches)"
)
DATA_OPS = ("read", "write", "discard")


def measure(con: Any, f: Frame) -> dict[str, doc.Noise]:
    """Every scope's noise (the regimes', and the --between span's: a diff of two fingerprints that
    both have one compares them); needs compute's prepared tables."""
    # The whole trace is judged only when it has no baseline (every window in a spike): a diff
    # compares the steady state, else the baseline, and the spikes. It is the costliest scope.
    # spike1 is read, not compared: a diff judges the spikes together
    skip = {"spike1"} | ({"baseline"} if f.baseline_is_steady else set())
    skip |= {"whole"} if len(f.windows("baseline")) else set()
    windows = {s: _batch_windows(f, s) for s in doc.SCOPES if s not in skip}
    cuts = {s: np.array_split(w, min(NOISE_BATCHES, len(w))) for s, w in windows.items() if len(w)}
    rows = [(s, int(w), b) for s, parts in cuts.items() for b, part in enumerate(parts) for w in part]
    cols = ("scope", "w", "b")
    con.register("noise_batch", pa.table({k: [r[i] for r in rows] for i, k in enumerate(cols)}))
    batches: dict[tuple[str, int], _Batch] = {}
    for r in duck.query(con, SQL, "noise_batches", {"steps": f.steps}):
        batches.setdefault((r["scope"], r["b"]), _Batch()).add_io(r)
    for r in duck.query(con, SQL, "noise_latency"):
        batches.setdefault((r["scope"], r["b"]), _Batch()).add_latency(r)
    for r in duck.query(con, SQL, "noise_sync_batches"):
        batches.setdefault((r["scope"], r["b"]), _Batch()).add_call(r)
    con.unregister("noise_batch")
    out = {}
    for s, parts in cuts.items():
        seconds = [_inside_ns(f, s, p).sum() / 1e9 for p in parts]
        values = [batches.get((s, b), _Batch()).figures(secs) for b, secs in enumerate(seconds)]
        keys = sorted({k for v in values for k in v})
        spread = {k: _spread([v.get(k) for v in values]) for k in keys}
        se = {k: None if sd is None else sd[0] / math.sqrt(sd[1]) for k, sd in spread.items()}
        sd = {k: None if v is None else v[0] for k, v in spread.items()}
        sd_log = {k: _log_spread([v.get(k) for v in values]) for k in keys if k.endswith("_us")}
        out[s] = doc.Noise(len(parts), math.ceil(len(windows[s]) / len(parts)), METHOD, sd, se, sd_log)
    if f.baseline_is_steady and "steady" in out:
        out["baseline"] = out["steady"]
    return out


def _inside_ns(f: Frame, scope: str, w: np.ndarray) -> np.ndarray:
    """How much of each window `w` lies in the scope: all of it, but for --between the part inside the
    span (its first and last windows hold I/O outside it, which the batch queries leave out)."""
    if scope != "between":
        return np.full(len(w), f.window_ns)
    lo, hi = f.span(scope)
    starts = f.t0 + w * f.window_ns
    return np.minimum(starts + f.window_ns, hi) - np.maximum(starts, lo)


def _batch_windows(f: Frame, scope: str) -> np.ndarray:
    """The windows a scope's batches are cut from: all of them, but not an edge window with less than
    half of it inside the span (a sliver's rate is a few I/Os over a few ms, and would be most of the
    spread of a span cut into batches of one window)."""
    w = f.windows(scope)
    return w[_inside_ns(f, scope, w) * 2 >= f.window_ns]


@dataclass
class _Batch:
    """One batch's counts, and its latencies as 2%-wide buckets (lb = round(50 ln ns)) -> count."""

    ios: int = 0
    bytes: int = 0
    reads: int = 0
    points: int = 0
    lat: dict[str, Counter[int]] = field(default_factory=lambda: {"read": Counter(), "write": Counter()})
    calls: dict[str, Counter[int]] = field(default_factory=dict)

    def add_io(self, r: dict[str, Any]) -> None:
        op, n = r["op"], int(r["n"])
        if op in DATA_OPS:
            self.ios += n
            self.bytes += int(r["bytes"])
        self.reads += n if op == "read" else 0
        self.points += int(r["points"])

    def add_latency(self, r: dict[str, Any]) -> None:
        if r["op"] in self.lat:
            self.lat[r["op"]][r["lb"]] += int(r["n"])

    def add_call(self, r: dict[str, Any]) -> None:
        hist = self.calls.setdefault(r["call"], Counter())
        if r["lb"] is not None:
            hist[r["lb"]] += int(r["n"])

    def figures(self, seconds: float) -> dict[str, float | None]:
        """The batch's figures, keyed by their path in the scope (what the diff compares)."""
        both = self.lat["read"] + self.lat["write"]
        out: dict[str, float | None] = {
            "intensity.iops": self.ios / seconds,
            "intensity.mbps": self.bytes / 1e6 / seconds,
            "mix.read_share": self.reads / self.ios if self.ios else None,
            "size.mean_bytes": self.bytes / self.ios if self.ios else None,
            "durability.flush_fua_per_s": self.points / seconds,
            "latency.all.p50_us": _pct_us(both, 0.5),
            "latency.all.p99_us": _pct_us(both, 0.99),
            "latency.all.p99_9_us": _pct_us(both, 0.999),
            "latency.read.p99_us": _pct_us(self.lat["read"], 0.99),
            "latency.write.p99_us": _pct_us(self.lat["write"], 0.99),
            "durability.commits_per_s": sum(sum(h.values()) for h in self.calls.values()) / seconds,
        }
        for call, hist in self.calls.items():
            out[f"durability.sync_calls.{call}.p50_us"] = _pct_us(hist, 0.5)
            out[f"durability.sync_calls.{call}.p99_us"] = _pct_us(hist, 0.99)
        return out


def _pct_us(hist: Counter[int], q: float) -> float | None:
    """The nearest-rank percentile q of a bucketed latency, in µs (the bucket's middle)."""
    total = sum(hist.values())
    if not total:
        return None
    need, seen = math.ceil(q * total), 0
    for lb in sorted(hist):
        seen += hist[lb]
        if seen >= need:
            return math.exp(lb / 50) / 1e3
    return None


def _log_spread(values: list[float | None]) -> float | None:
    """A latency's standard deviation over the batches on a log scale (its spread as a ratio: a
    device that got slower and noisier is judged by how far apart, not how many µs apart, its
    batches are), or None with fewer than MIN_BATCHES batches holding it."""
    x = np.array([v for v in values if v is not None and v > 0], dtype=float)
    return float(np.log(x).std(ddof=1)) if len(x) >= MIN_BATCHES else None


def _spread(values: list[float | None]) -> tuple[float, int] | None:
    """A figure's standard deviation over the batches that hold it, and their number (None: too
    few batches to tell)."""
    x = np.array([v for v in values if v is not None], dtype=float)
    if len(x) < MIN_BATCHES:
        return None
    return float(x.std(ddof=1)), len(x)
