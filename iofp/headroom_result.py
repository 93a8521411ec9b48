"""The headroom result contract: what `iofp headroom` found on one target, typed and versioned.

A headroom result directory holds this record (headroom.json, written whole after every step, so a
sweep that was stopped leaves a valid partial record) next to each step's own replay result
(steps/NN-xSCALE/: a complete `iofp replay` results directory, iofp/replay_result.py) and the
replayer's ceiling run (ceiling/: fio's raw artifacts).

Every figure of a step is iofp's, from its capture of the target while the step ran (the step's
replay result). `steps` is the curve: load (time scale, demanded vs achieved rates) against latency
p50/p99/p99.9 per op, commits included, in the order the steps ran. `headroom.factor` is the highest
scale that passed (the SLO held and the replay kept the demanded rate); `headroom.failed_at` the
lowest that failed, and `headroom.bound` says why the search stopped there.

Readers: `iofp compare` ranks candidates by `headroom.factor` (matched by `labels`); `iofp report`
draws `steps` as the curve (report/headroom.py). This module imports no stage.
"""

from __future__ import annotations

import json
import math
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iofp import objstore, records
from iofp.contract import atomic_write_bytes
from iofp.errors import BadInput
from iofp.host_evidence import HostEvidence, limit

KIND = "iofp-headroom-result"
VERSION = 3  # v2: a step's `host` evidence and `limit`, INCONCLUSIVE steps, bounds host and inconclusive,
# `settings.repeat`; v3: steps at the device's limit (saturation "limit") and the bound "limit"; v1 is
# read (without evidence: its misses stay the device's, as it said)
READS = (1, 2, 3)
RECORD = "headroom.json"
STEPS_DIR = "steps"
CEILING_DIR = "ceiling"
OPS = ("read", "write", "commit")

# Step verdicts; INCONCLUSIVE: it missed, but the host limited the run, or it missed only the rate and
# kept it within the drift of identical runs at the device's ceiling (Step.limit says which)
PASS, FAIL, ABOVE_CEILING, STOPPED = "pass", "fail", "above the replayer's ceiling", "stopped"
INCONCLUSIVE = "inconclusive"
VERDICTS = (PASS, FAIL, ABOVE_CEILING, STOPPED, INCONCLUSIVE)
# Why the search stopped (Headroom.bound): "host", the host limited the first scale above the factor
# in every run; "inconclusive", that scale's runs disagreed (a pass and a failure); "limit", the device
# was at its limit there (it kept nearly all the rate, within what identical runs differ by): above the
# factor, neither held nor failed
BOUNDS = ("slo", "rate", "replayer", "max-scale", "budget", "first step", "none", "host", "inconclusive",
          "limit")  # fmt: skip
# bounds that leave the factor a lower bound: higher scales were not run, or could not be judged
OPEN_BOUNDS = ("replayer", "max-scale", "budget", "host", "inconclusive")
# bounds that say nothing about the device above the factor (not even that it failed there)
UNJUDGED_BOUNDS = ("host", "inconclusive")
# bounds that state no failure of the device above the factor: the unjudged ones, and its limit there
NO_FAILURE_BOUNDS = (*UNJUDGED_BOUNDS, "limit")


@dataclass
class Step:
    """One replay of the selection at `scale` x its demanded rate, and how it was judged."""

    scale: float
    phase: str  # "sweep" (the rising scales) | "confirm" (a failed sweep step run again) | "bisect"
    dir: str | None  # the step's replay results directory, relative; None when not run
    verdict: str  # PASS | FAIL | ABOVE_CEILING | STOPPED
    demanded_iops: float | None = None  # data I/Os per second the step asked for
    achieved_iops: float | None = None  # iofp's capture
    demanded_commits_per_s: float | None = None
    commits_per_s: float | None = None  # iofp's capture (sync calls)
    latency_ns: dict[str, dict[str, float | None]] = field(default_factory=dict)  # op -> p50/p99/p99.9
    fidelity: str = "not measured"  # the step's fidelity verdict, or why there is none
    iops_mape: float | None = None
    stretch: float | None = None
    late_growth_us: float | None = None
    slo_failures: list[str] = field(default_factory=list)
    rate_failures: list[str] = field(default_factory=list)  # the demanded rate not kept: why
    saturation: str | None = None  # "device" | "replayer" when the rate was not kept; "host" | "limit"
    # (inconclusive: the host limited it; the device kept the rate within the drift of its ceiling)
    wall_s: float = 0.0
    host: HostEvidence | None = None  # what the host and the target were doing while the step ran
    limit: str | None = None  # a miss: whose limit the evidence says it met, in words (host_evidence.limit)


def whose_rate(s: Step) -> str:
    """Whose limit a step's missed rate met, in the words the terminal and the report both use. A
    device is "saturated" only when its evidence says so: a rate missed while the device was mostly
    idle and the host had CPU to spare is a serial stream's wait on each I/O (one committer at the
    device's fsync time) or a cap above the device (blk-throttle, a volume's IOPS limit); the
    device's limit still, but not its saturation (issue 26: "the device's saturation" at 8-16x on a
    RAM loop 8-12% busy)."""
    if not s.saturation:
        return ""
    lim = limit(s.host)
    if s.saturation == "device" and lim.who == "neither" and s.host is not None and s.host.device():
        return f"the device's latency or a cap above it, not a saturated device ({lim.why}): "
    return f"the {s.saturation}'s saturation: "


@dataclass
class Ceiling:
    """How fast fio can issue this plan on this machine: its iologs replayed unpaced
    (replay_no_stall) onto a RAM file with the same engines and depths, per job and in total."""

    status: str  # "measured" | "not measured"
    how: str = ""
    total_iops: float | None = None  # data I/Os and sync calls per second, all jobs together
    per_job: dict[str, float] = field(default_factory=dict)  # job name -> its I/Os per second
    demanded_per_job: dict[str, float] = field(default_factory=dict)  # at 1x, for the same jobs
    reason: str | None = None

    def scale_limit(self) -> float | None:
        """The time scale at which some job (or all together) would demand more than fio issued."""
        limits = [
            c / self.demanded_per_job[j] for j, c in self.per_job.items() if self.demanded_per_job.get(j)
        ]
        total = sum(self.demanded_per_job.values())
        if self.total_iops and total:
            limits.append(self.total_iops / total)
        return min(limits) if limits else None


@dataclass
class Headroom:
    factor: float | None  # the highest scale that passed; None when none did
    failed_at: float | None  # the lowest scale that failed (or could not be run)
    bound: str  # one of BOUNDS
    finding: str  # the sentence a person reads


@dataclass
class HeadroomResult:
    tool_version: str
    host: str
    kernel: str
    started: str  # ISO 8601
    trace: dict[str, Any]  # path, source, host
    target: dict[str, Any]  # path, name, kind, size
    labels: dict[str, str]
    slo: str
    settings: dict[str, Any]  # scales, max_scale, precision, budget, selection, the replay options
    selection: str  # how the selection was made (the replay's `selection.how`)
    demand: dict[str, Any]  # at 1x: data_ios, syncs, span_s, iops, commits_per_s
    ceiling: Ceiling
    steps: list[Step] = field(default_factory=list)
    headroom: Headroom | None = None
    status: str = "complete"  # "complete" | "partial" (stopped by a signal)
    interrupted: str | None = None
    wall_s: float = 0.0
    kind: str = KIND
    version: int = VERSION

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any]) -> HeadroomResult:
        d = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        d["ceiling"] = Ceiling(**d["ceiling"])
        steps = d.get("steps") or []
        d["steps"] = [Step(**(s | {"host": HostEvidence.from_dict(s.get("host"))})) for s in steps]
        d["headroom"] = None if d.get("headroom") is None else Headroom(**d["headroom"])
        return cls(**d)


def write(root: Path, result: HeadroomResult) -> Path:
    """Write the record whole (temp file and rename): a reader never sees half of one."""
    path = Path(root) / RECORD
    atomic_write_bytes(path, json.dumps(result.to_dict(), indent=2, default=str).encode())
    return path


def is_result(path: Path | str) -> bool:
    if (url := objstore.url_of(path)) is not None:
        return objstore.head(url if url.name == RECORD else url.join(RECORD)) is not None
    p = Path(path)
    return (p / RECORD).is_file() if p.is_dir() else p.name == RECORD


def load(path: Path | str) -> tuple[Path, HeadroomResult]:
    """The record of a headroom directory (or its headroom.json), checked; BadInput if it is not one."""
    f, doc = records.read(path, RECORD, KIND, READS, "headroom")
    try:
        res = _checked(HeadroomResult.from_dict(doc))
        records.check_typed(res, "headroom")
        return f.parent, res
    except (TypeError, KeyError, ValueError, AttributeError) as e:
        raise BadInput(f"{f}: not a complete headroom result ({e}); run the sweep again") from None


def _checked(res: HeadroomResult) -> HeadroomResult:
    """The figures readers draw and rank by are numbers (or null): a record that parses can still
    hold a string where a rate goes (damaged, or edited by hand), and a reader must not crash on it."""
    for s in res.steps:
        rates = (s.demanded_iops, s.achieved_iops, s.demanded_commits_per_s, s.commits_per_s)
        lat = [v for pcts in s.latency_ns.values() for v in pcts.values()]
        if not _number(s.scale) or s.scale <= 0 or s.verdict not in VERDICTS:
            raise ValueError(f"a step with scale {s.scale!r} and verdict {s.verdict!r}")
        if not all(v is None or _number(v) for v in (*rates, *lat)):
            raise ValueError(f"a step at {s.scale:g}x holds a figure that is not a number")
    h = res.headroom
    if h is not None and (
        h.bound not in BOUNDS or not all(v is None or _number(v) for v in (h.factor, h.failed_at))
    ):
        raise ValueError(f"headroom {h.factor!r}, failed at {h.failed_at!r}, bound {h.bound!r}")
    return res


def _number(v: object) -> bool:
    return isinstance(v, (int, float)) and not isinstance(v, bool) and math.isfinite(v)


__all__ = [
    "ABOVE_CEILING", "BOUNDS", "FAIL", "INCONCLUSIVE", "KIND", "PASS", "RECORD", "STOPPED", "VERSION",
    "Ceiling", "Headroom", "HeadroomResult", "Step", "is_result", "load", "whose_rate", "write",
]  # fmt: skip
