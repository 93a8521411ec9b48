"""When to save an incident: the SLO grammar (iofp/slo.py) judged on each completed window.

A window is `--window` whole seconds, on wall-clock multiples (1 s: every second). Its figures, per
recorded device, are those `iofp compare --slo` judges, measured the same way on the window's
requests (by the second they completed in): nearest-rank latency percentiles per op from the exact
latencies, IOPS (reads, writes and discards per second), MB/s (reads and writes), commits per second
(the sync calls; the same for every device) and the most requests in flight at an issue. The trigger
fires when the SLO is missed in `--for` consecutive windows; a missed window is named by the SLO's
own phrases ("read p99 31.20 ms > 5.00 ms"). A window without a request of an op does not miss that
op's latency term (nor, without an issue, the in-flight bound): compare judges a replay that measured
no commits as missing its commit SLO, but an idle second on a recorded device is no incident. Rates
are judged on idle windows too: 0 IOPS is a measured rate.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iofp.slo import InflightTerm, IopsTerm, LatencyTerm, Slo, Term
from record import histogram
from record.seconds import COMMIT, NS, Second

DATA_OPS = ("read", "write", "discard")


@dataclass
class WindowFigures:
    """One device's figures over one window: what slo.Slo.failures reads (iofp/slo.py's Figures)."""

    device: str
    seconds: int
    lats: dict[str, np.ndarray]  # op (read, write, discard, flush, commit) -> latencies (ns)
    counts: dict[str, int]
    mbytes: float
    max_inflight: int | None
    demanded_iops: float | None = None  # a recorder has no demand: iops>=demanded is refused

    @property
    def achieved_iops(self) -> float:
        return sum(self.counts.get(op, 0) for op in DATA_OPS) / self.seconds

    @property
    def achieved_mbps(self) -> float:
        return self.mbytes / self.seconds

    @property
    def commits_per_s(self) -> float:
        return self.counts.get(COMMIT, 0) / self.seconds

    def latency(self, op: str, pct: str) -> float | None:
        return histogram.exact(self._lats(op), pct)

    def _lats(self, op: str) -> np.ndarray:
        if op in ("fsync", "commit"):
            op = COMMIT
        if op == "all":
            return np.concatenate([self.lats.get(o, np.empty(0, np.int64)) for o in DATA_OPS])
        return self.lats.get(op, np.empty(0, np.int64))

    def judged(self, t: Term) -> bool:
        """Whether the window has what `t` judges: a request of its op (a bare latency term: a read
        or a write), an issue for the in-flight bound; every other term is judged."""
        if isinstance(t, LatencyTerm):
            return any(len(self._lats(op)) for op in ([t.op] if t.op else ["read", "write"]))
        if isinstance(t, InflightTerm):
            return self.max_inflight is not None
        return True

    def to_dict(self) -> dict[str, Any]:
        """The window's figures as an incident's trace.json records them."""
        out: dict[str, Any] = {
            "device": self.device,
            "seconds": self.seconds,
            "iops": round(self.achieved_iops, 1),
            "mbps": round(self.achieved_mbps, 3),
            "commits_per_s": round(self.commits_per_s, 1),
            "max_inflight": self.max_inflight,
        }
        for op in (*DATA_OPS, "flush", COMMIT):
            if len(self.lats.get(op, ())):
                out[op] = {"count": self.counts[op]} | {
                    f"{p}_ns": self.latency(op, p) for p in histogram.PCT_FRACTIONS
                }
        return out


def window_figures(window: list[Second]) -> list[WindowFigures]:
    """The figures of each device recorded in the window (sync calls are every device's)."""
    by_dev: dict[str, dict[str, list[np.ndarray]]] = {}
    counts: dict[str, dict[str, int]] = {}
    mbytes: dict[str, float] = {}
    inflight: dict[str, int] = {}
    commits: list[np.ndarray] = []
    n_commits = 0
    for s in window:
        for (dev, op), cell in s.cells.items():
            if op == COMMIT:
                commits.append(cell.latencies())
                n_commits += cell.count
                continue
            if op not in (*DATA_OPS, "flush"):
                continue
            by_dev.setdefault(dev, {}).setdefault(op, []).append(cell.latencies())
            counts.setdefault(dev, {})[op] = counts.get(dev, {}).get(op, 0) + cell.count
            if op in ("read", "write"):
                mbytes[dev] = mbytes.get(dev, 0.0) + cell.bytes / 1e6
            inflight[dev] = max(inflight.get(dev, 0), cell.inflight_max)
    commit_lats = np.concatenate(commits) if commits else np.empty(0, np.int64)
    out = []
    for dev in sorted(by_dev) or ["*"]:
        lats = {op: np.concatenate(a) for op, a in by_dev.get(dev, {}).items()}
        lats[COMMIT] = commit_lats
        c = {**counts.get(dev, {}), COMMIT: n_commits}
        out.append(WindowFigures(dev, len(window), lats, c, mbytes.get(dev, 0.0), inflight.get(dev)))
    return out


def check_recordable(slo: Slo) -> None:
    """BadInput for terms a recorder cannot judge (it has no demanded rate)."""
    from iofp.errors import BadInput

    for t in slo.terms:
        if isinstance(t, IopsTerm):
            raise BadInput("--trigger iops>=demanded: a recorder has no demanded rate; bound the rate "
                           "itself, e.g. --trigger 'iops<=20000' or 'iops>=500'")  # fmt: skip


@dataclass
class Miss:
    """A window that missed the SLO: its end, its failures, its figures."""

    end_ns: int  # wall clock
    failures: list[str]
    figures: list[dict[str, Any]]


@dataclass
class Trigger:
    """The SLO held for `hold` windows before it fires."""

    slo: Slo
    hold: int = 1  # --for, in windows
    run: list[Miss] = field(default_factory=list)  # consecutive missed windows

    def judge(self, window: list[Second]) -> Miss | None:
        """The window just completed; the Miss that fires the trigger, or None."""
        figs = window_figures(window)
        named = len(figs) > 1  # several devices: each failure names its own
        failures = [f"{f.device}: {why}" if named else why for f in figs
                    for why in Slo(tuple(t for t in self.slo.terms if f.judged(t))).failures(f)]  # fmt: skip
        if not failures:
            self.run.clear()
            return None
        self.run.append(Miss((window[-1].t + 1) * NS, failures, [f.to_dict() for f in figs]))
        if len(self.run) < self.hold:
            return None
        fired = self.run[-1]
        self.run.clear()
        return fired
