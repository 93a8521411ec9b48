"""`iofp replay`: a sequence of small steps over one resolved plan (replay/iolog/plan.py).

    check options -> probe fio -> inspect the target -> resolve the plan (selection, span and
    stats, commit groups, streams: once) -> safety -> mapping -> results directory -> pacing ->
    iologs and job file -> capture + fio -> iofp's figures and fidelity -> the result (replay_result)

Order matters for safety: the target is inspected and checked (replay/fio/safety.py) before anything is
written, and fio is only started once the iologs exist and every check passed. While fio runs, iofp's
own capture (the capture stage's public `bpf.start_capture`) records the target's block I/O and sync
calls; the run's figures (figures.py) and its fidelity (fidelity.py) come from that capture. A
regular-file target has no block device of its own, so neither is measured (the record says so).

The job file (kept in the results directory): one job per stream (replay/iolog/streams.py says which engine,
depth and direct mode each gets, and why); read_iolog_chunked=1 for logs over 100,000 I/Os (fio then
parses about a second ahead instead of all up front: ~34 MB instead of ~250 MB for 2 M I/Os, same
timing, measured in BENCHMARKS.md). No replay_redirect: the log names the target itself.

A stop signal (SIGINT, SIGTERM, SIGHUP) at any step stops fio's whole process group first
(replay/fio/launcher.py), writes back what fio's buffered commit jobs had written so that nothing
reaches the target after iofp exits, records the run as partial, and exits 128 + the signal number.
"""

from __future__ import annotations

import json
import os
import platform
import shlex
import socket
import time
from dataclasses import asdict, dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

from iofp import __version__
from iofp import replay_result as rr
from iofp.contract import Trace, check_own_dir, device_facts, open_trace
from iofp.errors import BadInput, IofpError, MissingCapability
from iofp.host_evidence import HostEvidence
from iofp.repeats import default_repeat
from replay import iolog
from replay.fio import (
    FioCaps,
    Interrupted,
    JobFile,
    Progress,
    Stopped,
    Target,
    check_target,
    check_target_size,
    clear_artifacts,
    command,
    deferred,
    fio_path,
    fio_summary,
    hold_target,
    inspect_target,
    installed,
    launch,
    trap,
    write_job,
)
from replay.run import fidelity as fidmod
from replay.run.figures import measure

ENGINES = ("auto", "libaio", "io_uring", "psync", "pvsync2")
CHUNKED_ABOVE = 100_000


@dataclass(kw_only=True)
class ReplayOptions:
    target: Path
    output: Path
    selection: iolog.Selection = field(default_factory=iolog.Selection)
    time_scale: float = 1.0
    target_size: int | None = None  # fold into this many bytes of the target
    fold: bool = False  # fold into the whole target
    align: int | None = None  # default: the target's logical block size
    iodepth: int | None = None
    engine: str = "auto"  # auto: psync for a stream that never had 2 I/Os in flight (replay/iolog/streams.py)
    streams: str | None = None  # "pid" | "single"; None: "pid" when the selection has > 1 pid
    pace: str = "absolute"  # "absolute" | "auto" | "off" | "<N>us" (replay/iolog/pacing.py)
    labels: dict[str, str] = field(default_factory=dict)
    allow_destructive: bool = False
    fidelity: bool = True
    force: bool = False
    progress: bool = True
    fidelity_window_s: float | None = None  # the rate windows of the fidelity check (None: its own rule)
    repeat: int | None = 1  # runs: the first in `output`, the others in output/repeat-K; None: the default

    def check(self) -> None:
        if self.engine not in ENGINES:
            raise BadInput(f"--engine {self.engine}: choose one of {', '.join(ENGINES)}")
        if self.iodepth is not None and not 1 <= self.iodepth <= 65536:
            raise BadInput(f"--iodepth {self.iodepth}: must be between 1 and 65536")
        if self.streams is not None and self.streams not in iolog.STREAM_MODES:
            raise BadInput(f"--streams {self.streams}: choose one of {', '.join(iolog.STREAM_MODES)}")
        iolog.PaceSpec.parse(self.pace)
        if self.target_size is not None and self.target_size <= 0:
            raise BadInput(f"--target-size {self.target_size}: must be > 0")
        self.selection.check()
        fio_path("read_iolog", Path(self.output).absolute() / "replay.iolog")  # fio reads it: before any work
        if self.repeat is not None and self.repeat < 1:
            raise BadInput(f"--repeat {self.repeat}: must be at least 1 run")
        check_own_dir(Path(self.output).absolute(), "the results")  # before any work too


@dataclass
class Run:
    """What one replay has done so far: enough to record it whole, or as the partial run it became."""

    opts: ReplayOptions
    plan: iolog.Plan
    target: Target
    out: Path
    foreign: set[str]
    fio: FioCaps
    mapping: iolog.Mapping | None = None
    created: bool = False
    pacing: iolog.Pacing | None = None
    conv: iolog.Conversion | None = None
    jobs: list[JobSpec] = field(default_factory=list)
    args: list[str] = field(default_factory=list)  # fio's arguments (its job file)
    cmd: list[str] = field(default_factory=list)
    rc: int | None = None
    started: datetime = field(default_factory=lambda: datetime.now(UTC))
    t0: float = field(default_factory=time.monotonic)
    fio_s: float | None = None  # how long fio ran
    bg: Any = None  # the capture running in the background
    capture: dict[str, Any] | None = None  # the capture's summary
    fidelity: dict[str, Any] = field(default_factory=dict)
    measured: rr.Measured | None = None
    evidence: HostEvidence | None = None  # what the host was doing while fio ran
    interrupted: str | None = None


def replay(trace: Trace, opts: ReplayOptions) -> tuple[Path, rr.ReplayResult]:
    """Replay the selection of `trace` onto `opts.target` `opts.repeat` times; returns (results.json
    path, result) of the first run, whose `repeats` names the others' directories (repeat-K inside it:
    whole results each); the last one run is checked (stopped, fio failed) as a single run is."""
    opts.check()
    with trap():
        try:
            prep = prepare(trace, opts)
            try:
                first = run_step(prep, opts)
                path, res = _repeat(prep, opts, first)
            finally:
                prep.close()
        except Interrupted as e:  # before the results directory was made: nothing to record
            raise Stopped(
                f"replay stopped by {e.name} before anything was written", e.signum
            ) from None
    if res.interrupted:
        raise Stopped(
            f"replay stopped by {res.interrupted}; fio and its jobs were stopped first; "
            f"the partial run is recorded in {path}",
            _signum(res.interrupted),
        )
    if res.fio["exit_code"] != 0:
        raise IofpError(
            f"fio exited with status {res.fio['exit_code']}; see {path.parent / 'fio.stderr'} "
            f"(all artifacts kept in {path.parent})"
        )
    return first


Recorded = tuple[Path, rr.ReplayResult]


def _repeat(prep: Prepared, opts: ReplayOptions, first: Recorded) -> Recorded:
    """The runs after the first (`--repeat`), each in repeat-K of the first's directory, listed in the
    first's record as each completes; stops at a run that was stopped or whose fio failed (returned)."""
    path, res = first
    sel = prep.plan.stats
    n = opts.repeat or default_repeat(sel.duration_ns / 1e9 / opts.time_scale)
    for k in range(2, n + 1):
        if res.interrupted or res.fio["exit_code"] != 0:
            break
        path, res = run_step(prep, replace(opts, output=Path(opts.output) / f"repeat-{k}", force=False))
        first[1].repeats.append(f"repeat-{k}")
        rr.write(first[0].parent, first[1])
    return path, res


@dataclass
class Prepared:
    """What every run of one selection on one target shares, resolved once before any I/O: fio, the
    inspected target (checked by replay/fio/safety.py), the plan (replay/iolog/plan.py) and how it
    maps onto the target. `iofp headroom` runs it at several time scales (`run_step`); close() when
    done."""

    fio: FioCaps
    target: Target
    plan: iolog.Plan
    mapping: iolog.Mapping  # at opts.time_scale; run_step replaces the scale

    def close(self) -> None:
        self.target.release(discard=True)  # a new file no step wrote (sized 0) is not left behind
        self.plan.close()


def prepare(trace: Trace, opts: ReplayOptions) -> Prepared:
    """Probe fio, inspect the target, resolve the plan (once), check safety and the target's size."""
    caps = installed()
    target = inspect_target(opts.target)
    plan = iolog.resolve(
        trace, opts.selection, streams=opts.streams, engine=opts.engine, iodepth=opts.iodepth
    )
    try:
        writes, allowed = plan.stats.writes_anything, opts.allow_destructive
        check_target(target, writes=writes, allow_destructive=allowed)
        hold_target(target, writes=writes, allow_destructive=allowed)  # from here on, fio gets only this
        check_target(target, writes=writes, allow_destructive=allowed)  # nothing changed before the hold
        mapping = _mapping(target, opts, plan.stats)
    except BaseException:
        target.release(discard=True)
        plan.close()
        raise
    return Prepared(caps, target, plan, mapping)


def run_step(prep: Prepared, opts: ReplayOptions) -> tuple[Path, rr.ReplayResult]:
    """One replay of the prepared plan at `opts.time_scale` into `opts.output`, recorded there whole.
    A stop signal during it stops fio and is recorded (`result.interrupted`), not raised; a failing
    fio is in `result.fio["exit_code"]`. The caller decides what either means."""
    mapping = replace(prep.mapping, time_scale=opts.time_scale)
    out = Path(opts.output).absolute()
    run = Run(opts, prep.plan, prep.target, out, prepare_output(out, opts.force), prep.fio, mapping)
    try:
        _execute(run)
    except Interrupted as e:
        _stopped(run, e)
    res = result(run)
    return rr.write(out, res), res


def _execute(run: Run) -> None:
    """Every step that writes: the target file, the iologs and job file, then capture + fio."""
    assert run.mapping is not None
    fd = run.target.fd
    assert fd is not None  # held since prepare()
    if run.target.kind == "new-file":  # sized to what the selection touches, sparse
        os.ftruncate(
            fd, max(_footprint(run.plan.stats, run.mapping), run.mapping.fold_size or 0, run.mapping.align)
        )
        run.created = True
    run.pacing = _pacing(run.opts, run.target, run.plan.streams, run.out / "calibration")
    run.conv = iolog.write(
        run.plan,
        run.out / "replay.iolog",
        run.mapping,
        force=True,
        pacing=run.pacing,
        expected_dir=run.out / "expected",
    )
    if run.created and os.fstat(fd).st_size < run.conv.report.max_end:
        os.ftruncate(fd, run.conv.report.max_end)
    run.jobs = jobs_of(run.conv.report)
    run.args = [write_job(run.out, job_file(run.plan.trace, run.jobs, redirect=run.target.fio_path))]
    run.cmd = command(run.args)
    _run_captured(run)
    _judge(run)


def _run_captured(run: Run) -> None:
    """fio on the target while iofp's capture records it; the capture always stops, fio first."""
    assert run.conv is not None
    report = run.conv.report
    t0: float | None = None
    try:
        _start_capture(run)
        t0 = time.monotonic()
        shown = Progress(report.kept, report.duration_us / 1e6, run.target.path)
        watch = run.target.name if run.target.is_block else None
        held = (run.target.fd,) if run.target.fd is not None else ()
        progress = shown if run.opts.progress else None
        fio_run = launch(run.out, run.args, progress=progress, watch=watch, fds=held)
        run.rc, run.evidence = fio_run.rc, fio_run.evidence
    finally:
        with deferred():
            run.fio_s = None if t0 is None else time.monotonic() - t0
            if run.bg is not None:
                summary = run.bg.stop()
                run.capture = summary.to_dict() if hasattr(summary, "to_dict") else dict(summary)


def _judge(run: Run) -> None:
    """iofp's figures of the run and its fidelity, from the capture."""
    if run.capture is None:
        return
    capture = open_trace(run.out / "capture")
    run.measured = measure(capture, "replay capture", comm="fio")
    assert run.conv is not None
    try:
        fid = fidmod.compare(run.conv.expected, capture, window_s=run.opts.fidelity_window_s)
        run.fidelity = {"status": "measured", "capture": run.capture} | fid.to_dict()
        if run.evidence is not None and fid.late_p50_us is not None:
            run.evidence.lateness = {
                "p50_ns": fid.late_p50_us * 1e3, "p99_ns": (fid.late_p99_us or 0) * 1e3,
                "growth_ns": None if fid.late_growth_us is None else fid.late_growth_us * 1e3,
                "source": "the fidelity check (issue time, capture vs demand)",
            }  # fmt: skip
    except IofpError as e:
        run.fidelity = {"status": "failed", "reason": str(e), "capture": run.capture}


def _stopped(run: Run, e: Interrupted) -> None:
    """After a stop signal: fio is stopped (the launcher), the capture too (_run_captured's finally)."""
    with deferred():
        ran = (
            f" ({run.fio_s:.1f} s of {run.conv.report.duration_us / 1e6:.1f} s)"
            if run.fio_s and run.conv
            else ""
        )
        step = "while fio ran" if run.fio_s is not None else "before fio started"
        run.interrupted = f"{e.name} {step}{ran}"
        if (rc := run.out / "fio.rc").is_file():
            run.rc = int(rc.read_text())  # fio's own status once it was stopped
        if run.fio_s is not None and any(not j.direct for j in run.jobs) and run.target.is_block:
            _write_back(run.target)  # what the commit jobs had buffered: now, not after iofp exits
        if run.capture is not None:
            try:
                run.measured = measure(open_trace(run.out / "capture"), "replay capture", comm="fio")
            except IofpError:  # a capture stopped before it wrote a file
                run.measured = None
        run.fidelity = {
            "status": "not judged",
            "reason": f"the run was stopped by {e.name}",
            "capture": run.capture,
        }


def _write_back(target: Target) -> None:
    if target.fd is not None:  # the held target itself, not whatever its name points to now
        os.fdatasync(target.fd)


def _signum(text: str) -> int:
    import signal

    return int(signal.Signals[text.split()[0]])


def result(run: Run) -> rr.ReplayResult:
    """The replay result contract's record of `run`, complete or partial."""
    conv = run.conv.report if run.conv else None
    opts, plan = run.opts, run.plan
    ops = conv.ops if conv else {}
    return rr.ReplayResult(
        tool_version=__version__,
        host=socket.gethostname(),
        kernel=platform.release(),
        trace=_trace_info(plan.trace),
        labels=opts.labels,
        settings=_settings(run),
        selection=plan.stats.to_dict(),
        plan=plan.to_dict(),
        conversion=conv.to_dict() if conv else {},
        target=_target_info(run),
        fio={
            "version": run.fio.version,
            "command": shlex.join(run.cmd),
            "exit_code": run.rc,
            "summary": fio_summary(_fio_doc(run.out)),
        },
        timing={
            "started": run.started.isoformat(),
            "wall_s": round(time.monotonic() - run.t0, 3),
            "fio_s": None if run.fio_s is None else round(run.fio_s, 3),
            "demanded_s": conv.duration_us / 1e6 if conv else None,
        },
        demanded=rr.Demand(
            data_ios=ops.get("read", 0) + ops.get("write", 0) + ops.get("trim", 0),
            syncs=ops.get("sync", 0) + ops.get("datasync", 0),
            bytes=conv.bytes if conv else 0,
            span_s=conv.duration_us / 1e6 if conv else 0.0,
        ),
        measured=run.measured,
        fidelity=run.fidelity,
        host_evidence=run.evidence,
        artifacts=sorted(
            p.name for p in run.out.iterdir() if p.name not in run.foreign and p.name != rr.RECORD
        ),
        status="partial" if run.interrupted else "complete",
        interrupted=run.interrupted,
    )


def _fio_doc(out: Path) -> dict[str, Any] | None:
    f = out / "fio.json"  # the launcher's trimmed JSON, kept also when fio was stopped
    return json.loads(f.read_text()) if f.is_file() else None


def _trace_info(trace: Trace) -> dict[str, Any]:
    m = trace.meta
    return {
        "path": trace.where,
        "source": m.source,
        "host": m.host,
        "capture_start_ns": m.capture_start_ns,
        "labels": m.labels,
    }


def _settings(run: Run) -> dict[str, Any]:
    opts, m = run.opts, run.mapping
    return {
        "selection": opts.selection.to_dict(),
        "engine": opts.engine,
        "iodepth": opts.iodepth,
        "streams": run.plan.streams.mode,
        "jobs": [asdict(j) | {"iolog": j.iolog.name} for j in run.jobs],
        "pace": opts.pace,
        "pacing": run.pacing.to_dict() if run.pacing else None,
        "time_scale": opts.time_scale,
        "align": m.align if m else None,
        "fold_size": m.fold_size if m else None,
        "allow_destructive": opts.allow_destructive,
        "chunked": any(j.chunked for j in run.jobs),
    }


def _target_info(run: Run) -> dict[str, Any]:
    t = run.target
    return {
        "path": str(t.path),
        "kind": "file" if run.created else t.kind,
        "created": run.created,
        "size_bytes": os.fstat(t.fd).st_size if run.created and t.fd is not None else t.size,
        "name": t.name,
        "logical_block_size": t.logical_block_size,
        "device_facts": device_facts(t.name) if t.name else {},
    }


def prepare_output(out: Path, force: bool) -> set[str]:
    """Make `out` ready for this run; returns the names in it that are not replay artifacts (kept as
    they are, and not listed as this run's). With --force a previous run's artifacts are removed first:
    left in place, another stream count's logs would sit next to this run's and be listed as its own."""
    check_own_dir(out, "the results")
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force:
            raise BadInput(f"{out} already exists and is not empty; pass --force or choose another --output")
        if not out.is_dir():
            raise BadInput(f"{out} is a file; choose another --output")
        return clear_artifacts(out)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot write the results to {out}: {e.strerror}") from None
    check_own_dir(out, "the results")  # made by another user in the moment since the check: refused, not used
    return set()


def _mapping(target: Target, opts: ReplayOptions, stats: iolog.SelectionStats) -> iolog.Mapping:
    """How the selection lands on the target, checked against its size."""
    fold_size = _fold_size(target, opts)
    mapping = iolog.Mapping(
        target=str(target.path),
        fold_size=fold_size,
        align=target.logical_block_size if opts.align is None else opts.align,
        time_scale=opts.time_scale,
        trim=installed().iolog_trim and target.is_block,
    )
    mapping.check()
    needed = stats.max_end if iolog.fold_modulus(stats, mapping) is None else 0
    check_target_size(target, -(-needed // mapping.align) * mapping.align, folded=fold_size is not None)
    return mapping


def _fold_size(target: Target, opts: ReplayOptions) -> int | None:
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
    """One fio job of a replay: one stream's iolog (replay/iolog/streams.py)."""

    name: str
    iolog: Path
    engine: str
    iodepth: int
    direct: bool = True
    chunked: bool = False


def jobs_of(report: iolog.ConvertReport) -> list[JobSpec]:
    """One fio job per stream the conversion wrote I/Os for."""
    return [
        JobSpec(
            s["name"], Path(s["iolog"]), s["engine"], s["iodepth"], s["direct"], s["kept"] > CHUNKED_ABOVE
        )
        for s in report.streams
        if s["kept"] > 0
    ]


def job_file(trace: Trace, jobs: list[JobSpec], *, redirect: str | None = None, per_job: bool = False) -> str:
    """One job per stream, all in one fio run, all started together; group_reporting sums them
    (`per_job`: fio reports each job on its own and ignores the logs' times, for the replayer's
    ceiling, replay/headroom/ceiling.py). `redirect`: what fio opens in place of the file the logs
    name (the held target, /dev/fd/N: resolved and checked once, so nothing swapped in is written)."""
    f = JobFile().comment(f"written by iofp {__version__} to replay {trace.where}", width=1000)
    f.comment("the target is named inside each iolog; see results.json for the settings and why each job")
    f.section("global").set("direct", 1).set("replay_no_stall" if per_job else "group_reporting", 1)
    if redirect is not None:
        f.path("replay_redirect", redirect)
    for j in jobs:
        f.blank().section(j.name).set("ioengine", j.engine).set("iodepth", j.iodepth)
        f.path("read_iolog", j.iolog)
        if not j.direct:
            f.set("direct", 0)  # a commit job: buffered writes its sync call writes back
        if j.chunked:
            f.set("read_iolog_chunked", 1)
    return f.text()


def _footprint(stats: iolog.SelectionStats, mapping: iolog.Mapping) -> int:
    m = iolog.fold_modulus(stats, mapping)
    return stats.max_end if m is None else m + stats.max_size


def _pacing(
    opts: ReplayOptions, target: Target, plan: iolog.StreamPlan, workdir: Path
) -> iolog.Pacing:
    spec = iolog.PaceSpec.parse(opts.pace)
    engines = sorted({s.engine for s in plan.streams})
    if spec.mode in ("off", "absolute"):
        return iolog.Pacing(mode=spec.mode)
    if spec.mode == "fixed":
        return iolog.Pacing(mode="fixed", overhead_ns=dict.fromkeys(engines, spec.overhead_ns))
    biggest = max(plan.streams, key=lambda s: s.ios)
    size = target.size or (os.fstat(target.fd).st_size if target.fd is not None else 0)
    gap = iolog.calibration_gap_ns(biggest.median_gap_ns)
    held = (target.fd,) if target.fd is not None else ()
    return iolog.calibrate(target.path, size, engines, gap, workdir, redirect=target.fio_path, fds=held)


def _start_capture(run: Run) -> Any:
    """iofp's capture of the target (None, with the reason recorded, when it cannot be measured)."""
    if not run.opts.fidelity:
        run.fidelity = {"status": "not measured", "reason": "--no-fidelity"}
        return None
    if not run.target.is_block:
        run.fidelity = {
            "status": "not measured",
            "reason": "the target is a regular file; fidelity is measured on block-device targets only",
        }
        return None
    try:
        import bpf
    except ImportError:
        run.fidelity = {
            "status": "not measured",
            "reason": "this iofp has no capture API (bpf.start_capture)",
        }
        return None
    opts = bpf.CaptureOptions(
        output=run.out / "capture", devices=[run.target.name], labels=dict(run.opts.labels), force=True
    )
    try:
        with deferred():  # a signal mid-start would leave the capture thread running
            run.bg = bpf.start_capture(opts)
    except MissingCapability as e:
        run.fidelity = {"status": "not measured", "reason": f"capture unavailable: {e}"}


def default_output(target: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"{Path(target).name}-{stamp}"


__all__ = [
    "JobSpec", "Prepared", "ReplayOptions", "default_output", "job_file", "jobs_of", "prepare",
    "prepare_output", "replay", "result", "run_step",
]  # fmt: skip
