"""`iofp iostat` over a recorder's per-second summary (record/summary.py, record/iostat.py): rates and
mean latencies exact, percentiles within the histogram's stated error of the exact ones, a kill's torn
line skipped, 80 columns, bad input in one line."""

from __future__ import annotations

import json
import time

import numpy as np
import pytest
from helpers import raw_io, raw_sync, run_iofp

from bpf.btf import kernel_btf
from bpf.record import ReqBits
from record import histogram, iostat, read_summary, render_iostat
from record.seconds import NS, Seconds
from record.summary import SUMMARY, SummaryLog, compact_left

T0 = (int(time.time()) // 3600 - 30) * 3600 * NS  # on the hour, a day or so ago
DEV = (7 << 20) | 9


@pytest.fixture(scope="module")
def recorded(tmp_path_factory) -> tuple:
    """Two minutes of a recorder's summary (the second minute slower), its last hour left as a log."""
    root = tmp_path_factory.mktemp("rec")
    bits = ReqBits.from_btf(kernel_btf())
    rng = np.random.default_rng(3)
    log = SummaryLog(root, "s1")
    secs = Seconds({DEV: "loop9"}, "loop9", T0)
    lats = {}
    for t in range(120):
        n = 500 + t
        issue = T0 + t * NS + np.sort(rng.integers(0, NS // 2, n))
        lat = rng.lognormal(11 if t < 60 else 12, 1, n).astype(np.int64)
        ops = rng.choice(["read", "write"], n)
        secs.add_io(raw_io(issue, lat, ops), bits, 0)
        secs.add_sync(raw_sync(issue[:10], [1_000_000] * 10), 0)
        log.write(secs.close(T0 + (t + 1) * NS))
        lats[t] = (lat, ops)
    log.close()
    return root, lats


def test_a_minute_is_the_sum_of_its_seconds_and_its_p99_is_within_the_stated_error(recorded):
    root, lats = recorded
    view = iostat(root, (_clock(T0), _clock(T0 + 120 * NS)), every_s=60)
    assert [r["t"] for r in view.rows] == [T0 // NS, T0 // NS + 60]
    for minute, row in enumerate(view.rows):
        lat = np.concatenate([lats[t][0] for t in range(minute * 60, minute * 60 + 60)])
        ops = np.concatenate([lats[t][1] for t in range(minute * 60, minute * 60 + 60)])
        reads = lat[ops == "read"]
        assert row["r_per_s"] * 60 == len(reads) and row["c_per_s"] == 10
        assert row["r_await_ns"] == pytest.approx(reads.mean(), rel=1e-12)
        for p in ("p99", "p99.9"):
            exact = histogram.exact(reads, p)
            assert abs(row[f"r_{p}_ns"] - exact) <= exact * histogram.ERROR
        assert row["aqu_sz"] == pytest.approx(lat.sum() / 60e9, rel=1e-12)
    lines = render_iostat(view)
    assert max(map(len, lines)) <= 80 and "device loop9" in lines


def test_a_torn_line_from_a_kill_is_skipped_and_the_log_compacted(recorded, tmp_path):
    root, _ = recorded
    log = tmp_path / SUMMARY / "20260101T00.s0.jsonl"
    log.parent.mkdir()
    whole = json.dumps({"t": 7, "rows": [["loop9", "read", 3, 0, 0, 0, 0, 1, [], []]]})
    log.write_text(whole + '\n{"t": 8, "ro')
    compact_left(tmp_path, "s1")
    assert not log.exists() and read_summary(tmp_path)["count"].to_pylist() == [3]
    assert read_summary(root, T0 // NS, T0 // NS + 2)["t"].to_pylist() == [T0 // NS] * 3 + [T0 // NS + 1] * 3


def test_bad_spans_and_directories_are_one_line(recorded, tmp_path):
    root, _ = recorded
    code, _, err = run_iofp("iostat", str(tmp_path))
    assert (code, err) == (2, f"iofp: {tmp_path}: no recorder summary here (no summary/); pass the -o of "
                              "iofp record\n")  # fmt: skip
    code, _, err = run_iofp("iostat", str(root), "--between", "14h", "15:00")
    assert code == 2 and err.startswith("iofp: --between '14h': use HH:MM[:SS]")
    # a span the recorder did not see: one line saying what it did
    code, _, err = run_iofp("iostat", str(root), "--between", "2020-01-01T10:00", "2020-01-01T11:00")
    held = f"{root} holds {_clock(T0, ' ')} to {_clock(T0 + 120 * NS, ' ')} (local time)"
    assert code == 2 and err == (f"iofp: --between 2020-01-01T10:00 2020-01-01T11:00: nothing recorded from "
                                 f"2020-01-01 10:00:00 to 2020-01-01 11:00:00; {held}\n")  # fmt: skip
    code, out, _ = run_iofp("iostat", str(root), "--between", _clock(T0), _clock(T0 + 30 * NS), "--json", "-")
    assert code == 0 and len(json.loads(out)["rows"]) == 30


def _clock(ns: int, sep: str = "T") -> str:
    return time.strftime(f"%Y-%m-%d{sep}%H:%M:%S", time.localtime(ns / NS))
