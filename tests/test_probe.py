"""`iofp probe` end to end: real fio 3.33 on loop devices made for the test, commits from a real capture."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import time
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import REPO, THROTTLE_IOPS, needs_fio, needs_root
from helpers import IOFP, MEASURE_NICE, iofp_in, run_iofp
from lab import DISK, destroy_loop, make_loop
from test_safety import mkfs, mount, prepared_loop

from iofp import probe_result as pr
from iofp.host_evidence import limit

pytestmark = [needs_root, needs_fio]

COMMIT_HEAVY = REPO / "samples/fingerprints/commit-heavy.fp.json"  # one committer: fdatasync 1,206/s x 50 µs
RAW = ("job.fio", "fio.cmd", "fio.stdout", "fio.stderr", "fio.json", "fio.rc")


def fio_doc(out: Path, run: pr.Run) -> dict:
    return json.loads((out / run.dir / "fio.json").read_text())["jobs"][0]


def test_quick_probe_measures_every_cell_and_keeps_every_run(loop_device, tmp_path):
    out = tmp_path / "p"
    code, stdout, err = run_iofp(
        "probe", loop_device, "--runtime", "1s", "--qd", "1,8", "--label", "device=ram-loop", "-o", out
    )
    assert code == 0, err
    root, res = pr.load(out)
    assert res.complete and res.interrupted is None and res.labels == {"device": "ram-loop"}
    # cell 1 at the default production depths (1, 32) and the sweep (1, 8): each depth run once
    kinds = [(r.kind, r.iodepth, r.jobs) for r in res.runs]
    assert kinds == [
        ("randread", 1, 1), ("randread", 8, 1), ("randread", 32, 1), ("tail", kinds[3][1], 1),
        ("seq-read", 8, 1), ("seq-write", 8, 1), ("commit", 1, 1), ("commit", 1, 8),
    ]  # fmt: skip
    assert [(c.cell, c.run) for c in res.cells] == [
        (1, "01-randread-qd1"), (1, "03-randread-qd32"), (4, "04-tail"), (2, "05-seq-read"),
        (2, "06-seq-write"), (3, "07-commit-x1"), (3, "08-commit-x8"),
    ]  # fmt: skip
    for run in res.runs:
        for name in RAW:
            assert (root / run.dir / name).is_file(), (run.name, name)
        assert (root / run.dir / "fio.rc").read_text() == "0\n"
        assert list((root / run.dir).glob("iops_iops.*.log")), run.name
        # the table's data figures are fio's, exactly as its JSON has them
        job, f = fio_doc(root, run), run.fio
        ddir = "read" if run.rw in ("read", "randread") else "write"
        assert f is not None and f.ios == job[ddir]["total_ios"] > 0 and f.iops == job[ddir]["iops"]
        assert f.p99_us == job[ddir]["lat_ns"]["percentile"]["99.000000"] / 1e3
        assert run.steady is not None and run.steady.windows in (9, 10)  # the intervals that ended
    # the sweep is cell 1 at 1 and 8; the tail ran at 80% of the most IOPS, at that run's depth
    assert [p.iodepth for p in res.sweep.points] == [1, 8]
    best = max((r for r in res.runs if r.kind == "randread"), key=lambda r: r.fio.iops)
    assert res.tail.max_run == best.name and res.tail.rate_iops == round(0.8 * best.fio.iops)
    assert res.run("04-tail").iodepth == best.iodepth
    assert f"rate_iops={res.tail.rate_iops}" in (root / "runs/04-tail/job.fio").read_text()
    # commits from iofp's capture: one fdatasync per write (a job stopped at the deadline may not
    # have synced its last write), each with its flush request at QD1
    assert res.capture["status"] == "measured" and res.capture["summary"]["lost_events"] == 0
    for run in (res.run("07-commit-x1"), res.run("08-commit-x8")):
        writes = fio_doc(root, run)["write"]["total_ios"]
        assert 0 <= writes - run.capture.commits <= run.jobs
        assert run.capture.fsync_p50_us <= run.capture.fsync_p99_us <= run.capture.fsync_p99_9_us
    assert res.run("07-commit-x1").capture.flushes == res.run("07-commit-x1").capture.commits
    lines = stdout.splitlines()
    assert max(len(line) for line in lines[:-1]) <= 80  # the last names the result, however long its path
    assert lines[-1] == f"Wrote {out / 'probe.json'}; every fio run's raw artifacts are in runs/ beside it."
    assert any(line.startswith("    QD ") for line in lines) and any("knee rule:" in line for line in lines)


def test_like_shapes_the_cells_from_the_fingerprint(loop_device, tmp_path):
    like = REPO / "samples/fingerprints/market-open.fp.json"
    out = tmp_path / "p"
    code, _, err = run_iofp(
        "probe", loop_device, "--like", like, "--cells", "randread,commit", "--runtime", "1s", "-o", out
    )
    assert code == 0, err
    _, res = pr.load(out)
    # market-open: 8 KiB reads, 1 (p50) and 2 (p99) reads in flight, fdatasync 687/s x 50 µs = 0.03
    # commits in progress -> one committer; 4 KiB writes
    assert (res.workload.read_size, res.workload.read_iodepths, res.workload.commit_jobs) == (
        8192,
        [1, 2],
        [1],
    )
    assert [(r.kind, r.block_size, r.iodepth, r.jobs) for r in res.runs] == [
        ("randread", 8192, 1, 1), ("randread", 8192, 2, 1), ("commit", 4096, 1, 1),
    ]  # fmt: skip


def test_write_cells_refused_on_a_mounted_device_read_cells_allowed(tmp_path):
    with ExitStack() as stack:
        dev = prepared_loop(stack, 32, prepare=mkfs)
        mnt = mount(stack, dev, tmp_path)
        code, _, err = run_iofp("probe", dev, "--quick", "-o", tmp_path / "w")
        assert (code, err) == (
            2, f"iofp: {dev} is mounted on {mnt}; pass --allow-destructive to probe it with writes, "
            "or pass --reads-only\n",
        )  # fmt: skip
        assert not (tmp_path / "w").exists()
        code, _, err = run_iofp(
            "probe", dev, "--reads-only", "--cells", "randread,seq", "--runtime", "1s", "-o", tmp_path / "r"
        )
        assert code == 0, err
        _, res = pr.load(tmp_path / "r")
        assert [r.kind for r in res.runs] == ["randread", "randread", "seq-read"]


def test_write_cells_refused_on_a_signed_device(tmp_path):
    with ExitStack() as stack:
        dev = prepared_loop(stack, 32, prepare=mkfs)
        code, _, err = run_iofp("probe", dev, "--cells", "commit", "-o", tmp_path / "w")
        assert (code, err) == (
            2, f"iofp: {dev} carries a filesystem signature (ext4); pass --allow-destructive to probe it "
            f"with writes (or erase it first: wipefs -a {dev}), or pass --reads-only\n",
        )  # fmt: skip
        code, _, err = run_iofp("probe", dev, "--cells", "randread", "--reads-only", "--runtime", "1s",
                                "-o", tmp_path / "r")  # fmt: skip
        assert code == 0, err


def test_an_existing_file_is_not_written(tmp_path):
    f = tmp_path / "data.img"
    f.write_bytes(b"x" * (32 << 20))
    code, _, err = run_iofp("probe", f, "--cells", "seq", "-o", tmp_path / "w")
    assert code == 2 and "is an existing file (32 MiB); pass --allow-destructive" in err
    assert f.read_bytes() == b"x" * (32 << 20)


def test_a_new_file_is_made_its_size_and_probed(tmp_path):
    """fio is given the held file (/dev/fd/N) and could not lay out a new one (it unlinks a file
    shorter than its job first): every probe of a new file failed with fio's 'unlink' error."""
    f = tmp_path / "new.img"
    code, _, err = run_iofp("probe", f, "--size", "16M", "--cells", "seq", "--runtime", "1s",
                            "-o", tmp_path / "p")  # fmt: skip
    assert code == 0, err
    assert f.stat().st_size == 16 << 20 and f.stat().st_blocks * 512 >= 16 << 20  # written, not sparse
    _, res = pr.load(tmp_path / "p")
    assert res.complete and [r.name for r in res.runs] == ["01-seq-read", "02-seq-write"]


def _fio_in(out: Path) -> list[int]:
    """Live processes working in a run directory of `out` (fio runs there)."""
    found = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and Path(os.readlink(p / "cwd")).is_relative_to(out):
                found.append(int(p.name))
        except OSError:
            continue
    return found


@pytest.mark.parametrize("sig, code", [(signal.SIGINT, 130), (signal.SIGTERM, 143), (signal.SIGHUP, 129)])
def test_an_interrupt_stops_fio_and_keeps_a_valid_partial_result(sig, code, loop_device, tmp_path):
    out = tmp_path / "p"
    cmd = [*IOFP, "probe", loop_device, "--cells", "randread,sweep", "--qd", "1,2,4", "--runtime", "3s",
           "-o", str(out)]  # fmt: skip
    proc = subprocess.Popen(cmd, cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        deadline = time.monotonic() + 60
        while not (out / "runs" / "03-randread-qd4").exists() and time.monotonic() < deadline:
            time.sleep(0.05)  # run 3 has started: runs 1 and 2 are done
        time.sleep(0.5)
        assert _fio_in(out), "fio is running run 3"
        proc.send_signal(sig)
        stdout, stderr = proc.communicate(timeout=30)
    finally:
        proc.kill()
    assert proc.returncode == code, stderr
    assert _fio_in(out) == []  # no fio left writing
    _, res = pr.load(out)
    assert res.interrupted == sig.name and not res.complete
    assert [r.name for r in res.runs] == ["01-randread-qd1", "02-randread-qd2"]
    assert [p.iodepth for p in res.sweep.points] == [1, 2]
    assert (out / "runs/03-randread-qd4/fio.rc").exists()  # the stopped run's artifacts are kept
    assert stderr.splitlines()[-1] == (
        f"iofp: interrupted ({sig.name}) after 2 of 4 runs; fio was stopped, and the runs done so far are "
        "kept as a partial result"
    )
    assert "rand read 4KiB QD1" in stdout


# ---- lab devices: the throttled device, and the fsync ladder ---------------------------------

# Measured (BENCHMARKS.md, probe): 5 repeats at 2 s per run gave 0.998-1.010 x N at QD 1-64; the
# throttle lets a slice's budget through at the start. 3% is three times the widest deviation.
THROTTLE_TOLERANCE = 0.03


def test_a_throttled_device_probes_at_its_cap(throttled, tmp_path):
    dev, group = throttled
    # A cell whose own evidence says the host's CPU limited it measures the host, not the cap: beside
    # a fresh-clone CI and two CPU hogs (pressure 64%, 0% idle, the device idle 96%) QD1 kept 2,541 of
    # 3,000 IOPS (p99.9 97 ms: blk-throttle's dispatch and fio both wait for a CPU). So the probe is
    # run again, up to 3 times, for a run with CPU to spare in every cell; the cap is a ceiling in all.
    for attempt in range(3):
        out = tmp_path / f"p{attempt}"
        # the probe, and the fio it starts, run under the throttle; at nice -10, as the headroom sweeps:
        # QD1 at 3,000/s leaves each read 333 us, and a busy machine's other work must not take them
        res_proc = iofp_in(group, "probe", dev, "--cells", "sweep", "--qd", "1,16,64", "--runtime", "2s",
                           "--reads-only", "-o", out, nice=MEASURE_NICE, timeout=120)  # fmt: skip
        assert res_proc.returncode == 0, res_proc.stderr
        _, res = pr.load(out)
        limits = {p.iodepth: limit(res.run(p.run).host) for p in res.sweep.points}
        busy = {qd: lim.why for qd, lim in limits.items() if lim.who == "host"}
        if not busy:
            break
    for p in res.sweep.points:
        assert p.iops / THROTTLE_IOPS - 1 <= THROTTLE_TOLERANCE, p  # however busy the host
        assert p.iodepth in busy or abs(p.iops / THROTTLE_IOPS - 1) <= THROTTLE_TOLERANCE, (p, busy)
    if not busy:  # IOPS flat from QD1 while the throttle queues the rest: the knee is QD1
        assert res.sweep.knee is not None and (res.sweep.knee.iodepth, res.sweep.knee.next_iodepth) == (1, 16)


def test_the_ram_loop_commits_far_faster_than_the_disk_loop(tmp_path):
    """The fsync ladder of ../shared/notes/lab-devices.md: RAM loop vs direct-io disk loop, alternated."""
    ram, ram_file = make_loop(64)
    disk, disk_file = make_loop(64, DISK)
    try:
        p50: dict[str, list[float]] = {"ram": [], "disk": []}
        host_limited: list[bool] = []  # per pair: either run's own evidence says the host's CPU limited it
        for i in range(3):
            for name, dev in (("ram", ram), ("disk", disk)):
                out = tmp_path / f"{name}-{i}"
                # at nice -10: a sync's wake-ups are what is measured, not a busy machine's other work
                proc = iofp_in(None, "probe", dev, "--like", COMMIT_HEAVY, "--cells", "commit",
                               "--runtime", "1s", "-o", out, nice=MEASURE_NICE)  # fmt: skip
                assert proc.returncode == 0, proc.stderr
                run = pr.load(out)[1].run("01-commit-x1")
                p50[name].append(run.capture.fsync_p50_us)
                if name == "ram":
                    host_limited.append(False)
                host_limited[-1] |= limit(run.host).who == "host"
    finally:
        destroy_loop(ram, ram_file)
        destroy_loop(disk, disk_file)
    print("fsync p50 us", p50)
    # disk / ram, the median of three and the lowest: 5.7x-16x and 4.2x+ over 6 quiet runs; 5.0x-6.6x
    # and 4.2x+ over 8 runs beside a CPU hog (ram 15-19 us, disk 74-162); 3.2x and 2.9x in one
    # fresh-clone CI run, where the RAM loop's fsync took 35 us instead of 15 (BENCHMARKS.md, probe).
    # A sync's wakeups wait for the CPU, and on a host where they are slow they add to both devices
    # (another CI run: replayed commits at 178 vs 315 us, 1.8x): there the disk loop is slower by the
    # VM disk's flush (72-137 us in those runs) rather than by a multiple. The 4x is a quiet
    # machine's figure; what holds in both regimes, with room, is asserted.
    # Every pair holds it unless the host starved a run (a CI run beside CPU hogs, pressure 80%: one RAM
    # loop run's fsync p50 at 3.9 ms, its pair's disk at 191 us); the median of three holds it even so.
    pairs = sorted(zip(p50["ram"], p50["disk"], strict=True), key=lambda rd: rd[1] / rd[0])
    ram_mid, disk_mid = pairs[1]
    assert disk_mid >= 2 * ram_mid or disk_mid - ram_mid >= 40, p50
    runs = zip(p50["ram"], p50["disk"], host_limited, strict=True)
    fair = [(r, d) for r, d, busy in runs if not busy]
    assert all(d >= 1.3 * r for r, d in fair), (p50, host_limited)
