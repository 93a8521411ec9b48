"""CLI commands of this stage; `register(app)` adds them to the `iofp` typer app.

Each command validates, makes one library call and renders; the work is in the library modules.
"""

from __future__ import annotations

from pathlib import Path

import typer

from iofp.errors import BadInput


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

    r = import_trace(fmt, paths, out, force=force, time_unit=time_unit)
    notes = ", ".join(f"{k} {v}" for k, v in sorted(r.counters.items()))
    typer.echo(
        f"Imported {r.rows:,} I/Os"
        + (f" and {r.sync_rows:,} syncs" if r.sync_rows else "")
        + f" ({r.format}; devices {', '.join(r.devices) or '-'}{'; ' + notes if notes else ''})."
    )
    typer.echo(f"Wrote {r.out}. Next: iofp fingerprint {r.out}")


def register(app: typer.Typer) -> None:
    app.command("import")(import_cmd)


__all__ = ["BadInput", "register"]
