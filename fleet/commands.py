"""`iofp fleet`; `register(app)` adds it to the `iofp` typer app."""

from __future__ import annotations

import typer

from iofp.output import JSON_HELP, echo, emit_json, human_console, json_target


def fleet_cmd(
    lake: str = typer.Argument(..., help="The lake: s3://BUCKET/PREFIX of host=/service=/date=/ traces."),
    master: str = typer.Option(
        "local[2]", "--master", help="Spark master: local[N] (N worker threads here), or a cluster's URL."
    ),
    redo: bool = typer.Option(False, "--redo", help="Fingerprint every trace again, even current ones."),
    json_out: str | None = typer.Option(None, "--json", metavar="FILE|-", help=JSON_HELP),
    force: bool = typer.Option(False, "--force", help="Overwrite an existing --json file."),
) -> None:
    """Fingerprint every trace of a lake on Spark (each trace a task running iofp's fingerprint; the
    document written beside it as fingerprint.json, where `iofp catalog` reads it), then the
    quarterly view: per service, the spread of IOPS, commit p99, flush p99 and peak/mean across hosts
    and days, and the outlier hosts (a commit p99 3x its peers' at the same load is a bad disk).

    A trace whose fingerprint is current is read, not redone (a rerun resumes); a failed task is
    tried again; a trace that cannot be read is named, and the rest go on (exit 1 when any is).

    Example: iofp fleet s3://traces/lake --master local[4] --json q3.json
    """
    from fleet import quarterly, render_view, run_fleet
    from iofp import objstore
    from iofp.errors import BadInput

    url = objstore.url_of(lake)
    if url is None:
        raise BadInput(f"{lake}: iofp fleet reads a lake in an object store; give s3://BUCKET/PREFIX")
    path = json_target(json_out, force=force)
    view = quarterly(run_fleet(url, master=master, force=redo))
    render_view(view, human_console(json_out))
    if emit_json(json_out, view, force=force) is not None:
        echo(f"Wrote {path}. Next: iofp report {path} -o fleet.html", json_out)
    if view["unreadable"]:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.command("fleet")(fleet_cmd)
