"""Every command is documented: its --help ends with a real example, and the README shows it."""

from __future__ import annotations

import re

import pytest
import typer
from conftest import REPO
from typer.testing import CliRunner

from iofp.cli import app

runner = CliRunner()


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
def test_help_ends_with_an_example(command):
    r = runner.invoke(app, [*command, "--help"], terminal_width=200)
    assert r.exit_code == 0, r.output
    text = [line.strip(" │") for line in r.output.splitlines()]
    examples = [
        line for line in text if line.startswith("Example: iofp ") or line.startswith("Example: sudo iofp ")
    ]
    assert examples, f"iofp {' '.join(command)} --help has no 'Example: iofp ...' line"
    assert " ".join(command) in examples[-1]


@pytest.mark.parametrize("command", COMMANDS, ids=" ".join)
def test_readme_shows_every_command(command):
    readme = (REPO / "README.md").read_text()
    assert re.search(rf"\biofp {re.escape(' '.join(command))}\b", readme), (
        f"README never shows iofp {' '.join(command)}"
    )
