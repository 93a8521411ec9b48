"""Per-stream replay and pacing compensation: real capture of a two-process fsync-heavy workload, real fio."""

from __future__ import annotations

from pathlib import Path

import numpy as np
import pytest
from conftest import needs_fio, needs_root
from helpers import io_lines, load_result, run_iofp
from lab import DISK, destroy_loop, fio, make_loop

from iofp.contract import open_trace
from replay.iolog import pacing

WAL_JOB = """
[global]
filename={dev}
direct=1
runtime=2
time_based=1
[wal]
ioengine=psync
rw=write
bs=4k
size=16m
fdatasync=1
rate_iops=800
[reads]
ioengine=libaio
iodepth=2
rw=randread
bs=4k
offset=32m
size=32m
rate_iops=800
"""


def test_pacer_prepays_a_constant_overhead_and_carries_deficits_forward():
    t = np.array([0, 1000, 2000, 2000, 2000, 10000], dtype=np.int64) * 1000  # ns
    # c = 20 µs: every slept gap shrinks by c; the burst at 2000 µs costs 2 more c, paid by the next gap.
    assert pacing.Pacer(20_000).log_us(t).tolist() == [1, 961, 1941, 1941, 1941, 9881]
    # Streaming in batches gives the same log.
    p = pacing.Pacer(20_000)
    assert np.concatenate([p.log_us(t[:4]), p.log_us(t[4:])]).tolist() == [1, 961, 1941, 1941, 1941, 9881]
    # c = 0 is the trace's own schedule, +1 µs (fio drops the gap after a timestamp 0).
    assert pacing.Pacer(0).log_us(t).tolist() == [1, 1001, 2001, 2001, 2001, 10001]


def test_libaio_gaps_after_a_sync_count_from_the_last_data_io():
    t = np.array([0, 1000, 1050, 3000], dtype=np.int64) * 1000
    sync = np.array([False, False, True, False])
    # fio 3.33's libaio does not move last_issue on a sync: the write at 3000 µs waits from the write at
    # 1000 µs, so its line comes 2000 µs (less c) after the sync's line, not 1950.
    assert pacing.Pacer(0, sync_resets_clock=False).log_us(t, sync).tolist() == [1, 1001, 1051, 3051]
    assert pacing.Pacer(10_000, sync_resets_clock=False).log_us(t, sync).tolist() == [1, 981, 1021, 3011]


@pytest.mark.parametrize(
    ("text", "mode", "ns"),
    [("absolute", "absolute", 0.0), ("auto", "auto", 0.0), ("off", "off", 0.0), ("20us", "fixed", 20_000.0)],
)
def test_pace_option_parses(text, mode, ns):
    spec = pacing.PaceSpec.parse(text)
    assert (spec.mode, spec.overhead_ns) == (mode, ns)


@needs_root
@needs_fio
def test_calibration_measures_a_sane_overhead(tmp_path):
    dev, backing = make_loop(64)
    try:
        p = pacing.calibrate(Path(dev), 64 << 20, ["libaio"], 300_000, tmp_path)
    finally:
        destroy_loop(dev, backing)
    cal = p.calibration[0]
    assert cal["gap_us"] == 300 and cal["ios"] == 1666 and len(cal["runs_ms"]) == 3
    # fio's per-I/O cost beyond the gap: 14-23 µs quiet here, 29-53 beside two CPU hogs, 448 in a
    # fresh-clone CI run beside another benchmark's fio; from 1 ms up it is a broken run, not overhead
    c_us = cal["overhead_us"]
    assert 0 < c_us < pacing.MAX_OVERHEAD_NS / 1e3 and p.overhead_ns["libaio"] == pytest.approx(c_us * 1e3)
    assert (tmp_path / "calibration.json").is_file()


@pytest.fixture(scope="module")
def wal_trace(tmp_path_factory) -> Path:
    """A live capture of two processes: a WAL writer (write + fdatasync) and a random reader."""
    import bpf

    root = tmp_path_factory.mktemp("wal")
    dev, backing = make_loop(64)
    try:
        job = root / "wal.fio"
        job.write_text(WAL_JOB.format(dev=dev))
        with bpf.start_capture(bpf.CaptureOptions(output=root / "trace", devices=[Path(dev).name])) as bg:
            res = fio(job, timeout=60, check=False)
            bg.stop()
    finally:
        destroy_loop(dev, backing)
    assert res.returncode == 0, res.stderr
    return root / "trace"


def replay(trace: Path, dev: str, out: Path, *args: str) -> dict:
    code, _, err = run_iofp(
        "replay", "--repeat", "1", trace, "--target", dev, "--output", out, "--allow-destructive", *args
    )
    assert code == 0, err
    return load_result(out)


@needs_root
@needs_fio
def test_per_stream_replay_keeps_every_io_exactly_once(wal_trace, tmp_path):
    n = open_trace(wal_trace).num_rows()
    # A direct-io loop over the VM disk: ~270 µs per flush.
    dev, backing = make_loop(64, DISK)
    try:
        recs = {}
        for mode in ("pid", "single"):
            i = len(recs)
            recs[(mode, i)] = replay(
                wal_trace, dev, tmp_path / f"{mode}{i}", "--streams", mode, "--pace", "off"
            )
    finally:
        destroy_loop(dev, backing)
    for (mode, i), rec in recs.items():
        fid = rec["fidelity"]
        assert (fid["expected"], fid["matched"], fid["missing"], fid["extra"]) == (n, n, 0, 0), mode
        out = tmp_path / f"{mode}{i}"
        if mode == "pid":
            assert rec["settings"]["streams"] == "pid" and len(rec["settings"]["jobs"]) == 2
            logs = [out / j["iolog"] for j in rec["settings"]["jobs"]]
            assert sum(len(io_lines(p)) - 3 for p in logs) == n  # each I/O in one log
        else:
            assert rec["settings"]["streams"] == "single" and len(io_lines(out / "replay.iolog")) - 3 == n
    # Timing is measured, not asserted: on this machine per-stream jobs did not reliably stretch less
    # than one job (pid +2.3/+1.9% vs single +3.0/+1.1% in one alternated run; BENCHMARKS.md, Replay).
    for rec in recs.values():
        assert rec["fidelity"]["late_p50_us"] <= rec["fidelity"]["late_p99_us"]
