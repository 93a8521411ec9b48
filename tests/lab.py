"""The lab: scratch block devices, throttled groups and fio runs, for the tests and the benchmarks.

The devices of ../shared/notes/lab-devices.md: a RAM loop (over a file in /dev/shm: NVMe-like), a disk
loop (direct I/O over a file in /tmp, on the VM's disk: SATA-SSD-like) and a blkio cgroup v1 group
capping a device's IOPS (a cloud volume's cap). Each is made over a fresh file with a unique name and
undone when its `with` block ends, also when it ends by an exception; what a step made before a later
one failed is undone too. Test I/O goes only to devices made here.

    with loop_device(256) as dev, throttled(dev, read_iops=3000) as group:
        iofp_in(group, "replay", trace, "--target", dev, ...)
    with loop_device(64, DISK) as dev, fio_running("--name=bg", f"--filename={dev}", ...) as load:
        ...

Tests import it as `lab` (tests/ is on pytest's path), the benchmarks as `tests.lab`.
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

RAM, DISK = "ram", "disk"
WHERE = {RAM: Path("/dev/shm"), DISK: Path("/tmp")}  # DISK's file is on the VM disk: direct I/O to it
BLKIO = Path("/sys/fs/cgroup/blkio")
# The niceness of what a test or a benchmark measures on a device (a replay, a sweep, a probe, a fio
# job): a busy CI machine's other work at nice 0 must not take the CPU of the process whose timing is
# measured.
MEASURE_NICE = -10


def attach(backing: Path | str, *, direct_io: bool = False, partscan: bool = False, offset: int = 0) -> str:
    """A loop device over an existing file or device (`losetup -f --show`), from `offset` bytes in;
    its path. Detach it with detach()."""
    flags = ["--direct-io=on"] * direct_io + ["-P"] * partscan + ["-o", str(offset)] * bool(offset)
    res = subprocess.run(["losetup", "-f", "--show", *flags, str(backing)], capture_output=True, text=True)
    if res.returncode != 0:
        raise RuntimeError(f"losetup {backing}: {res.stderr.strip()}")
    return res.stdout.strip()


def detach(dev: str) -> None:
    subprocess.run(["losetup", "-d", dev], check=False, capture_output=True)


def make_loop(
    size_mib: int, kind: str = RAM, *, fill: bool = False, prefix: str = "iofp-lab", where: Path | None = None
) -> tuple[str, Path]:
    """A loop device of `kind` (RAM or DISK) over a new file of `size_mib` MiB (in `kind`'s directory
    unless `where` says otherwise): sparse, or written whole with `fill` (no thin provisioning under what
    is measured); returns (device, backing file). The caller destroys it (destroy_loop); loop_device()
    is the `with` form. Nothing is left behind if it cannot be made."""
    backing = (where or WHERE[kind]) / f"{prefix}-{uuid.uuid4().hex[:8]}.img"
    try:
        with open(backing, "wb") as f:
            if fill:
                chunk = bytes(8 << 20)
                for _ in range(-(-size_mib // 8)):
                    f.write(chunk)
                f.flush()
                os.fsync(f.fileno())
            f.truncate(size_mib << 20)
        return attach(backing, direct_io=kind == DISK), backing
    except BaseException:
        backing.unlink(missing_ok=True)
        raise


def destroy_loop(dev: str, backing: Path) -> None:
    detach(dev)
    backing.unlink(missing_ok=True)


@contextmanager
def loop_device(size_mib: int = 256, kind: str = RAM, **options: object) -> Iterator[str]:
    """A loop device (make_loop's options) for the `with` block; detached and its file removed after."""
    dev, backing = make_loop(size_mib, kind, **options)  # type: ignore[arg-type]
    try:
        yield dev
    finally:
        destroy_loop(dev, backing)


def attached(containing: str) -> list[str]:
    """The loop devices attached now whose backing file's name contains `containing` (`losetup -a`
    lines): what a script that makes its own (the demo) left behind."""
    out = subprocess.run(["losetup", "-a"], capture_output=True, text=True).stdout
    return [line for line in out.splitlines() if containing in line]


def has_blkio() -> bool:
    return (BLKIO / "blkio.throttle.read_iops_device").exists()


@contextmanager
def throttled(
    dev: str, *, read_iops: int | None = None, write_iops: int | None = None, prefix: str = "iofp-lab"
) -> Iterator[Path]:
    """A blkio cgroup (v1) group capping `dev`'s reads and/or writes at so many IOPS (a flush is an
    empty write: it counts); yields the group's directory. The process under test joins it (join(),
    as a preexec_fn) and the fio it starts inherits it: a throttle applies to who submits the I/O. The
    group is removed after the block (refused while a process is still in it: so is the block's end)."""
    if not has_blkio():
        raise RuntimeError(f"needs the cgroup v1 blkio controller at {BLKIO}")
    group = BLKIO / f"{prefix}-{uuid.uuid4().hex[:8]}"
    group.mkdir()
    try:
        limit(group, dev, read_iops=read_iops, write_iops=write_iops)
        yield group
    finally:
        group.rmdir()


def limit(group: Path, dev: str, *, read_iops: int | None = None, write_iops: int | None = None) -> None:
    """Set (or, with 0, lift) the group's caps on `dev` now: a step in a running load."""
    majmin = Path(f"/sys/class/block/{Path(dev).name}/dev").read_text().strip()
    for kind, iops in (("read", read_iops), ("write", write_iops)):
        if iops is not None:
            (group / f"blkio.throttle.{kind}_iops_device").write_text(f"{majmin} {iops}\n")


def join(group: Path | None, nice: int = 0) -> Callable[[], None]:
    """A preexec_fn: the child joins `group` (if any) and runs at `nice`."""

    def enter() -> None:
        if nice:
            os.nice(nice)
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    return enter


def has_fio() -> bool:
    return shutil.which("fio") is not None


def fio(
    *args: str | Path,
    env: dict[str, str] | None = None,
    group: Path | None = None,
    nice: int = 0,
    setup: Callable[[], None] | None = None,
    timeout: float | None = 300,
    check: bool = True,
) -> subprocess.CompletedProcess[str]:
    """`fio ARGS` run to its end, its output captured (in `group` and at `nice` if given, after `setup`
    in the child, e.g. a timer slack; `env` added to this environment); with `check`, an exit other
    than 0 fails naming fio's stderr."""
    enter = join(group, nice)

    def child() -> None:
        enter()
        if setup is not None:
            setup()

    res = subprocess.run(["fio", *map(str, args)], capture_output=True, text=True, timeout=timeout,
                         env={**os.environ, **(env or {})}, preexec_fn=child)  # fmt: skip
    if check and res.returncode != 0:
        raise AssertionError(f"fio {' '.join(map(str, args))}: exit {res.returncode}\n{res.stderr[-2000:]}")
    return res


def start_fio(*args: str | Path, **popen: Any) -> subprocess.Popen[str]:
    """`fio ARGS` started in the background (its output discarded unless `popen` says otherwise); the
    caller stops it (fio_running() is the `with` form)."""
    options = {"stdout": subprocess.DEVNULL, "stderr": subprocess.DEVNULL, "text": True} | popen
    return subprocess.Popen(["fio", *map(str, args)], **options)


@contextmanager
def fio_running(*args: str | Path, **popen: Any) -> Iterator[subprocess.Popen[str]]:
    """start_fio() for the `with` block; killed and reaped after it if still running."""
    proc = start_fio(*args, **popen)
    try:
        yield proc
    finally:
        if proc.poll() is None:
            proc.kill()
        proc.wait()


@contextmanager
def cpu_hogs(n: int | None = None) -> Iterator[None]:
    """A busy loop on `n` CPUs (every CPU by default) while the block runs: a loaded machine."""
    hogs = [
        subprocess.Popen([sys.executable, "-c", "while True: pass"])
        for _ in range(os.cpu_count() or 1 if n is None else n)
    ]
    try:
        yield
    finally:
        for h in hogs:
            h.kill()
            h.wait()
