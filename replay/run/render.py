"""Text for the terminal: one replay's summary (the comparison table lives in replay/compare/table.py)."""

from __future__ import annotations

import textwrap
from collections import Counter
from pathlib import Path
from typing import Any

from iofp import replay_result as rr
from iofp.repeats import spread
from iofp.replay_result import Measured, ReplayResult
from iofp.slo import format_ns
from replay.iolog import STREAM_TOP_N

WIDTH = 80
DATA_OPS = ("read", "write", "discard", "trim")


def replay_summary(res: ReplayResult) -> str:
    """A replay's result as a few lines: what was demanded, how it was replayed, what iofp measured."""
    fio, fid, dem = res.fio, res.fidelity, res.demanded
    summ = fio.get("summary") or {}
    done = {d: (summ.get(d) or {}).get("total_ios", 0) for d in ("read", "write", "trim")}
    done["sync"] = (summ.get("sync") or {}).get("total_ios", 0)
    ios = ", ".join(f"{v:,} {k}" for k, v in done.items() if v) or "no I/O"
    lines = [
        f"selection: {res.selection['how']}; {dem.data_ios:,} I/Os and {dem.syncs:,} sync calls demanded "
        f"over {dem.span_s:.3f} s",
        commits_line(res.plan.get("commits") or {}),
    ]
    for s in res.conversion.get("streams") or []:
        if s.get("kept"):
            mode = "direct" if s["direct"] else "buffered"
            lines.append(f"  job {s['name']}: {s['engine']} QD{s['iodepth']} {mode}: {s['why']}")
    # wall time, not fio's job_runtime: with one job per stream, group reporting sums the jobs'
    wall = res.timing.get("fio_s") or 0
    lines.append(f"fio ({fio['version']}, exit {fio['exit_code']}): {ios} in {wall:.1f} s of wall time")
    if res.measured is not None:
        lines.append(f"measured (iofp's capture of the replay): {measured_line(res.measured)}")
    if fid.get("status") == "measured":
        lines.append(f"fidelity: {fidelity_line(fid)}")
    else:
        lines.append(f"fidelity: {fid.get('status')}: {fid.get('reason', '')}")
    if res.status != "complete":
        lines.append(f"PARTIAL: {res.interrupted}")
    return "\n".join(fit(line) for line in "\n".join(lines).splitlines())


def fit(line: str, width: int = WIDTH) -> str:
    """A summary line wrapped to the terminal's 80 columns, its continuation indented under it."""
    indent = " " * (len(line) - len(line.lstrip()) + 2)
    return textwrap.fill(
        line, width, subsequent_indent=indent, break_on_hyphens=False, break_long_words=False
    )


def commits_line(c: dict[str, Any]) -> str:
    if c.get("source") != "sync table":
        return "commits: no sync table in the trace; block flushes replayed as fio's sync (an fsync each)"
    kinds = ", ".join(f"{n:,} {k}" for k, n in sorted((c.get("by_call") or {}).items())) or "none"
    procs = sum(1 for x in c.get("callers") or [] if x["forced_writes"] > 0)
    jobs = min(len(c.get("groups") or []), STREAM_TOP_N + 1) if "groups" in c else procs  # streams' cap
    who = f" for {procs} processes whose calls never overlapped" if procs > jobs == 1 else ""
    who = who or (f" for {procs} processes" if procs > jobs else "")
    return (
        f"commits: {c['replayed']:,} sync calls ({kinds}); {c['forced_writes']:,} writes they forced, "
        f"replayed inside them ({jobs} commit job{'s' if jobs != 1 else ''}{who}); "
        f"{c['covered_flushes']:,} block flushes left to the calls"
    )


def measured_line(m: Measured) -> str:
    parts = []
    for op in ("read", "write", "flush"):
        if op in m.ops:
            parts.append(f"{op} p50 {format_ns(m.ops[op].p50)}, p99 {format_ns(m.ops[op].p99)}")
    if m.commit_from == "sync calls":
        a = m.syncs["all"]
        parts.append(f"sync calls p50 {format_ns(a.p50)}, p99 {format_ns(a.p99)} ({a.count:,})")
    return "; ".join(parts) or "nothing captured"


def fidelity_line(fid: dict[str, Any]) -> str:
    def f(x: Any, spec: str, scale: float = 1.0) -> str:
        return "n/a" if x is None else format(x * scale, spec)

    head = f"{fid['verdict']}, timing {fid['timing']}"
    if fid.get("reasons"):
        head += f" ({'; '.join(fid['reasons'])})"
    return (
        f"{head}\n  content: {content_counts(fid)}\n"
        f"  timing: IOPS WAPE {f(fid.get('iops_wape'), '.2f', 100)}% "
        f"(MAPE {f(fid['iops_mape'], '.2f', 100)}%), "
        f"duration stretch {f(fid['stretch'], '+.2f', 100)}%; lateness p50 {_us(fid['late_p50_us'])}, "
        f"p99 {_us(fid['late_p99_us'])} (|lateness| p50 {_us(fid.get('abs_late_p50_us'))}, "
        f"p99 {_us(fid.get('abs_late_p99_us'))}), grew {_us(fid.get('late_growth_us'))}"
    )


def _us(x: float | None) -> str:
    """A signed time in µs, in the unit a person reads it in (-516 ms, 130 µs)."""
    return "n/a" if x is None else ("-" if x < 0 else "") + format_ns(abs(x) * 1e3)


def content_counts(fid: dict[str, Any]) -> str:
    """Matched of demanded, each with its own noun: data I/Os (those whose bytes arrived in other
    requests among them), and sync calls (or the block flushes that stood in for them)."""
    per = fid.get("per_op") or {}
    calls = "block flushes" if fid.get("syncs_by") == "block flushes" else "sync calls"
    groups = [([v for k, v in per.items() if k in DATA_OPS], "I/Os"),
              ([v for k, v in per.items() if k not in DATA_OPS], calls)]  # fmt: skip
    parts = []
    for counts, noun in groups:
        if counts:
            keys = ("expected", "replayed", "matched", "reshaped", "pieces")
            e, r, m, rs, pc = (sum(c.get(k, 0) for c in counts) for k in keys)
            shapes = f"; {rs:,} of them written in other requests: split, merged or by the kernel's writeback"
            parts.append(f"{m + rs:,}/{e:,} {noun} matched ({e - m - rs:,} missing, {r - m - pc:,} extra"
                         f"{shapes if rs else ''})")  # fmt: skip
    if not parts:  # a result without per-op counts
        parts.append(f"{fid['matched']:,}/{fid['expected']:,} requests matched")
    return "; ".join(parts)


def repeats_summary(root: Path) -> str:
    """The runs of `iofp replay --repeat` side by side: fidelity verdicts counted, the rates and the
    commit and write p99 as median (range) over the runs, and a run that stands far from the others."""
    runs = [res for _, res in rr.runs(root)]
    verdicts = Counter(
        f"{r.fidelity.get('verdict')}, {r.fidelity.get('timing')}" if r.fidelity.get("status") == "measured"
        else r.fidelity.get("status", "not measured")
        for r in runs
    )  # fmt: skip
    lines = [f"{len(runs)} runs (this one and {', '.join(runs[0].repeats)} in it): fidelity "
             + "; ".join(f"{v} in {n}" for v, n in verdicts.most_common())]  # fmt: skip
    figs = (
        ("achieved IOPS", lambda m: m.achieved_iops, lambda v: f"{v:,.0f}"),
        ("commits/s", lambda m: m.commits_per_s, lambda v: f"{v:,.0f}"),
        ("write p99", lambda m: m.latency("write", "p99"), format_ns),
        ("commit p99", lambda m: m.latency("commit", "p99"), format_ns),
    )
    for name, get, fmt in figs:
        s = spread([get(r.measured) if r.measured else None for r in runs])
        if s is not None:
            odd = f"; run {', '.join(str(i + 1) for i in s.outliers)} an outlier" if s.outliers else ""
            lines.append(f"  {name}: median {fmt(s.median)} ({fmt(s.lo)}-{fmt(s.hi)}){odd}")
    return "\n".join(lines)
