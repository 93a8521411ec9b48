"""The probe result contract: what `iofp probe` measured on one target, typed and versioned.

A probe result directory holds this record (probe.json, written whole after every fio run, so a probe
that was stopped leaves a valid partial record) next to every run's raw artifacts (runs/NN-NAME/: the
job file, the command line, stdout, stderr, the JSON, the exit code and fio's per-interval IOPS log)
and iofp's capture of the commit cells (capture/).

Sources, as everywhere in iofp: a run's IOPS, MB/s and latency percentiles are **fio's** (`fio`:
total latency, submission to completion, nearest rank on fio's histogram); commits per second,
fsync and flush latency are **iofp's**, from its capture of the run (`capture`). A figure the run
could not give is null.

Readers: `iofp compare` shows a candidate's cells beside its replay by the same `labels`
(`--label device=...`); a report draws `sweep.points` with `sweep.knee` marked. This module imports
no stage.
"""

from __future__ import annotations

import dataclasses
import json
import types
import typing
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iofp import records
from iofp.contract import atomic_write_bytes
from iofp.errors import BadInput
from iofp.host_evidence import HostEvidence

KIND = "iofp-probe-result"
VERSION = 2  # v2: a run's `host` (what the host was doing while it ran); v1 is read without it
READS = (1, 2)
RECORD = "probe.json"
RUNS_DIR = "runs"
CAPTURE_DIR = "capture"

# The four cells of the table and the sweep; `kind` of a run says which it measured.
KINDS = ("precondition", "randread", "seq-read", "seq-write", "commit", "tail")


@dataclass
class FioFigures:
    """fio's own figures for the run's data I/O (reads, or writes for write runs)."""

    ios: int
    iops: float
    mb_per_s: float  # 10^6 bytes per second
    p50_us: float | None  # total latency (lat: submission to completion), fio's percentiles
    p99_us: float | None
    p99_9_us: float | None
    runtime_ms: int


@dataclass
class CaptureFigures:
    """iofp's capture of a commit run: its fsync-family calls (the sync table) and flush requests."""

    commits: int  # fsync + fdatasync calls on the target
    commits_per_s: float | None  # commits / (last return - first entry)
    fsync_p50_us: float | None  # entry to return, as the application waited
    fsync_p99_us: float | None
    fsync_p99_9_us: float | None
    flushes: int  # flush requests on the device
    flush_p50_us: float | None  # issue to completion
    flush_p99_us: float | None


@dataclass
class Steadiness:
    """Whether the run's per-interval IOPS (fio's log) reached steady state by the SNIA rule
    (iofp/regimes.py): its last STEADY_WINDOWS windows are all steady."""

    verdict: str  # "steady" | "not steady" | "too short to judge"
    window_s: float
    windows: int
    last_range_share: float | None  # (max - min) / mean over the last windows
    last_slope_share: float | None  # |least-squares slope| x (windows - 1) / mean over them
    reason: str | None = None


@dataclass
class Run:
    """One fio run: what it asked for, its raw artifacts (`dir`), and what it measured."""

    name: str  # "03-randread-qd4"
    dir: str  # relative to the result directory
    kind: str  # one of KINDS
    rw: str  # fio's rw=
    block_size: int  # bytes
    iodepth: int
    jobs: int
    rate_iops: int | None  # fio's rate_iops= (the tail cell), else None
    runtime_s: float | None  # None: not time-based (preconditioning passes)
    exit_code: int | None
    started_ns: int  # Unix ns, wall clock
    ended_ns: int
    fio: FioFigures | None = None
    capture: CaptureFigures | None = None
    steady: Steadiness | None = None
    host: HostEvidence | None = None  # what the host and the target were doing while fio ran


@dataclass
class Cell:
    """One row of the four-cell table: which cell (1-4), what it is, and the run it comes from."""

    cell: int  # 1 random small reads, 2 sequential, 3 commit rate, 4 tail at 80% load
    label: str  # "rand read 4KiB QD32"
    run: str  # Run.name


@dataclass
class SweepPoint:
    iodepth: int
    run: str
    iops: float  # fio's
    p50_us: float | None
    p99_us: float | None
    p99_9_us: float | None


@dataclass
class Knee:
    """The knee of the sweep: going from `iodepth` to `next_iodepth` bought less than the rule's IOPS
    gain while p99 grew more than the rule's growth."""

    iodepth: int
    next_iodepth: int
    iops_gain: float  # next / knee - 1
    p99_growth: float


@dataclass
class Sweep:
    block_size: int
    points: list[SweepPoint]
    knee: Knee | None
    rule: str  # the knee rule, with its numbers
    iops_gain_below: float
    p99_growth_above: float
    finding: str  # the rule applied: where the knee is and why, or why there is none


@dataclass
class Workload:
    """What the cells are shaped by: the fingerprint's (--like) or the defaults, and why each value."""

    source: str  # "defaults" or the fingerprint's path
    read_size: int  # bytes
    write_size: int
    read_iodepths: list[int]  # the production queue depths of cell 1
    commit_jobs: list[int]  # the commit concurrencies of cell 3
    basis: dict[str, str] = field(default_factory=dict)  # value name -> how it was derived


@dataclass
class Target:
    path: str
    kind: str  # "block" | "file" | "new-file"
    name: str | None  # kernel name of a block device
    size_bytes: int | None
    probed_bytes: int  # the span the cells use, from offset 0
    logical_block_size: int
    device_facts: dict[str, Any] = field(default_factory=dict)


@dataclass
class Tail:
    max_iops: float  # the most cell 1 (and its sweep) reached, fio's
    max_run: str
    load: float  # 0.8
    rate_iops: int


@dataclass
class ProbeResult:
    kind: str
    version: int
    tool_version: str
    fio_version: str
    host: str
    kernel: str
    started: str  # ISO 8601
    target: Target
    labels: dict[str, str]
    settings: dict[str, Any]
    workload: Workload
    runs_planned: int
    runs: list[Run] = field(default_factory=list)
    cells: list[Cell] = field(default_factory=list)
    sweep: Sweep | None = None
    tail: Tail | None = None
    capture: dict[str, Any] = field(default_factory=dict)  # status, reason, summary
    warnings: list[str] = field(default_factory=list)
    complete: bool = False
    interrupted: str | None = None  # "SIGINT" | "SIGTERM" when stopped
    wall_s: float = 0.0

    def run(self, name: str) -> Run:
        return next(r for r in self.runs if r.name == name)

    def to_dict(self) -> dict[str, Any]:
        return dataclasses.asdict(self)


def write(root: Path, result: ProbeResult) -> Path:
    """Write the record whole (temp file and rename): a reader never sees half of one."""
    path = Path(root) / RECORD
    atomic_write_bytes(path, json.dumps(result.to_dict(), indent=2).encode())
    return path


def load(path: Path | str) -> tuple[Path, ProbeResult]:
    """The record of a probe directory (or its probe.json), checked; BadInput if it is not one."""
    f, doc = records.read(path, RECORD, KIND, READS, "probe")
    try:
        res = _build(ProbeResult, doc)
        records.check_typed(res, "probe")
        _cross_checked(res)
        return f.parent, res
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise BadInput(f"{f}: not a complete probe result ({e}); run the probe again") from None


def _cross_checked(res: ProbeResult) -> None:
    """Every run a cell or a sweep point names is in the record (readers look them up)."""
    names = {r.name for r in res.runs}
    named = [c.run for c in res.cells] + ([p.run for p in res.sweep.points] if res.sweep else [])
    missing = next((n for n in named if n is not None and n not in names), None)
    if missing is not None:
        raise ValueError(f"it names run {missing!r}, which it does not hold")


def _build(tp: Any, value: Any) -> Any:
    """`value` (parsed JSON) as the type `tp`: dataclasses field by field, lists and optionals."""
    if value is None:
        return None
    origin = typing.get_origin(tp)
    if origin in (typing.Union, types.UnionType):
        inner = [a for a in typing.get_args(tp) if a is not type(None)]
        return _build(inner[0], value)
    if origin is list:
        (item,) = typing.get_args(tp)
        if not isinstance(value, list):
            raise TypeError(f"a list is {type(value).__name__}")
        return [_build(item, v) for v in value]
    if dataclasses.is_dataclass(tp):
        if not isinstance(value, dict):
            raise TypeError(f"{tp.__name__} is {type(value).__name__}, not an object")
        hints = typing.get_type_hints(tp)
        known = {f.name for f in dataclasses.fields(tp)}
        return tp(**{k: _build(hints[k], v) for k, v in value.items() if k in known})
    return value


__all__ = [
    "KIND",
    "RECORD",
    "VERSION",
    "CaptureFigures",
    "Cell",
    "FioFigures",
    "Knee",
    "ProbeResult",
    "Run",
    "Steadiness",
    "Sweep",
    "SweepPoint",
    "Tail",
    "Target",
    "Workload",
    "load",
    "write",
]
