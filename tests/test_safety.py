"""Replay refuses to write where it would destroy something, on real loop devices made for the test."""

from __future__ import annotations

import os
import shutil
import struct
import subprocess
import sys
import uuid
from collections.abc import Iterator
from contextlib import ExitStack
from pathlib import Path

import pytest
from conftest import needs_fio, needs_root
from helpers import run_iofp, write_trace
from lab import attach, detach

from replay.fio import safety

pytestmark = [needs_root, needs_fio]


def _sh(*args: str, **kw) -> str:
    return subprocess.run(args, check=True, capture_output=True, text=True, **kw).stdout.strip()


@pytest.fixture
def scratch() -> Iterator[ExitStack]:
    """An ExitStack that detaches, unmounts and deletes everything a test made, also on failure."""
    with ExitStack() as stack:
        yield stack


def prepared_loop(stack: ExitStack, size_mib: int, prepare=None, partscan: bool = False) -> str:
    """A loop device over a /dev/shm file, prepared (mkfs, sfdisk) on the file first; `stack` cleans up."""
    img = Path("/dev/shm") / f"iofp-safety-{uuid.uuid4().hex[:8]}.img"
    with open(img, "wb") as f:
        f.truncate(size_mib << 20)
    stack.callback(img.unlink, missing_ok=True)
    if prepare:
        prepare(img)
    dev = attach(img, partscan=partscan)
    stack.callback(detach, dev)
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
    return run_iofp(
        "replay", "--repeat", "1", str(trace), "--target", dev, "--output", str(out), "--no-fidelity", *extra
    )


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
    dev = prepared_loop(scratch, 16, prepare=mkfs)
    mnt = mount(scratch, dev, tmp_path)
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"), f"{dev} is mounted on {mnt}; {OVERRIDE}", tmp_path / "o1"
    )
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")


def test_filesystem_signature_is_refused_unless_allowed(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16, prepare=mkfs)
    msg = f"{dev} carries a filesystem signature (ext4); {OVERRIDE} (or erase it first: wipefs -a {dev})"
    assert_refused(replay(small_trace, dev, tmp_path / "o1"), msg, tmp_path / "o1")
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")
    code, stdout, err = replay(small_trace, dev, tmp_path / "o3", "--allow-destructive")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout


def test_partitioned_device_is_refused_and_reads_only_allowed(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16, prepare=partition, partscan=True)
    name = Path(dev).name
    assert safety.partitions(name) == [f"{name}p1"]
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"),
        f"{dev} has partitions ({name}p1); {OVERRIDE}",
        tmp_path / "o1",
    )
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")


def hold_exclusively(stack: ExitStack, dev: str, flags: str = "os.O_RDONLY | os.O_EXCL") -> subprocess.Popen:
    """Another process holds `dev` with O_EXCL, the claim md, device-mapper and mounts take (or opens
    it with other `flags`); until closed."""
    code = (
        "import os, sys\n"
        f"fd = os.open(sys.argv[1], {flags})\n"
        "print('held', flush=True)\n"
        "sys.stdin.read()\n"  # hold until the test closes our stdin
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, dev], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    stack.enter_context(proc)  # on exit: close its pipes, reap it
    stack.callback(proc.kill)  # ... after killing it if the test did not release it
    assert proc.stdout is not None and proc.stdout.readline() == "held\n", f"could not hold {dev}"
    return proc


def release(proc: subprocess.Popen) -> None:
    assert proc.stdin is not None
    proc.stdin.close()
    assert proc.wait(timeout=10) == 0


def test_exclusively_held_device_is_refused_until_released(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16)
    holder = hold_exclusively(scratch, dev)
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"),
        f"{dev} is in use (an exclusive open failed with EBUSY); {OVERRIDE}",
        tmp_path / "o1",
    )
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")
    release(holder)
    code, stdout, err = replay(small_trace, dev, tmp_path / "o3")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout


def test_a_device_another_process_writes_is_refused_until_released(scratch, small_trace, tmp_path):
    """An open without O_EXCL (a database on a raw device, a dd) claims nothing in the kernel: the
    holder is found by its descriptor. Its content stays as the holder left it."""
    dev = prepared_loop(scratch, 16)
    holder = hold_exclusively(scratch, dev, "os.O_RDWR")
    before = Path(dev).read_bytes()
    assert_refused(
        replay(small_trace, dev, tmp_path / "o1"),
        f"{dev} is open for writing by {Path(sys.executable).name[:15]} (pid {holder.pid}); {OVERRIDE}",
        tmp_path / "o1",
    )
    assert Path(dev).read_bytes() == before
    assert_read_only_replay_ran(replay(small_trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")
    release(holder)
    reader = hold_exclusively(scratch, dev, "os.O_RDONLY")  # reading it is no claim on its content
    code, stdout, err = replay(small_trace, dev, tmp_path / "o3")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout
    release(reader)


def test_an_empty_file_another_process_writes_is_refused(scratch, small_trace, tmp_path):
    target = tmp_path / "log.dat"
    target.touch()
    holder = hold_exclusively(scratch, str(target), "os.O_WRONLY | os.O_APPEND")
    assert_refused(
        replay(small_trace, str(target), tmp_path / "o1"),
        f"{target} is open for writing by {Path(sys.executable).name[:15]} (pid {holder.pid}); {OVERRIDE}",
        tmp_path / "o1",
    )
    release(holder)
    assert target.stat().st_size == 0


def probe(dev: str) -> dict[str, str]:
    """What util-linux's low-level probe sees, independently of safety.py's reading of it."""
    res = subprocess.run(["blkid", "-p", "-o", "export", dev], capture_output=True, text=True)
    return dict(ln.split("=", 1) for ln in res.stdout.splitlines() if "=" in ln)


def assert_raid_member_refused(dev: str, kind: str, trace: Path, tmp_path: Path) -> None:
    assert (probe(dev).get("TYPE"), probe(dev).get("USAGE")) == (kind, "raid")
    msg = f"{dev} carries a RAID/LVM signature ({kind}); {OVERRIDE} (or erase it first: wipefs -a {dev})"
    assert_refused(replay(trace, dev, tmp_path / "o1"), msg, tmp_path / "o1")
    assert_read_only_replay_ran(replay(trace, dev, tmp_path / "o2", "--reads-only"), tmp_path / "o2")


def pvcreate(dev: str) -> None:
    """Label `dev` an LVM physical volume. No device-mapper is needed to write the label: pvcreate is
    confined to this one device and told not to wait for udev or keep hints, so it touches nothing else."""
    config = (
        "devices { obtain_device_list_from_udev=0 scan_lvs=0 } "
        'activation { udev_sync=0 udev_rules=0 } global { hints="none" }'
    )
    env = {**os.environ, "LVM_SUPPRESS_FD_WARNINGS": "1"}
    _sh("pvcreate", "-qq", "--devices", dev, "--config", config, dev, env=env)


@pytest.mark.skipif(shutil.which("pvcreate") is None, reason="needs pvcreate (apt install lvm2)")
def test_lvm_physical_volume_is_refused_and_reads_only_allowed(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16)
    pvcreate(dev)
    assert_raid_member_refused(dev, "LVM2_member", small_trace, tmp_path)


def md_superblock_1_2(img: Path) -> None:
    """Write an md v1.2 superblock (4 KiB from the start) of a 2-disk RAID1 member, as mdadm would.

    md is not in this kernel, so `mdadm --create` cannot run; the on-disk format is the kernel's
    (include/uapi/linux/raid/md_p.h, struct mdp_superblock_1), checksum included.
    """
    sectors = img.stat().st_size // 512
    sb = bytearray(256 + 2 * 2)  # fixed part + dev_roles[max_dev]
    struct.pack_into("<IIII", sb, 0, 0xA92B4EFC, 1, 0, 0)  # magic, major_version, feature_map, pad0
    sb[16:32] = uuid.uuid4().bytes  # set_uuid
    sb[32:64] = b"iofp-test:0".ljust(32, b"\0")  # set_name
    struct.pack_into("<QIIQII", sb, 64, 0, 1, 0, sectors - 2048, 0, 2)  # ctime level layout size chunk disks
    struct.pack_into("<QQQQ", sb, 128, 2048, sectors - 2048, 8, 0)  # data off/size, super_offset (sectors)
    sb[168:184] = uuid.uuid4().bytes  # device_uuid
    struct.pack_into("<QQQ", sb, 192, 0, 1, 2**64 - 1)  # utime, events, resync_offset (fully in sync)
    struct.pack_into("<I", sb, 220, 2)  # max_dev
    struct.pack_into("<HH", sb, 256, 0, 1)  # dev_roles: this device is disk 0, the other disk 1
    # sb_csum as md computes it (the 32-bit sum of the little-endian words with sb_csum zero, the
    # carries folded back in): libblkid 2.38 does not check it, a libblkid that does will agree
    total = sum(struct.unpack_from(f"<{len(sb) // 4}I", sb))
    struct.pack_into("<I", sb, 216, ((total & 0xFFFFFFFF) + (total >> 32)) & 0xFFFFFFFF)
    with open(img, "r+b") as f:
        f.seek(4096)
        f.write(sb)


def test_md_raid_member_is_refused_and_reads_only_allowed(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16, prepare=md_superblock_1_2)
    assert probe(dev).get("VERSION") == "1.2"
    assert_raid_member_refused(dev, "linux_raid_member", small_trace, tmp_path)


def test_undersized_target_is_refused_even_for_reads_unless_folded(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 1)
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
    dev = prepared_loop(scratch, 4)
    target = safety.inspect_target(dev)
    assert (target.kind, target.name, target.size) == ("block", Path(dev).name, 4 << 20)
    safety.check_target(target, writes=True, allow_destructive=False)  # raises when unsafe


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


@pytest.fixture
def shm_file(scratch) -> Path:
    """A name for a file in /dev/shm that does not exist yet, removed afterwards."""
    path = Path("/dev/shm") / f"iofp-safety-{uuid.uuid4().hex[:8]}.dat"
    scratch.callback(path.unlink, missing_ok=True)
    return path


def test_existing_file_is_written_only_when_allowed(shm_file, small_trace, tmp_path):
    content = os.urandom(2 << 20)
    shm_file.write_bytes(content)
    msg = f"{shm_file} is an existing file (2 MiB); {OVERRIDE}, pass --reads-only, or name a new file"
    assert_refused(replay(small_trace, str(shm_file), tmp_path / "o1", "--fold"), msg, tmp_path / "o1")
    assert_read_only_replay_ran(
        replay(small_trace, str(shm_file), tmp_path / "o2", "--reads-only"), tmp_path / "o2"
    )
    assert shm_file.read_bytes() == content
    code, stdout, err = replay(small_trace, str(shm_file), tmp_path / "o3", "--fold", "--allow-destructive")
    assert code == 0, err
    assert "20 read, 20 write in" in stdout


def test_a_file_of_another_trace_is_not_overwritten(small_trace, tmp_path):
    other = write_trace(tmp_path / "other", {"ts_ns": [0], "offset": [0], "size": [4096], "op": ["read"]})
    victim = next(other.rglob("*.parquet"))
    before = victim.read_bytes()
    size = victim.stat().st_size
    msg = f"{victim} is an existing file ({size} bytes); {OVERRIDE}, pass --reads-only, or name a new file"
    assert_refused(replay(small_trace, str(victim), tmp_path / "o"), msg, tmp_path / "o")
    assert victim.read_bytes() == before


def test_file_backing_a_mounted_loop_device_is_refused_under_any_name(scratch, small_trace, tmp_path):
    dev = prepared_loop(scratch, 16, prepare=mkfs)
    mnt = mount(scratch, dev, tmp_path)
    backing = Path((Path("/sys/block") / Path(dev).name / "loop" / "backing_file").read_text().strip())
    alias = backing.with_name(backing.name + ".link")  # another name for the same inode
    os.link(backing, alias)
    scratch.callback(alias.unlink, missing_ok=True)
    for name in (backing, alias):
        assert_refused(
            replay(small_trace, str(name), tmp_path / "o1"),
            f"{name} backs {dev}, which is mounted on {mnt}; {OVERRIDE}",
            tmp_path / "o1",
        )
    assert_read_only_replay_ran(
        replay(small_trace, str(alias), tmp_path / "o2", "--reads-only"), tmp_path / "o2"
    )


@pytest.mark.slow  # mkfs and sfdisk: 3 s each
@pytest.mark.parametrize(
    "prepare, found", [(mkfs, "filesystem signature (ext4)"), (partition, "partition table (dos)")]
)
def test_file_with_a_signature_is_refused_unless_allowed(prepare, found, shm_file, small_trace, tmp_path):
    with open(shm_file, "wb") as f:
        f.truncate(16 << 20)
    prepare(shm_file)
    msg = f"{shm_file} carries a {found}; {OVERRIDE}, pass --reads-only, or name a new file"
    assert_refused(replay(small_trace, str(shm_file), tmp_path / "o1"), msg, tmp_path / "o1")
    assert_read_only_replay_ran(
        replay(small_trace, str(shm_file), tmp_path / "o2", "--reads-only"), tmp_path / "o2"
    )
    code, _, err = replay(small_trace, str(shm_file), tmp_path / "o3", "--allow-destructive")
    assert code == 0, err


@pytest.mark.parametrize("name", ["iofp-no-such-disk", "iofp-no-such-dir/disk", "null"])
def test_a_target_in_dev_must_be_a_block_device(name, scratch, small_trace, tmp_path):
    target = Path("/dev") / name
    if not target.exists():  # what a replay that took the name for a new file would leave
        scratch.callback(target.unlink, missing_ok=True)
    what = "is not a block device" if target.exists() else "does not exist"
    code, _, err = replay(small_trace, str(target), tmp_path / "o")
    assert (code, err) == (2, f"iofp: {target} {what}; name an existing block device (lsblk lists them)\n")
    assert not (tmp_path / "o").exists()
    assert target.is_char_device() or not target.exists()  # nothing created in /dev


def test_a_dangling_link_into_dev_is_refused(scratch, small_trace, tmp_path):
    target = Path("/dev/iofp-no-such-disk")
    scratch.callback(target.unlink, missing_ok=True)  # what a replay through the link would leave
    link = tmp_path / "disk"
    link.symlink_to(target)
    code, _, err = replay(small_trace, str(link), tmp_path / "o")
    assert (code, err) == (
        2,
        f"iofp: {link} does not exist; name an existing block device (lsblk lists them)\n",
    )
    assert not target.exists()
