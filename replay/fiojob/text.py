"""The fio syntax of a planned job (replay/fiojob/job.py): a header that names the fingerprint by its
digest and lists what fio cannot express, then one section per stream. Plain fio: it runs with
`DEV=/dev/sdX fio JOB.fio`, as samples/workloads/*.fio do."""

from __future__ import annotations

import textwrap
from pathlib import Path

import typer

from iofp.contract import atomic_write_bytes, check_output_file
from iofp.output import shell_command
from replay.fio import JobFile
from replay.fiojob.job import THINK_MAX, FioJob, Stream


def render(job: FioJob) -> str:
    """The job file, written through the one writer of fio's input (replay/fio/jobfile.py): the
    fingerprint's own text (its tool version, its scopes' names) is comment text and nothing more."""
    f = JobFile()
    f.comment("iofp fio-job: a synthetic workload with the demand of an iofp fingerprint. It carries only")
    f.comment("statistics: no offset, process, device, host or label of the trace.")
    f.comment(
        f"fingerprint: sha256 {job.digest} (fingerprint v{job.version}, iofp {job.tool_version})", width=160
    )
    f.comment(f"regime: {job.regime}; runtime {job.runtime_s:g} s")
    f.comment(f"region: {_size(job.region_bytes)} from offset 0 of $DEV")
    f.comment("run (it WRITES to $DEV: a scratch device): DEV=/dev/sdX fio THIS.fio")
    f.comment(f"check: sudo iofp capture --device sdX --duration {job.runtime_s + 15:g}s -o lab")
    f.comment("         (started 5 s before the job: it records within a few seconds)")
    f.comment("       iofp fingerprint lab --json lab.fp.json")
    f.comment(f"       iofp diff FP.json lab.fp.json --tolerances regime={job.regime}")
    for n in job.notes:
        f.comment(n)
    if job.gaps:
        f.comment("what fio cannot express here (fingerprint -> this job):")
        for g in job.gaps:
            f.comment(f"{g.what}: {g.fingerprint} -> {g.job}", indent="  ")
    # norandommap: with fio's random map a size is cut to the free blocks at its offset (a 33/67
    # split of 4k/8k ran 40/60). bs_unaligned: else fio rounds every size down to a multiple of the
    # split's smallest (8192 ran as 7680 beside a 1536).
    f.blank().section("global").from_env("filename", "DEV")
    for key in ("direct", "time_based", "randrepeat", "norandommap", "bs_unaligned"):
        f.set(key, 1)
    f.set("size", job.region_bytes)
    if job.theta:
        f.set("random_distribution", f"zipf:{job.theta}")
    for s in job.streams:
        _section(f.blank(), s)
    return f.text()


def _section(f: JobFile, s: Stream) -> None:
    what = f"{s.op}s {s.rate:,.2f}/s, mean {s.sizes.mean:,.0f} B, {s.seq:.0%} sequential"
    if s.fdatasync:
        what += f", fdatasync every {s.fdatasync} write(s)"
    f.comment(f"{s.why + ': ' if s.why else ''}{what}").section(s.name)
    f.set("rw", "randread" if s.op == "read" else "randwrite").set("bssplit", s.sizes.text())
    if s.seq > 0:
        f.set("percentage_random", round(100 * (1 - s.seq)))
    if s.rate < THINK_MAX:
        # Few I/Os: a byte rate would let the sizes drawn decide the count (rate / mean size), so
        # pace by count instead: one I/O, then a pause of 1/rate (its latency adds to the period).
        f.set("ioengine", "psync").set("iodepth", 1).set("thinktime", round(1e6 / s.rate))
        f.set("thinktime_blocks", 1)
    else:
        engine = "libaio" if s.iodepth > 1 and not s.fdatasync else "psync"
        f.set("ioengine", engine).set("iodepth", s.iodepth if engine == "libaio" else 1)
        # A byte rate at the split's mean size: fio counts rate_iops in I/Os of the smallest block
        # size (1,500 asked of a 4 KiB/16 KiB split ran 1,000 here), and in whole I/Os per second.
        f.set("rate", round(s.rate * s.sizes.mean))
    if s.fdatasync:
        f.set("fdatasync", s.fdatasync)
    if s.start_s:
        f.set("startdelay", f"{round(s.start_s * 1000)}ms")
    f.set("runtime", f"{round(s.runtime_s * 1000)}ms")


def _size(n: int) -> str:
    return f"{n / (1 << 20):,.1f} MiB ({n:,} bytes)"


def summary(job: FioJob) -> list[str]:
    """What the terminal says: the streams in one line, and every statistic fio cannot express."""
    demand = sum(s.rate * s.runtime_s for s in job.streams) / job.runtime_s
    lines = _wrap(
        f"fio-job: regime {job.regime}, {len(job.streams)} fio jobs over {job.runtime_s:g} s, "
        f"{demand:,.1f} IOPS mean, region {_size(job.region_bytes)}",
        "",
        "  ",
    )
    lines += [x for n in job.notes for x in _wrap(n, "  ", "    ")]
    if job.gaps:
        lines.append("fio cannot express (fingerprint -> job):")
        lines += [x for g in job.gaps for x in _wrap(f"{g.what}: {g.fingerprint} -> {g.job}", "  ", "    ")]
    return lines


def _wrap(text: str, first: str, rest: str, width: int = 80) -> list[str]:
    return textwrap.wrap(text, width, initial_indent=first, subsequent_indent=rest, break_on_hyphens=False)


def write(job: FioJob, out: Path | None, *, force: bool) -> None:
    """The job to `out` (whole, never over a file without force) or stdout; the summary to the
    terminal (stderr when the job itself goes to stdout)."""
    text = render(job)
    if out is None:
        typer.echo(text, nl=False)
        for line in summary(job):
            typer.echo(line, err=True)
        return
    check_output_file(out, force=force)
    atomic_write_bytes(out, text.encode())
    for line in summary(job):
        typer.echo(line)
    typer.echo(
        f"Wrote {out}. Next: DEV=/dev/sdX {shell_command('fio', out)} on a scratch device, under iofp capture"
    )
