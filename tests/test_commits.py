"""Commit groups: a buffered writer's fdatasync forces its writes (the kernel writes them back from the
caller's task, inside the call), and the replay issues them inside fio's datasync again; callers whose
calls never overlapped (serialized by the application) share one commit job. On real captures (fio, and
PostgreSQL's pgbench) and on small traces written through the contract."""

from __future__ import annotations

import contextlib
from pathlib import Path

import duckdb
import pyarrow as pa
import pyarrow.compute as pc
import pytest
from conftest import needs_fio, needs_root
from helpers import load_result, run_iofp
from lab import destroy_loop, fio, make_loop

from iofp.contract import TraceMeta, TraceWriter, open_trace
from replay import iolog
from replay.iolog import commits
from replay.iolog import plan as planmod
from replay.iolog import selection as selmod

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
    dev, backing = make_loop(64)
    job = [
        "--name=wal", f"--filename={dev}", "--direct=0", "--ioengine=psync", "--rw=write", "--bs=8k",
        "--fdatasync=1", f"--number_ios={N}", "--rate_iops=500", "--size=32m",
    ]  # fmt: skip
    try:
        with bpf.start_capture(bpf.CaptureOptions(output=out, devices=[Path(dev).name])) as bg:
            res = fio(*job, timeout=120, check=False)
            bg.stop()
    finally:
        destroy_loop(dev, backing)
    assert res.returncode == 0, res.stderr
    return out


@needs_root
@needs_fio
def test_the_kernel_gives_forced_writes_the_callers_pid_inside_its_call(buffered_writer):
    # Checked on the live capture: every write fdatasync forced entered the block layer from the
    # calling process, inside its call (block_io_start runs in the submitter's task). fio issues no
    # fdatasync after its last write: that one is written back when fio closes the device.
    assert inside_calls(buffered_writer) == (N, N - 1, N - 1)


@needs_root
@needs_fio
def test_a_replayed_commit_covers_the_writes_it_forced(buffered_writer, tmp_path):
    dev, backing = make_loop(64)
    out = tmp_path / "r"
    try:
        code, stdout, err = run_iofp(
            "replay", "--repeat", "1", buffered_writer, "--target", dev, "--output", out
        )
    finally:
        destroy_loop(dev, backing)
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
    # Per the replay's own capture: fio's forced writes enter the block layer inside fio's fdatasync (all
    # but the last, direct write). Under memory pressure the kernel's flusher may write some of the pages
    # first (a kworker's request, not fio's) and the call the rest: the bytes are matched, not the shapes.
    writes, inside, calls = inside_calls(out / "capture")
    assert (writes - inside, calls) == (1, c)
    fid = rec["fidelity"]
    assert fid["per_op"]["fdatasync"] == {"expected": c, "replayed": c, "matched": c}
    w = fid["per_op"]["write"]
    assert (w["expected"], w["matched"] + w["reshaped"], fid["missing"], fid["extra"]) == (N, N, 0, 0), w
    assert rec["measured"]["commit_from"] == "sync calls"
    assert rec["measured"]["syncs"]["fdatasync"]["count"] == c


def test_callers_join_the_first_group_they_never_overlapped():
    # 1 and 2 overlapped, 3 overlapped 1 only, 4 nobody: busiest first, each in the first group it can.
    assert commits.serialized_groups([1, 2, 3, 4], {(1, 2), (1, 3)}) == [[1, 4], [2, 3]]
    assert commits.serialized_groups([5, 6, 7], set()) == [[5, 6, 7]]
    assert commits.serialized_groups([], set()) == []


def commit_trace(root: Path, calls: list[tuple[int, int, int]]) -> Path:
    """A trace of buffered writers: per (pid, start µs, length µs) an fdatasync that forced one 4 KiB
    write (entered the block layer 10 µs into the call) and the flush it caused."""
    io: dict[str, list] = {k: [] for k in ("ts_ns", "queue_ns", "lat_ns", "offset", "size", "op", "pid")}
    for k, (pid, t, _) in enumerate(calls):
        for op, off, size in (("write", k * 4096, 4096), ("flush", 0, 0)):
            for key, v in zip(io, ((t + 10) * 1000, (t + 10) * 1000, 5000, off, size, op, pid), strict=True):
                io[key].append(v)
    sync = {
        "ts_ns": [t * 1000 for _, t, _ in calls],
        "lat_ns": [n * 1000 for _, _, n in calls],
        "call": ["fdatasync"] * len(calls),
        "pid": [p for p, _, _ in calls],
        "tid": [p for p, _, _ in calls],
    }
    with TraceWriter(root, TraceMeta(source="test")) as w:
        w.write("io", pa.table({"device": ["loop9"] * len(io["ts_ns"]), **io}))
        w.write("sync", pa.table(sync))
    return root


@pytest.mark.parametrize(
    ("calls", "jobs"),
    [
        # Three processes taking turns (as PostgreSQL's backends do under the WAL write lock): one job.
        ([(11, 0, 50), (12, 100, 50), (13, 200, 50), (11, 300, 50), (12, 400, 50)], ["commit-pid-11+2"]),
        # 12's call starts while 11's runs: they were not serialized and each keeps a job of its own.
        ([(11, 0, 50), (12, 20, 50), (13, 200, 50), (11, 300, 50)], ["commit-pid-11+1", "commit-pid-12"]),
    ],
)
def test_commit_jobs_group_the_callers_whose_calls_never_overlapped(tmp_path, calls, jobs):
    plan = planmod.resolve(open_trace(commit_trace(tmp_path / "t", calls)), selmod.Selection())
    try:
        got = [s for s in plan.streams.streams if s.kind == "commit"]
        assert [s.name for s in got] == jobs
        assert plan.commits.forced_writes == len(calls)
        # Every caller's calls and writes go to its group's job, and nowhere else.
        assert sum(s.flushes for s in got) == len(calls) and sum(s.writes for s in got) == len(calls)
        # ... as the converter routes them: each job's log holds its members' writes and calls, in order.
        conv = iolog.write(plan, tmp_path / "r.iolog", iolog.Mapping(target="/dev/loop9"))
        rep = conv.report
        for s in got:
            members = {s.pid, *s.merged}
            n = sum(1 for c in calls if c[0] in members)
            [st] = [r for r in rep.streams if r["name"] == s.name]
            lines = Path(st["iolog"]).read_text().splitlines()[3:]
            assert st["kept"] == 2 * n
            assert [ln.split()[2] for ln in lines] == ["write", "datasync"] * n, lines
            # the first call's write moved to the call's start, 10 µs before the first I/O: the clock
            # starts there (it read "-9 /dev/loop9 write 0 4096", and the expected I/Os -10 µs)
            assert min(int(ln.split()[0]) for ln in lines) >= 1, lines
        assert pc.min(conv.expected.io["ts_ns"]).as_py() == 0
    finally:
        plan.close()


def pg_installed() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))


needs_postgres = pytest.mark.skipif(
    not pg_installed(), reason="needs PostgreSQL (scripts/setup.sh installs it as root)"
)


def overlapping(trace: Path, comm: str) -> tuple[int, int, int]:
    """(fdatasync calls of `comm`, their processes, calls that overlapped another process's call)."""
    con = duckdb.connect()
    con.sql(f"CREATE VIEW s AS SELECT pid, ts_ns, ts_ns + lat_ns AS e FROM '{trace}/sync/*.parquet' "
            f"WHERE call = 'fdatasync' AND comm = '{comm}'")  # fmt: skip
    [row] = con.sql(
        "SELECT count(*), count(DISTINCT pid), count(*) FILTER (WHERE EXISTS (SELECT 1 FROM s AS b "
        "WHERE b.pid <> a.pid AND b.ts_ns < a.e AND b.e > a.ts_ns)) FROM s AS a"
    ).fetchall()
    return row


@pytest.fixture(scope="module")
def pgbench_trace(tmp_path_factory) -> Path:
    """iofp's capture of PostgreSQL (a fresh cluster on ext4 on a RAM loop device) running pgbench at
    200 transactions/s from 4 clients for 4 s (bench/commit_fidelity.py's set-up)."""
    import argparse
    import sys

    from conftest import REPO

    sys.path.insert(0, str(REPO))
    from bench.commit_fidelity import Lab, pgbench_captured

    work = tmp_path_factory.mktemp("pg")
    args = argparse.Namespace(rate=200, clients=4, seconds=4)
    with contextlib.closing(Lab(work, f"/dev/shm/iofp-test-{work.name}-")) as lab:
        dev, sock = lab.cluster("ram", 512, 1)
        pgbench_captured(lab, dev, sock, work / "pg", args)
    return work / "pg"


@needs_root
@needs_fio
@needs_postgres
def test_postgres_commits_replay_serialized_in_one_job_and_whole(pgbench_trace, tmp_path):
    # PostgreSQL's backends fdatasync the WAL under its write lock: several processes, never two at once.
    calls, procs, overlapped = overlapping(pgbench_trace, "postgres")
    assert calls >= 200 and procs >= 2 and overlapped == 0
    dev, backing = make_loop(512)
    out = tmp_path / "r"
    try:
        code, stdout, err = run_iofp(
            "replay", "--repeat", "1", pgbench_trace, "--target", dev, "--output", out
        )
    finally:
        destroy_loop(dev, backing)
    assert code == 0, err
    rec = load_result(out)
    c = rec["plan"]["commits"]
    jobs = [s for s in rec["plan"]["streams"] if s["kind"] == "commit"]
    forcing = {p["pid"] for p in c["callers"] if p["forced_writes"] > 0}
    # One commit job for all of them, as one lock held them: so the replay's calls never overlap either
    # (replayed a job each, they did, and their writebacks took each other's pages: I/Os went missing).
    assert len(jobs) == 1 and {jobs[0]["pid"], *jobs[0]["merged"]} == forcing
    assert f"(1 commit job for {len(forcing)} processes whose calls never overlapped)" in stdout
    assert overlapping(out / "capture", "fio")[2] == 0
    fid = rec["fidelity"]
    assert fid["per_op"]["fdatasync"]["replayed"] == fid["per_op"]["fdatasync"]["expected"] >= calls
    # Every demanded byte written as often as demanded, by fio's calls or (memory pressure) the kernel's
    # flusher before them (fidelity_reshaped.sql): a write the replay dropped or added still counts.
    assert (fid["missing"], fid["extra"]) == (0, 0), fid["per_op"]
