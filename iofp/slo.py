"""The SLO grammar: one definition for every command that judges figures against a service level
(`iofp compare` now, diff and headroom later). Imports no stage.

An SLO is terms joined by `,`, all of which must hold (several `--slo` options add up):

    [OP.]PCT<=TIME      OP: read, write, all, flush, fsync, commit; PCT: p50, p99, p99.9;
                        TIME: a number with its unit, ns, us, µs, ms or s (e.g. 2ms, 500us)
    iops>=demanded      the achieved rate kept the demanded one (within IOPS_TOLERANCE)
    iops<=N, iops>=N    the achieved rate (data requests per second) at most / at least N
    mbps<=N, mbps>=N    the achieved MB/s (read + write bytes per second / 1e6) at most / at least N
    iops<=Nx, mbps>=Nx  (any of the four) relative: at most / at least N times the figure's baseline
                        (`iofp record`: the mean rate over the history before the window)
    inflight<=N         at most N requests in flight on the device (the most seen at an issue)
    commits>=N/s        at least N commits (sync calls) per second achieved

A bare `p99<=2ms` holds when the read p99 and the write p99 each hold. `all.` is the percentile of
reads, writes and discards together; `flush.` the block flush requests; `fsync.` and `commit.` (one
figure, two names) the application's sync calls (fsync, fdatasync, O_DSYNC writes), each timed from
the call to its return, which includes the writeback the call forced; where a trace has no sync
table, the block flushes stand in (the figures say which). The upper bounds on rates and in-flight
requests are what `iofp record --trigger` watches for (a surge is an incident too), and so are the
relative bounds (a rate that halved, or tripled, against the recent baseline); a figure a command
does not measure (a baseline where there is none: compare's) is named as not measured, never taken
as held.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Protocol

from iofp.errors import BadInput

OPS = ("read", "write", "all", "flush", "fsync", "commit")
PCTS = ("p50", "p99", "p99.9")
UNITS_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# iops>=demanded allows the fidelity verdict's rate tolerance: a replay whose per-second IOPS are
# within 5% of the demand is faithful, so a rate 5% short is the demand kept.
IOPS_TOLERANCE = 0.05
GRAMMAR = (
    "expected terms joined by ',': [read.|write.|all.|flush.|fsync.|commit.]p50|p99|p99.9<=TIME "
    "(TIME with a unit: ns, us, µs, ms, s), iops>=demanded, iops<=N, iops>=N, mbps<=N, mbps>=N "
    "(N, or Nx: N times the baseline), inflight<=N, commits>=N/s; e.g. --slo 'p99<=2ms,fsync.p99<=1ms'"
)
HELP = (
    "Terms joined by ',', all of which must hold: OP.p50|p99|p99.9<=TIME (OP: read, write, all, flush, "
    "fsync or commit; left out: reads and writes each), iops>=demanded, iops<=N or >=N, mbps<=N or "
    ">=N (Nx: N times the recent baseline, e.g. iops<=3x), inflight<=N, commits>=N/s; e.g. "
    "'p99<=2ms,fsync.p99<=1ms' (quote it: < and > are redirections in a shell). Repeatable."
)

_LATENCY = re.compile(
    r"(?:(?P<op>[a-z]+)\.)?(?P<pct>p[0-9.]+)<=(?P<val>[0-9]+(?:\.[0-9]+)?)(?P<unit>ns|us|µs|ms|s)"
)
_COMMITS = re.compile(r"commits>=(?P<n>[0-9]+(?:\.[0-9]+)?)/s")
_RATE = re.compile(r"(?P<what>iops|mbps)(?P<bound><=|>=)(?P<n>[0-9]+(?:\.[0-9]+)?)(?P<x>x)?")
_INFLIGHT = re.compile(r"inflight<=(?P<n>[0-9]+)")


@dataclass(frozen=True)
class LatencyTerm:
    op: str | None  # None: reads and writes, each
    pct: str  # one of PCTS
    limit_ns: float
    text: str


@dataclass(frozen=True)
class IopsTerm:
    text: str = "iops>=demanded"


@dataclass(frozen=True)
class CommitsTerm:
    per_s: float
    text: str


@dataclass(frozen=True)
class RateTerm:
    """iops<=N, iops>=N, mbps<=N, mbps>=N: a bound on the achieved rate; with `x`, N times the
    figure's baseline rate (`baseline_iops`, `baseline_mbps`)."""

    what: str  # "iops" | "mbps"
    bound: str  # "<=" | ">="
    value: float
    text: str
    relative: bool = False


@dataclass(frozen=True)
class InflightTerm:
    limit: int
    text: str


Term = LatencyTerm | IopsTerm | CommitsTerm | RateTerm | InflightTerm


class Figures(Protocol):
    """What a judged row offers: measured latency percentiles and rates (None: not measured).
    `achieved_mbps` and `max_inflight` are optional: a row without them has not measured them."""

    demanded_iops: float | None
    achieved_iops: float | None
    commits_per_s: float | None

    def latency(self, op: str, pct: str) -> float | None: ...


@dataclass(frozen=True)
class Slo:
    terms: tuple[Term, ...]

    @property
    def text(self) -> str:
        return ",".join(t.text for t in self.terms)

    def __bool__(self) -> bool:
        return bool(self.terms)

    def failures(self, fig: Figures) -> list[str]:
        """Why `fig` misses the SLO, one phrase per failing figure ([] = it holds)."""
        out: list[str] = []
        for t in self.terms:
            if isinstance(t, LatencyTerm):
                out += _latency_failures(t, fig)
            elif isinstance(t, IopsTerm):
                d, a = fig.demanded_iops, fig.achieved_iops
                if d is None or a is None:
                    out.append("achieved IOPS not measured")
                elif a < d * (1 - IOPS_TOLERANCE):
                    out.append(f"achieved {a:,.0f} IOPS < demanded {d:,.0f}")
            elif isinstance(t, RateTerm):
                out += _rate_failures(t, fig)
            elif isinstance(t, InflightTerm):
                n = getattr(fig, "max_inflight", None)
                if n is None:
                    out.append("in-flight requests not measured")
                elif n > t.limit:
                    out.append(f"{n:,} in flight > {t.limit:,}")
            elif fig.commits_per_s is None:
                out.append("no commit rate measured")
            elif fig.commits_per_s < t.per_s:
                out.append(f"commits {fig.commits_per_s:,.0f}/s < {t.per_s:,.0f}/s")
        return out


def _rate_failures(t: RateTerm, fig: Figures) -> list[str]:
    v = fig.achieved_iops if t.what == "iops" else getattr(fig, "achieved_mbps", None)
    unit = "IOPS" if t.what == "iops" else "MB/s"
    if v is None:
        return [f"achieved {unit} not measured"]
    limit, named = t.value, _rate(t.value)
    if t.relative:
        base = getattr(fig, f"baseline_{t.what}", None)
        if base is None:
            return [f"no baseline {unit} measured"]
        limit, named = t.value * base, f"{t.value:g}x the baseline {_rate(base)}"
    if (v > limit) if t.bound == "<=" else (v < limit):
        return [f"{_rate(v)} {unit} {'>' if t.bound == '<=' else '<'} {named}"]
    return []


def _rate(v: float) -> str:
    """4,210 and 512 as whole numbers; a small rate keeps its digits (1.2, not 1)."""
    return f"{v:,.0f}" if v >= 100 else f"{v:.3g}"


def _latency_failures(t: LatencyTerm, fig: Figures) -> list[str]:
    ops = [t.op] if t.op else ["read", "write"]
    measured = [(op, fig.latency(op, t.pct)) for op in ops]
    if t.op is None:  # a bare term holds on whichever of reads and writes there are
        measured = [(op, v) for op, v in measured if v is not None] or [("read or write", None)]
    out = []
    for op, v in measured:
        if v is None:
            out.append(f"no {op} {t.pct} measured")
        elif v > t.limit_ns:
            out.append(f"{op} {t.pct} {format_ns(v)} > {format_ns(t.limit_ns)}")
    return out


def parse(texts: list[str] | str, flag: str = "--slo") -> Slo:
    """Every term of every `--slo` value, checked; BadInput naming the first term that does not parse."""
    terms: list[Term] = []
    for text in [texts] if isinstance(texts, str) else texts:
        for raw in text.split(","):
            terms.append(_term(raw, text, flag))
    return Slo(tuple(terms))


def _term(raw: str, whole: str, flag: str) -> Term:
    t = "".join(raw.split()).lower()
    where = f"{flag} term {raw.strip()!r}" + (f" (in {whole!r})" if whole.strip() != raw.strip() else "")
    if t == "iops>=demanded":
        return IopsTerm()
    if m := _COMMITS.fullmatch(t):
        return CommitsTerm(float(m["n"]), t)
    if m := _RATE.fullmatch(t):
        return RateTerm(m["what"], m["bound"], float(m["n"]), t, relative=m["x"] is not None)
    if m := _INFLIGHT.fullmatch(t):
        return InflightTerm(int(m["n"]), t)
    m = _LATENCY.fullmatch(t)
    if not m or (m["op"] is not None and m["op"] not in OPS) or m["pct"] not in PCTS:
        raise BadInput(f"{where}: {GRAMMAR.replace('--slo', flag)}")
    return LatencyTerm(m["op"], m["pct"], float(m["val"]) * UNITS_NS[m["unit"]], t)


def format_ns(v: float | None) -> str:
    """A latency as a person reads it: 87 µs, 1.46 ms, 2.00 s."""
    if v is None:
        return "-"
    if v >= 1e9:
        return f"{v / 1e9:.2f} s"
    if v >= 1e6:
        return f"{v / 1e6:.2f} ms"
    if v >= 1e3:
        return f"{v / 1e3:.0f} µs"
    return f"{v:.0f} ns"
