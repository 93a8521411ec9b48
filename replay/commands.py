"""CLI commands of the replay stage: `iofp iolog`, `iofp replay`, `iofp compare` (and `iofp probe`).

`iolog` and `replay` take the same selection and mapping options (`selection_options`: one list,
declared once); each command body validates, makes one library call and renders.
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

import typer

from iofp.errors import BadInput
from iofp.output import JSON_HELP, echo, emit_json, json_target, shell_command
from iofp.slo import HELP as slo_help
from iofp.values import parse_labels, parse_size_bytes
from iofp.windows import DEFAULT_WINDOW, between_seconds, parse_window_option

if TYPE_CHECKING:
    from replay.iolog import Selection


@dataclass
class SelectionArgs:
    """The options iolog and replay share: what to replay and how it maps onto the target."""

    device: str | None
    between: tuple[str, str] | None
    regime: str | None
    window: str | None
    time_scale: float
    target_size: str | None
    align: str | None
    reads_only: bool
    force: bool

    @property
    def target_bytes(self) -> int | None:
        return None if self.target_size is None else parse_size_bytes(self.target_size, "--target-size")

    @property
    def align_bytes(self) -> int | None:
        return None if self.align is None else parse_size_bytes(self.align, "--align", "4KiB or 512")

    def selection(self) -> Selection:
        from replay.iolog import Selection

        window_ns = parse_window_option(self.window)
        if self.window is not None and self.regime is None:  # --between and the whole trace have no windows
            raise BadInput(
                f"--window {self.window} is the width of --regime's windows; add --regime steady or "
                "--regime spike, or leave --window out"
            )
        between = None
        if self.between:
            t1, t2 = self.between
            a, b = between_seconds(t1), between_seconds(t2)
            if a is None or b is None:
                raise BadInput(
                    f"--between {t1} {t2}: give seconds from the trace's start, e.g. --between 30 90 or "
                    "30s 1.5m (iofp fingerprint also takes HH:MM:SS)"
                )
            between = (a, b)
        sel = Selection(self.device, between, self.regime, self.reads_only, window_ns)
        sel.check()
        return sel


_WINDOW_HELP = (
    f"Width of --regime's windows, as for iofp fingerprint (default {DEFAULT_WINDOW}, the fingerprint's "
    "rule; at least 1ms): pass the fingerprint's --window, if it had one, to select the windows it names."
)
_SHARED: dict[str, tuple[Any, Any]] = {
    "device": (
        str | None,
        typer.Option(None, "--device", help="Replay only this device of the trace (default: all of them)."),
    ),
    "between": (
        tuple[str, str] | None,
        typer.Option(
            None,
            "--between",
            help="Only I/Os issued in [T1, T2) on the trace's clock: seconds, or durations (30s, 1.5m).",
            metavar="T1 T2",
        ),
    ),
    "regime": (
        str | None,
        typer.Option(
            None,
            "--regime",
            help="spike: the fingerprint's rank-1 (biggest) spike; steady: the longest steady-state run; "
            "baseline: the longest run of windows in no spike.",
        ),
    ),
    # None, not the default itself, so that a --window with no --regime to use it can be told from none.
    "window": (str | None, typer.Option(None, "--window", help=_WINDOW_HELP)),
    "time_scale": (
        float,
        typer.Option(1.0, "--time-scale", help="Replay X times as fast (0.5 = half speed).", metavar="X"),
    ),
    "target_size": (
        str | None,
        typer.Option(
            None, "--target-size", help="Fold offsets into the first SIZE of the target (256MiB, 1GiB)."
        ),
    ),
    "align": (
        str | None,
        typer.Option(
            None,
            "--align",
            help="Round offsets down and sizes up to this (4KiB; default: the target's logical block size, "
            "or 512 bytes).",
        ),
    ),
    "reads_only": (
        bool,
        typer.Option(False, "--reads-only", help="Replay reads alone (always allowed on any target)."),
    ),
    "force": (bool, typer.Option(False, "--force", help="Overwrite an existing output.")),
}


@dataclass
class RunArgs:
    """The options replay and headroom share: the target, and how fio replays the plan on it."""

    target: Path
    fold: bool
    iodepth: int | None
    engine: str
    streams: str | None
    pace: str
    label: list[str]
    allow_destructive: bool


_RUN: dict[str, tuple[Any, Any]] = {
    "target": (
        Path,
        typer.Option(
            ...,
            "--target",
            help="Block device, or a new regular file (an existing one only with --allow-destructive).",
        ),
    ),
    "fold": (
        bool,
        typer.Option(False, "--fold", help="Fold offsets into the whole target when it is too small."),
    ),
    "iodepth": (
        int | None,
        typer.Option(
            None,
            "--iodepth",
            help="Every data job's queue depth (default: each stream's own peak in flight).",
        ),
    ),
    "engine": (
        str,
        typer.Option(
            "auto",
            "--engine",
            help="fio ioengine of the data jobs: auto (psync at QD1 for a stream that never had two I/Os "
            "in flight, as its submitter issued them; libaio at its peak in-flight for the others), "
            "libaio, io_uring, psync or pvsync2. Commit jobs are always psync.",
        ),
    ),
    "streams": (
        str | None,
        typer.Option(
            None,
            "--streams",
            help="pid: one fio job per submitting process (top 8 by I/Os, the rest in one), so one "
            "process's fsyncs do not stall the others; single: one job. Default: pid when the "
            "selection has more than one pid. Commit jobs come on top either way.",
        ),
    ),
    "pace": (
        str,
        typer.Option(
            "absolute",
            "--pace",
            help="absolute: a version 2 log with a `wait` per millisecond, fio 3.33's only absolute "
            "clock: no drift (duration and per-second IOPS exact), but each I/O lands within ~1 ms of its "
            "time and a millisecond's I/Os go back to back; auto: a v3 log keeping sub-ms gaps, with "
            "fio's per-I/O overhead measured on the target first (~1.5 s of reads) and pre-paid "
            "(drifted +0.4% to +4.4% here); off: the trace's own gaps; or a fixed overhead, e.g. 20us.",
        ),
    ),
    "label": (
        list[str],
        typer.Option([], "--label", help="name=value recorded with the result (repeatable)."),
    ),
    "allow_destructive": (
        bool,
        typer.Option(
            False,
            "--allow-destructive",
            help="Write even to a device that is mounted, partitioned or formatted, or over an existing "
            "file.",
        ),
    ),
}


def _shared_options(
    options: dict[str, tuple[Any, Any]], make: Callable[..., Any], arg: str, without: tuple[str, ...] = ()
) -> Callable[[Callable[..., Any]], Callable[..., Any]]:
    """A decorator adding `options` (less `without`, which keep their defaults) to a command; it
    receives them as one `arg` built by `make`. Declared once, so commands cannot drift apart."""
    names = [n for n in options if n not in without]

    def decorate(fn: Callable[..., Any]) -> Callable[..., Any]:
        sig = inspect.signature(fn)
        own = [p for p in sig.parameters.values() if p.name != arg]
        added = [
            inspect.Parameter(
                n, inspect.Parameter.KEYWORD_ONLY, default=options[n][1], annotation=options[n][0]
            )
            for n in names
        ]

        @functools.wraps(fn)
        def command(**kw: Any) -> Any:
            return fn(**{arg: make(**{n: kw.pop(n) for n in names})}, **kw)

        command.__signature__ = sig.replace(parameters=[*own, *added])  # type: ignore[attr-defined]
        command.__annotations__ = {k: v for k, v in fn.__annotations__.items() if k != arg} | {
            n: options[n][0] for n in names
        }
        return command

    return decorate


def selection_options(
    fn: Callable[..., Any] | None = None, *, without: tuple[str, ...] = ()
) -> Callable[..., Any]:
    """Add the selection and mapping options to a command; it receives them as `args: SelectionArgs`.
    `without=("time_scale",)` for a command that chooses the scale itself (headroom)."""
    decorate = _shared_options(_SHARED, functools.partial(_selection_args), "args", without)
    return decorate if fn is None else decorate(fn)


def _selection_args(**kw: Any) -> SelectionArgs:
    return SelectionArgs(**({"time_scale": 1.0} | kw))


def run_options(fn: Callable[..., Any]) -> Callable[..., Any]:
    """Add the target and fio options replay and headroom share; the command receives `run: RunArgs`."""
    return _shared_options(_RUN, RunArgs, "run")(fn)


@selection_options
def iolog_cmd(
    args: SelectionArgs,
    trace: Path = typer.Argument(..., help="An iofp trace directory (from `iofp capture` or `iofp import`)."),
    output: Path = typer.Option(..., "-o", "--output", help="The iolog file to write."),
    target: str | None = typer.Option(
        None, "--target", help="The file name the log uses (default /dev/DEVICE)."
    ),
    streams: str = typer.Option(
        "single",
        "--streams",
        help="single: one log; pid: one log per submitting pid (top 8, the rest in one), "
        "written as OUT.0.iolog, OUT.1.iolog, ... (replay each as its own fio job). A process whose "
        "sync calls forced writes gets a commit log of its own either way (buffered: fio's direct=0).",
    ),
    pace: str = typer.Option(
        "off",
        "--pace",
        help="off; absolute (a version 2 log with a `wait` per millisecond: fio's only absolute clock, "
        "no drift, 1 ms resolution; the first I/O goes 0.5 s after fio starts); or fio's per-I/O "
        "overhead to pre-pay in a v3 log, e.g. 20us (see iofp replay).",
    ),
    json_out: str | None = typer.Option(None, "--json", help=JSON_HELP),
) -> None:
    """Write a fio iolog of a trace selection that fio 3.33 replays as written."""
    from iofp.contract import open_trace
    from replay import iolog

    json_target(json_out, force=args.force)
    mapping, pacing = iolog.cli_mapping(
        target, args.target_bytes, args.align_bytes, args.time_scale, streams, pace
    )
    report = iolog.convert(
        open_trace(trace), output, args.selection(), mapping, force=args.force, streams=streams, pacing=pacing
    )
    echo(report.summary(), json_out)
    if (path := emit_json(json_out, report.to_dict(), force=args.force)) is not None:
        echo(f"Wrote {path}.", json_out)
    logs = ", ".join(s["iolog"] for s in report.streams)
    if report.target.startswith("/dev/") and not Path(report.target).exists():
        # the log may travel to another machine's device, but an import's device is named after its
        # file: /dev/linux-mysql is nothing fio can open anywhere (a file fio creates itself)
        echo(f"note: the log names {report.target}, which is no device here; on the machine that "
             "replays it, pass --target with the device or file fio should use", json_out)  # fmt: skip
    echo(f"Wrote {logs}. Next: {iolog.fio_command(report)}", json_out)


@selection_options
@run_options
def replay_cmd(
    args: SelectionArgs,
    run: RunArgs,
    trace: Path = typer.Argument(..., help="An iofp trace directory."),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Results directory (default results/TARGET-TIME)."
    ),
    no_fidelity: bool = typer.Option(
        False, "--no-fidelity", help="Do not capture the target during the replay."
    ),
) -> None:
    """Replay a trace selection on a candidate device with fio, capture it, and judge its fidelity.

    SIGINT, SIGTERM or SIGHUP stop fio and all its jobs first, record the run as partial in
    results.json and exit 128 + the signal's number.
    """
    from iofp.contract import open_trace
    from replay import run as runner

    opts = replay_options(args, run, output or runner.default_output(run.target))
    opts.fidelity = not no_fidelity
    path, res = runner.replay(open_trace(trace), opts)
    typer.echo(runner.replay_summary(res))
    typer.echo(f"Wrote {path}. Next: {shell_command('iofp', 'compare', path.parent)}")


def replay_options(args: SelectionArgs, run: RunArgs, output: Path) -> Any:
    """The shared options as the runner's ReplayOptions (the one place they are put together)."""
    from replay import run as runner

    return runner.ReplayOptions(
        run.target, output, args.selection(), args.time_scale, args.target_bytes, run.fold, args.align_bytes,
        run.iodepth, run.engine, run.streams, run.pace, parse_labels(run.label), run.allow_destructive,
        True, args.force,
    )  # fmt: skip


@selection_options(without=("time_scale",))
@run_options
def headroom_cmd(
    args: SelectionArgs,
    run: RunArgs,
    trace: Path = typer.Argument(..., help="An iofp trace directory."),
    slo: str = typer.Option(
        ..., "--slo", metavar="TERMS", help="The service level every step must hold. " + slo_help
    ),
    scales: str = typer.Option(
        "1,1.5,2,3,4",
        "--scales",
        help="Time scales to climb (1 = today's rate); past the last, doubling up to --max-scale.",
    ),
    max_scale: float = typer.Option(32.0, "--max-scale", help="The highest scale to try."),
    precision: str = typer.Option(
        "5%", "--precision", help="Bisect between the last pass and the first failure until this close."
    ),
    budget: int = typer.Option(12, "--budget", help="At most this many replay steps in all."),
    output: Path | None = typer.Option(
        None, "-o", "--output", help="Results directory (default results/headroom-TARGET-TIME)."
    ),
    json_out: str | None = typer.Option(None, "--json", metavar="FILE|-", help=JSON_HELP),
) -> None:
    """Replay the selection at rising load until the SLO breaks or the rate is not kept, then bisect:
    how many times today's load the target holds, and whether the device or the replayer gave out."""
    import signal

    from iofp.contract import open_trace
    from iofp.slo import parse as parse_slo
    from replay import headroom
    from replay.fio import Stopped

    opts = headroom.HeadroomOptions(
        replay_options(args, run, output or headroom.default_output(run.target)), parse_slo(slo),
        headroom.parse_scales(scales), max_scale, headroom.parse_precision(precision), budget,
    )  # fmt: skip
    json_target(json_out, force=args.force)
    path, res = headroom.headroom(open_trace(trace), opts, note=lambda s: typer.echo(s, err=True))
    echo(headroom.summary(res), json_out)
    emit_json(json_out, res.to_dict(), force=args.force)
    if res.interrupted:
        raise Stopped(headroom.stopped_line(res), signal.Signals[res.interrupted])
    compare = shell_command("iofp", "compare", path.parent)
    echo(f"Wrote {path}; each step's replay is under steps/. Next: {compare}", json_out)


def compare_cmd(
    results_dirs: list[Path] = typer.Argument(
        ...,
        help="Results directories written by `iofp replay`, `iofp headroom` (ranked by their factor) or "
        "`iofp probe` (its cells beside the candidate of the same --label device=...).",
    ),
    slo: list[str] = typer.Option(
        [], "--slo", help=slo_help + " iofp compare exits 1 when a candidate misses it (for cron and CI)."
    ),
    baseline: Path | None = typer.Option(
        None,
        "--baseline",
        help="The original trace: its own captured figures over the replays' selection become the "
        "first column (shown, not judged).",
    ),
    fmt: str = typer.Option("table", "--format", help="table or markdown."),
    json_out: str | None = typer.Option(None, "--json", help=JSON_HELP),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --json file."),
) -> None:
    """Compare candidate devices from their replay results: rates, latency, commits, fidelity, SLO;
    with headroom results, ranked by headroom; with probe results, their cells beside.

    Exit status: 0 when every candidate meets the SLO (or none is given), 1 when a candidate misses
    it, 2 for bad input.
    """
    from iofp import slo as slomod
    from replay import compare

    if fmt not in ("table", "markdown"):
        raise BadInput(
            f"--format {fmt}: choose table or markdown" + (" (JSON: --json -)" if fmt == "json" else "")
        )
    json_target(json_out, force=force)
    cmp = compare.compare(results_dirs, slomod.parse(slo), baseline)
    echo(compare.render(cmp, fmt).rstrip("\n"), json_out)
    if (path := emit_json(json_out, None, force=force, text=compare.render(cmp, "json") + "\n")) is not None:
        echo(f"Wrote {path}.", json_out)
    if cmp.failed:
        raise typer.Exit(1)


def fio_job_cmd(
    fp_path: Path = typer.Argument(..., metavar="FP.json", help="A fingerprint (iofp fingerprint --json)."),
    regime: str = typer.Option(
        "whole",
        "--regime",
        help="whole, steady, baseline, spike, or phases (steady, the spike for its length, steady again).",
    ),
    runtime: str = typer.Option("60s", "--runtime", help="How long the job runs (e.g. 90s, 5m)."),
    size: str | None = typer.Option(
        None,
        "--size",
        help="Spread the I/O over the first BYTES of the target, e.g. 1GiB (default: fitted so the job "
        "touches the trace's footprint).",
        metavar="BYTES",
    ),
    streams: str = typer.Option("single", "--streams", help="single, or pid: one job per top process."),
    out: Path | None = typer.Option(
        None, "-o", "--output", help="The job file to write (default, or -: stdout)."
    ),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing job file."),
) -> None:
    """Write a plain fio job file with a fingerprint's demand (rates, mix, sizes, sequential share,
    footprint and skew, depth, commits, burstiness), and list what fio cannot express.

    Example: iofp fio-job mysql.fp.json --regime whole --runtime 90s -o mysql.fio
    """
    from fingerprint.api import read_json
    from iofp.contract import check_output_file
    from iofp.values import parse_duration_ns, parse_size_bytes
    from replay import fiojob

    if out is not None and str(out) == "-":  # as --json - is stdout everywhere (it wrote a file named -)
        out = None
    if out is not None:
        check_output_file(out, force=force)
    opts = fiojob.JobOptions(regime, parse_duration_ns(runtime, "--runtime") / 1e9,
                             parse_size_bytes(size, "--size") if size else None, streams)  # fmt: skip
    job = fiojob.plan(read_json(fp_path), opts)
    fiojob.write(job, out, force=force)


EXAMPLES = {
    "iolog": "Example: iofp iolog traces/mysql -o mysql.iolog --regime spike --target /dev/loop3 "
    "--target-size 256MiB",
    "replay": "Example: iofp replay traces/mysql --target /dev/loop3 --regime spike --fold "
    "--label device=ram-loop",
    "headroom": "Example: iofp headroom samples/traces/market-open --regime spike --target /dev/loop3 "
    "--slo 'p99<=2ms,commit.p99<=1ms' --label device=ram-loop -o results/headroom-ram",
    "compare": "Example: iofp compare results/loop3-20261122-101500 results/loop4-20261122-102000 "
    "--baseline traces/mysql --slo 'p99<=2ms,fsync.p99<=1ms'",
}


def register(app: typer.Typer) -> None:
    app.command("iolog", epilog=EXAMPLES["iolog"])(iolog_cmd)
    app.command("replay", epilog=EXAMPLES["replay"])(replay_cmd)
    app.command("headroom", epilog=EXAMPLES["headroom"])(headroom_cmd)
    app.command("compare", epilog=EXAMPLES["compare"])(compare_cmd)
    app.command("fio-job")(fio_job_cmd)
    from replay import probe  # `iofp probe` (replay/probe/)

    probe.register(app)
