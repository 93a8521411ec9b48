"""Every command is documented: its --help ends with a real example, and the README shows it."""

from __future__ import annotations

import re

import pytest
import typer
from conftest import REPO

from cli.app import app


def _commands(group: typer.Typer, prefix: tuple[str, ...] = ()) -> list[tuple[str, ...]]:
    cmd = typer.main.get_command(group)
    out = []

    def walk(c, path):
        subs = getattr(c, "commands", None)
        if subs:
            for name, sub in subs.items():
                walk(sub, (*path, name))
        else:
            out.append(path)

    walk(cmd, prefix)
    return out


COMMANDS = _commands(app)


def test_every_stage_registered_its_commands():
    names = {" ".join(c) for c in COMMANDS}
    for expected in ("capture", "doctor", "import", "fingerprint", "diff", "report", "iolog", "replay",
                     "compare", "catalog add", "catalog list", "catalog show", "catalog trend"):  # fmt: skip
        assert expected in names


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_readme_shows_every_command(command):
    readme = (REPO / "README.md").read_text()
    assert re.search(rf"\biofp {re.escape(' '.join(command))}\b", readme), (
        f"README never shows iofp {' '.join(command)}"
    )
