"""Does a lab run reproduce a fingerprint? Per-metric deltas and pass/fail against stated tolerances.

`check(original, run, spec) -> ToleranceResult` compares the demand of the original fingerprint's
regime (the one the fio job was written for: `regime=` in the spec, whole by default, and whole for
`phases`) with the whole of the run's fingerprint (a capture of the job). It is the check of
`iofp fio-job`'s workflow, beside `fingerprint.diff` (whose verdict it does not touch): `iofp diff
A B --tolerances SPEC` prints both and exits 1 when a metric is out of tolerance.

Both sides are measured the same way: a whole trace's rates are per second of its I/O span (first to
last arrival), since a capture starts before the job and ends after it, and the 1 s peak/mean is the
busiest second's I/Os over that mean rate. The rates of a regime scope are over its windows.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass
from typing import Any

from iofp.errors import BadInput
from iofp.fingerprint_doc import Fingerprint, Scope


@dataclass(frozen=True)
class Limit:
    key: str
    metric: str
    limit: float
    points: bool  # the limit is in share points (0.02 = 2 points), else relative (0.05 = 5%)


DEFAULTS: tuple[Limit, ...] = (
    Limit("iops", "IOPS", 0.05, False),
    Limit("mbps", "MB/s", 0.10, False),
    Limit("read_share", "read share (count)", 0.02, True),
    Limit("mean_size", "mean size (bytes)", 0.05, False),
    Limit("seq_share", "sequential share", 0.05, True),
    Limit("flushes", "flushes per s", 0.10, False),
    Limit("commits", "fsync-family calls per s", 0.10, False),
    Limit("footprint", "footprint (4 KiB blocks)", 0.10, False),
    Limit("peak_mean_1s", "peak/mean IOPS, 1 s", 0.25, False),
)
REGIMES = ("whole", "steady", "baseline", "spike", "phases")
SPEC_HELP = (
    "default, or key=LIMIT terms joined by ',' (the rest stay at their defaults): "
    + ", ".join(f"{d.key}={d.limit * 100:g}{'pt' if d.points else '%'}" for d in DEFAULTS)
    + "; and regime=whole|steady|baseline|spike|phases, the regime the job reproduced"
)


@dataclass
class Spec:
    limits: tuple[Limit, ...]
    regime: str


@dataclass
class Row:
    key: str
    metric: str
    original: float | None
    run: float | None
    delta: float | None  # relative change, or the difference in share points for a points limit
    limit: float
    points: bool
    status: str  # pass, FAIL, or n/a (the original has no such figure)


@dataclass
class ToleranceResult:
    regime: str
    original_scope: str
    run_scope: str
    rows: list[Row]

    @property
    def passed(self) -> bool:
        return all(r.status != "FAIL" for r in self.rows)

    @property
    def failed(self) -> list[Row]:
        return [r for r in self.rows if r.status == "FAIL"]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"passed": self.passed}


def parse(text: str) -> Spec:
    """'default' or e.g. 'iops=5%,read_share=2pt,regime=steady' -> Spec (BadInput naming the term)."""
    limits = {d.key: d for d in DEFAULTS}
    regime = "whole"
    for term in (t.strip() for t in text.split(",")):
        if term in ("", "default"):
            continue
        key, sep, value = term.partition("=")
        if key == "regime" and sep:
            if value not in REGIMES:
                raise BadInput(f"--tolerances {term}: choose regime={'|'.join(REGIMES)}")
            regime = value
            continue
        if key not in limits or not sep:
            raise BadInput(f"--tolerances {term!r}: not a term; use {SPEC_HELP}")
        old = limits[key]
        limits[key] = Limit(key, old.metric, _limit(term, value, old.points), old.points)
    return Spec(tuple(limits.values()), regime)


def _limit(term: str, value: str, points: bool) -> float:
    unit = "pt" if points else "%"
    number = value.removesuffix(unit)
    try:
        x = float(number)
    except ValueError:
        x = -1.0
    if not value.endswith(unit) or x < 0:
        example = "share points, e.g. 2pt" if points else "percent, e.g. 5%"
        raise BadInput(f"--tolerances {term}: give the limit in {example}")
    return x / 100


def check(original: Fingerprint, run: Fingerprint, spec: Spec) -> ToleranceResult:
    name = "whole" if spec.regime == "phases" else spec.regime
    scope = getattr(original, name)
    if scope is None:
        raise BadInput(f"the original fingerprint has no {name} regime; name the one the job was written for")
    a, b = figures(original, scope), figures(run, run.whole)
    rows = [_row(d, a[d.key], b[d.key]) for d in spec.limits]
    return ToleranceResult(spec.regime, name, "whole", rows)


def figures(fp: Fingerprint, scope: Scope) -> dict[str, float | None]:
    """The demand figures the tolerances judge, per second of the I/O span for a whole scope."""
    secs = fp.provenance.io_span_s if scope.name == "whole" and fp.provenance.io_span_s > 0 else scope.seconds
    per = scope.seconds / secs  # a whole scope's rates are per second of the capture window
    dur = scope.durability
    flushes = scope.intensity.flushes_per_s
    burst = scope.burstiness.get("1s")
    iops = scope.ios / secs
    return {
        "iops": iops,
        "mbps": scope.bytes / secs / 1e6,
        "read_share": scope.mix.read_share,
        "mean_size": scope.size.mean_bytes,
        "seq_share": scope.sequential.share,
        "flushes": None if flushes is None else flushes * per,
        "commits": None if dur.commits_per_s is None else dur.commits_per_s * per,
        "footprint": float(scope.footprint.blocks_4k) if scope.footprint else None,
        # A scope shorter than two 1 s bins has no busiest second to speak of (tpcc-small: 0.136 s).
        "peak_mean_1s": burst.peak_ios / iops if burst and burst.bins >= 2 and iops else None,
    }


def _row(d: Limit, a: float | None, b: float | None) -> Row:
    if a is None or (a == 0 and not d.points):
        return Row(d.key, d.metric, a, b, None, d.limit, d.points, "n/a")
    if b is None:
        return Row(d.key, d.metric, a, b, None, d.limit, d.points, "FAIL")
    delta = b - a if d.points else (b - a) / abs(a)
    ok = abs(delta) <= d.limit + 1e-12
    return Row(d.key, d.metric, a, b, delta, d.limit, d.points, "pass" if ok else "FAIL")


def render(r: ToleranceResult) -> list[str]:
    """The check as lines that fit 80 columns."""
    head = f"tolerance check: original {r.original_scope} (regime {r.regime}) -> run whole"
    lines = [head, f"{'metric':<26}{'original':>12}{'run':>12}{'delta':>9}{'limit':>8}  status"]
    for x in r.rows:
        delta = "-" if x.delta is None else (f"{x.delta * 100:+.1f}pt" if x.points else f"{x.delta:+.1%}")
        limit = f"±{x.limit * 100:g}{'pt' if x.points else '%'}"
        lines.append(f"{x.metric:<26}{_num(x.original):>12}{_num(x.run):>12}{delta:>9}{limit:>8}  {x.status}")
    bad = ", ".join(x.metric for x in r.failed)
    lines.append(f"out of tolerance: {bad}" if bad else "every demand metric within tolerance")
    return lines


def _num(x: float | None) -> str:
    if x is None:
        return "-"
    return f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"
