"""Commit groups on real captures: a buffered writer's fdatasync forces its writes (the kernel writes them
back from the caller's task, inside the call), and the replay issues them inside fio's datasync again."""

from __future__ import annotations

import subprocess
from pathlib import Path

import duckdb
import pytest
from conftest import destroy_loop_device, make_loop_device, needs_fio, needs_root
from helpers import load_result, run_iofp

pytestmark = [needs_root, needs_fio]
N = 300  # 8 KiB buffered writes, an fdatasync after each, 500/s


def inside_calls(trace: Path, comm: str = "fio") -> tuple[int, int, int]:
    """(writes, writes that entered the block layer inside an fdatasync of their own process, calls)."""
    con = duckdb.connect()
    io, sync = f"'{trace}/io/*.parquet'", f"'{trace}/sync/*.parquet'"
    [(writes, inside)] = con.sql(
        f"""SELECT count(*), count(*) FILTER (WHERE EXISTS (
                SELECT 1 FROM {sync} s WHERE s.pid = w.pid AND s.call = 'fdatasync'
                AND coalesce(w.queue_ns, w.ts_ns) BETWEEN s.ts_ns AND s.ts_ns + s.lat_ns))
            FROM {io} w WHERE w.op = 'write' AND w.comm = '{comm}'"""
    ).fetchall()
    [(calls,)] = con.sql(
        f"SELECT count(*) FROM {sync} WHERE call = 'fdatasync' AND comm = '{comm}'"
    ).fetchall()
    return writes, inside, calls


@pytest.fixture(scope="module")
def buffered_writer(tmp_path_factory) -> Path:
    """iofp's capture of fio writing 8 KiB through the page cache with an fdatasync after each write."""
    import bpf

    out = tmp_path_factory.mktemp("c") / "orig"
    dev, backing = make_loop_device(64)
    job = [
        "fio", "--name=wal", f"--filename={dev}", "--direct=0", "--ioengine=psync", "--rw=write", "--bs=8k",
        "--fdatasync=1", f"--number_ios={N}", "--rate_iops=500", "--size=32m",
    ]  # fmt: skip
    try:
        with bpf.start_capture(bpf.CaptureOptions(output=out, devices=[Path(dev).name])) as bg:
            res = subprocess.run(job, capture_output=True, text=True, timeout=120)
            bg.stop()
    finally:
        destroy_loop_device(dev, backing)
    assert res.returncode == 0, res.stderr
    return out


def test_the_kernel_gives_forced_writes_the_callers_pid_inside_its_call(buffered_writer):
    # Checked on the live capture: every write fdatasync forced entered the block layer from the
    # calling process, inside its call (block_io_start runs in the submitter's task). fio issues no
    # fdatasync after its last write: that one is written back when fio closes the device.
    assert inside_calls(buffered_writer) == (N, N - 1, N - 1)


def test_a_replayed_commit_covers_the_writes_it_forced(buffered_writer, tmp_path):
    dev, backing = make_loop_device(64)
    out = tmp_path / "r"
    try:
        code, stdout, err = run_iofp("replay", buffered_writer, "--target", dev, "--output", out)
    finally:
        destroy_loop_device(dev, backing)
    assert code == 0, err
    rec = load_result(out)
    commits = rec["plan"]["commits"]
    c = N - 1  # the calls, and the writes they forced
    assert (commits["replayed"], commits["forced_writes"], commits["covered_flushes"]) == (c, c, c)
    jobs = {s["kind"]: s for s in rec["conversion"]["streams"]}
    assert (jobs["commit"]["engine"], jobs["commit"]["direct"], jobs["commit"]["kept"]) == (
        "psync",
        False,
        2 * c,
    )
    assert jobs["data"]["kept"] == 1  # the last write, which no call forced: direct, at its own time
    assert "direct=0" in (out / "job.fio").read_text()
    assert f"commits: {c} sync calls ({c} fdatasync); {c} writes they forced" in stdout
    # Per the replay's own capture: fio's forced writes enter the block layer inside fio's fdatasync.
    _, inside, calls = inside_calls(out / "capture")
    assert (inside, calls) == (c, c)
    fid = rec["fidelity"]
    assert fid["per_op"]["fdatasync"] == {"expected": c, "replayed": c, "matched": c}
    assert fid["per_op"]["write"] == {"expected": N, "replayed": N, "matched": N}
    assert rec["measured"]["commit_from"] == "sync calls"
    assert rec["measured"]["syncs"]["fdatasync"]["count"] == c
