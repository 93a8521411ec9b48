"""What changed between two fingerprints, split into demand changes and service changes, judged
against the noise each trace measured in itself.

`diff(a, b) -> DiffResult` compares fingerprint A (before) with B (after) in two regimes: the
like-for-like one (Fingerprint.typical_scope: steady when both have one covering at least half of
its baseline, else the baseline, the windows in no spike, else the whole trace) and the spike regime
when both have spikes; and the --between spans when both summarise one (the 09:15 open of two days,
each fingerprinted with --between 09:15 09:30), judged against the noise measured inside each span.
Demand metrics describe what the workload asked for (IOPS, MB/s, mix, size, flush and commit
rates); service metrics how the device answered (latency percentiles, the sync calls' latency).

A change is flagged only beyond the noise: each scope carries the spread (sd) and the standard
error (se) of its figures, measured within its own trace from batches of consecutive windows
(fingerprint/noise.py). A rate, share or size is flagged beyond Z standard errors of the difference
(sqrt(se_A^2 + se_B^2)), and by FLOOR of A's value at least (FLOOR_SHARE points for a share), so that
a long trace's tiny errors do not flag a trivial move.

A latency percentile is judged as a ratio, B / A, against the largest of three limits (fingerprint/
latency_test.py): FLOOR; what the two scopes' I/Os can resolve (the percentile's own sampling error,
from the latency buckets each fingerprint carries: a bootstrap of the percentile in closed form);
and how far the figure moves from batch to batch within each trace (its spread on a log scale, times
a t quantile for the batches there are: a re-run moves a percentile by about its batch spread, which
one run's standard error does not cover). On a log scale a device that got slower and noisier is
judged by how far apart its batches are, not by how many µs: the RAM -> disk loop spike whose p50
went 18.9 -> 82 µs had batches spread by tens of µs on the disk and read "no change". A median's
batch limit is capped at RUN_CAP (2x): the same job re-run moved its median by 1.4x at most, and a
spike of three windows must not hide a 4x move behind three batches' spread. A scope whose typical
latency (p50) its windows resolve only beyond RESOLVE, and where nothing moved beyond the noise, is
"inconclusive", not "no change". A figure without its noise (too few windows for a tail, an older
fingerprint, a shape figure such as the sequential share) is shown, not judged.

The verdict separates "the workload got harder" (demand moved) from "the device got slower"
(latency moved while demand stayed comparable). When both the load and latency moved, the
directions decide: latency moving against the load (faster under more load, slower under less)
says which way the device went; latency moving with it cannot be pinned on the device from
fingerprints alone, and the verdict says so. A change of device in the provenance (model, serial,
size, rotational, scheduler, a loop device's backing) is reported on its own line.
"""

from __future__ import annotations

import dataclasses
import math
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from typing import Any

from fingerprint import headline
from fingerprint import latency_test as lt
from iofp import slo as slomod
from iofp.errors import BadInput
from iofp.fingerprint_doc import Fingerprint, Scope
from iofp.host_evidence import HostEvidence
from iofp.host_evidence import limit as host_limit
from iofp.separation import EFFECT

Z = 4.0
Z_SPREAD = 3.0
FLOOR = 0.10
FLOOR_SHARE = 0.02
RULE = (
    f"a rate, share or size moves beyond {Z:g} standard errors (se) of the difference, measured within "
    f"both traces, and by {FLOOR:.0%} of A at least ({FLOOR_SHARE * 100:g} points for a share); a "
    f"latency percentile moves by a ratio beyond the largest of {FLOOR:.0%}, what the scopes' I/Os "
    f"resolve ({lt.Z_IO:g} sampling errors) and its spread from batch to batch (a t quantile times its "
    f"log-scale sd; for a median at most {lt.RUN_CAP:g}x); no change is said where the typical latency "
    f"(p50) is resolved within ±{lt.RESOLVE:.0%}, else inconclusive"
)


@dataclass(frozen=True)
class Metric:
    name: str
    path: tuple[str, ...]
    kind: str  # "demand" or "service"
    absolute: bool = False  # a share: its floor is in points, its change printed as a difference
    harder_when: int = 1  # +1: a rise makes the workload harder (or the device slower); -1: a fall
    judged: bool = True  # False: a shape figure with no within-trace error, shown for context

    @property
    def by_spread(self) -> bool:
        """A latency percentile is judged against its spread, not its standard error: it moves from
        run to run by about its batch-to-batch spread (stalls come and go over minutes), which the
        error of one run's figure does not include."""
        return self.kind == "service"

    @property
    def key(self) -> str:
        return ".".join(self.path)


METRICS: tuple[Metric, ...] = (
    Metric("IOPS", ("intensity", "iops"), "demand"),
    Metric("MB/s", ("intensity", "mbps"), "demand"),
    Metric("read share (count)", ("mix", "read_share"), "demand", absolute=True, harder_when=-1),
    Metric("mean size (bytes)", ("size", "mean_bytes"), "demand", harder_when=-1),
    Metric("sequential share", ("sequential", "share"), "demand", True, -1, judged=False),
    Metric("peak/mean IOPS, 1 s", ("burstiness", "1s", "peak_to_mean"), "demand", judged=False),
    Metric("flush+FUA /s", ("durability", "flush_fua_per_s"), "demand"),
    Metric("sync calls /s", ("durability", "commits_per_s"), "demand"),
    Metric("latency p50 (µs)", ("latency", "all", "p50_us"), "service"),
    Metric("latency p99 (µs)", ("latency", "all", "p99_us"), "service"),
    Metric("latency p99.9 (µs)", ("latency", "all", "p99_9_us"), "service"),
    Metric("read p99 (µs)", ("latency", "read", "p99_us"), "service"),
    Metric("write p99 (µs)", ("latency", "write", "p99_us"), "service"),
)
# Demand metrics whose movement makes a latency comparison unfair ("comparable demand"). Flush and
# commit rates are load too: each flush drains the device's write cache, and the writes queued
# behind it wait, so halving commits/s alone can halve write latency on an unchanged device.
TYPICAL = "latency p50 (µs)"  # the figure whose resolution a scope states
LOAD_METRICS = ("IOPS", "MB/s", "mean size (bytes)", "read share (count)", "flush+FUA /s", "sync calls /s")
REPLAY_HINT = "replay A's trace on B's device to separate them"
DEVICE_FACTS = ("model", "vendor", "serial", "size_bytes", "rotational", "scheduler", "logical_block_size")
RAM_DIRS = ("/dev/shm", "/run")  # tmpfs: a loop device over a file here is RAM-backed


@dataclass
class Change:
    metric: str
    kind: str
    a: float | None
    b: float | None
    rel_change: float | None
    abs_change: float | None
    noise: str  # "se", "sd" (batch spread) or "sd_log" (batch spread of its log): noise_a/noise_b
    noise_a: float | None  # the metric's unit, or a log's for sd_log (null: not measured)
    noise_b: float | None
    limit: float | None  # the move up it must exceed, the metric's unit (null: not judged)
    flagged: bool
    direction: str  # "harder", "easier", "slower", "faster" or "" when not flagged
    absolute: bool = False
    limit_ratio: float | None = None  # a latency: the ratio B / A (or A / B) it must exceed
    limit_by: str = ""  # a latency: which limit set it: "floor", "I/Os" or "batches"


@dataclass
class ScopeDiff:
    scope: str
    windows_a: int
    windows_b: int
    window_s: tuple[float, float]
    changes: list[Change]
    verdict: str
    demand_changed: bool
    service_changed: bool
    comparable_demand: bool
    device_slower: bool  # latency rose at comparable demand: the verdict "the device got slower"
    resolves: float | None = None  # the typical latency (p50) change it resolves: 0.25 = ±25%
    inconclusive: bool = False  # nothing flagged, and the typical latency not resolved within RESOLVE

    @property
    def flagged(self) -> list[Change]:
        return [c for c in self.changes if c.flagged]


@dataclass
class Side:
    """Which fingerprint this is, as a reader names it."""

    name: str
    service: str | None
    source: str | None
    captured_utc: str | None
    devices: list[str]
    spikes: str
    between: str | None = None  # the --between span it summarises, as given


@dataclass
class DiffResult:
    a: Side
    b: Side
    like: ScopeDiff
    spike: ScopeDiff | None
    device_changes: list[str]
    warnings: list[str] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)
    rule: str = RULE
    slo: str | None = None
    slo_a: list[str] = field(default_factory=list)  # why A misses the SLO ([]: it holds)
    slo_b: list[str] = field(default_factory=list)
    between: ScopeDiff | None = None  # the --between spans, when both fingerprints have one
    host_busy: str | None = None  # why a side's host, not its device, may have set its figures

    @property
    def scope(self) -> str:
        return self.like.scope

    @property
    def changes(self) -> list[Change]:
        return self.like.changes

    @property
    def verdict(self) -> str:
        return self.like.verdict

    @property
    def demand_changed(self) -> bool:
        return self.like.demand_changed

    @property
    def service_changed(self) -> bool:
        return self.like.service_changed

    @property
    def comparable_demand(self) -> bool:
        return self.like.comparable_demand

    @property
    def flagged(self) -> list[Change]:
        return [c for d in self.scopes for c in d.flagged]

    @property
    def scopes(self) -> list[ScopeDiff]:
        """What was compared: the spikes first (the load a review exists for), then the like-for-like
        regime and the --between spans."""
        return [d for d in (self.spike, self.like, self.between) if d is not None]

    @property
    def matters(self) -> bool:
        """Drift to act on: a flagged change, and with an SLO, B missing it; none while a side's host
        was busy (its figures may be the host's), unless a scope's change is far beyond it."""
        called = self.host_busy is None or any(not d.verdict.startswith("inconclusive") for d in self.scopes)
        return bool(self.flagged) and (self.slo is None or bool(self.slo_b)) and called

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d.update(scope=self.scope, verdict=self.verdict, flagged=len(self.flagged), matters=self.matters)
        return d


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


def _noise(scope: Scope, key: str, kind: str) -> float | None:
    return getattr(scope.noise, kind).get(key) if scope.noise is not None else None


def _top_call(a: Scope, b: Scope) -> str | None:
    """The sync call both compare (fdatasync for a WAL writer): the one A makes most, else B."""
    for s in (a, b):
        if s.durability.sync_calls:
            return max(s.durability.sync_calls.items(), key=lambda kv: kv[1].calls)[0]
    return None


def check_pair(a: Fingerprint, b: Fingerprint, a_name: str, b_name: str) -> None:
    """Refuse a diff that can only say "no change": the same document twice."""
    if a.to_dict() == b.to_dict():
        same = "the same file" if a_name == b_name else "identical documents"
        raise BadInput(
            f"{a_name} and {b_name} are {same}: give the earlier fingerprint and the later one of a service"
        )


def diff(
    a: Fingerprint, b: Fingerprint, a_name: str = "A", b_name: str = "B", slo: slomod.Slo | None = None
) -> DiffResult:
    """Compare fingerprint `a` (before) with `b` (after)."""
    notes = []
    if a.typical_scope() == b.typical_scope() == "steady":
        scope = "steady"
    elif a.baseline and b.baseline:
        scope = "baseline"
        notes.append("compared baselines (the windows in no spike): at least one has no steady state "
                     "covering half of them")  # fmt: skip
    else:
        scope = "whole"
        notes.append("compared whole traces: at least one has neither a steady state nor a baseline")
    like = _scope_diff(a, b, scope)
    spike = _scope_diff(a, b, "spike") if a.spike and b.spike else None
    between = _scope_diff(a, b, "between") if a.between and b.between else None
    if bool(a.between) != bool(b.between):
        has, lacks = (a_name, b_name) if a.between else (b_name, a_name)
        notes.append(f"{has} summarises a --between span and {lacks} does not: the spans are not "
                     f"compared; fingerprint {lacks} with --between too")  # fmt: skip
    if getattr(a, scope).latency is None or getattr(b, scope).latency is None:
        notes.append("at least one trace has no latency: only demand can be compared")
    if any(s.noise is None for s in (getattr(a, scope), getattr(b, scope))):
        notes.append("a scope without noise figures (a fingerprint made before iofp measured them, or a "
                     "whole trace that has a baseline): its changes are shown, not judged; fingerprint "
                     "its trace again")  # fmt: skip
    changed = device_changes(a, b)
    out = DiffResult(_side(a, a_name), _side(b, b_name), like, spike, changed, _warnings(a, b), notes,
                     between=between)  # fmt: skip
    out.host_busy = _host_busy(a, b)
    if out.host_busy is not None:
        quiet = {label for label, fp in (("A", a), ("B", b)) if _busy(fp) is None}
        for d in out.scopes:
            if d.flagged and (far := _beyond_host(d, quiet)):
                d.verdict += f" ({out.host_busy}, but {far})"
            elif d.flagged:
                d.verdict = f"inconclusive: {out.host_busy}; capture again on a quiet host"
    if not changed and _device_pairs(a, b) and any(d.device_slower for d in out.scopes):
        # A fingerprint sees the device through this workload's requests only: with the same disk
        # (by its provenance) slower at the same demand, the disk is one answer; anything else now
        # queueing on it (a neighbour on a shared volume, a backup, a rebuild) gives the same figures.
        out.notes.append(SAME_DEVICE_SLOWER)
    if slo:
        for term in slo.terms:
            if isinstance(term, slomod.IopsTerm):
                msg = "a fingerprint has no demanded rate; judge replays with iofp compare"
                raise BadInput(f"--slo iops>=demanded: {msg}")
        out.slo = slo.text
        out.slo_a = _slo_failures(slo, a, scope)
        out.slo_b = _slo_failures(slo, b, scope)
    return out


def _busy(fp: Fingerprint) -> str | None:
    """How busy `fp`'s host was while it was captured, when iofp/host_evidence.py's rule says its CPU
    (not the device) may have set the figures; None when the record says it was not, or has none."""
    ev = HostEvidence.from_dict(fp.provenance.extra.get("host"))
    if ev is None or host_limit(ev).who != "host":
        return None
    idle = "" if ev.cpu_idle is None else f", {ev.cpu_idle:.0%} idle"
    return f"CPU pressure {ev.cpu_pressure or 0:.0%}{idle}"


def _host_busy(a: Fingerprint, b: Fingerprint) -> str | None:
    """Why the host, not the device, may have set a side's figures: its CPU was busy while it was
    captured (iofp/host_evidence.py's rule, on the record capture keeps); None when neither says so.
    Two captures of one job beside CPU hogs moved their p50 2.3x and their p99 126x (BENCHMARKS.md):
    a busy host slows every request, a loop device's own worker too."""
    busy = [f"{label} ({why})" for label, fp in (("A", a), ("B", b)) if (why := _busy(fp)) is not None]
    if not busy:
        return None
    was = "was" if len(busy) == 1 else "were"
    return f"the host's CPU was busy while {' and '.join(busy)} {was} captured"


def _beyond_host(d: ScopeDiff, quiet: set[str]) -> str | None:
    """Why a scope's flagged change stands though a side's host was busy: the slower side's host was
    quiet (`quiet` holds the sides whose were), so the busy one can only have narrowed the gap, and its
    typical latency (p50) moved by EFFECT or more (iofp/separation.py).

    Toward a busy side, no size of move is the device's: one job, one loop device, captured twice beside
    two CPU hogs and a test suite, moved its p50 3.2x, the slower capture being the busier in each of
    7 pairs (BENCHMARKS.md). How far a host slows a job grows with how busy it is; nothing bounds it."""
    c = next((c for c in d.flagged if c.metric == TYPICAL), None)
    if c is None or not c.a or not c.b or ("B" if c.b > c.a else "A") not in quiet:
        return None
    ratio = max(c.a / c.b, c.b / c.a)
    if ratio < EFFECT:
        return None
    return (f"its typical latency moved {ratio:.1f}x toward the side captured on a quiet host: a busy host "
            f"only slows, and {EFFECT:g}x is beyond what one job's p50 moves between runs")  # fmt: skip


SAME_DEVICE_SLOWER = (
    "the same device by its provenance: slower at the same demand is the device, or other I/O now "
    "sharing it that this capture did not see (a neighbour on the volume, a backup, a rebuild)"
)


def _scope_diff(a: Fingerprint, b: Fingerprint, scope: str) -> ScopeDiff:
    sa, sb = getattr(a, scope), getattr(b, scope)
    metrics = list(METRICS)
    if call := _top_call(sa, sb):
        for pct in ("p50", "p99"):
            path = ("durability", "sync_calls", call, f"{pct}_us")
            metrics.append(Metric(f"{call} {pct} (µs)", path, "service"))
    changes = [_change(m, sa, sb) for m in metrics]
    demand = [c for c in changes if c.kind == "demand" and c.flagged]
    service = [c for c in changes if c.kind == "service" and c.flagged]
    comparable = not any(c.metric in LOAD_METRICS for c in demand)
    verdict = _verdict(demand, service, comparable)
    typical = next((c for c in changes if c.metric == TYPICAL and c.limit_ratio is not None), None)
    resolves = None if typical is None or typical.limit_ratio is None else typical.limit_ratio - 1
    inconclusive = not demand and not service and resolves is not None and resolves > lt.RESOLVE
    if inconclusive:
        n = min(sa.windows, sb.windows)
        verdict = (f"inconclusive: {n:,} window{'s' if n != 1 else ''} resolve only changes over "
                   f"±{resolves:.0%} in typical latency (p50)")  # fmt: skip
    if all(c.limit is None for c in changes):
        verdict = "not judged: no noise figures to judge against (too few windows, or an older fingerprint)"
    return ScopeDiff(
        scope, sa.windows, sb.windows, (a.params.window_ns / 1e9, b.params.window_ns / 1e9), changes,
        verdict, bool(demand), bool(service), comparable,
        device_slower=comparable and _net(service, "slower", "faster") > 0, resolves=resolves,
        inconclusive=inconclusive,
    )  # fmt: skip


def _net(changes: list[Change], up: str, down: str) -> int:
    """How many of `changes` moved `up` less how many moved `down`: which way they lean."""
    return sum(c.direction == up for c in changes) - sum(c.direction == down for c in changes)


def _verdict(demand: list[Change], service: list[Change], comparable: bool) -> str:
    harder = _net(demand, "harder", "easier")
    slower = _net(service, "slower", "faster")
    if not demand and not service:
        return "no change beyond the noise"
    if demand and not service:
        if harder:
            return "the workload got harder" if harder > 0 else "the workload got lighter"
        return "the workload changed shape"
    if comparable:
        what = "slower" if slower > 0 else "faster" if slower < 0 else "different"
        verdict = f"the device got {what}: latency moved at comparable demand"
        if demand:
            verdict += " (other demand features moved too: " + ", ".join(c.metric for c in demand) + ")"
        return verdict
    # Which way the load moved: over the load metrics only.
    load = [c for c in demand if c.metric in LOAD_METRICS]
    heavier = _net(load, "harder", "easier")
    return _load_and_latency_verdict(heavier, slower)


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


def _change(m: Metric, sa: Scope, sb: Scope) -> Change:
    if m.by_spread and (judged := _latency_change(m, sa, sb)) is not None:
        return judged
    va, vb = _get(sa, m.path), _get(sb, m.path)
    rel = None if va in (None, 0) or vb is None else (vb - va) / abs(va)
    delta = None if va is None or vb is None else vb - va
    kind = "sd" if m.by_spread else "se"
    na, nb = (_noise(sa, m.key, kind), _noise(sb, m.key, kind)) if m.judged else (None, None)
    limit = None
    if delta is not None and na is not None and nb is not None and va is not None:
        floor = FLOOR_SHARE if m.absolute else FLOOR * abs(va)
        limit = max((Z_SPREAD if m.by_spread else Z) * math.hypot(na, nb), floor)
    flagged = limit is not None and delta is not None and abs(delta) > limit
    direction = ""
    if flagged and delta is not None:
        up = delta * m.harder_when > 0
        direction = ("harder" if up else "easier") if m.kind == "demand" else ("slower" if up else "faster")
    return Change(m.name, m.kind, va, vb, rel, delta, kind, na, nb, limit, flagged, direction, m.absolute)


def _latency_change(m: Metric, sa: Scope, sb: Scope) -> Change | None:
    """A latency percentile judged as a ratio (latency_test.py), when both scopes carry what that
    needs (a v3 fingerprint's log-scale noise); None: judge it the old way."""
    va, vb = _get(sa, m.path), _get(sb, m.path)
    if va is None or vb is None or va <= 0 or vb <= 0 or not _has_log_noise(sa) or not _has_log_noise(sb):
        return None
    q = lt.QUANTILES[m.path[-1]]
    ha, hb = _buckets(sa, m.path), _buckets(sb, m.path)
    na, nb = (sa.noise.sd_log or {}).get(m.key), (sb.noise.sd_log or {}).get(m.key)  # type: ignore[union-attr]
    lim = lt.limit(
        q,
        lt.Side(va, na, sa.noise.batches, ha),  # type: ignore[union-attr]
        lt.Side(vb, nb, sb.noise.batches, hb),  # type: ignore[union-attr]
        FLOOR,
    )
    if lim is None:
        return Change(m.name, m.kind, va, vb, vb / va - 1, vb - va, "sd_log", na, nb, None, False, "")
    ratio = math.exp(lim.log)
    flagged = abs(math.log(vb / va)) > lim.log
    direction = ("slower" if vb > va else "faster") if flagged else ""
    return Change(m.name, m.kind, va, vb, vb / va - 1, vb - va, "sd_log", na, nb, va * (ratio - 1), flagged,
                  direction, limit_ratio=ratio, limit_by=lim.by)  # fmt: skip


def _has_log_noise(s: Scope) -> bool:
    return s.noise is not None and s.noise.sd_log is not None


def _buckets(s: Scope, path: tuple[str, ...]) -> Any:
    """The LogHistogram behind a latency figure: latency.OP's, or a sync call's."""
    owner = s
    for k in path[:-1]:
        owner = getattr(owner, k, None) if not isinstance(owner, dict) else owner.get(k)
        if owner is None:
            return None
    return getattr(owner, "buckets", None)


# ------------------------------------------------------------------------------------------------
# Naming the two sides, and what changed under them


def _side(fp: Fingerprint, name: str) -> Side:
    p = fp.provenance
    when = None
    if p.capture_start_ns is not None:
        when = datetime.fromtimestamp(p.capture_start_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    devs = [_device_text(n, f) for n, f in p.devices.items() if fp.params.device in (None, n)]
    r = fp.regimes
    # the biggest spike's answer, as `iofp fingerprint` leads with it
    lead = headline.lead(fp)
    many = "s" if r.spikes_total > 1 else ""
    spikes = "no spike" if lead is None else f"{r.spikes_total:,} spike{many}; {lead}"
    span = " ".join(fp.params.between) if fp.params.between else None
    return Side(name, p.labels.get("service"), p.source, when, devs, spikes, span)


def _backing(facts: dict[str, Any]) -> str | None:
    path = facts.get("backing_file")
    if not isinstance(path, str):
        return None
    where = path.rsplit("/", 1)[0] or "/"
    kind = "RAM" if any(where == d or where.startswith(d + "/") for d in RAM_DIRS) else "a file"
    return f"{kind} ({where})"


def _device_text(name: str, facts: dict[str, Any]) -> str:
    bits = [str(facts["model"]).strip()] if facts.get("model") else []
    if isinstance(facts.get("size_bytes"), int):
        bits.append(_size_text(facts["size_bytes"]))
    if (back := _backing(facts)) is not None:
        bits.append("backed by " + back)
    if "rotational" in facts:
        bits.append("rotational" if facts["rotational"] else "non-rotational")
    if facts.get("scheduler"):
        bits.append(f"scheduler {facts['scheduler']}")
    return f"{name}: " + (", ".join(bits) if bits else "no device facts recorded")


def _size_text(n: int) -> str:
    for unit, k in (("TiB", 1 << 40), ("GiB", 1 << 30), ("MiB", 1 << 20)):
        if n >= k:
            return f"{n / k:,.4g} {unit}"
    return f"{n:,} bytes"


def _fact_text(key: str, v: Any) -> str:
    if key == "size_bytes" and isinstance(v, int):
        return _size_text(v)
    if isinstance(v, bool):
        return "yes" if v else "no"
    return str(v)


def _devices(fp: Fingerprint) -> dict[str, dict]:
    """The devices the fingerprint is of (its --device, else every captured one) -> their facts."""
    return {n: f for n, f in fp.provenance.devices.items() if fp.params.device in (None, n)}


def _device_pairs(a: Fingerprint, b: Fingerprint) -> list[tuple[str, dict, str, dict]]:
    """The devices of A and B paired by name, or the only device of each when the names differ (a
    move to a new disk): (name in A, its facts, name in B, its facts). Only devices with facts on
    both sides: a name alone says nothing of the device (an import names it after its file, so
    two exports of one server would read as a move to a new disk)."""
    da, db = _devices(a), _devices(b)
    pairs = [(n, da[n], n, db[n]) for n in da if n in db]
    if not pairs and len(da) == 1 and len(db) == 1:
        (na, fa), (nb, fb) = next(iter(da.items())), next(iter(db.items()))
        pairs = [(na, fa, nb, fb)]
    return [(na, fa, nb, fb) for na, fa, nb, fb in pairs if fa and fb]


def device_changes(a: Fingerprint, b: Fingerprint) -> list[str]:
    """What the provenance says changed under the workload, one phrase per device fact (of the
    devices with facts on both sides: see _device_pairs)."""
    da, db = _devices(a), _devices(b)
    pairs = _device_pairs(a, b)
    out = []
    for na, fa, nb, fb in pairs:
        what = [] if na == nb else [f"{na} -> {nb}"]
        for k in DEVICE_FACTS:
            if k in fa and k in fb and fa[k] != fb[k]:
                va, vb = _fact_text(k, fa[k]), _fact_text(k, fb[k])
                what.append(f"{k.replace('_bytes', '')} {va} -> {vb}")
        if (ba := _backing(fa)) != (bb := _backing(fb)) and ba and bb:
            what.append(f"backing {ba} -> {bb}")
        if what:
            out.append(f"{nb}: " + "; ".join(what))
    if not pairs and all(da.values()) and all(db.values()) and da and db:
        out.append(f"devices {', '.join(da)} -> {', '.join(db)}")
    return out


def _warnings(a: Fingerprint, b: Fingerprint) -> list[str]:
    out = []
    sa, sb = a.provenance.labels.get("service"), b.provenance.labels.get("service")
    if sa != sb:
        out.append(f"different services: A is {sa or 'unlabelled'}, B is {sb or 'unlabelled'}")
    if a.provenance.source != b.provenance.source:
        out.append(f"different sources: A is {a.provenance.source}, B is {b.provenance.source}")
    if a.params.window_ns != b.params.window_ns:
        out.append(
            f"different windows: A {a.params.window_ns / 1e9:g} s, B {b.params.window_ns / 1e9:g} s; "
            "fingerprint both with the same --window for like-for-like regimes"
        )
    return out


# ------------------------------------------------------------------------------------------------
# The SLO, judged on a fingerprint's own figures


@dataclass
class _ScopeFigures:
    """A scope's figures as the SLO grammar reads them (iofp/slo.py's Figures)."""

    scope: Scope
    demanded_iops: float | None = None
    achieved_iops: float | None = None
    commits_per_s: float | None = None

    def latency(self, op: str, pct: str) -> float | None:
        key = {"p50": "p50_us", "p99": "p99_us", "p99.9": "p99_9_us"}[pct]
        if op in ("fsync", "commit"):
            call = _top_call(self.scope, self.scope)
            v = _get(self.scope, ("durability", "sync_calls", call, key)) if call else None
        else:
            v = _get(self.scope, ("latency", op, key))
        return None if v is None else v * 1e3


def _slo_failures(slo: slomod.Slo, fp: Fingerprint, scope: str) -> list[str]:
    out = []
    for name in dict.fromkeys((scope, "spike")):
        s = getattr(fp, name)
        if s is not None:
            fig = _ScopeFigures(s, commits_per_s=s.durability.commits_per_s)
            out += [f"{name}: {why}" for why in slo.failures(fig)]
    return out
