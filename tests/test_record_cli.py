"""`iofp record` refuses what cannot work in one line naming the fix (exit 2) before anything is loaded
or attached, leaving the directory as it was; the README's systemd unit is one systemd accepts."""

from __future__ import annotations

import re
import shlex
import shutil
import subprocess

import pytest
from conftest import REPO
from helpers import run_iofp

from iofp import slo


def refused(*args: str) -> str:
    code, out, err = run_iofp("record", *args)
    assert (code, out) == (2, ""), err
    assert err.count("\n") == 1 and "Traceback" not in err
    return err.removeprefix("iofp: ").rstrip("\n")


def test_a_trigger_that_does_not_parse_is_named_with_the_grammar(tmp_path):
    out = tmp_path / "rec"
    err = refused("-o", str(out), "--trigger", "commit.p99<5ms")
    assert err == f"--trigger term 'commit.p99<5ms': {slo.GRAMMAR.replace('--slo', '--trigger')}"
    assert refused("-o", str(out), "--trigger", "iops>=demanded").startswith(
        "--trigger iops>=demanded: a recorder has no demanded rate; bound the rate itself"
    )
    assert not out.exists()


def test_after_longer_than_the_history_is_refused(tmp_path):
    out = tmp_path / "rec"
    err = refused("-o", str(out), "--history", "1m", "--after", "5m")
    assert err.startswith("--after 300s is longer than --history 60s: ")
    assert err.endswith("use --after 60s or less, or --history 300s")
    assert not out.exists()


def test_a_ring_on_a_filesystem_with_less_free_space_than_keep_is_refused(tmp_path):
    out = tmp_path / "rec"
    err = refused("-o", str(out), "--keep", "1000000TiB")
    free = r"[0-9.]+[KMGT]iB"
    want = (rf"{re.escape(str(out))} is on a filesystem with {free} free, less than --keep 1000000TiB; "
            rf"free space there, put the ring elsewhere, or pass --keep {free}")  # fmt: skip
    assert re.fullmatch(want, err), err
    assert not out.exists()


def test_a_directory_that_is_not_a_recorders_is_refused(tmp_path):
    (tmp_path / "notes.txt").write_text("mine")
    assert refused("-o", str(tmp_path)).startswith(f"{tmp_path} holds something other than a recorder's ring")
    assert refused("-o", str(tmp_path / "notes.txt")).startswith(f"{tmp_path / 'notes.txt'} is a file")
    assert refused("-o", str(tmp_path / "r"), "--window", "1500ms").startswith("--window 1.5s: use whole")
    assert [p.name for p in tmp_path.iterdir()] == ["notes.txt"]


def test_a_device_that_is_not_there_is_refused_before_anything_is_made(tmp_path):
    out = tmp_path / "rec"
    err = refused("-d", "nosuchdisk9", "-o", str(out))
    assert err == "no block device named 'nosuchdisk9'; pass --device NAME from `lsblk -d`, e.g. loop3"
    assert not out.exists()


def test_dump_with_no_recorder_running_says_how_to_start_one(tmp_path):
    code, _, err = run_iofp("record", "--dump", str(tmp_path))
    assert (code, err) == (2, f"iofp: {tmp_path}: no recorder is running there; start one with iofp record "
                              f"-o {tmp_path}\n")  # fmt: skip


def test_the_readme_unit_is_one_systemd_accepts(tmp_path):
    if shutil.which("systemd-analyze") is None:
        pytest.skip("needs systemd-analyze (systemd)")
    readme = (REPO / "README.md").read_text()
    unit = re.search(r"# /etc/systemd/system/iofp-recorder.service\n(.*?)```", readme, re.S)[1]
    assert "ExecStart=/opt/iofp/.venv/bin/iofp record " in unit and "TimeoutStopSec=" in unit
    path = tmp_path / "iofp-recorder.service"
    path.write_text(unit.replace("/opt/iofp/.venv/bin/iofp", str(REPO / ".venv" / "bin" / "iofp")))
    res = subprocess.run(["systemd-analyze", "verify", str(path)], capture_output=True, text=True)
    problems = [x for x in res.stderr.splitlines() if "iofp-recorder" in x]
    assert res.returncode == 0 and problems == [], res.stderr
    # the trigger in it is one iofp takes, as systemd hands it over (its quotes removed)
    args = shlex.split(re.search(r"ExecStart=\S+ record (.*)", unit)[1])
    assert [str(t.text) for t in slo.parse(args[args.index("--trigger") + 1], "--trigger").terms] == [
        "commit.p99<=5ms", "iops<=30000",
    ]  # fmt: skip
