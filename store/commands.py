"""CLI commands of the store stage; `register(app)` adds them to the `iofp` typer app."""

from __future__ import annotations

from pathlib import Path

import typer


def ship_cmd(
    spool: Path | None = typer.Argument(
        None, help="A shipping spool (default $IOFP_SPOOL_DIR/queue, else /var/tmp/iofp-spool/queue)."
    ),
    wait: float = typer.Option(600.0, "--wait", help="Seconds to wait for the store before giving up."),
) -> None:
    """Ship what a capture to a store left spooled (the store did not answer before it ended):
    each file once, checked by its SHA-256, its trace's manifest last.

    Example: iofp ship /var/tmp/iofp-spool/queue
    """
    from store import Shipper, spool_root

    where = spool or spool_root() / "queue"
    if not where.is_dir():
        from iofp.errors import BadInput

        raise BadInput(f"{where}: no shipping spool there; name the one a capture reported")
    with Shipper(where) as shipper:
        waiting = shipper.pending()
        done = shipper.drain(wait)
        left = shipper.pending()
    typer.echo(f"Shipped {shipper.stats.shipped + shipper.stats.already} of {waiting} file(s) from {where}.")
    if not done:
        typer.echo(f"iofp: {left} file(s) still spooled: the store does not answer; run this again", err=True)
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("ship")(ship_cmd)
