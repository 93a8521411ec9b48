"""The probe result contract (iofp/probe_result.py): written whole, read back typed, checked on read."""

from __future__ import annotations

import json

import pytest
from helpers import probe_record

from iofp import probe_result as pr
from iofp.errors import BadInput


def test_a_result_of_another_kind_or_version_is_refused(tmp_path):
    (tmp_path / "probe.json").write_text(json.dumps({"kind": pr.KIND, "version": 99}))
    with pytest.raises(BadInput, match="probe result v99; this iofp reads v1-v2"):
        pr.load(tmp_path)
    (tmp_path / "probe.json").write_text(json.dumps({"kind": "iofp-replay-result", "version": 1}))
    with pytest.raises(BadInput, match="not an iofp probe result"):
        pr.load(tmp_path)


def test_a_result_reads_back_as_written(tmp_path):
    res = probe_record(interrupted="SIGTERM")
    pr.write(tmp_path, res)
    root, back = pr.load(tmp_path / pr.RECORD)
    assert root == tmp_path and back == res
    assert back.run("01-randread-qd1").fio.p99_us == 9.0
