"""Replay refuses to write where it would destroy something, on real loop devices made for the test."""

from __future__ import annotations

import subprocess
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import needs_fio, needs_root
from test_iolog import run_iofp, write_trace

from replay import safety

pytestmark = [needs_root, needs_fio]


def _sh(*args: str, **kw) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout.strip()


@pytest.fixture
def scratch() -> Iterator[ExitStack]:
    """An ExitStack that detaches, unmounts and deletes everything a test made, also on failure."""
    with ExitStack() as stack:
        yield stack


def make_loop(stack: ExitStack, size_mib: int, prepare=None, partscan: bool = False) -> str:
    """A loop device over a /dev/shm file, prepared (mkfs, sfdisk) on the file first; `stack` cleans up."""
    img = Path("/dev/shm") / f"iofp-safety-{uuid.uuid4().hex[:8]}.img"
    with open(img, "wb") as f:
        f.truncate(size_mib << 20)
    stack.callback(img.unlink, missing_ok=True)
    if prepare:
        prepare(img)
    dev = _sh("losetup", "-f", "--show", *(["-P"] if partscan else []), str(img))
    stack.callback(subprocess.run, ["losetup", "-d", dev], check=False)
    if partscan and not safety.partitions(Path(dev).name):
        # Kernels built without the msdos/gpt parsers (this one) see no partitions on their own;
        # partx reads the table in user space and adds them with BLKPG, as a disk tool would.
        _sh("partx", "-a", dev)
    return dev


def mount(stack: ExitStack, dev: str, tmp_path: Path) -> Path:
    mnt = tmp_path / "mnt"
    mnt.mkdir()
    _sh("mount", dev, str(mnt))
    stack.callback(subprocess.run, ["umount", "-l", str(mnt)], check=False)
    return mnt


def mkfs(img: Path) -> None:
    _sh("mkfs.ext4", "-q", "-F", "-E", "lazy_itable_init=0,lazy_journal_init=0", str(img))


def partition(img: Path) -> None:
    _sh("sfdisk", "-q", str(img), input="label: dos\n,,L\n")


@pytest.fixture
def small_trace(tmp_path) -> Path:
    """40 reads and writes within the first 2 MiB, 10 ms long."""
    n = 40
    return write_trace(
        tmp_path / "small",
        {
            "ts_ns": [i * 250_000 for i in range(n)],
            "offset": [(i * 48 * 1024) % (2 << 20) for i in range(n)],
            "size": [4096] * n,
            "op": ["read", "write"] * (n // 2),
        },
    )


OVERRIDE = "pass --allow-destructive to replay onto it"


def replay(trace: Path, dev: str, out: Path, *extra: str) -> tuple[int, str, str]:
    return run_iofp("replay", str(trace), "--target", dev, "--output", str(out), "--no-fidelity", *extra)


def assert_refused(res: tuple[int, str, str], message: str, out: Path) -> None:
    code, _, err = res
    assert code == 2, err
    assert err == f"iofp: {message}\n"
    assert not out.exists()  # refused before anything was written


def assert_read_only_replay_ran(res: tuple[int, str, str], out: Path) -> None:
    code, stdout, err = res
    assert code == 0, err
    assert "fio (fio-" in stdout and "20 read in" in stdout
    assert (out / "fio.rc").read_text() == "0\n"


def test_mounted_device_is_refused_and_reads_only_allowed(scratch, small_trace, tmp_path):
    dev = make_loop(scratch, 16, prepare=mkfs)
    mnt = mount(scratch, dev, tmp_path)
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"), f"{dev} is mounted on {mnt}; {OVERRIDE}", tmp_path / "o1"
    )
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")


def test_filesystem_signature_is_refused_unless_allowed(scratch, small_trace, tmp_path):
    dev = make_loop(scratch, 16, prepare=mkfs)
    msg = f"{dev} carries a filesystem signature (ext4); {OVERRIDE} (or erase it first: wipefs -a {dev})"
    assert_refused(replay(small_trace, dev, tmp_path / "o1"), msg, tmp_path / "o1")
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")
    code, stdout, err = replay(small_trace, dev, tmp_path / "o3", "--allow-destructive")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout


def test_partitioned_device_is_refused_and_reads_only_allowed(scratch, small_trace, tmp_path):
    dev = make_loop(scratch, 16, prepare=partition, partscan=True)
    name = Path(dev).name
    assert safety.partitions(name) == [f"{name}p1"]
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"),
        f"{dev} has partitions ({name}p1); {OVERRIDE}",
        tmp_path / "o1",
    )
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")


def test_undersized_target_is_refused_even_for_reads_unless_folded(scratch, small_trace, tmp_path):
    dev = make_loop(scratch, 1)
    msg = (
        f"{dev} (1 MiB) is smaller than the selection (up to 1.8 MiB); "
        "pass --fold to fold the offsets into it, or use a larger target"
    )
    assert_refused(replay(small_trace, dev, tmp_path / "o1"), msg, tmp_path / "o1")
    assert_refused(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), msg, tmp_path / "o2")
    code, stdout, err = replay(small_trace, dev, tmp_path / "o3", "--fold")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout


def test_blank_unused_device_is_accepted(scratch, small_trace, tmp_path):
    dev = make_loop(scratch, 4)
    target = safety.inspect(dev)
    assert (target.kind, target.name, target.size) == ("block", Path(dev).name, 4 << 20)
    safety.check(target, writes=True, allow_destructive=False)  # raises when unsafe


def test_regular_file_is_created_sized_to_the_log(small_trace, tmp_path):
    target = Path("/dev/shm") / f"iofp-safety-{uuid.uuid4().hex[:8]}.bin"
    try:
        code, _, err = replay(small_trace, str(target), tmp_path / "o")
        assert code == 0, err
        assert target.stat().st_size == max((i * 48 * 1024) % (2 << 20) for i in range(40)) + 4096
    finally:
        target.unlink(missing_ok=True)


def test_a_directory_or_missing_parent_is_bad_input(small_trace, tmp_path):
    code, _, err = replay(small_trace, str(tmp_path), tmp_path / "o")
    assert (code, err) == (
        2,
        f"iofp: {tmp_path}: not a regular file or block device; "
        "replay onto a file or an unused block device\n",
    )
    code, _, err = replay(small_trace, str(tmp_path / "no" / "f"), tmp_path / "o")
    assert code == 2 and err.startswith(
        f"iofp: {tmp_path / 'no' / 'f'}: directory {tmp_path / 'no'} does not exist"
    )
