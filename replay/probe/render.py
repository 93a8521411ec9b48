"""The probe's terminal text: the four-cell table, the sweep with its knee, the warnings (80 columns)."""

from __future__ import annotations

import textwrap
from pathlib import Path

from iofp.probe_result import ProbeResult, Run
from iofp.values import duration_text
from replay.probe.plan import size_text

WIDTH = 80
HEAD = f"{'cell':<4} {'':<27}{'IOPS':>9}{'MB/s':>9}{'p50 µs':>10}{'p99 µs':>10}{'p99.9 µs':>10}"
SWEEP_HEAD = f"{'QD':>6}{'IOPS':>11}{'p50 µs':>10}{'p99 µs':>10}{'p99.9 µs':>10}"


def num(x: float | None, spec: str = ",.0f") -> str:
    if x is None:
        return "n/a"
    return f"{x:.1f}" if spec == "us" and x < 100 else format(x, ",.0f" if spec == "us" else spec)


def summary(result: ProbeResult) -> str:
    t = result.target
    lines = [
        f"iofp probe {t.path}: {size_text(t.probed_bytes)} probed, "
        f"{duration_text(round(result.settings['runtime_s'] * 1e9))} per run, {result.fio_version}",
        "IOPS, MB/s and latency are fio's (submission to completion); on commit rows",
        "(*) IOPS is commits/s and latency the fsync's, from iofp's capture.",
        _workload_line(result),
        "",
        HEAD,
    ]
    for cell in sorted(result.cells, key=lambda c: c.cell):
        lines.append(_row(cell.cell, cell.label, result.run(cell.run)))
    lines += _commit_notes(result)
    if result.tail is not None:
        tl = result.tail
        lines.append(
            f"cell 4: {tl.rate_iops:,} IOPS asked, {tl.load:.0%} of the {tl.max_iops:,.0f} max ({tl.max_run})"
        )
    if result.sweep is not None:
        lines += ["", f"queue-depth sweep, rand read {result.sweep.block_size >> 10}KiB (fio's)", SWEEP_HEAD]
        knee = result.sweep.knee.iodepth if result.sweep.knee else None
        for p in result.sweep.points:
            mark = "  <- knee" if p.iodepth == knee else ""
            lines.append(
                f"{p.iodepth:>6}{num(p.iops):>11}{num(p.p50_us, 'us'):>10}{num(p.p99_us, 'us'):>10}"
                f"{num(p.p99_9_us, 'us'):>10}{mark}"
            )
        lines += _wrap(result.sweep.finding) + _wrap(f"knee rule: {result.sweep.rule}")
    for w in result.warnings:
        lines += _wrap(f"warning: {w}")
    return "\n".join(lines)


def _workload_line(result: ProbeResult) -> str:
    w = result.workload
    like = "defaults" if w.source == "defaults" else f"like {Path(w.source).name}"
    qd = "/".join(map(str, w.read_iodepths))
    jobs = "/".join(map(str, w.commit_jobs))
    return (
        f"cells ({like}): reads {size_text(w.read_size)} at QD{qd}; {size_text(w.write_size)} commits x{jobs}"
    )


def _row(cell: int, label: str, run: Run) -> str:
    f, c = run.fio, run.capture
    iops: float | None = None
    lat: tuple[float | None, ...] = (None, None, None)
    star = "*" if run.kind == "commit" else ""
    if run.kind == "commit" and c is not None:
        iops, lat = c.commits_per_s, (c.fsync_p50_us, c.fsync_p99_us, c.fsync_p99_9_us)
    elif run.kind != "commit" and f is not None:
        iops, lat = f.iops, (f.p50_us, f.p99_us, f.p99_9_us)
    mbps = f.mb_per_s if f else None
    cols = "".join(f"{num(x, 'us') + star:>10}" for x in lat)
    return f"{cell:<4} {label[:27]:<27}{num(iops) + star:>9}{num(mbps, ',.1f'):>9}{cols}"


def _commit_notes(result: ProbeResult) -> list[str]:
    out = []
    for run in result.runs:
        if run.kind == "commit" and run.capture is not None:
            c = run.capture
            out.append(
                f"* x{run.jobs}: {c.commits:,} commits; flush requests p50 {num(c.flush_p50_us, 'us')} µs, "
                f"p99 {num(c.flush_p99_us, 'us')} µs ({c.flushes:,})"
            )
    return out


def _wrap(text: str) -> list[str]:
    return textwrap.wrap(text, WIDTH, subsequent_indent="  ", break_on_hyphens=False)


def stopped_line(result: ProbeResult) -> str:
    return (
        f"interrupted ({result.interrupted}) after {len(result.runs)} of {result.runs_planned} runs; "
        "fio was stopped, and the runs done so far are kept as a partial result"
    )
