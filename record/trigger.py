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
are judged on idle windows too: 0 IOPS is a measured rate, and every recorded device is judged.

A relative rate term (`iops<=3x`, `mbps>=0.5x`) is judged against the device's baseline: its mean rate
over the seconds before the window, as far back as --history; judged once the baseline spans a minute
(or the whole --history, if shorter) and holds some I/O (a surge from an idle device has no ratio).
"""

from __future__ import annotations

from collections import deque
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from iofp.slo import InflightTerm, IopsTerm, LatencyTerm, RateTerm, Slo, Term
from record import histogram
from record.seconds import ALL_DEVICES, COMMIT, NS, Second

DATA_OPS = ("read", "write", "discard")
BASELINE_MIN_S = 60  # a relative term waits for this much baseline (or all of --history, if shorter)


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
    baseline_iops: float | None = None  # the relative terms' (Baseline.rates)
    baseline_mbps: float | None = None

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
        or a write), an issue for the in-flight bound, a baseline for a relative rate; every other
        term is judged."""
        if isinstance(t, LatencyTerm):
            return any(len(self._lats(op)) for op in ([t.op] if t.op else ["read", "write"]))
        if isinstance(t, InflightTerm):
            return self.max_inflight is not None
        if isinstance(t, RateTerm) and t.relative:
            return (self.baseline_iops if t.what == "iops" else self.baseline_mbps) is not None
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


def window_figures(window: list[Second], devices: tuple[str, ...] = ()) -> list[WindowFigures]:
    """The figures of each device in the window and of each of `devices` (those recorded, idle or
    not; sync calls are every device's)."""
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
    # ALL_DEVICES holds what no one device owns (the unissued barriers, with several devices): no device
    for dev in sorted((set(by_dev) | set(devices)) - {ALL_DEVICES}) or [ALL_DEVICES]:
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


class Baseline:
    """Each device's mean rate (IOPS, MB/s) over the last `span_s` seconds judged."""

    def __init__(self, span_s: int) -> None:
        self.span_s = span_s
        self.seconds: deque[tuple[int, dict[str, tuple[int, float]]]] = deque()
        self.sums: dict[str, list[float]] = {}

    def rates(self, dev: str) -> tuple[float | None, float | None]:
        n = len(self.seconds)
        if n < min(self.span_s, BASELINE_MIN_S):
            return None, None
        ios, mbytes = self.sums.get(dev, (0, 0.0))
        return (ios / n or None), (mbytes / n or None)

    def follow(self, t: int) -> None:
        """Second `t` comes next: after a gap (the recorder was down) the baseline starts afresh."""
        if self.seconds and self.seconds[-1][0] != t - 1:
            self.seconds.clear()
            self.sums.clear()

    def push(self, s: Second) -> None:
        self.follow(s.t)
        per: dict[str, tuple[int, float]] = {}
        for (dev, op), cell in s.cells.items():
            ios, mbytes = per.get(dev, (0, 0.0))
            per[dev] = (ios + cell.count * (op in DATA_OPS),
                        mbytes + cell.bytes / 1e6 * (op in ("read", "write")))  # fmt: skip
        self.seconds.append((s.t, per))
        self._add(per, 1)
        while len(self.seconds) > self.span_s:
            self._add(self.seconds.popleft()[1], -1)

    def _add(self, per: dict[str, tuple[int, float]], sign: int) -> None:
        for dev, (ios, mbytes) in per.items():
            acc = self.sums.setdefault(dev, [0, 0.0])
            acc[0] += sign * ios
            acc[1] += sign * mbytes


@dataclass
class Trigger:
    """The SLO held for `hold` windows before it fires."""

    slo: Slo
    hold: int = 1  # --for, in windows
    baseline_s: int = 600  # --history: how far back a relative term's baseline reaches
    devices: tuple[str, ...] = ()  # the recorded devices, judged when idle too
    run: list[Miss] = field(default_factory=list)  # consecutive missed windows
    baseline: Baseline = field(init=False)

    def __post_init__(self) -> None:
        self.baseline = Baseline(self.baseline_s)

    def judge(self, window: list[Second]) -> Miss | None:
        """The window just completed; the Miss that fires the trigger, or None."""
        figs = window_figures(window, self.devices)
        self.baseline.follow(window[0].t)
        for f in figs:
            f.baseline_iops, f.baseline_mbps = self.baseline.rates(f.device)
        for s in window:
            self.baseline.push(s)
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
