"""The `iofp` command: one typer app, thin over the stages' library functions.

Each stage registers its own commands (`bpf.commands`, `fingerprint.commands`, `replay.commands`);
this module only assembles them and maps errors to exit codes, in one place.
"""

from __future__ import annotations

import typer
from typer.core import TyperGroup

from iofp import __version__
from iofp.errors import IofpError


class IofpGroup(TyperGroup):
    """The root command group: the one place where library errors become exit codes.

    Every command (sub-apps included) runs inside this invoke(), so an IofpError from anywhere is
    printed as one line and exits with its status, also under typer.testing.CliRunner.
    """

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except IofpError as e:
            typer.echo(f"iofp: {e}", err=True)
            raise typer.Exit(e.exit_code) from None


app = typer.Typer(
    cls=IofpGroup,
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
    """Console-script entry point (click's standalone mode: usage errors exit 2)."""
    app()


if __name__ == "__main__":
    main()
