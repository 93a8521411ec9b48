"""The `iofp` command: one typer app, thin over the stages' library functions.

Each stage registers its own commands (`bpf.commands`, `fingerprint.commands`, `replay.commands`);
this module only assembles them and maps errors to exit codes, in one place.
"""

from __future__ import annotations

import sys

import typer

from iofp import __version__
from iofp.errors import IofpError

app = typer.Typer(
    name="iofp",
    help="I/O workload fingerprinting: capture block I/O with eBPF, fingerprint it, replay it with fio.",
    no_args_is_help=True,
    add_completion=False,
    pretty_exceptions_enable=False,
)


def _version(value: bool) -> None:
    if value:
        typer.echo(f"iofp {__version__}")
        raise typer.Exit()


@app.callback()
def _root(
    version: bool = typer.Option(
        False, "--version", callback=_version, is_eager=True, help="Show the version."
    ),
) -> None:
    pass


def _register() -> None:
    # Imported here so that `iofp --help` works even where a stage's optional system
    # dependency (bcc) is absent; stages import their heavy dependencies lazily.
    from bpf import commands as capture_cmds
    from fingerprint import catalog_commands
    from fingerprint import commands as fingerprint_cmds
    from replay import commands as replay_cmds

    for mod in (capture_cmds, fingerprint_cmds, replay_cmds, catalog_commands):
        mod.register(app)


_register()


def main() -> None:
    """Entry point: run the app; an IofpError becomes one line on stderr and its exit status."""
    try:
        rv = app(standalone_mode=False)
        # in non-standalone mode click returns a typer.Exit's code instead of exiting with it
        if isinstance(rv, int) and rv:
            sys.exit(rv)
    except IofpError as e:
        typer.echo(f"iofp: {e}", err=True)
        sys.exit(e.exit_code)
    except typer.Exit as e:
        sys.exit(e.exit_code)
    except typer.Abort:
        typer.echo("iofp: aborted", err=True)
        sys.exit(130)
    except KeyboardInterrupt:
        sys.exit(130)
    except Exception as e:  # click usage errors arrive here in non-standalone mode
        # Recognised by their interface: typer >= 0.2x vendors click as typer._click, so there may
        # be no importable `click` at all.
        show = getattr(e, "show", None)
        if callable(show) and isinstance(getattr(e, "exit_code", None), int):
            show()
            sys.exit(2)
        raise


if __name__ == "__main__":
    main()
