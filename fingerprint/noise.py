"""How much a scope's headline figures vary within its own trace: the noise `iofp diff` measures a
change against (a `fingerprint_doc.Noise` per scope).

Batch means, the standard way to put an error bar on a figure of one autocorrelated run: a scope's
windows are cut, in time order, into up to NOISE_BATCHES runs of consecutive windows; each figure is
computed in each batch as it is for the scope (a rate over the batch's seconds, a percentile of the
batch's I/Os), and its standard error is the standard deviation over the batches / sqrt(batches).
Consecutive windows keep the within-run correlation (a flush storm that spans seconds) inside one
batch, so the spread between batches is the honest one. Both are kept: the standard deviation
over the batches (`sd`, the spread of a figure measured over a few seconds) and the standard error
of the scope's figure (`se`). Fewer than MIN_BATCHES batches give neither (null): the figure is
then shown but not judged.
"""

from __future__ import annotations

import math
from typing import TYPE_CHECKING, Any

import numpy as np
import pyarrow as pa

from iofp import duck
from iofp import fingerprint_doc as doc

if TYPE_CHECKING:
    from fingerprint.compute import Frame

SQL = "fingerprint.sql"
NOISE_BATCHES = 10
MIN_BATCHES = 3
METHOD = (
    f"batch means: the scope's windows cut in time order into up to {NOISE_BATCHES} runs of consecutive "
    "windows; sd is a figure's standard deviation over the batches, se = sd / sqrt(batches)"
)
SCOPES = ("whole", "steady", "baseline", "spike")


def measure(con: Any, f: Frame) -> dict[str, doc.Noise]:
    """Every regime scope's noise (the `between` span is not diffed); needs compute's prepared tables."""
    # The whole trace is judged only when it has no baseline (every window in a spike): a diff
    # compares the steady state, else the baseline, and the spikes. It is the costliest scope.
    skip = {"baseline"} if f.baseline_is_steady else set()
    skip |= {"whole"} if len(f.windows("baseline")) else set()
    names = [s for s in SCOPES if len(f.windows(s)) and s not in skip]
    cuts = {s: np.array_split(f.windows(s), min(NOISE_BATCHES, len(f.windows(s)))) for s in names}
    rows = [(s, int(w), b) for s, parts in cuts.items() for b, part in enumerate(parts) for w in part]
    cols = ("scope", "w", "b")
    con.register("noise_batch", pa.table({k: [r[i] for r in rows] for i, k in enumerate(cols)}))
    io = {(r["scope"], r["b"]): r for r in duck.query(con, SQL, "noise_batches")}
    syncs: dict[tuple[str, int], dict[str, dict[str, Any]]] = {}
    for r in duck.query(con, SQL, "noise_sync_batches"):
        syncs.setdefault((r["scope"], r["b"]), {})[r["call"]] = r
    con.unregister("noise_batch")
    w_s = f.window_ns / 1e9
    out = {}
    for s, parts in cuts.items():
        values = [_figures(io.get((s, b)), syncs.get((s, b), {}), len(p) * w_s) for b, p in enumerate(parts)]
        keys = sorted({k for v in values for k in v})
        spread = {k: _spread([v.get(k) for v in values]) for k in keys}
        se = {k: None if sd is None else sd[0] / math.sqrt(sd[1]) for k, sd in spread.items()}
        sd = {k: None if v is None else v[0] for k, v in spread.items()}
        out[s] = doc.Noise(len(parts), math.ceil(len(f.windows(s)) / len(parts)), METHOD, sd, se)
    if f.baseline_is_steady and "steady" in out:
        out["baseline"] = out["steady"]
    return out


def _figures(
    r: dict[str, Any] | None, calls: dict[str, dict[str, Any]], seconds: float
) -> dict[str, float | None]:
    """One batch's figures, keyed by their path in the scope (what the diff compares)."""
    r = r or {"ios": 0, "bytes": 0, "reads": 0, "durability_points": 0}
    ios = r["ios"]
    lat = r.get("lat_all") or [None, None, None]
    out: dict[str, float | None] = {
        "intensity.iops": ios / seconds,
        "intensity.mbps": r["bytes"] / 1e6 / seconds,
        "mix.read_share": r["reads"] / ios if ios else None,
        "size.mean_bytes": r["bytes"] / ios if ios else None,
        "durability.flush_fua_per_s": r["durability_points"] / seconds,
        "latency.all.p50_us": _us(lat[0]),
        "latency.all.p99_us": _us(lat[1]),
        "latency.all.p99_9_us": _us(lat[2]),
        "latency.read.p99_us": _us(r.get("lat_read_p99")),
        "latency.write.p99_us": _us(r.get("lat_write_p99")),
        "durability.commits_per_s": sum(c["calls"] for c in calls.values()) / seconds,
    }
    for call, c in calls.items():
        out[f"durability.sync_calls.{call}.p50_us"] = _us(c["p50_ns"])
        out[f"durability.sync_calls.{call}.p99_us"] = _us(c["p99_ns"])
    return out


def _us(ns: float | None) -> float | None:
    return None if ns is None else ns / 1e3


def _spread(values: list[float | None]) -> tuple[float, int] | None:
    """A figure's standard deviation over the batches that hold it, and their number (None: too
    few batches to tell)."""
    x = np.array([v for v in values if v is not None], dtype=float)
    if len(x) < MIN_BATCHES:
        return None
    return float(x.std(ddof=1)), len(x)
