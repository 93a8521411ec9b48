"""CLI commands of the replay stage: `iofp iolog`, `iofp replay`, `iofp compare`."""

from __future__ import annotations

import json
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from iofp.errors import BadInput
from iofp.values import parse_labels
from iofp.windows import DEFAULT_WINDOW, DEFAULT_WINDOW_NS, parse_window_ns

if TYPE_CHECKING:
    from replay.selection import Selection

DEVICE = typer.Option(None, "--device", help="Replay only this device of the trace (default: all of them).")
BETWEEN = typer.Option(
    None, "--between", help="Only I/Os issued in [T1, T2) seconds on the trace's clock.", metavar="T1 T2"
)
REGIME = typer.Option(
    None, "--regime", help="steady: the longest steady-state span; spike: the busiest spike."
)
# None, not the default itself, so that a --window with no --regime to use it can be told from none.
WINDOW = typer.Option(
    None,
    "--window",
    help=f"Width of --regime's windows, as for iofp fingerprint (default {DEFAULT_WINDOW}; at least 1ms): "
    "pass the fingerprint's --window to select the windows it names.",
)
TIME_SCALE = typer.Option(1.0, "--time-scale", help="Replay X times as fast (0.5 = half speed).", metavar="X")
TARGET_SIZE = typer.Option(
    None, "--target-size", help="Fold offsets into the first BYTES of the target.", metavar="BYTES"
)
ALIGN = typer.Option(
    None,
    "--align",
    help="Round offsets down and sizes up to this (default: target's logical block size, or 512).",
)
READS_ONLY = typer.Option(False, "--reads-only", help="Replay reads alone (always allowed on any target).")
FORCE = typer.Option(False, "--force", help="Overwrite an existing output.")


def _selection(
    device: str | None,
    between: tuple[float, float] | None,
    regime: str | None,
    reads_only: bool,
    window: str | None,
) -> Selection:
    from replay.selection import Selection

    window_ns = DEFAULT_WINDOW_NS if window is None else parse_window_ns(window)
    if window is not None and regime is None:  # --between and the whole trace have no windows
        raise BadInput(
            f"--window {window} is the width of --regime's windows; add --regime steady or --regime spike, "
            "or leave --window out"
        )
    sel = Selection(
        device=device,
        between=tuple(between) if between else None,
        regime=regime,
        reads_only=reads_only,
        window_ns=window_ns,
    )
    sel.check()
    return sel


def iolog_cmd(
    trace: Path = typer.Argument(..., help="An iofp trace directory (from `iofp capture` or `iofp import`)."),
    output: Path = typer.Option(..., "-o", "--output", help="The iolog file to write."),
    device: str | None = DEVICE,
    between: tuple[float, float] | None = BETWEEN,
    regime: str | None = REGIME,
    window: str | None = WINDOW,
    time_scale: float = TIME_SCALE,
    target_size: int | None = TARGET_SIZE,
    align: int | None = ALIGN,
    reads_only: bool = READS_ONLY,
    target: str | None = typer.Option(
        None, "--target", help="The file name the log uses (default /dev/DEVICE)."
    ),
    streams: str = typer.Option(
        "single",
        "--streams",
        help="single: one log; pid: one log per submitting pid (top 8, the rest in one), "
        "written as OUT.0.iolog, OUT.1.iolog, ... (replay each as its own fio job).",
    ),
    pace: str = typer.Option(
        "off",
        "--pace",
        help="off; absolute (a version 2 log with a `wait` per millisecond: fio's only absolute clock, "
        "no drift, 1 ms resolution; the first I/O goes 0.5 s after fio starts); or fio's per-I/O "
        "overhead to pre-pay in a v3 log, e.g. 20us (see iofp replay).",
    ),
    force: bool = FORCE,
    as_json: bool = typer.Option(False, "--json", help="Print the conversion report as JSON."),
) -> None:
    """Write a fio v3 iolog of a trace selection that fio 3.33 replays as written."""
    from iofp.contract import open_trace
    from replay import fiocaps, iolog, pacing
    from replay import streams as streammod

    if streams not in streammod.MODES:
        raise BadInput(f"--streams {streams}: choose one of {', '.join(streammod.MODES)}")
    spec = pacing.PaceSpec.parse(pace)
    if spec.mode == "auto":
        raise BadInput(
            "--pace auto calibrates on the target and needs `iofp replay`; pass off, absolute or e.g. 20us"
        )

    sel = _selection(device, between, regime, reads_only, window)
    mapping = iolog.Mapping(
        target=target or "",
        fold_size=target_size,
        align=512 if align is None else align,  # 0 is rejected, not taken for the default
        time_scale=time_scale,
        trim=fiocaps.probe().iolog_trim,
    )
    pace_model = pacing.Pacing(mode=spec.mode, overhead_ns={"libaio": spec.overhead_ns})
    report = iolog.convert(
        open_trace(trace), output, sel, mapping, force=force, streams=streams, pacing=pace_model
    )
    typer.echo(json.dumps(report.to_dict(), indent=2) if as_json else report.summary())
    logs = [s["iolog"] for s in report.streams]
    jobs = " ".join(f"--name=s{i} --read_iolog={p}" for i, p in enumerate(logs))
    typer.echo(f"Wrote {', '.join(logs)}. Next: fio --ioengine=libaio --direct=1 {jobs}")


def replay_cmd(
    trace: Path = typer.Argument(..., help="An iofp trace directory."),
    target: Path = typer.Option(
        ...,
        "--target",
        help="Block device, or a new regular file (an existing one only with --allow-destructive).",
    ),
    device: str | None = DEVICE,
    between: tuple[float, float] | None = BETWEEN,
    regime: str | None = REGIME,
    window: str | None = WINDOW,
    time_scale: float = TIME_SCALE,
    target_size: int | None = TARGET_SIZE,
    fold: bool = typer.Option(
        False, "--fold", help="Fold offsets into the whole target when it is too small."
    ),
    align: int | None = ALIGN,
    reads_only: bool = READS_ONLY,
    iodepth: int | None = typer.Option(
        None, "--iodepth", help="Default: the selection's peak in-flight, or 32."
    ),
    engine: str = typer.Option(
        "libaio",
        "--engine",
        help="fio ioengine: libaio, io_uring, psync, pvsync2, or auto (psync for a stream that never "
        "had two I/Os in flight, libaio for the others).",
    ),
    streams: str | None = typer.Option(
        None,
        "--streams",
        help="pid: one fio job per submitting process (top 8 by I/Os, the rest in one), so one "
        "process's fsyncs do not stall the others; single: one job. Default: pid when the "
        "selection has more than one pid.",
    ),
    pace: str = typer.Option(
        "absolute",
        "--pace",
        help="absolute: a version 2 log with a `wait` per millisecond, fio 3.33's only absolute clock: "
        "no drift (duration and per-second IOPS exact), but each I/O lands within ~1 ms of its time "
        "and a millisecond's I/Os go back to back; auto: a v3 log keeping sub-ms gaps, with fio's "
        "per-I/O overhead measured on the target first (~1.5 s of reads) and pre-paid (drifted "
        "+0.4% to +4.4% here); off: the trace's own gaps; or a fixed overhead, e.g. 20us.",
    ),
    label: list[str] = typer.Option([], "--label", help="name=value recorded with the result (repeatable)."),
    allow_destructive: bool = typer.Option(
        False,
        "--allow-destructive",
        help="Write even to a device that is mounted, partitioned or formatted, or over an existing file.",
    ),
    output: Path | None = typer.Option(
        None, "--output", help="Results directory (default results/TARGET-TIME)."
    ),
    no_fidelity: bool = typer.Option(
        False, "--no-fidelity", help="Do not capture the target during the replay."
    ),
    force: bool = FORCE,
) -> None:
    """Replay a trace selection on a candidate device with fio, capture it, and judge its fidelity."""
    from iofp.contract import open_trace
    from replay import render, runner

    opts = runner.ReplayOptions(
        target=target,
        output=output or runner.default_output(target),
        selection=_selection(device, between, regime, reads_only, window),
        time_scale=time_scale,
        target_size=target_size,
        fold=fold,
        align=align,
        iodepth=iodepth,
        engine=engine,
        streams=streams,
        pace=pace,
        labels=parse_labels(label),
        allow_destructive=allow_destructive,
        fidelity=not no_fidelity,
        force=force,
    )
    path, record = runner.replay(open_trace(trace), opts)
    typer.echo(render.replay_summary(record))
    typer.echo(f"Wrote {path}. Next: iofp compare {path.parent}")


def compare_cmd(
    results_dirs: list[Path] = typer.Argument(..., help="Results directories written by `iofp replay`."),
    slo: list[str] = typer.Option(
        [],
        "--slo",
        help="Terms joined by ',', all of which must hold: [read.|write.|all.|flush.|fsync.|commit.]"
        "p50|p99|p99.9<=TIME, iops>=demanded, commits>=N/s; e.g. 'p99<=2ms,fsync.p99<=1ms' "
        "(quote it: < and > are redirections in a shell). Repeatable.",
    ),
    fmt: str = typer.Option("table", "--format", help="table, markdown or json."),
) -> None:
    """Compare candidate devices from their replay results: rates, latency, fsync, fidelity, SLO."""
    from iofp import slo as slomod
    from replay import compare

    if fmt not in ("table", "markdown", "json"):
        raise BadInput(f"--format {fmt}: choose table, markdown or json")
    rows = compare.compare(results_dirs, slomod.parse(slo))
    typer.echo(compare.render(rows, fmt).rstrip("\n"))


EXAMPLES = {
    "iolog": "Example: iofp iolog traces/mysql -o mysql.iolog --regime spike --target /dev/loop3 "
    "--target-size 268435456",
    "replay": "Example: iofp replay traces/mysql --target /dev/loop3 --regime spike --fold "
    "--label device=ram-loop",
    "compare": "Example: iofp compare results/loop3-20261122-101500 results/loop4-20261122-102000 "
    "--slo 'p99<=2ms'",
}


def register(app: typer.Typer) -> None:
    app.command("iolog", epilog=EXAMPLES["iolog"])(iolog_cmd)
    app.command("replay", epilog=EXAMPLES["replay"])(replay_cmd)
    app.command("compare", epilog=EXAMPLES["compare"])(compare_cmd)
