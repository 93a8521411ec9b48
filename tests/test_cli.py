"""The `iofp` command as a whole: every help ends with an example, and a usage error (an unknown
option, a value of the wrong type) is one line and exit 2, like every other bad input."""

from __future__ import annotations

import subprocess
import sys

import pytest
from conftest import REPO

from cli.app import app

IOFP = [sys.executable, "-m", "cli.app"]


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
    # after the last panel of options or commands (rich draws them in boxes), naming the command
    example = r.stdout.rfind("Example: ")
    assert example > max(r.stdout.rfind("╰"), 0), r.stdout
    assert r.stdout[example:].split()[1:3] in (["iofp", *cmd[:1]], ["sudo", "iofp"]) or not cmd, r.stdout


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


SAMPLE = str(REPO / "samples" / "traces" / "market-open")


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["fingerprint", SAMPLE, "--json", "/proc/x.json"], "iofp: cannot write /proc/x.json: "),
        (["report", SAMPLE, "-o", "{dir}", "--force"], "iofp: {dir} is a directory; name a file to write"),
        (["iolog", SAMPLE, "--regime", "spike", "-o", "/proc/x.iolog"], "iofp: cannot write /proc/x.iolog: "),
        (["iolog", SAMPLE, "--regime", "spike", "-o", "{dir}", "--force"], "iofp: {dir} is a directory"),
        (
            ["replay", SAMPLE, "--target", "{dir}/new.img", "--between", "0", "1", "--no-fidelity",
             "--output", "/proc/x"],
            "iofp: cannot write the results to /proc/x: ",
        ),
        (["import", "msr", "{file}", "-o", "{file}", "--force"], "iofp: {file} is a file, not a trace"),
    ],
    ids=["fingerprint-json", "report-dir", "iolog-proc", "iolog-dir", "replay-proc", "import-file"],
)  # fmt: skip
def test_an_output_that_cannot_be_written_is_one_line_and_exit_2(tmp_path, args, message) -> None:
    (tmp_path / "f.csv").write_text("128166372003061629,src1,0,Read,7014609920,24576,41286\n")
    subst = {"dir": str(tmp_path), "file": str(tmp_path / "f.csv")}
    args = [a.format(**subst) for a in args]
    r = subprocess.run([*IOFP, *args], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 2 and r.stderr.startswith(message.format(**subst)), r.stderr
    assert r.stderr.count("\n") == 1, r.stderr
    assert sorted(p.name for p in tmp_path.iterdir()) == ["f.csv"]  # nothing written, nothing lost
    assert (tmp_path / "f.csv").read_text().startswith("128166372003061629")
