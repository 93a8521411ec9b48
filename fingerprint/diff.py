"""What changed between two fingerprints, split into demand changes and service changes.

`diff(a, b) -> DiffResult` compares two fingerprints (A = before, B = after) metric by metric.
Demand metrics describe what the workload asked for (IOPS, MB/s, mix, size, sequentiality,
burstiness, flush and commit rates, footprint); service metrics describe how the device answered
(latency percentiles, fsync latency). A metric is flagged when it moves beyond its threshold:
relative for rates and sizes, absolute (in share points) for shares.

The verdict separates "the workload got harder" (demand moved) from "the device got slower"
(latency moved while demand stayed comparable). When both the load and latency moved, the
directions decide: latency moving against the load (faster under more load, slower under less)
says which way the device went; latency moving with it cannot be pinned on the device from
fingerprints alone, and the verdict says so. The steady-state scope is compared when
both fingerprints have one (it is the like-for-like regime); else the baseline (the windows in no
spike) when both have one; otherwise the whole trace.
"""

from __future__ import annotations

import dataclasses
from dataclasses import asdict, dataclass, field
from typing import Any

from iofp.fingerprint_doc import Fingerprint, Scope


@dataclass(frozen=True)
class Metric:
    name: str
    path: tuple[str, ...]
    kind: str  # "demand" or "service"
    threshold: float
    absolute: bool = False  # threshold in share points rather than relative change
    harder_when: int = 1  # +1: a rise makes the workload harder (or the device slower); -1: a fall
    unit: str = ""  # printed with the values where the name does not say it (latencies: µs)


METRICS: tuple[Metric, ...] = (
    Metric("IOPS", ("intensity", "iops"), "demand", 0.20),
    Metric("MB/s", ("intensity", "mbps"), "demand", 0.20),
    Metric("read share (count)", ("mix", "read_share"), "demand", 0.10, absolute=True, harder_when=-1),
    Metric("mean size (bytes)", ("size", "mean_bytes"), "demand", 0.25, harder_when=-1),
    Metric("sequential share", ("sequential", "share"), "demand", 0.10, absolute=True, harder_when=-1),
    Metric("peak/mean IOPS, 1 s", ("burstiness", "1s", "peak_to_mean"), "demand", 0.50),
    Metric("peak/mean IOPS, 100 ms", ("burstiness", "100ms", "peak_to_mean"), "demand", 0.50),
    Metric("dispersion index, 1 s", ("burstiness", "1s", "index_of_dispersion"), "demand", 1.00),
    Metric("flush+FUA per s", ("durability", "flush_fua_per_s"), "demand", 0.25),
    Metric("fsync-family calls per s", ("durability", "commits_per_s"), "demand", 0.25),
    Metric("footprint (4 KiB blocks)", ("footprint", "blocks_4k"), "demand", 0.25),
    Metric("latency p50", ("latency", "all", "p50_us"), "service", 0.20, unit="µs"),
    Metric("latency p99", ("latency", "all", "p99_us"), "service", 0.25, unit="µs"),
    Metric("latency p99.9", ("latency", "all", "p99_9_us"), "service", 0.50, unit="µs"),
    Metric("read latency p99", ("latency", "read", "p99_us"), "service", 0.25, unit="µs"),
    Metric("write latency p99", ("latency", "write", "p99_us"), "service", 0.25, unit="µs"),
)
# Demand metrics whose movement makes a latency comparison unfair ("comparable demand"). Flush and
# commit rates are load too: each flush drains the device's write cache, and the writes queued
# behind it wait, so halving commits/s alone can halve write latency on an unchanged device.
LOAD_METRICS = (
    "IOPS",
    "MB/s",
    "mean size (bytes)",
    "read share (count)",
    "sequential share",
    "flush+FUA per s",
    "fsync-family calls per s",
)
REPLAY_HINT = "replay A's trace on B's device to separate them"


@dataclass
class Change:
    metric: str
    kind: str
    a: float | None
    b: float | None
    rel_change: float | None
    abs_change: float | None
    threshold: float
    threshold_is_absolute: bool
    flagged: bool
    direction: str  # "harder", "easier", "slower", "faster" or "" when not flagged
    unit: str = ""


@dataclass
class DiffResult:
    scope: str
    changes: list[Change]
    demand_changed: bool
    service_changed: bool
    comparable_demand: bool
    verdict: str
    notes: list[str] = field(default_factory=list)
    a_labels: dict[str, str] = field(default_factory=dict)
    b_labels: dict[str, str] = field(default_factory=dict)

    @property
    def flagged(self) -> list[Change]:
        return [c for c in self.changes if c.flagged]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def _get(d: Any, path: tuple[str, ...]) -> float | None:
    """The number at `path` (attributes of the document's dataclasses, keys of its dicts), or None."""
    for k in path:
        if dataclasses.is_dataclass(d):
            d = getattr(d, k, None)
        elif isinstance(d, dict):
            d = d.get(k)
        else:
            return None
    return d if isinstance(d, (int, float)) and not isinstance(d, bool) else None


def _sync_p99(scope: Scope) -> float | None:
    calls = scope.durability.sync_calls
    if not calls:
        return None
    return max(calls.values(), key=lambda c: c.calls).p99_us


def diff(a: Fingerprint, b: Fingerprint) -> DiffResult:
    """Compare fingerprint `a` (before) with `b` (after)."""
    notes = []
    if a.steady and b.steady:
        scope = "steady"
    elif a.baseline and b.baseline:
        scope = "baseline"
        notes.append("compared baselines (the windows in no spike): at least one has no steady state")
    else:
        scope = "whole"
        notes.append(
            "compared whole traces: at least one fingerprint has neither a steady state nor a baseline"
        )
    sa, sb = getattr(a, scope), getattr(b, scope)
    changes = [_change(m, _get(sa, m.path), _get(sb, m.path)) for m in METRICS]
    fs = Metric("fsync p99", ("fsync_p99",), "service", 0.25, unit="µs")
    changes.append(_change(fs, _sync_p99(sa), _sync_p99(sb)))

    demand = [c for c in changes if c.kind == "demand" and c.flagged]
    service = [c for c in changes if c.kind == "service" and c.flagged]
    load = [c for c in demand if c.metric in LOAD_METRICS]
    comparable = not load
    harder = sum(c.direction == "harder" for c in demand) - sum(c.direction == "easier" for c in demand)
    slower = sum(c.direction == "slower" for c in service) - sum(c.direction == "faster" for c in service)
    # Which way the load moved: over the load metrics only, since burstiness or footprint moving
    # the other way says little about how busy the device was.
    heavier = sum(c.direction == "harder" for c in load) - sum(c.direction == "easier" for c in load)
    if sa.latency is None or sb.latency is None:
        notes.append("at least one trace has no latency: only demand can be compared")

    if not demand and not service:
        verdict = "no significant change"
    elif demand and not service:
        verdict = (
            "the workload got harder"
            if harder > 0
            else ("the workload got lighter" if harder < 0 else "the workload changed shape")
        )
    elif service and comparable:
        what = "slower" if slower > 0 else "faster" if slower < 0 else "different"
        verdict = f"the device got {what}: latency moved at comparable demand"
        if demand:
            verdict += " (other demand features moved too: " + ", ".join(c.metric for c in demand) + ")"
    else:
        verdict = _load_and_latency_verdict(heavier, slower)
    return DiffResult(
        scope=scope,
        changes=changes,
        demand_changed=bool(demand),
        service_changed=bool(service),
        comparable_demand=comparable,
        verdict=verdict,
        notes=notes,
        a_labels=a.provenance.labels,
        b_labels=b.provenance.labels,
    )


def _load_and_latency_verdict(heavier: int, slower: int) -> str:
    """The verdict when the load and the latency both moved. Latency rises with load on any device,
    so only a move against the load says something about the device: faster answers under more load
    rule out a slower device, slower answers under less load point at it. A move with the load
    (both up, both down) could be the load alone, and fingerprints cannot split the two."""
    if heavier > 0 and slower < 0:
        return (
            "the workload got harder yet latency fell: the device is not slower (it answers more load faster)"
        )
    if heavier < 0 and slower > 0:
        return (
            "the workload got lighter yet latency rose: the device got slower (or something else now "
            "shares it)"
        )
    if heavier > 0 and slower > 0:
        return (
            "the workload got harder and latency rose with it: cannot tell from fingerprints whether the "
            f"device got slower; {REPLAY_HINT}"
        )
    if heavier < 0 and slower < 0:
        return (
            "the workload got lighter and latency fell with it: cannot tell from fingerprints whether the "
            f"device got faster; {REPLAY_HINT}"
        )
    return (
        "the workload and latency both changed, in mixed directions: cannot tell from fingerprints "
        f"whether the device changed; {REPLAY_HINT}"
    )


def _change(m: Metric, va: float | None, vb: float | None) -> Change:
    rel = None if va in (None, 0) or vb is None else (vb - va) / abs(va)
    delta = None if va is None or vb is None else vb - va
    if m.absolute:
        flagged = delta is not None and abs(delta) > m.threshold
    else:
        flagged = rel is not None and abs(rel) > m.threshold
        if va == 0 and vb not in (None, 0):  # from nothing to something is always a change
            flagged = True
    direction = ""
    if flagged and delta is not None:
        up = delta * m.harder_when > 0
        direction = ("harder" if up else "easier") if m.kind == "demand" else ("slower" if up else "faster")
    return Change(m.name, m.kind, va, vb, rel, delta, m.threshold, m.absolute, flagged, direction, m.unit)
