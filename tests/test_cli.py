"""The `iofp` command as a whole: every help ends with an example, and a usage error (an unknown
option, a value of the wrong type) is one line and exit 2, like every other bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from iofp.cli import app

IOFP = [sys.executable, "-m", "iofp.cli"]


def commands() -> list[list[str]]:
    out = [[]]
    out += [[c.name] for c in app.registered_commands]
    for g in app.registered_groups:
        out += [[g.name]] + [[g.name, c.name] for c in g.typer_instance.registered_commands]
    return out


@pytest.mark.parametrize("cmd", commands(), ids=lambda c: " ".join(c) or "iofp")
def test_every_help_ends_with_an_example(cmd: list[str]) -> None:
    r = subprocess.run([*IOFP, *cmd, "--help"], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 0, r.stderr
    # after the last panel of options or commands (rich draws them in boxes)
    assert r.stdout.rfind("Example: ") > max(r.stdout.rfind("╰"), 0), r.stdout


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["replay", "t", "--time-scale", "abc"], "iofp: Invalid value for '--time-scale'"),
        (["fingerprint"], "iofp: Missing argument 'trace'. (see: "),
        (["fingerprint", "t", "--no-such-option"], "iofp: No such option: --no-such-option"),
        (["nosuch"], "iofp: No such command 'nosuch'. (see: "),
        (["catalog", "show", "abc"], "iofp: Invalid value for 'entry_id'"),
    ],
)
def test_a_usage_error_is_one_line_and_exit_2(args: list[str], message: str) -> None:
    r = subprocess.run([*IOFP, *args], capture_output=True, text=True, cwd=REPO, timeout=60)
    assert r.returncode == 2
    assert r.stderr.startswith(message) and r.stderr.count("\n") == 1, r.stderr
