"""CLI commands of this stage; `register(app)` adds them to the `iofp` typer app.

Each command validates, makes one library call and renders; the work is in the library modules.
"""

from __future__ import annotations

from pathlib import Path

import typer

from fingerprint.tolerance import SPEC_HELP as TOL_HELP
from iofp.windows import DEFAULT_WINDOW

WINDOW_HELP = (
    f"Window of the regimes (1s, 500ms; at least 1ms). Default {DEFAULT_WINDOW}: the smallest of 1, 2, 5, "
    "10, 30, 60 s (1-500 ms for a trace under 20 s) whose median window holds >= 25 I/Os."
)


def import_cmd(
    fmt: str = typer.Argument(
        ..., metavar="FORMAT", help="blkparse, blkreplay, msr, disksim, fio-iolog, alibaba or auto."
    ),
    paths: list[Path] = typer.Argument(
        ..., metavar="PATH...", help="Input files, read in order; .gz is fine."
    ),
    out: Path = typer.Option(..., "-o", "--out", help="The trace directory to write."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing trace."),
    time_unit: str = typer.Option("ns", "--time-unit", help="disksim arrival unit: ns (MQSim), us, ms, s."),
) -> None:
    """Import another tool's trace into an iofp trace (streaming; constant memory).

    Example: iofp import blkreplay ../shared/traces/linux-mysql.load.gz -o mysql.trace
    """
    from fingerprint.importing import import_trace
    from iofp.signals import stop_on_signals

    with stop_on_signals():  # held until the summary is printed: a late Ctrl-C cannot cut it
        r = import_trace(fmt, paths, out, force=force, time_unit=time_unit)
        notes = ", ".join(f"{k} {v}" for k, v in sorted(r.counters.items()))
        typer.echo(
            f"Imported {r.rows:,} I/Os"
            + (f" and {r.sync_rows:,} syncs" if r.sync_rows else "")
            + f" ({r.format}; devices {', '.join(r.devices) or '-'}{'; ' + notes if notes else ''})."
        )
        typer.echo(f"Wrote {r.out}. Next: iofp fingerprint {r.out}")


def fingerprint_cmd(
    trace: Path = typer.Argument(..., help="An iofp trace directory (captured or imported)."),
    window: str | None = typer.Option(None, "--window", help=WINDOW_HELP, show_default=False),
    device: str | None = typer.Option(None, "--device", help="Only this device (as named in the trace)."),
    between: tuple[str, str] | None = typer.Option(
        None, "--between", help="Also summarise T1..T2: HH:MM:SS[.fff] wall clock or seconds from start."
    ),
    json_out: Path | None = typer.Option(None, "--json", help="Write the fingerprint JSON here."),
    label: list[str] = typer.Option([], "--label", help="key=value added to the provenance (repeatable)."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --json file."),
) -> None:
    """Fingerprint a trace: IOPS/MB/s/latency, mix, sizes, locality, burstiness, flushes, the
    steady, baseline and spike regimes (spikes ranked biggest first), the workload shape and its bound.

    Example: iofp fingerprint mysql.trace --json mysql.fp.json --label service=db
    """
    from fingerprint.api import fingerprint_trace, write_json
    from fingerprint.compute import Options
    from fingerprint.summary import render
    from iofp.contract import check_output_file
    from iofp.values import parse_labels
    from iofp.windows import parse_window_option

    if json_out is not None:
        check_output_file(json_out, force=force)
    opts = Options(parse_window_option(window), device, between, parse_labels(label))
    fp = fingerprint_trace(trace, opts)
    render(fp)
    if json_out is not None:
        write_json(fp, json_out, force=force)
        typer.echo(f"Wrote {json_out}. Next: iofp report {trace} -o report.html")


def diff_cmd(
    a: Path = typer.Argument(..., help="The earlier fingerprint JSON (iofp fingerprint --json)."),
    b: Path = typer.Argument(..., help="The later fingerprint JSON."),
    as_json: bool = typer.Option(False, "--json", help="Print the comparison as JSON."),
    tolerances: str | None = typer.Option(
        None, "--tolerances", help="Also check B (a capture of iofp fio-job's job) against A: " + TOL_HELP
    ),
) -> None:
    """What changed between two fingerprints: demand (the workload got harder) versus service
    (the device got slower), with per-metric relative change and the flags beyond thresholds.

    Example: iofp diff q1.fp.json q2.fp.json
    """
    from fingerprint import tolerance
    from fingerprint.api import read_json
    from fingerprint.diff import diff
    from fingerprint.diff_view import render

    spec = tolerance.parse(tolerances) if tolerances is not None else None
    fa, fb = read_json(a), read_json(b)
    result = diff(fa, fb)
    tol = tolerance.check(fa, fb, spec) if spec else None
    if as_json:
        import json

        extra = {"tolerance": tol.to_dict()} if tol else {}
        typer.echo(json.dumps(result.to_dict() | extra, indent=1))
    else:
        render(result)
        for line in tolerance.render(tol) if tol else []:
            typer.echo(line)
    if tol and not tol.passed:
        raise typer.Exit(1)


def report_cmd(
    trace: Path = typer.Argument(..., help="An iofp trace directory."),
    out: Path = typer.Option(..., "-o", "--out", help="The HTML file to write."),
    window: str | None = typer.Option(None, "--window", help=WINDOW_HELP, show_default=False),
    device: str | None = typer.Option(None, "--device", help="Only this device."),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing report."),
) -> None:
    """Write one self-contained HTML report (timeline with steady and spike regions shaded,
    histograms, fingerprint tables); it needs no network to view.

    Example: iofp report mysql.trace -o mysql.html
    """
    from fingerprint.api import report_trace, write_text
    from fingerprint.compute import Options
    from fingerprint.report import render_html
    from iofp.contract import check_output_file
    from iofp.windows import parse_window_option

    check_output_file(out, force=force)
    fp, tl = report_trace(trace, Options(parse_window_option(window), device))
    write_text(render_html(fp, tl), out, force=force)
    typer.echo(f"Wrote {out}. Next: open it in a browser, or iofp fingerprint {trace} --json fp.json")


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)
    app.command("fingerprint")(fingerprint_cmd)
    app.command("diff")(diff_cmd)
    app.command("report")(report_cmd)
