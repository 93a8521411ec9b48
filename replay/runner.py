"""`iofp replay`: convert a selection, check the target, run fio on it, capture it, record everything.

Order matters for safety: the target is inspected and checked (safety.py) before anything is written,
and fio is only started once the iolog exists and every check passed. While fio runs, iofp's own
capture (the capture stage's public `bpf.start_capture`) records the target's block I/O, and the
replay's fidelity is computed from that capture (fidelity.py). A regular-file target has no block
device of its own, so its fidelity is not measured (the record says so).

The job file (kept in the results directory): ioengine libaio (or --engine), direct=1, iodepth =
--iodepth, else the selection's peak in-flight count when the trace has one, else 32;
read_iolog_chunked=1 for logs over 100,000 I/Os (fio then parses about a second ahead instead of all
up front: ~34 MB instead of ~250 MB for 2 M I/Os, same timing, measured in BENCHMARKS.md). No
replay_redirect: the log names the target itself.
"""

from __future__ import annotations

import json
import platform
import shlex
import socket
import subprocess
import time
from dataclasses import asdict, dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iofp import __version__
from iofp.contract import Trace, device_facts, open_trace
from iofp.errors import BadInput, IofpError, MissingCapability
from replay import fidelity as fidmod
from replay import fiocaps, iolog, results, safety
from replay import pacing as pacemod
from replay import selection as selmod
from replay import streams as streammod

ENGINES = ("libaio", "io_uring", "psync", "pvsync2", "auto")
DEFAULT_IODEPTH = 32
CHUNKED_ABOVE = 100_000


@dataclass
class ReplayOptions:
    target: Path
    output: Path
    selection: selmod.Selection = field(default_factory=selmod.Selection)
    time_scale: float = 1.0
    target_size: int | None = None  # fold into this many bytes of the target
    fold: bool = False  # fold into the whole target
    align: int | None = None  # default: the target's logical block size
    iodepth: int | None = None
    engine: str = "libaio"  # "auto": psync for a stream that never had 2 I/Os in flight (streams.py)
    streams: str | None = None  # "pid" | "single"; None: "pid" when the selection has > 1 pid
    pace: str = "absolute"  # "absolute" | "auto" | "off" | "<N>us" (pacing.py)
    labels: dict[str, str] = field(default_factory=dict)
    allow_destructive: bool = False
    fidelity: bool = True
    force: bool = False
    progress: bool = True

    def check(self) -> None:
        if self.engine not in ENGINES:
            raise BadInput(f"--engine {self.engine}: choose one of {', '.join(ENGINES)}")
        if self.iodepth is not None and not 1 <= self.iodepth <= 65536:
            raise BadInput(f"--iodepth {self.iodepth}: must be between 1 and 65536")
        if self.streams is not None and self.streams not in streammod.MODES:
            raise BadInput(f"--streams {self.streams}: choose one of {', '.join(streammod.MODES)}")
        pacemod.PaceSpec.parse(self.pace)
        if self.target_size is not None and self.target_size <= 0:
            raise BadInput(f"--target-size {self.target_size}: must be > 0")
        self.selection.check()


def prepare_output(out: Path, force: bool) -> set[str]:
    """Make `out` ready for this run; returns the names in it that are not replay artifacts (kept as
    they are, and not listed as this run's). With --force a previous run's artifacts are removed first:
    left in place, another stream count's logs would sit next to this run's and be listed as its own."""
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise BadInput(f"{out} already exists and is not empty; pass --force or choose another --output")
        if not out.is_dir():
            raise BadInput(f"{out} is a file; choose another --output")
        return results.clear_artifacts(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot write the results to {out}: {e.strerror}") from None
    return set()


def replay(trace: Trace, opts: ReplayOptions) -> tuple[Path, dict[str, Any]]:
    """Replay the selection of `trace` onto `opts.target`; returns (results.json path, record)."""
    opts.check()
    caps = fiocaps.probe()
    target = safety.inspect(opts.target)
    con = selmod.connect(trace)
    try:
        stats = selmod.resolve(con, trace, opts.selection)
        plan = streammod.plan(con, opts.selection, stats, opts.streams, opts.engine)
    finally:
        con.close()
    safety.check(target, writes=stats.writes_anything, allow_destructive=opts.allow_destructive)
    fold_size = _fold_size(target, opts)
    mapping = iolog.Mapping(
        target=str(target.path),
        fold_size=fold_size,
        align=target.logical_block_size if opts.align is None else opts.align,
        time_scale=opts.time_scale,
        trim=caps.iolog_trim and target.is_block,
    )
    mapping.check()
    needed = stats.max_end if iolog.fold_modulus(stats, mapping) is None else 0
    safety.check_size(target, -(-needed // mapping.align) * mapping.align, folded=fold_size is not None)

    out = Path(opts.output).absolute()
    foreign = prepare_output(out, opts.force)
    log_path, job_path = out / "replay.iolog", out / "job.fio"
    created = False
    if target.kind == "new-file":  # sized to what the selection touches, sparse
        with open(target.path, "wb") as f:
            f.truncate(max(_footprint(stats, mapping), fold_size or 0, mapping.align))
        created = True
    pacing = _pacing(opts, caps.path, target, plan, out / "calibration")
    report = iolog.convert(
        trace,
        log_path,
        opts.selection,
        mapping,
        force=True,
        expected=out / "expected",
        streams=plan.mode,
        engine=opts.engine,
        pacing=pacing,
    )
    if created and target.path.stat().st_size < report.max_end:
        with open(target.path, "r+b") as f:
            f.truncate(report.max_end)
    peak = stats.peak_inflight or 0
    iodepth = opts.iodepth or peak or DEFAULT_IODEPTH
    jobs = [
        JobSpec(
            name=s["name"],
            iolog=Path(s["iolog"]),
            engine=s["engine"],
            iodepth=opts.iodepth or s["peak_inflight"] or peak or DEFAULT_IODEPTH,
            chunked=s["kept"] > CHUNKED_ABOVE,
        )
        for s in report.streams
        if s["kept"] > 0
    ]
    job_path.write_text(job_file(trace, jobs))
    cmd = [caps.path, "--output-format=json", str(job_path)]

    capture_dir = out / "capture"
    started = datetime.now(UTC)
    t0 = time.monotonic()
    bg, fid_status = _start_capture(opts, target, capture_dir)
    try:
        rc = _run_fio(cmd, out, report.kept, report.duration_us / 1e6, opts.progress, target)
    finally:
        capture_summary = _stop_capture(bg)
    wall = time.monotonic() - t0
    fio_doc = results.parse_fio_json((out / "fio.stdout").read_text(errors="replace"))
    if fio_doc is not None:
        (out / "fio.json").write_text(json.dumps(fio_doc, indent=2))

    if capture_summary is not None:
        fid_status = {"status": "measured", "capture": capture_summary}
        try:
            fid = fidmod.compare(open_trace(out / "expected"), open_trace(capture_dir))
            fid_status.update(fid.to_dict())
        except IofpError as e:
            fid_status = {"status": "failed", "reason": str(e), "capture": capture_summary}

    record = {
        "kind": results.KIND,
        "version": results.VERSION,
        "tool_version": __version__,
        "host": socket.gethostname(),
        "kernel": platform.release(),
        "trace": {
            "path": str(trace.root),
            "source": trace.meta.source,
            "host": trace.meta.host,
            "capture_start_ns": trace.meta.capture_start_ns,
            "labels": trace.meta.labels,
        },
        "labels": opts.labels,
        "settings": {
            "selection": asdict(opts.selection),
            "engine": opts.engine,
            "streams": report.stream_mode,
            "jobs": [asdict(j) | {"iolog": j.iolog.name} for j in jobs],
            "pace": opts.pace,
            "pacing": pacing.to_dict(),
            "iodepth": iodepth,
            "iodepth_from": "option"
            if opts.iodepth
            else ("peak inflight" if stats.peak_inflight else "default"),
            "time_scale": opts.time_scale,
            "align": mapping.align,
            "fold_size": fold_size,
            "allow_destructive": opts.allow_destructive,
            "chunked": any(j.chunked for j in jobs),
        },
        "selection": stats.to_dict(),
        "conversion": report.to_dict(),
        "target": {
            "path": str(target.path),
            "kind": "file" if created else target.kind,
            "created": created,
            "size_bytes": target.size if not created else target.path.stat().st_size,
            "name": target.name,
            "logical_block_size": target.logical_block_size,
            "device_facts": device_facts(target.name) if target.name else {},
        },
        "fio": {
            "version": caps.version,
            "command": shlex.join(cmd),
            "exit_code": rc,
            "summary": results.fio_summary(fio_doc),
        },
        "timing": {
            "started": started.isoformat(),
            "wall_s": round(wall, 3),
            "demanded_s": report.duration_us / 1e6,
        },
        "fidelity": fid_status,
        "artifacts": sorted(p.name for p in out.iterdir() if p.name not in foreign),
    }
    path = results.write(out, record)
    if rc != 0:
        raise IofpError(
            f"fio exited with status {rc}; see {out / 'fio.stderr'} (all artifacts kept in {out})"
        )
    return path, record


def _fold_size(target: safety.Target, opts: ReplayOptions) -> int | None:
    if opts.target_size is not None:
        if target.size is not None and opts.target_size > target.size:
            raise BadInput(
                f"--target-size {opts.target_size} is larger than {target.path} ({target.size} bytes); "
                "pass at most the target's size"
            )
        return opts.target_size
    if opts.fold:
        if target.size is None:
            raise BadInput(
                f"{target.path} does not exist yet, so it has no size to fold into; pass --target-size"
            )
        return target.size
    return None


@dataclass
class JobSpec:
    """One fio job of a replay: one stream's iolog (streams.py)."""

    name: str
    iolog: Path
    engine: str
    iodepth: int
    chunked: bool = False


def job_file(trace: Trace, jobs: list[JobSpec]) -> str:
    """One job per stream, all in one fio run, all started together; group_reporting sums them."""
    lines = [
        f"; written by iofp {__version__} to replay {trace.root}",
        "; the target is named inside each iolog; see results.json for the settings",
        "[global]",
        "direct=1",
        "group_reporting=1",
    ]
    for j in jobs:
        lines += [
            "",
            f"[{j.name}]",
            f"ioengine={j.engine}",
            f"iodepth={j.iodepth}",
            f"read_iolog={j.iolog}",
        ]
        if j.chunked:
            lines.append("read_iolog_chunked=1")
    return "\n".join(lines) + "\n"


def _footprint(stats: selmod.SelectionStats, mapping: iolog.Mapping) -> int:
    m = iolog.fold_modulus(stats, mapping)
    return stats.max_end if m is None else m + stats.max_size


def _pacing(
    opts: ReplayOptions, fio: str, target: safety.Target, plan: streammod.StreamPlan, workdir: Path
) -> pacemod.Pacing:
    spec = pacemod.PaceSpec.parse(opts.pace)
    engines = sorted({s.engine for s in plan.streams})
    if spec.mode in ("off", "absolute"):
        return pacemod.Pacing(mode=spec.mode)
    if spec.mode == "fixed":
        return pacemod.Pacing(mode="fixed", overhead_ns=dict.fromkeys(engines, spec.overhead_ns))
    biggest = max(plan.streams, key=lambda s: s.ios)
    size = target.size or target.path.stat().st_size
    gap = pacemod.calibration_gap_ns(biggest.median_gap_ns)
    return pacemod.calibrate(fio, target.path, size, engines, gap, workdir)


def _start_capture(
    opts: ReplayOptions, target: safety.Target, capture_dir: Path
) -> tuple[Any, dict[str, Any]]:
    if not opts.fidelity:
        return None, {"status": "not measured", "reason": "--no-fidelity"}
    if not target.is_block:
        return None, {
            "status": "not measured",
            "reason": "the target is a regular file; fidelity is measured on block-device targets only",
        }
    try:
        import bpf

        start_capture, options = bpf.start_capture, bpf.CaptureOptions
    except (ImportError, AttributeError):
        return None, {"status": "not measured", "reason": "this iofp has no capture API (bpf.start_capture)"}
    try:
        bg = start_capture(
            options(output=capture_dir, devices=[target.name], labels=dict(opts.labels), force=True)
        )
    except MissingCapability as e:
        return None, {"status": "not measured", "reason": f"capture unavailable: {e}"}
    return bg, {"status": "capturing"}


def _stop_capture(bg: Any) -> dict[str, Any] | None:
    if bg is None:
        return None
    summary = bg.stop()
    return summary.to_dict() if hasattr(summary, "to_dict") else dict(summary)


def _run_fio(
    cmd: list[str], out: Path, n: int, demanded_s: float, progress: bool, target: safety.Target
) -> int:
    """Run fio with its raw outputs going straight to files, showing a progress bar meanwhile."""
    (out / "fio.cmd").write_text(shlex.join(cmd) + "\n")
    with open(out / "fio.stdout", "wb") as so, open(out / "fio.stderr", "wb") as se:
        proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=out)
        try:
            if progress:
                _wait_with_progress(proc, n, demanded_s, target)
            rc = proc.wait()
        except BaseException:
            proc.terminate()
            try:
                proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                proc.kill()
            raise
    (out / "fio.rc").write_text(f"{rc}\n")
    return rc


def _wait_with_progress(proc: subprocess.Popen, n: int, demanded_s: float, target: safety.Target) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Progress(*cols, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(f"replaying {n} I/Os onto {target.path}", total=max(demanded_s, 1e-3))
        start = time.monotonic()
        while proc.poll() is None:
            bar.update(task, completed=min(time.monotonic() - start, demanded_s))
            time.sleep(0.1)
        bar.update(task, completed=demanded_s)


def default_output(target: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{Path(target).name}-{stamp}"


__all__ = ["ReplayOptions", "default_output", "job_file", "prepare_output", "replay"]
