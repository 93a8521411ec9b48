"""`iofp report` of a flight recorder's directory: the per-second summary drawn per device with the
incidents it saved, as Chromium renders it."""

from __future__ import annotations

import pytest
from helpers import assert_drawn, run_iofp
from test_record_recorder import NS, T0, recorder, second

from bpf.btf import kernel_btf
from bpf.record import InflightFixes, ReqBits
from iofp import slo
from iofp.contract import TraceMeta


@pytest.fixture(scope="module")
def bits() -> ReqBits:
    return ReqBits.from_btf(kernel_btf())


def test_a_recorders_report_draws_its_summary_and_marks_its_incident(tmp_path, bits):
    wall0 = 1_800_000_000 * NS - T0
    (tmp_path / "rec").mkdir()
    (tmp_path / "rec" / "recorder.json").write_text("{}")  # what iofp record writes first
    rec = recorder(tmp_path / "rec", wall0, trigger=slo.parse("read.p99<=1ms"), for_ns=2 * NS)
    rec.start(T0, bits, {(7 << 20) | 9: "loop9"}, TraceMeta(capture_start_ns=T0 + wall0))
    for s in range(40):
        io, sync, counts = second(s, slow=15 <= s < 18)
        rec.put((io, sync, counts, InflightFixes()), T0 + (s + 1) * NS + 1000, last=s == 39)
    rec.finish("")
    code, out, err = run_iofp("report", str(tmp_path / "rec"), "-o", str(tmp_path / "rec.html"))
    assert code == 0, err
    assert out.strip().endswith("(it reports a flight recorder's summary)")
    page = (tmp_path / "rec.html").read_text()
    (name,) = [p.name for p in (tmp_path / "rec" / "incidents").iterdir()]
    assert page.count(name) >= 3 and "read p99 2.00 ms &gt; 1.00 ms" in page  # both charts, the table
    assert "loop9: p99 latency per op" in page and "reads/s" in page
    assert "peak: read p99 2.01 ms" in page  # the spike (2 ms, in its histogram bin), the axis on to 10 ms
    assert_drawn(tmp_path, tmp_path / "rec.html", "1280,1000")
