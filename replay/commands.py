"""CLI commands of the replay stage: `iofp iolog`, `iofp replay`, `iofp compare` (and `iofp probe`).

`iolog`, `replay` and `headroom` take the same selection and mapping options, declared once in
replay/options.py; each command body validates, makes one library call and renders.
"""

from __future__ import annotations

from pathlib import Path

import typer

from iofp.errors import BadInput
from iofp.output import echo, emit_json, force_option, json_option, json_target, shell_command
from iofp.slo import HELP as slo_help
from replay.options import RunArgs, SelectionArgs, replay_options, run_options, selection_options


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
    json_out: str | None = json_option(),
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
    doc = {**report.to_dict(), "fio_command": iolog.fio_command(report)}  # fio alone: no safety checks
    if (path := emit_json(json_out, doc, force=args.force)) is not None:
        echo(f"Wrote {path}.", json_out)
    logs = ", ".join(s["iolog"] for s in report.streams)
    if iolog.names_no_target(report):
        note = (f"note: no --target: the log names {report.target}, which fio cannot open (the trace's "
                "device is where it was recorded, not where to write); replay it onto a scratch device "
                "with iofp replay, or write it again with --target")  # fmt: skip
        echo(note, json_out)
    elif report.target.startswith("/dev/") and not Path(report.target).exists():
        # the log may travel to another machine's device, but an import's device is named after its
        # file: /dev/linux-mysql is nothing fio can open anywhere (a file fio creates itself)
        echo(f"note: the log names {report.target}, which is no device here; on the machine that "
             "replays it, pass --target with the device or file fio should use", json_out)  # fmt: skip
    # The next step is a replay, which checks the target before fio writes a byte (iofp replay's
    # safety rules) and measures what fio did; the bare fio command for these logs is in --json.
    where = "DEVICE" if iolog.names_no_target(report) else report.target
    again = shell_command("iofp", "replay", trace, *args.words(), "--target", where)
    echo("next: the same selection through iofp replay, which checks that the target is safe to write "
         "before fio writes to it, and measures the replay", json_out)  # fmt: skip
    echo(f"Wrote {logs}. Next: {again}", json_out)


@selection_options
@run_options
def replay_cmd(
    args: SelectionArgs,
    run: RunArgs,
    trace: Path = typer.Argument(..., help="An iofp trace directory."),
    output: Path | None = typer.Option(
        None,
        "-o",
        "--output",
        help="Results directory (default results/TARGET-TIME), or s3://BUCKET/PREFIX (shipped when the "
        "run ends).",
    ),
    no_fidelity: bool = typer.Option(
        False, "--no-fidelity", help="Do not capture the target during the replay."
    ),
    repeat: int | None = typer.Option(
        None,
        "--repeat",
        metavar="N",
        help="Replay it N times (the others in OUTPUT/repeat-K): iofp compare states a verdict only "
        "where the runs agree. Default 3 for a selection of 60 s or less, else 1.",
    ),
) -> None:
    """Replay a trace selection on a candidate device with fio, capture it, and judge its fidelity.

    SIGINT, SIGTERM or SIGHUP stop fio and all its jobs first, record the run as partial in
    results.json and exit 128 + the signal's number.
    """
    from iofp.contract import open_trace
    from replay import run as runner
    from replay.fio import ARTIFACTS
    from store import results_output

    dest = results_output(output or runner.default_output(run.target), ARTIFACTS, force=args.force)
    opts = replay_options(args, run, dest.local, fidelity=not no_fidelity)
    opts.repeat = repeat
    with dest:  # s3://: shipped when it ends (a failed or stopped run's record too)
        path, res = runner.replay(open_trace(trace), opts)
    typer.echo(runner.replay_summary(res))
    if res.repeats:
        typer.echo(runner.repeats_summary(path.parent))
    if (shipped := dest.finish()) is not None:
        typer.echo(shipped)
    typer.echo(f"Wrote {dest.shown(path)}. Next: {shell_command('iofp', 'compare', dest.shown(path.parent))}")


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
    budget: int = typer.Option(
        12, "--budget", help="At most this many scales in all (each up to --repeat runs)."
    ),
    repeat: int | None = typer.Option(
        None,
        "--repeat",
        metavar="N",
        help="Runs of a scale before its verdict stands (default 3 for a selection of 60 s or less, else 1).",
    ),
    output: Path | None = typer.Option(
        None,
        "-o",
        "--output",
        help="Results directory (default results/headroom-TARGET-TIME), or s3://BUCKET/PREFIX (shipped "
        "when the sweep ends).",
    ),
    json_out: str | None = json_option(),
) -> None:
    """Replay the selection at rising load until the SLO breaks or the rate is not kept, then bisect:
    how many times today's load the target holds, and whether the device, the replayer or the host
    gave out.

    Exit status: 0 when the target holds today's load (1x), 1 when it does not or the runs at 1x
    were inconclusive (the host limited them, or they disagreed), 2 for bad input.
    """
    import signal

    from iofp.contract import open_trace
    from iofp.slo import parse as parse_slo
    from replay import headroom
    from replay.fio import Stopped
    from store import results_output

    dest = results_output(output or headroom.default_output(run.target), headroom.ARTIFACTS, force=args.force)
    opts = headroom.HeadroomOptions(
        replay=replay_options(args, run, dest.local),
        slo=parse_slo(slo),
        scales=headroom.parse_scales(scales),
        max_scale=max_scale,
        precision=headroom.parse_precision(precision),
        budget=budget,
        repeat=repeat,
    )
    json_target(json_out, force=args.force)
    with dest:  # s3://: shipped when it ends (a failed or stopped sweep's record too)
        path, res = headroom.headroom(open_trace(trace), opts, note=lambda s: typer.echo(s, err=True))
        echo(headroom.summary(res), json_out)
        emit_json(json_out, res.to_dict(), force=args.force)
        if res.interrupted:
            raise Stopped(headroom.stopped_line(res), signal.Signals[res.interrupted])
    if (shipped := dest.finish()) is not None:
        echo(shipped, json_out)
    compare = shell_command("iofp", "compare", dest.shown(path.parent))
    echo(f"Wrote {dest.shown(path)}; each step's replay is under steps/. Next: {compare}", json_out)
    if res.headroom is None or res.headroom.factor is None:
        raise typer.Exit(1)  # below 1x, or not shown to hold it


def compare_cmd(
    results_dirs: list[Path] = typer.Argument(
        ...,
        help="Results directories written by `iofp replay`, `iofp headroom` (ranked by their factor) or "
        "`iofp probe` (its cells beside the candidate of the same --label device=...); local, or "
        "s3://BUCKET/PREFIX as -o shipped them.",
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
    json_out: str | None = json_option(),
    force: bool = force_option(),
) -> None:
    """Compare candidate devices from their replay results: rates, latency, commits, fidelity, SLO;
    with headroom results, ranked by headroom; with probe results, their cells beside.

    Exit status: 0 when every candidate meets the SLO (or none is given), 1 when a candidate misses
    it (its latency, or the demanded rate by more than 5%) or its verdict is inconclusive (the host
    limited its runs, or they disagree), 2 for bad input.
    """
    from iofp import results_dir
    from iofp import slo as slomod
    from replay import compare

    if fmt not in ("table", "markdown"):
        raise BadInput(
            f"--format {fmt}: choose table or markdown" + (" (JSON: --json -)" if fmt == "json" else "")
        )
    json_target(json_out, force=force)
    cmp = compare.compare([results_dir.local(p) for p in results_dirs], slomod.parse(slo), baseline)
    echo(compare.render(cmp, fmt).rstrip("\n"), json_out)
    if (path := emit_json(json_out, None, force=force, text=compare.render(cmp, "json") + "\n")) is not None:
        echo(f"Wrote {path}.", json_out)
    if cmp.failed or cmp.inconclusive:
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
    force: bool = force_option("an existing job file"),
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
    opts = fiojob.JobOptions(
        regime=regime,
        runtime_s=parse_duration_ns(runtime, "--runtime") / 1e9,
        size_bytes=parse_size_bytes(size, "--size") if size else None,
        streams=streams,
    )
    job = fiojob.plan(read_json(fp_path), opts)
    fiojob.write(job, out, force=force)


EXAMPLES = {
    "iolog": "Example: iofp iolog traces/mysql -o mysql.iolog --regime spike --target scratch.img "
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
