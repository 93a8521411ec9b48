"""The one meaning of `--json FILE|-` in every command, and the help texts of the shared options.

`--json FILE` writes the command's machine-readable document to FILE (never over an existing one
without --force; checked before any work) and the human summary to stdout as usual; `--json -`
writes the document to stdout and the summary to stderr, so `iofp diff A B --json - | jq` reads
clean JSON. Imports no stage.
"""

from __future__ import annotations

import json
import shlex
import sys
from pathlib import Path
from typing import Any

import typer
from rich.console import Console

from iofp import objstore, terminal
from iofp.contract import atomic_write_bytes, check_output_file
from iofp.errors import BadInput

JSON_HELP = "Write the result as JSON to FILE, or to stdout with - (the summary then goes to stderr)."
OUTPUT_METAVAR = "PATH"


def shell_command(*words: object) -> str:
    """A command line to print for the user to run (a `Next:` hint): every word shell-quoted, so a
    path or a service named `x; rm -rf ~` is one word of it, never a second command."""
    return shlex.join(str(w) for w in words)


def json_option(*aliases: str, text: str = JSON_HELP) -> Any:
    """`--json FILE|-` as every command declares it (the one declaration; typer's default value)."""
    return typer.Option(None, "--json", *aliases, help=text)


def force_option(what: str = "an existing --json file") -> Any:
    """`--force` as every command declares it: overwrite `what`, which it otherwise refuses."""
    return typer.Option(False, "--force", help=f"Overwrite {what}.")


def json_target(arg: str | None, *, force: bool) -> Path | objstore.Url | None:
    """The --json file (or s3:// object), checked before any work; None for none or stdout (-)."""
    if arg is None or arg == "-":
        return None
    if (url := objstore.url_of(arg)) is not None:
        check_output_object(url, force=force)
        return url
    check_output_file(Path(arg), force=force)
    return Path(arg)


def check_output_object(url: objstore.Url, *, force: bool) -> None:
    """Refuse, before any work, an object that is there (without force) or a bucket that is not."""
    objstore.check_bucket(url)
    if not force and objstore.head(url) is not None:
        raise BadInput(f"{url} already exists; pass --force to overwrite it")


def human_console(arg: str | None) -> Console:
    """Where the human summary goes: stderr when the JSON takes stdout."""
    return terminal.console(stderr=arg == "-")


def echo(text: str, arg: str | None) -> None:
    """A line of the human summary, on stderr when the JSON takes stdout."""
    typer.echo(text, err=arg == "-")


def emit_json(
    arg: str | None, doc: Any, *, force: bool, text: str | None = None
) -> Path | objstore.Url | None:
    """Write `doc` where --json says (`text`, if given, is its serialisation); the file written, if any."""
    if arg is None:
        return None
    body = text if text is not None else json.dumps(doc, indent=1, default=str) + "\n"
    if arg == "-":
        sys.stdout.write(body)
        sys.stdout.flush()
        return None
    if (url := objstore.url_of(arg)) is not None:
        objstore.put_bytes(url, body.encode(), overwrite=force)
        return url
    path = Path(arg)
    check_output_file(path, force=force)
    atomic_write_bytes(path, body.encode())
    return path
