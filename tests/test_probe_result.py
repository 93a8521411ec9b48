"""The probe result contract (iofp/probe_result.py): written whole, read back typed, checked on read."""

from __future__ import annotations

import json

import pytest

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
    res = pr.ProbeResult(
        kind=pr.KIND, version=pr.VERSION, tool_version="0", fio_version="fio-3.33", host="h", kernel="k",
        started="2026-11-24T00:00:00+00:00",
        target=pr.Target("/dev/loop9", "block", "loop9", 1 << 30, 1 << 30, 512, {"dev": "7:9"}),
        labels={"device": "ram-loop"}, settings={"qd": [1, 8]},
        workload=pr.Workload("defaults", 4096, 4096, [1, 32], [1, 8], {"read_size": "default 4KiB"}),
        runs_planned=2,
        runs=[pr.Run("01-randread-qd1", "runs/01-randread-qd1", "randread", "randread", 4096, 1, 1, None, 1.0,
                     0, 1, 2, fio=pr.FioFigures(10, 10.0, 0.04, 5.0, 9.0, 9.5, 1000),
                     steady=pr.Steadiness("steady", 0.1, 9, 0.05, 0.02))],
        cells=[pr.Cell(1, "rand read 4KiB QD1", "01-randread-qd1")],
        sweep=pr.Sweep(4096, [pr.SweepPoint(1, "01-randread-qd1", 10.0, 5.0, 9.0, 9.5)], None, "rule",
                       0.1, 0.5, "no knee"),
        interrupted="SIGTERM",
    )  # fmt: skip
    pr.write(tmp_path, res)
    root, back = pr.load(tmp_path / pr.RECORD)
    assert root == tmp_path and back == res
    assert back.run("01-randread-qd1").fio.p99_us == 9.0
