"""The replay result contract: DIR/results.json, written by `iofp replay`, read by `iofp compare` (and
the coming headroom and report). Defined once, typed and versioned; imports no stage.

A result holds iofp's own measured figures of the run (`measured`: from its capture of the target
while fio ran), so a reader never reopens captures: per-op latency percentiles of the block requests,
the latency of every sync call fio made (the replay capture's sync table: the commit latency on the
candidate), the achieved rates; next to the demand, the settings and plan, the target's provenance,
fio's own summary (labelled as fio's) and the fidelity verdict. `status` says whether the run is
complete or was cut short (`interrupted` names the signal); a partial run's figures cover what ran.

Version 3 (this one): `host_evidence` is new: what the host and the target were doing while fio ran
(iofp/host_evidence.py), so a verdict names the device only when the device set the limit; and
`repeats`: the directories (inside this one) of the other runs of `iofp replay --repeat N`. v2
results are read (without it: their verdicts are stated as before, and say the host was not
recorded); v1 results (fio's figures, captures reopened by compare) are refused with the versions
named.
"""

from __future__ import annotations

import json
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iofp import artifact_json, results_dir
from iofp.contract import atomic_write_bytes, inside
from iofp.errors import BadInput
from iofp.host_evidence import HostEvidence

KIND = "iofp-replay-result"
VERSION = 3
READS = (2, 3)  # the versions this iofp reads
RECORD = "results.json"
PCTS = ("p50", "p99", "p99.9")


@dataclass
class Latency:
    """A count and nearest-rank latency percentiles (ns; None when nothing had a latency)."""

    count: int = 0
    bytes: int = 0
    p50: float | None = None
    p99: float | None = None
    p999: float | None = None

    def pct(self, name: str) -> float | None:
        return {"p50": self.p50, "p99": self.p99, "p99.9": self.p999}[name]


@dataclass
class Measured:
    """What iofp measured of a run (or, for a baseline, of the trace itself over the same selection).

    `ops`: block requests by op (read, write, discard, flush) and `all` (read+write+discard);
    `syncs`: sync calls by call (fdatasync, fsync, dsync_write, ...) and `all`, each timed from the
    call to its return; `commit_from` says where the commit figures come from: "sync calls", or
    "block flushes" when the capture had no sync table (then `syncs` is empty and the flush stands in).
    Rates are per second of `span_s`, the run's own span (first to last request or call).
    """

    source: str  # "replay capture" | "trace" | "fio (its own report)"
    span_s: float = 0.0
    ops: dict[str, Latency] = field(default_factory=dict)
    syncs: dict[str, Latency] = field(default_factory=dict)
    commit_from: str = "none"  # "sync calls" | "block flushes" | "none"
    achieved_iops: float | None = None  # data requests (reads, writes, discards) per second
    achieved_mbps: float | None = None  # read + write bytes per second / 1e6
    commits_per_s: float | None = None  # sync calls (or block flushes, per commit_from) per second

    def latency(self, op: str, pct: str) -> float | None:
        """`op` as in iofp/slo.py: read, write, all, flush, and fsync/commit (the commit figure)."""
        if op in ("fsync", "commit"):
            lat = self.syncs.get("all") if self.commit_from == "sync calls" else self.ops.get("flush")
        else:
            lat = self.ops.get(op)
        return None if lat is None else lat.pct(pct)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> Measured:
        d = dict(d)
        for k in ("ops", "syncs"):
            d[k] = {name: Latency(**v) for name, v in (d.get(k) or {}).items()}
        return cls(**d)


@dataclass
class Demand:
    """What the selection demands, as converted (the iolog's content, on its own schedule)."""

    data_ios: int = 0  # reads, writes, discards
    syncs: int = 0  # sync/datasync lines
    bytes: int = 0
    span_s: float = 0.0

    @property
    def iops(self) -> float | None:
        return self.data_ios / self.span_s if self.span_s > 0 else None

    @property
    def mbps(self) -> float | None:
        return self.bytes / self.span_s / 1e6 if self.span_s > 0 else None

    @property
    def commits_per_s(self) -> float | None:
        return self.syncs / self.span_s if self.span_s > 0 and self.syncs else None


@dataclass
class ReplayResult:
    tool_version: str
    host: str
    kernel: str
    trace: dict[str, Any]  # path, source, host, capture_start_ns, labels
    labels: dict[str, str]
    settings: dict[str, Any]  # the options as resolved
    selection: dict[str, Any]  # the resolved span and what it holds
    plan: dict[str, Any]  # commits and streams: what each fio job replays and why
    conversion: dict[str, Any]  # the converter's report
    target: dict[str, Any]  # path, kind, size, device facts
    fio: dict[str, Any]  # version, command, exit_code, summary: fio's own report of the run (not iofp's)
    timing: dict[str, Any]  # started, wall_s, demanded_s
    demanded: Demand
    measured: Measured | None  # None: no capture (a file target, --no-fidelity)
    fidelity: dict[str, Any]  # status, and when measured the verdict and its figures
    host_evidence: HostEvidence | None = None  # None: not sampled (a v2 result, a stopped run)
    repeats: list[str] = field(default_factory=list)  # the other runs of `--repeat`: result dirs inside
    artifacts: list[str] = field(default_factory=list)
    status: str = "complete"  # "complete" | "partial"
    interrupted: str | None = None  # e.g. "SIGTERM while fio ran (2.1 s of 6.0 s)"
    kind: str = KIND
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["demanded"] |= {"iops": self.demanded.iops, "mbps": self.demanded.mbps}
        return d

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> ReplayResult:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        dem = {k: v for k, v in (d.get("demanded") or {}).items() if k in Demand.__dataclass_fields__}
        d["demanded"] = Demand(**dem)
        d["measured"] = None if d.get("measured") is None else Measured.from_dict(d["measured"])
        d["host_evidence"] = HostEvidence.from_dict(d.get("host_evidence"))
        return cls(**d)


def write(root: Path, result: ReplayResult) -> Path:
    path = root / RECORD
    atomic_write_bytes(path, json.dumps(result.to_dict(), indent=2, sort_keys=True, default=str).encode())
    return path


def runs(path: Path | str) -> list[tuple[Path, ReplayResult]]:
    """A result and its repeats (`iofp replay --repeat`), each loaded: the first is the result itself."""
    root, res = load(path)
    for d in res.repeats:  # what `--repeat` names them, inside the result: nothing else is read
        if not re.fullmatch(r"repeat-\d{1,4}", str(d)):
            raise BadInput(f"{root / RECORD}: repeats lists {str(d)[:80]!r}, not a repeat-K directory; "
                           "run the replay again")  # fmt: skip
    return [(root, res)] + [load(inside(root, root / d, "a repeat's directory")) for d in res.repeats]


def load(path: Path | str) -> tuple[Path, ReplayResult]:
    """Load a result from its directory or its results.json (or their s3:// URL: iofp/results_dir.py);
    BadInput (one line) if it is not one."""
    p = results_dir.local(path)
    f = p / RECORD if p.is_dir() else p
    if not p.exists():
        raise BadInput(f"{p}: no such directory; pass a directory written by `iofp replay`")
    if not f.is_file():
        raise BadInput(f"{p}: no {RECORD}; pass a directory written by `iofp replay`")
    raw = artifact_json.load(f, "result", "run the replay again")
    if not isinstance(raw, dict) or raw.get("kind") != KIND:
        raise BadInput(f"{f}: not an iofp replay result; pass a directory written by `iofp replay`")
    if raw.get("version") not in READS:
        raise BadInput(
            f"{f}: replay result v{raw.get('version')}; this iofp reads v{READS[0]}-v{VERSION}: "
            "run the replay again"
        )
    try:
        return f.parent, ReplayResult.from_dict(raw)
    except (TypeError, ValueError, AttributeError) as e:
        raise BadInput(f"{f}: a damaged replay result ({e}); run the replay again") from None
