"""`iofp probe`: the four-cell table and the queue-depth sweep of one target, every fio run kept.

Order matters for safety, as in replay: the options, the fingerprint (--like), the target and the
output directory are all checked before the first I/O; a probe that writes (seq writes, commits,
preconditioning) passes replay's safety checks (replay/fio/safety.py) or is refused whole. The runs
(replay/probe/plan.py) then go one after the other; after each, the record (iofp/probe_result.py)
is written whole, so a probe stopped by SIGINT, SIGTERM or SIGHUP (replay/fio/interrupt.py; fio
stopped first) or by a failing run keeps every run done so far as a valid partial result that says
it is one.
"""

from __future__ import annotations

import os
import platform
import socket
import time
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path

from iofp import __version__
from iofp import probe_result as pr
from iofp.contract import device_facts
from iofp.errors import BadInput, Refused
from replay.fio import OVERRIDE as REPLAY_OVERRIDE
from replay.fio import (
    FioCaps,
    Interrupted,
    Target,
    check_target,
    deferred,
    hold_target,
    inspect_target,
    installed,
    prepare_dir,
    trap,
)
from replay.probe import fio_run as probe_fio
from replay.probe import knee as probe_knee
from replay.probe import like as probe_like
from replay.probe import steady as probe_steady
from replay.probe.capture import CommitCapture
from replay.probe.plan import MIN_PROBED, SEQ_BS, TAIL_LOAD, ProbeOptions, RunSpec, plan, size_text

Note = Callable[[str], None]
OVERRIDE = "pass --allow-destructive to probe it with writes"
TAIL_MISS = 0.05  # a tail run off its rate by more than this did not load the device as asked


def probe(
    opts: ProbeOptions, like: Path | None = None, note: Note | None = None
) -> tuple[Path, pr.ProbeResult]:
    """Run the probe; returns (probe.json path, result). An interrupted probe returns its partial
    result with `interrupted` set; a failing fio run raises after the partial result is written."""
    opts.check()
    work = probe_like.from_fingerprint(probe_like.load(like), str(like)) if like else probe_like.defaults()
    caps = installed()
    target = inspect_target(opts.target)
    probed = _check_target(target, opts)
    probe_like.fit_to_block(work, target.logical_block_size)
    specs = plan(opts, work)
    hold_target(target, writes=opts.writes, allow_destructive=opts.allow_destructive)  # fio gets only this
    try:
        _check_target(target, opts)  # nothing changed before the hold
        out = prepare_output(Path(opts.output).absolute(), opts.force)
        if target.made:
            _lay_out(target, probed)
    except BaseException:
        target.release(discard=True)
        raise
    try:
        return _probe(opts, caps, work, target, probed, specs, out, note)
    finally:
        target.release()


def _probe(
    opts: ProbeOptions, caps: FioCaps, work: pr.Workload, target: Target, probed: int, specs: list[RunSpec],
    out: Path, note: Note | None,
) -> tuple[Path, pr.ProbeResult]:  # fmt: skip
    result = pr.ProbeResult(
        kind=pr.KIND, version=pr.VERSION, tool_version=__version__, fio_version=caps.version,
        host=socket.gethostname(), kernel=platform.release(), started=datetime.now(UTC).isoformat(),
        target=_target_record(target, probed), labels=dict(opts.labels), settings=_settings(opts),
        workload=work, runs_planned=len(specs),
    )  # fmt: skip
    capture = CommitCapture(out / pr.CAPTURE_DIR, target, opts.labels)
    t0 = time.monotonic()
    with trap():  # also over the cleanup: a second signal is remembered, not obeyed
        try:
            _run_all(specs, result, target, probed, out, capture, note or (lambda s: None))
        except Interrupted as e:
            result.interrupted = e.name
        except KeyboardInterrupt:  # outside the main thread, where trap() cannot install its handlers
            result.interrupted = "SIGINT"
        finally:
            capture.stop()
            capture.fill(result.runs)
            result.capture = capture.status
            result.wall_s = round(time.monotonic() - t0, 3)
            _finish(result)
            path = pr.write(out, result)
    return path, result


def _run_all(
    specs: list[RunSpec], result: pr.ProbeResult, target: Target, probed: int, out: Path,
    capture: CommitCapture, note: Note,
) -> None:  # fmt: skip
    for i, spec in enumerate(specs, 1):
        if spec.kind == "tail":
            _aim_tail(spec, result)
        if spec.kind == "commit" and capture.status["status"] == "not started":
            with deferred():  # a signal mid-start would leave the capture thread unstopped
                capture.start()
        note(f"[{i}/{len(specs)}] {spec.label}")
        run = probe_fio.run(spec, target, probed, out / pr.RUNS_DIR / spec.name, f"{pr.RUNS_DIR}/{spec.name}")
        if spec.runtime_s is not None:
            series = probe_steady.iops_series(out / run.dir)
            run.steady = probe_steady.judge(series, probe_fio.log_window_ms(spec) / 1000)
        result.runs.append(run)
        if spec.cell is not None:
            result.cells.append(pr.Cell(spec.cell, spec.label, run.name))
        if spec.sweep and run.fio is not None:
            f = run.fio
            result.sweep = probe_knee.sweep(
                spec.block_size,
                [*(result.sweep.points if result.sweep else []),
                 pr.SweepPoint(spec.iodepth, run.name, f.iops, f.p50_us, f.p99_us, f.p99_9_us)],
            )  # fmt: skip
        pr.write(out, result)
        if spec.kind == "commit" and not any(s.kind == "commit" for s in specs[i:]):
            capture.stop()


def _aim_tail(spec: RunSpec, result: pr.ProbeResult) -> None:
    """Cell 4's rate: TAIL_LOAD of the most IOPS the random-read runs reached, at their depth."""
    best = max((r for r in result.runs if r.kind == "randread" and r.fio), key=lambda r: r.fio.iops)  # type: ignore[union-attr]
    assert best.fio is not None
    spec.rate_iops = max(1, round(TAIL_LOAD * best.fio.iops))
    spec.iodepth = best.iodepth
    spec.label += f" QD{best.iodepth}"
    result.tail = pr.Tail(best.fio.iops, best.name, TAIL_LOAD, spec.rate_iops)


def _finish(result: pr.ProbeResult) -> None:
    result.complete = result.interrupted is None and len(result.runs) == result.runs_planned
    unsteady = [r for r in result.runs if r.steady is not None and r.steady.verdict != "steady"]
    if unsteady:
        fix = (
            " or precondition (--precondition fill)" if result.settings.get("precondition") == "none" else ""
        )
        listed = ", ".join(f"{r.name} ({_unsteady(r.steady)})" for r in unsteady if r.steady)
        result.warnings.append(
            f"not steady by the SNIA rule on fio's IOPS log (last {probe_steady.STEADY_WINDOWS} windows: "
            f"range <= 20% and slope <= 10% of the mean): {listed}; their figures average a changing "
            f"rate: run longer (--runtime){fix}"
        )
    for run in result.runs:
        if (
            run.kind == "tail"
            and run.fio
            and run.rate_iops
            and abs(run.fio.iops / run.rate_iops - 1) > TAIL_MISS
        ):
            result.warnings.append(
                f"{run.name}: ran at {run.fio.iops:,.0f} IOPS for the {run.rate_iops:,} asked "
                f"({run.fio.iops / run.rate_iops:.0%}): the load was not {TAIL_LOAD:.0%} of max"
            )
    if any(r.kind == "commit" for r in result.runs) and result.capture.get("status") != "measured":
        result.warnings.append(f"commit figures not measured: {result.capture.get('reason', 'no capture')}")


def _unsteady(st: pr.Steadiness) -> str:
    if st.last_range_share is None:
        return f"{st.verdict}: {st.reason}"
    return f"range {st.last_range_share:.0%}, slope {st.last_slope_share or 0:.0%}"


LAYOUT_CHUNK = 1 << 20


def _lay_out(target: Target, size: int) -> None:
    """Write a new file to `size` through the held descriptor, as fio lays out a file it makes: fio is
    given /dev/fd/N, and to lay out a file shorter than its job it unlinks it first, which it cannot
    do to /dev/fd/N ("unlink: Operation not permitted": every probe of a new file failed). Written,
    not sparse, so the read cells read blocks the file system holds, not holes."""
    assert target.fd is not None
    block = os.urandom(LAYOUT_CHUNK)  # not zeros: a device that compresses or skips zeros is not measured
    try:
        for off in range(0, size, LAYOUT_CHUNK):
            os.pwrite(target.fd, block[: min(LAYOUT_CHUNK, size - off)], off)
        os.fsync(target.fd)
    except OSError as e:
        os.ftruncate(target.fd, 0)  # empty again: released with discard, the file is removed
        raise BadInput(f"{target.path}: could not make it {size_text(size)} ({e.strerror}); "
                       "free space there or pass a smaller --size") from None  # fmt: skip


def _check_target(target: Target, opts: ProbeOptions) -> int:
    """The bytes the probe will use (a whole number of MiB from offset 0); refuses unsafe writes."""
    if opts.writes:
        try:
            check_target(target, writes=True, allow_destructive=opts.allow_destructive)
        except Refused as e:
            msg = str(e).replace(REPLAY_OVERRIDE, OVERRIDE)
            raise Refused(msg if "--reads-only" in msg else f"{msg}, or pass --reads-only") from None
    size = target.size or 0
    if not size:
        if not opts.writes:
            raise BadInput(f"{target.path} is empty or does not exist; a reads-only probe needs data to read")
        if opts.size is None:
            raise BadInput(f"{target.path} is empty or does not exist; pass --size to make it that large")
    elif opts.size is not None and opts.size > size:
        raise BadInput(f"--size {opts.size}: {target.path} has only {size} bytes; pass at most that")
    probed = (opts.size or size) // SEQ_BS * SEQ_BS
    if probed < MIN_PROBED:
        raise BadInput(
            f"{target.path}: {size_text(probed)} usable; the probe needs at least {size_text(MIN_PROBED)}"
        )
    return probed


ARTIFACTS = (pr.RECORD, pr.RUNS_DIR, pr.CAPTURE_DIR)  # what a probe writes in its directory


def prepare_output(out: Path, force: bool) -> Path:
    """Make `out` ready: refused when it holds anything unless --force, which removes a previous
    probe's artifacts (and only those)."""
    return prepare_dir(out, force, ARTIFACTS, "the probe's results")


def _target_record(target: Target, probed: int) -> pr.Target:
    return pr.Target(
        path=str(target.path), kind=target.kind, name=target.name, size_bytes=target.size,
        probed_bytes=probed, logical_block_size=target.logical_block_size,
        device_facts=device_facts(target.name) if target.name else {},
    )  # fmt: skip


def _settings(opts: ProbeOptions) -> dict[str, object]:
    return {
        "cells": list(opts.cells), "qd": opts.depths, "runtime_s": opts.runtime_s, "quick": opts.quick,
        "reads_only": opts.reads_only, "precondition": opts.precondition, "tail_load": TAIL_LOAD,
        "allow_destructive": opts.allow_destructive,
    }  # fmt: skip


def default_output(target: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"probe-{Path(target).name}-{stamp}"


__all__ = ["ARTIFACTS", "ProbeOptions", "default_output", "prepare_output", "probe"]
