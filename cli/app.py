"""The `iofp` command: one typer app, thin over the stages' library functions.

Each stage registers its own commands (`bpf.commands`, `fingerprint.commands`, `replay.commands`),
and `cli.report` the report's, which reads what every other stage wrote; this module only assembles
them and maps errors to exit codes, in one place.
"""

from __future__ import annotations

import errno
import inspect
import sys
from typing import Any

import typer
import typer.main
import typer.models
from typer.core import TyperGroup, TyperOption

from iofp import __version__, results_dir, scratch, signals, terminal
from iofp.errors import IofpError, OutputFailed


class IofpGroup(TyperGroup):
    """The root command group: the one place where library errors become exit codes.

    Every command (sub-apps included) runs inside this invoke(), so an IofpError from anywhere is
    printed as one line and exits with its status, also under typer.testing.CliRunner.
    """

    def invoke(self, ctx: typer.Context) -> object:
        try:
            return super().invoke(ctx)
        except IofpError as e:  # a copy of a store's results is named by its URL (iofp/results_dir.py)
            typer.echo(f"iofp: {results_dir.named(str(e))}", err=True)
            raise typer.Exit(e.exit_code) from None
        except Exception as e:
            known = _known_failure(e)
            if known is None:
                raise  # a bug: its traceback is what a report needs
            typer.echo(f"iofp: {known}", err=True)
            raise typer.Exit(known.exit_code) from None


def _known_failure(e: Exception) -> IofpError | None:
    """The nets under every stage, for failures that are the input's or the machine's, met where no
    stage could name them: a damaged trace file that DuckDB or Arrow fails to decode deep in a query
    (named by the contract, which re-reads the traces it opened), and a disk that fills while an
    artifact is written."""
    if isinstance(e, OSError) and e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO):
        where = e.filename or _output_named()
        return OutputFailed(
            f"cannot write {where or 'the output'}: {e.strerror}; the files written before it are whole"
        )
    if (known := _duckdb_failure(e)) is not None:
        return known
    from iofp.contract import read_failure

    return read_failure(e)


def _duckdb_failure(e: Exception) -> IofpError | None:
    """A query stopped by a signal (DuckDB reports the exception the signal raised as its own), or
    one that needed more memory and spill than iofp lets DuckDB have."""
    signum = signals.received()
    if signum is not None and "interrupt" in str(e).lower():
        return signals.ended_by(signum)
    if "duckdb" in sys.modules:
        import duckdb

        if isinstance(e, duckdb.OutOfMemoryException):
            from iofp import duck

            why = str(e).splitlines()[0]
            limits = f"{duck.MEMORY_LIMIT} of memory, a bounded spill"
            fix = "select less (--between), or raise $IOFP_DUCKDB_MEMORY or $IOFP_DUCKDB_TEMP"
            return OutputFailed(f"the query needed more than iofp lets DuckDB use ({limits}): {why}; {fix}")
    return None


def _output_named() -> str | None:
    """The output the command line names (-o, --out, --output, --json), for an error that has none."""
    args = sys.argv[1:]
    for i, a in enumerate(args):
        flag, eq, value = a.partition("=")
        if flag in ("-o", "--out", "--output", "--json"):
            return value if eq else (args[i + 1] if i + 1 < len(args) else None)
    return None


app = typer.Typer(
    cls=IofpGroup,
    name="iofp",
    help="I/O workload fingerprinting: capture block I/O with eBPF, fingerprint it, replay it with fio.",
    epilog="Example: sudo iofp capture --device nvme0n1 --duration 60s -o peak && iofp fingerprint peak",
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
    follow_links: bool = typer.Option(
        False,
        "--follow-links",
        help="Read what an artifact refers to even where a link leads out of it (a trace's files, a "
        "result's capture, a headroom step's directory); by default that is refused.",
    ),
) -> None:
    from iofp import contract

    contract.FOLLOW_LINKS = follow_links  # for this command (set on every run, in-process ones too)


def _register() -> None:
    # Imported here so that `iofp --help` works even where a stage's optional system
    # dependency (bcc) is absent; stages import their heavy dependencies lazily.
    from bpf import commands as capture_cmds
    from cli import report as report_cmds
    from fingerprint import catalog_commands
    from fingerprint import commands as fingerprint_cmds
    from fleet import commands as fleet_cmds
    from record import commands as record_cmds
    from replay import commands as replay_cmds
    from store import commands as store_cmds

    for mod in (capture_cmds, fingerprint_cmds, report_cmds, replay_cmds, catalog_commands, store_cmds,
                fleet_cmds, record_cmds):  # fmt: skip
        mod.register(app)
    for info in [
        *app.registered_commands,
        *(c for g in app.registered_groups for c in g.typer_instance.registered_commands),
    ]:
        _example_last(info)


def _example_last(info: typer.models.CommandInfo) -> None:
    """Every --help ends with an example: a docstring's closing "Example: ..." paragraph becomes the
    epilog, printed after the options (typer prints the docstring before them). Paragraphs are
    unwrapped: the terminal wraps them, and the source's line breaks showed mid-sentence."""
    doc = inspect.cleandoc(info.callback.__doc__ or "") if info.callback else ""
    body, sep, example = doc.rpartition("\nExample: ")
    if not sep:
        body = doc
    elif info.epilog is None:
        info.epilog = "Example: " + " ".join(example.split())
    if info.help is None and body:
        info.help = "\n\n".join(" ".join(par.split()) for par in body.strip().split("\n\n"))


_register()

# What an option's value is, as its help shows it (typer's default shows the Python type: <str>,
# <list[str]>, <bool>). An option that declares its own metavar keeps it; a flag shows none.
METAVARS = {
    "--output": "PATH", "--json": "FILE|-", "--window": "DURATION", "--device": "NAME",
    "--between": "T1 T2", "--label": "KEY=VALUE", "--duration": "DURATION", "--rotate": "DURATION",
    "--buffer": "SIZE", "--spool": "SIZE", "--witness": "MODE", "--comm": "NAME", "--pid": "PID",
    "--at": "HH:MM[:SS]", "--time-unit": "UNIT",
    "--regime": "NAME", "--target": "PATH", "--engine": "NAME", "--streams": "MODE", "--pace": "MODE",
    "--iodepth": "N", "--align": "SIZE", "--target-size": "SIZE", "--format": "FORMAT",
    "--baseline": "TRACE", "--service": "NAME", "--catalog": "PATH", "--cells": "LIST", "--qd": "LIST",
    "--runtime": "DURATION", "--precondition": "MODE", "--size": "SIZE", "--like": "FP.json",
    "--slo": "TERMS", "--time-scale": "X",
    "--history": "DURATION", "--keep": "SIZE", "--for": "DURATION", "--after": "DURATION",
    "--cooldown": "DURATION", "--max-incidents": "N", "--every": "DURATION",
}  # fmt: skip


def command() -> Any:
    """The `iofp` command as click runs it, every value named for what it is (METAVARS; an
    argument by its own name in capitals) rather than by its Python type."""
    root = typer.main.get_command(app)
    for cmd in _walk(root):
        help_option = cmd.get_help_option(typer.Context(cmd, info_name=cmd.name))
        for p in [*cmd.params, *([help_option] if help_option else [])]:
            long = next((o for o in p.opts if o.startswith("--")), "")
            if isinstance(p, TyperOption):
                if p.is_flag:
                    p.metavar = ""
                elif p.metavar is None:
                    p.metavar = METAVARS.get(long, long.removeprefix("--").upper())
            else:
                _name_argument(p)
    return root


def _name_argument(p: Any) -> None:
    """An argument shows as its name in capitals (TRACE, A, PATH...), in the usage line too, where
    typer would write {trace} and a type column such as <path>."""
    name = p.metavar or (p.name or "").upper().removeprefix("ENTRY_")
    shown = name if p.nargs == 1 or name.endswith("...") else f"{name}..."
    p.metavar = name
    p._usage_display_name = lambda: shown if p.required else f"[{shown}]"
    p.display_type_rich = lambda ctx: None


def _walk(cmd: Any) -> list[Any]:
    subs = getattr(cmd, "commands", {})
    return [cmd, *(c for sub in subs.values() for c in _walk(sub))]


def _control_argument(args: list[str]) -> str | None:
    """Why an argument is refused: one holding a control character (a newline, an escape sequence).
    No path, name or value iofp takes has one, and a path that did would carry it into every
    message, hint and job file that names it."""
    for i, a in enumerate(args, 1):
        if terminal.has_control(a):
            return (f"argument {i} ({terminal.one_line(a)[:80]!r}) holds a control character; "
                    "iofp takes none in a path, name or value: rename the file, or leave it out")  # fmt: skip
    return None


def main() -> None:
    """Console-script entry point. Usage errors (an unknown option, a value of the wrong type) are
    one line and exit 2 like every other bad input, not click's boxed usage panel."""
    terminal.install()
    if (bad := _control_argument(sys.argv[1:])) is not None:
        typer.echo(f"iofp: {bad}", err=True)
        sys.exit(2)
    with signals.ending_on_signals():
        try:
            _run()
        finally:
            scratch.remove()  # on every way out: a normal end, an error, a stop signal


def _run() -> None:
    try:
        rv = command()(standalone_mode=False)
    except typer.TyperException as e:  # click's exceptions, whose base typer re-exports under this name
        ctx = getattr(e, "ctx", None)
        if type(e).__name__ == "NoArgsIsHelpError" or ctx is None:
            if msg := e.format_message():  # a bare `iofp` has printed its help already
                typer.echo(msg, err=True)
        else:
            typer.echo(f"iofp: {e.format_message()} (see: {ctx.command_path} --help)", err=True)
        sys.exit(getattr(e, "exit_code", 2))
    except typer.Abort:
        sys.exit(130)
    sys.exit(rv if isinstance(rv, int) else 0)


if __name__ == "__main__":
    main()
