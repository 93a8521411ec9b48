"""CLI commands of this stage; `register(app)` adds them to the `iofp` typer app.

Each command validates, makes one library call and renders; the work is in the library modules.
"""

from __future__ import annotations

from pathlib import Path

import typer

from fingerprint.tolerance import SPEC_HELP as TOL_HELP
from iofp import slo as slomod
from iofp.output import echo, emit_json, force_option, human_console, json_option, json_target, shell_command
from iofp.values import device_list
from iofp.windows import BETWEEN_HELP, DEFAULT_WINDOW

WINDOW_HELP = (
    f"Window of the regimes (1s, 500ms; at least 1ms). Default {DEFAULT_WINDOW}: the smallest of 1, 2, 5, "
    "10, 30, 60 s (1-500 ms for a trace under 20 s) whose median window holds >= 25 I/Os."
)


def import_cmd(
    fmt: str = typer.Argument(
        ..., metavar="FORMAT", help="blkparse, blkreplay, msr, disksim, fio-iolog, alibaba or auto."
    ),
    paths: list[Path] = typer.Argument(  # optional to typer: the library names a missing file's fix
        None, metavar="PATH...", help="Input files, read in order; .gz is fine.", show_default=False
    ),
    out: Path = typer.Option(
        ...,
        "-o",
        "--output",
        help="The trace directory to write, or s3://LAKE: filed under host=/service=/date=/ there "
        "(needs --label host=... and --label service=...).",
    ),
    force: bool = force_option("an existing trace"),
    time_unit: str = typer.Option("ns", "--time-unit", help="disksim arrival unit: ns (MQSim), us, ms, s."),
    label: list[str] = typer.Option(
        [],
        "--label",
        help="key=value recorded with the trace (repeatable); host=NAME names the host that recorded it, "
        "date=YYYY-MM-DD the day of a trace without a wall clock (its lake partition).",
    ),
) -> None:
    """Import another tool's trace into an iofp trace (streaming; constant memory).

    Example: iofp import blkreplay ../shared/traces/linux-mysql.load.gz -o mysql.trace

    Example: iofp import blkreplay linux-mysql.load.gz -o s3://traces/lake --label host=db-07
    --label service=mysql --label date=2026-01-05
    """
    from fingerprint.importing import import_trace
    from iofp.signals import stop_on_signals
    from iofp.values import parse_labels
    from store import SHIP_WAIT_S, trace_output

    labels = parse_labels(label)
    target = trace_output(out, labels, needs=("host", "service"))  # s3://LAKE: imported here, then shipped
    with stop_on_signals():  # held until the summary is printed: a late Ctrl-C cannot cut it
        r = import_trace(fmt, paths or [], target.local, force=force, time_unit=time_unit, labels=labels)
        notes = ", ".join(f"{k} {v}" for k, v in sorted(r.counters.items()))
        typer.echo(
            f"Imported {r.rows:,} I/Os"
            + (f" and {r.sync_rows:,} syncs" if r.sync_rows else "")
            + f" ({r.format}; devices {device_list(r.devices)}{'; ' + notes if notes else ''})."
        )
        if (shipped := target.ship_written(SHIP_WAIT_S)) is not None:
            typer.echo(shipped)
        where = target.shown
        typer.echo(f"Wrote {where}. Next: {shell_command('iofp', 'fingerprint', where)}")


def fingerprint_cmd(
    trace: Path = typer.Argument(..., help="An iofp trace directory (captured or imported)."),
    window: str | None = typer.Option(None, "--window", help=WINDOW_HELP, show_default=False),
    device: str | None = typer.Option(None, "--device", help="Only this device (as named in the trace)."),
    between: tuple[str, str] | None = typer.Option(
        None, "--between", help="Also summarise [T1, T2): " + BETWEEN_HELP
    ),
    json_out: str | None = json_option(
        "-o",  # the fingerprint is this command's artifact, and every other command writes one with -o
        text="Write the fingerprint JSON to FILE, or to stdout with - (the table then goes to stderr).",
    ),
    label: list[str] = typer.Option([], "--label", help="key=value added to the provenance (repeatable)."),
    force: bool = force_option(),
) -> None:
    """Fingerprint a trace: IOPS/MB/s/latency, mix, sizes, locality, burstiness, flushes, the
    steady, baseline and spike regimes (spikes ranked biggest first), the workload shape and its bound.

    Example: iofp fingerprint mysql.trace --json mysql.fp.json --label service=db
    """
    from fingerprint.api import fingerprint_trace
    from fingerprint.frame import Options
    from fingerprint.summary import render
    from iofp.fingerprint_doc import dumps
    from iofp.values import parse_labels
    from iofp.windows import parse_between, parse_window_option

    json_target(json_out, force=force)
    if between:
        parse_between(*between)  # its form now, before the trace is read; its span once it is
    opts = Options(parse_window_option(window), device, between, parse_labels(label))
    fp = fingerprint_trace(trace, opts)
    render(fp, human_console(json_out))
    if (path := emit_json(json_out, None, force=force, text=dumps(fp))) is not None:
        typer.echo(f"Wrote {path}. Next: {shell_command('iofp', 'report', trace, '-o', 'report.html')}")


def diff_cmd(
    a: Path = typer.Argument(..., metavar="A", help="The earlier fingerprint (iofp fingerprint --json)."),
    b: Path = typer.Argument(..., metavar="B", help="The later fingerprint JSON."),
    slo: list[str] = typer.Option(
        [], "--slo", metavar="TERMS", help=slomod.HELP + " With it, drift exits 1 only when B misses it."
    ),
    json_out: str | None = json_option(),
    force: bool = force_option(),
    tolerances: str | None = typer.Option(
        None, "--tolerances", help="Also check B (a capture of iofp fio-job's job) against A: " + TOL_HELP
    ),
) -> None:
    """What changed between two fingerprints, beyond the noise each trace measured in itself: demand
    (the workload got harder) versus service (the device got slower), in the steady (or baseline)
    and the spike regimes, and any change of device in their provenance.

    Exit status: 0 when nothing is flagged, 1 when a change is flagged (with --slo: only when B also
    misses the SLO; with --tolerances: only when a demand metric is out of tolerance), 2 for bad input.

    Example: iofp diff samples/fingerprints/market-open.fp.json
    samples/fingerprints/market-open-q2.fp.json --slo 'p99<=2ms'
    """
    from fingerprint import tolerance
    from fingerprint.api import read_json
    from fingerprint.diff import check_pair, diff
    from fingerprint.diff_view import render

    rules, path = slomod.parse(slo) if slo else None, json_target(json_out, force=force)
    spec = tolerance.parse(tolerances) if tolerances is not None else None
    fa, fb = read_json(a), read_json(b)
    check_pair(fa, fb, str(a), str(b))
    result = diff(fa, fb, str(a), str(b), rules)
    tol = tolerance.check(fa, fb, spec) if spec else None
    render(result, human_console(json_out))
    for line in tolerance.render(tol) if tol else []:
        echo(line, json_out)
    doc = result.to_dict() | ({"tolerance": tol.to_dict()} if tol else {})
    if emit_json(json_out, doc, force=force) is not None:
        echo(f"Wrote {path}.", json_out)
    # A lab run of fio-job's job is judged by the tolerances alone: its device is not production's.
    if (not tol.passed) if tol else result.matters:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("fingerprint")(fingerprint_cmd)
    app.command("diff")(diff_cmd)
