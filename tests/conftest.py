"""Shared fixtures: small real artifacts and scratch loop devices over /dev/shm files."""

from __future__ import annotations

import os
import shutil
import subprocess
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parent.parent
SHARED_TRACES = REPO.parent / "shared" / "traces"
COMMIT_HEAVY = REPO / "samples" / "traces" / "commit-heavy"


def is_root() -> bool:
    return os.geteuid() == 0


needs_root = pytest.mark.skipif(not is_root(), reason="needs root (eBPF capture, loop devices)")
needs_fio = pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (apt install fio)")


def make_loop_device(size_mib: int, *, direct_io: bool = False, where: str = "/dev/shm") -> tuple[str, Path]:
    """Create a loop device over a fresh sparse file; returns (device path, backing file)."""
    backing = Path(where) / f"iofp-test-{uuid.uuid4().hex[:8]}.img"
    with open(backing, "wb") as f:
        f.truncate(size_mib << 20)
    args = ["losetup", "-f", "--show"] + (["--direct-io=on"] if direct_io else []) + [str(backing)]
    dev = subprocess.run(args, check=True, capture_output=True, text=True).stdout.strip()
    return dev, backing


def destroy_loop_device(dev: str, backing: Path) -> None:
    subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)
    backing.unlink(missing_ok=True)


@pytest.fixture
def loop_device() -> Iterator[str]:
    """A 256 MiB loop device over a /dev/shm file (a RAM-speed device), detached afterwards."""
    if not is_root():
        pytest.skip("needs root (loop devices)")
    dev, backing = make_loop_device(256)
    try:
        yield dev
    finally:
        destroy_loop_device(dev, backing)


THROTTLE_IOPS = 3000  # the throttled lab device of ../shared/notes/lab-devices.md


@contextmanager
def blkio_throttle(
    dev: str, *, read_iops: int | None = None, write_iops: int | None = None
) -> Iterator[Path]:
    """A blkio cgroup (v1) capping `dev`'s reads and/or writes (a flush is an empty write: it counts);
    yields the group's directory. A test puts the process under test in it (its pid in the group's
    cgroup.procs); the fio it starts inherits the group."""
    base = Path("/sys/fs/cgroup/blkio")
    if not (base / "blkio.throttle.read_iops_device").exists():
        pytest.skip("needs the cgroup v1 blkio controller at /sys/fs/cgroup/blkio")
    group = base / f"iofp-test-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    majmin = Path(f"/sys/class/block/{Path(dev).name}/dev").read_text().strip()
    for kind, iops in (("read", read_iops), ("write", write_iops)):
        if iops is not None:
            (group / f"blkio.throttle.{kind}_iops_device").write_text(f"{majmin} {iops}\n")
    try:
        yield group
    finally:
        group.rmdir()  # refused while a process is still in it: the process under test has exited


@pytest.fixture
def throttled(loop_device):
    """`loop_device` with its reads capped at THROTTLE_IOPS; yields (device, cgroup dir)."""
    with blkio_throttle(loop_device, read_iops=THROTTLE_IOPS) as group:
        yield loop_device, group


@pytest.fixture
def shared_traces() -> Path:
    if not SHARED_TRACES.is_dir():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    return SHARED_TRACES


def assert_tracer_lost_nothing(loss: dict[str, int], events: int) -> None:
    """The capture lost nothing, not even a latency.

    The kernel runs no BPF program for a completion processed on top of the VM agent's threads (1 in
    ~3,000-90,000 here, more on a busy machine: bench/completion_skips.py). Such a request is still
    recorded, and its completion time comes from iofp's tracefs witness of those threads, which in
    every run measured recorded each one: a completion neither saw (lost_completions) is a failure.
    `events` is kept for the message."""
    lost = {k: v for k, v in loss.items() if k.startswith("lost") and v}
    assert lost == {}, f"{lost} of {events} events"


@pytest.fixture(scope="module")
def mysql_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared 1&1 MySQL blkreplay trace, imported (skips without the shared files)."""
    from helpers import shared_trace

    return shared_trace("mysql", tmp_path_factory)


@pytest.fixture(scope="module")
def tpcc_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """The shared TPC-C disksim trace, imported (skips without the shared files)."""
    from helpers import shared_trace

    return shared_trace("tpcc", tmp_path_factory)


# The read trace's rate. Replayed QD1 (one process, one read at a time), a step at 3x leaves each read
# 667 us: a slow CI host's QD1 path kept 2,785-2,985 of 3,000/s (a 1,000/s trace at 3x) and made the
# headroom 2.25x; at half the rate the throttle, not the host, is the limit a test finds.
DEMAND_IOPS = 500


@pytest.fixture(scope="session")
def reads_trace(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """2 s of 4 KiB random reads at DEMAND_IOPS from one process, one at a time (a psync QD1 job)."""
    from helpers import write_trace

    n = 2 * DEMAND_IOPS
    return write_trace(
        tmp_path_factory.mktemp("t") / "reads",
        {
            "ts_ns": [i * 1_000_000_000 // DEMAND_IOPS for i in range(n)],
            "offset": [(i * 7919 % 16000) * 4096 for i in range(n)],
            "size": [4096] * n,
            "op": ["read"] * n,
            "pid": [100] * n,
            "lat_ns": [100_000] * n,
        },
    )


@pytest.fixture(scope="session")
def lab(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A comparison directory: a real replay of 2 s of the commit-heavy sample onto a RAM loop and a
    short real probe of the same device (reads only: cell 1 and a two-depth sweep)."""
    from helpers import run_iofp

    if shutil.which("fio") is None:
        pytest.skip("needs fio (apt install fio)")
    base = tmp_path_factory.mktemp("lab") / "cmp"
    dev, backing = make_loop_device(256)
    try:
        code, _, err = run_iofp("replay", str(COMMIT_HEAVY), "--between", "2", "4", "--target", dev,
                                "--label", "device=ram-loop", "-o", str(base / "ram"))  # fmt: skip
        assert code == 0, err
        probe = ["--cells", "randread,sweep", "--qd", "1,4", "--runtime", "1s", "--reads-only", "--label"]
        code, _, err = run_iofp("probe", dev, *probe, "device=ram-loop", "-o", str(base / "probe-ram"))
        assert code == 0, err
    finally:
        destroy_loop_device(dev, backing)
    return base
