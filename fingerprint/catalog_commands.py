"""`iofp catalog ...`: store fingerprints per service and review their drift quarter by quarter."""

from __future__ import annotations

import json
from pathlib import Path

import typer

from fingerprint.catalog import Catalog
from fingerprint.catalog_view import render_list, render_trend
from iofp import fingerprint_doc, terminal
from iofp import slo as slomod
from iofp.errors import BadInput
from iofp.output import echo, emit_json, force_option, human_console, json_option, json_target, shell_command

catalog_app = typer.Typer(
    help="Store fingerprints per service and review their drift over time (quarterly reviews).",
    epilog="Example: iofp catalog add q3.json --service orders; iofp catalog trend --service orders",
    no_args_is_help=True,
)
CATALOG_OPT = typer.Option(
    None,
    "--catalog",
    help="Catalog file (default $IOFP_CATALOG or ~/.local/share/iofp/catalog.duckdb), or s3://BUCKET/LAKE.",
)


@catalog_app.command("add")
def add(
    fingerprint: Path = typer.Argument(..., help="A fingerprint JSON written by iofp fingerprint --json."),
    service: str | None = typer.Option(
        None, "--service", help="The service it describes (default: its label service=NAME)."
    ),
    catalog: Path | None = CATALOG_OPT,
) -> None:
    """Store a fingerprint under a service.

    Example: iofp catalog add q3.json --service order-router
    """
    doc = fingerprint_doc.load(fingerprint)
    # A fingerprint of a capture labelled service=NAME names its service already: asking again
    # was "Missing option '--service'" for what the document says.
    service = service or doc.provenance.labels.get("service")
    if not service:
        raise BadInput(
            f"{fingerprint} has no service label: give --service NAME "
            "(or fingerprint its trace with --label service=NAME)"
        )
    with Catalog(catalog) as cat:
        entry_id = cat.add(doc, service, str(fingerprint))
        typer.echo(f"Added {fingerprint} as #{entry_id} of {service} in {cat.path}.")
        typer.echo(f"Next: {shell_command('iofp', 'catalog', 'trend', '--service', service)}")


@catalog_app.command("list")
def list_(
    service: str | None = typer.Option(None, "--service", help="Only this service."),
    catalog: Path | None = CATALOG_OPT,
) -> None:
    """List stored fingerprints, with their headline figures.

    Example: iofp catalog list --service order-router
    """
    with Catalog(catalog, read_only=True) as cat:
        found = cat.entries() if service is None else cat.service_entries(service)
        render_list(terminal.console(), str(cat.path), found)


@catalog_app.command("show")
def show(
    entry_id: int = typer.Argument(..., help="The fingerprint's number (see iofp catalog list)."),
    catalog: Path | None = CATALOG_OPT,
) -> None:
    """Print one stored fingerprint document as JSON.

    Example: iofp catalog show 3
    """
    with Catalog(catalog, read_only=True) as cat:
        typer.echo(json.dumps(cat.get(entry_id).doc, indent=1))


@catalog_app.command("rm")
def rm(
    entry_id: int = typer.Argument(..., help="The fingerprint's number (see iofp catalog list)."),
    catalog: Path | None = CATALOG_OPT,
) -> None:
    """Remove one stored fingerprint (one too large to read, one added by mistake).

    Example: iofp catalog rm 3
    """
    with Catalog(catalog) as cat:
        gone = cat.remove(entry_id)
    what = f"#{gone['id']} ({gone['source_file'] or 'no file'}) of {gone['service']}"
    typer.echo(f"Removed {what} from {cat.path}.")


@catalog_app.command("trend")
def trend(
    service: str = typer.Option(..., "--service", help="The service to review."),
    slo: list[str] = typer.Option([], "--slo", metavar="TERMS", help=slomod.HELP),
    json_out: str | None = json_option(),
    force: bool = force_option(),
    catalog: Path | None = CATALOG_OPT,
) -> None:
    """A service's fingerprints over time, each diffed with the one before (as iofp diff does);
    drifts beyond each trace's noise are flagged.

    Exit status: 1 when the newest step's drift is flagged (with --slo: and the newest misses it),
    else 0; 2 for bad input.

    Example: iofp catalog trend --service order-router --slo 'p99<=2ms'
    """
    rules, path = slomod.parse(slo) if slo else None, json_target(json_out, force=force)
    with Catalog(catalog, read_only=True) as cat:
        entries, steps = cat.trend(service, rules)
    render_trend(human_console(json_out), service, entries, steps)
    steps_doc = [{"before": s.before.id, "after": s.after.id, **s.diff.to_dict()} for s in steps]
    doc = {"service": service, "entries": [e.headline() for e in entries], "steps": steps_doc}
    if emit_json(json_out, doc, force=force) is not None:
        echo(f"Wrote {path}.", json_out)
    if steps and steps[-1].diff.matters:
        raise typer.Exit(1)


def register(app: typer.Typer) -> None:
    app.add_typer(catalog_app, name="catalog")
