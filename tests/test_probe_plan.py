"""`iofp probe`'s options: every bad one is one line, exit 2, before the target is opened or anything
is written (the target here does not exist: the options are refused before it is looked at)."""

from __future__ import annotations

import pytest
from helpers import run_iofp

NO_TARGET = "/nonexistent/iofp-probe-target"


@pytest.mark.parametrize(
    "args, message",
    [
        (["--qd", "1,0,4"], "--qd '1,0,4': '0' is not a queue depth; use e.g. --qd 1,4,16,64"),
        (["--qd", "1,,4"], "--qd '1,,4': '' is not a queue depth; use e.g. --qd 1,4,16,64"),
        (["--qd", "four"], "--qd 'four': 'four' is not a queue depth; use e.g. --qd 1,4,16,64"),
        (["--runtime", "fast"], "--runtime 'fast' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h"),
        (["--runtime", "500ms"], "--runtime 500ms: use whole milliseconds from 1s to 1h, e.g. --runtime 10s"),
        (["--cells", "randread,iops"], "--cells 'randread,iops': no cell 'iops'; "
                                       "choose from randread,sweep,seq,commit,tail"),
        (["--cells", "tail"], "--cells tail runs at 80% of cell 1's max IOPS; add randread or sweep, "
                              "e.g. --cells randread,tail"),
        (["--precondition", "twice"], "--precondition twice: choose one of none, fill, snia"),
        (["--reads-only", "--precondition", "fill"],
         "--precondition writes the target; drop it or drop --reads-only"),
    ],
)  # fmt: skip
def test_bad_input_is_one_line_before_any_io(args, message, tmp_path):
    code, _, err = run_iofp("probe", NO_TARGET, *args, "-o", tmp_path / "p")
    assert (code, err) == (2, f"iofp: {message}\n")
    assert not (tmp_path / "p").exists()


@pytest.mark.parametrize(
    "content, why", [(None, "cannot read it (No such file or directory)"), ("{", "not valid JSON")]
)
def test_an_unreadable_like_is_bad_input_before_any_io(content, why, tmp_path):
    fp = tmp_path / "fp.json"
    if content is not None:
        fp.write_text(content)
    code, _, err = run_iofp("probe", NO_TARGET, "--like", fp, "-o", tmp_path / "p")
    assert code == 2 and err.startswith(f"iofp: {fp}: {why}") and err.count("\n") == 1
    assert not (tmp_path / "p").exists()
