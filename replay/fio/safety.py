"""Will this replay destroy something? Checked before fio is started, refused with the reason.

A replay that writes (writes, flushes or trims in the selection) may go to:

- a regular file the tool creates (it does not exist yet), or an existing one that is empty;
- a block device that is not mounted (itself or through any partition, per /proc/self/mountinfo), not
  used as swap, has no partitions (/sys/class/block/X/*/partition), no holders (device-mapper, md,
  bcache: /sys/class/block/X/holders), no filesystem, RAID, LVM or partition-table signature
  (`blkid -p`, util-linux's low-level probe, which reads the device rather than a cache), that
  nobody holds exclusively (an O_EXCL open fails with EBUSY while a filesystem or md uses it), and
  that no other process has open for writing (its /proc/PID/fd, fdinfo flags O_WRONLY or O_RDWR).

An existing non-empty file is refused (its content would be overwritten), and so is a file that
carries a signature (`blkid -p` reads files too) or backs an attached loop device (found by device and
inode, /sys/block/loop*/loop/backing_file: writing the file writes that device, so the device's checks
apply). Loop chains are followed both ways: a device that backs a loop device is in use (writing it
rewrites what the loop device holds: a filesystem mounted through it, `losetup -o 1M`, is no mount of
the device below), and a loop device is checked through what backs it (the block device under it,
and every other loop device over the same file). Anything else is refused unless the user passes
--allow-destructive. Replaying reads only is always allowed. A target in /dev itself (not in a
filesystem mounted under it, like /dev/shm) must be an existing block device: a mistyped device name
would otherwise become a regular file in /dev.

Check, then use, is a race: the target is resolved once (its symlinks followed when inspected) and
held open from before the checks until the run ends (`hold_target`): a block device with O_EXCL when
the run writes (the kernel then refuses to mount it or let md, device-mapper or another iofp claim it;
a file with flock, the per-target lock), a new file created O_EXCL|O_NOFOLLOW. fio is handed the held
descriptor (`Target.fio_path`, /dev/fd/N), so that a path swapped in the meantime (a symlink pointed
elsewhere) changes nothing.

A target smaller than the end of the selection's highest I/O is refused in every mode (fio aborts on
a read past the end and fails on a write past it) unless the offsets were folded into it:
never silently truncated.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import os
import shutil
import stat
import struct
import subprocess
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from iofp.contract import disk_of
from iofp.errors import BadInput, MissingCapability, Refused

OVERRIDE = "pass --allow-destructive to replay onto it"


@dataclass
class Target:
    """What the replay will write to, as found on disk."""

    path: Path  # as the user named it, made absolute
    kind: str  # "file" | "new-file" | "block"
    size: int | None  # bytes; None for a file that does not exist yet
    name: str | None = None  # kernel name of a block device ("loop3")
    backs: list[str] = field(default_factory=list)  # loop devices a regular file is attached to
    logical_block_size: int = 512
    checks: dict[str, Any] = field(default_factory=dict)
    resolved: Path | None = None  # `path` with its symlinks followed, once: what is checked and held
    identity: tuple[int, int] | None = None  # (st_dev, st_ino) of a file, (0, st_rdev) of a device
    fd: int | None = None  # held open by hold_target until release()
    exclusive: bool = False  # held with O_EXCL (a block device) or flock (a file)
    made: bool = False  # hold_target created it (a new file)

    @property
    def is_block(self) -> bool:
        return self.kind == "block"

    @property
    def fio_path(self) -> str:
        """What fio is given to open: the held descriptor (fio inherits it), else the resolved path."""
        return f"/dev/fd/{self.fd}" if self.fd is not None else str(self.resolved or self.path)

    def release(self, *, discard: bool = False) -> None:
        """Close the held descriptor; with `discard`, remove a new file that was made and never written."""
        if self.fd is None:
            return
        fd, self.fd = self.fd, None
        if discard and self.made and os.fstat(fd).st_size == 0 and self.resolved is not None:
            with contextlib.suppress(OSError):
                os.unlink(self.resolved)
        os.close(fd)


def inspect_target(path: Path | str) -> Target:
    """Resolve the target and read its size and kind; BadInput for things fio cannot replay onto."""
    p = Path(path).absolute()
    real = Path(os.path.realpath(p))  # once: everything after goes by what it pointed to now
    try:
        st = os.stat(real)
    except FileNotFoundError:
        if in_dev(p):
            raise BadInput(f"{p} does not exist; name an existing block device (lsblk lists them)") from None
        if not real.parent.is_dir():
            raise BadInput(
                f"{p}: directory {real.parent} does not exist; create it or name another target"
            ) from None
        return Target(p, "new-file", None, resolved=real)
    except OSError as e:
        raise BadInput(f"{p}: cannot stat the target ({e.strerror})") from None
    if in_dev(p) and not stat.S_ISBLK(st.st_mode):
        raise BadInput(f"{p} is not a block device; name an existing block device (lsblk lists them)")
    if stat.S_ISREG(st.st_mode):
        return Target(p, "file", st.st_size, backs=loops_backed_by(st), resolved=real,
                      identity=(st.st_dev, st.st_ino))  # fmt: skip
    if stat.S_ISBLK(st.st_mode):
        name = _block_name(st.st_rdev, p)
        sysfs = Path("/sys/class/block") / name
        size = int((sysfs / "size").read_text()) * 512
        lbs_file = sysfs / "queue" / "logical_block_size"
        if not lbs_file.exists():  # a partition: its queue is its disk's
            lbs_file = sysfs.resolve().parent / "queue" / "logical_block_size"
        lbs = int(lbs_file.read_text()) if lbs_file.exists() else 512
        return Target(p, "block", size, name=name, logical_block_size=lbs, resolved=real,
                      identity=(0, st.st_rdev))  # fmt: skip
    raise BadInput(f"{p}: not a regular file or block device; replay onto a file or an unused block device")


def in_dev(p: Path) -> bool:
    """Whether `p` is in the device directory itself (/dev, /dev/mapper), not in a filesystem mounted
    under it (/dev/shm): judged by the filesystem of its nearest existing ancestor, after symlinks (a
    dangling link to /dev/nvme9n1 would create that file just the same)."""
    anc = p.resolve()
    while not anc.exists() and anc != anc.parent:
        anc = anc.parent
    try:
        return anc.is_relative_to("/dev") and os.stat(anc).st_dev == os.stat("/dev").st_dev
    except OSError:
        return False


def loops_backed_by(st: os.stat_result) -> list[str]:
    """The attached loop devices whose backing file is the file of `st`, by device and inode: a path
    string would miss another name for the same file (a hard link, a bind mount, ../)."""
    return [n for n, (dev, ino, _) in _loops() if (dev, ino) == (st.st_dev, st.st_ino)]


def loops_over(name: str) -> list[str]:
    """The attached loop devices whose backing file is the block device `name` (by major:minor)."""
    try:
        rdev = os.makedev(*(int(x) for x in (Path("/sys/class/block") / name / "dev").read_text().split(":")))
    except (OSError, ValueError):
        return []
    return [n for n, (_, _, r) in _loops() if r == rdev]


def loop_backing(name: str) -> tuple[str, tuple[int, int, int]] | None:
    """What the loop device `name` is backed by: its path as sysfs shows it (for messages) and its
    identity (st_dev, st_ino, st_rdev: a block device's number, 0 for a file); None when `name` is no
    attached loop device."""
    ident = _loop_identity(name)
    if ident is None:
        return None
    try:
        path = (Path("/sys/block") / name / "loop" / "backing_file").read_text().rstrip("\n")
    except OSError:
        path = "?"
    return path, ident


# LOOP_GET_STATUS64 (linux/loop.h): struct loop_info64 starts with lo_device, lo_inode, lo_rdevice
# (the backing file's st_dev, st_ino, st_rdev). The kernel keeps them for the file it holds, so they
# name it even once its path is gone: a backing file deleted after the attach shows in sysfs as
# "PATH (deleted)", which no stat() finds, and a loop device sharing it with a mounted one then
# looked unshared (replay, probe and headroom all wrote the mounted filesystem).
_LOOP_GET_STATUS64 = 0x4C05
_LOOP_INFO64_SIZE = 232


def _loop_identity(name: str) -> tuple[int, int, int] | None:
    if not (Path("/sys/block") / name / "loop").is_dir():
        return None
    try:
        fd = os.open(f"/dev/{name}", os.O_RDONLY | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        buf = bytearray(_LOOP_INFO64_SIZE)
        fcntl.ioctl(fd, _LOOP_GET_STATUS64, buf)
    except OSError:  # ENXIO: detached meanwhile
        return None
    finally:
        os.close(fd)
    dev, ino, rdev = struct.unpack_from("=3Q", buf)
    return dev, ino, rdev


def _loops() -> list[tuple[str, tuple[int, int, int]]]:
    """Every attached loop device and the identity of what backs it."""
    found = []
    for d in sorted(Path("/sys/block").glob("loop*")):
        ident = _loop_identity(d.name)
        if ident is not None:
            found.append((d.name, ident))
    return found


def _block_name(rdev: int, p: Path) -> str:
    link = Path(f"/sys/dev/block/{os.major(rdev)}:{os.minor(rdev)}")
    try:
        return link.resolve(strict=True).name
    except OSError:
        raise BadInput(f"{p}: block device {os.major(rdev)}:{os.minor(rdev)} is not in sysfs") from None


def hold_target(target: Target, *, writes: bool, allow_destructive: bool) -> None:
    """Open the resolved target and keep it open (Target.fd) until `release`: what fio will be given,
    so that nothing swapped in under its name afterwards is written. For a run that writes, a block
    device is opened O_EXCL (EBUSY while mounted, or held by md, device-mapper or another run; with
    --allow-destructive a plain open), a file is locked (flock: one iofp run writes it at a time) and
    a new file is created O_EXCL|O_NOFOLLOW. Refused when it is in use, or is not what was inspected."""
    assert target.resolved is not None and target.fd is None
    flags = os.O_CLOEXEC | (os.O_RDWR if writes else os.O_RDONLY)
    if target.kind == "new-file":
        flags |= os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW
    elif not target.is_block:
        flags |= os.O_NOFOLLOW
    elif writes and not allow_destructive:
        flags |= os.O_EXCL
    try:
        fd = os.open(target.resolved, flags, 0o666)
    except OSError as e:
        raise _unheld(target, e) from None
    target.fd, target.made = fd, target.kind == "new-file"
    try:
        st = os.fstat(fd)
        got = (0, st.st_rdev) if target.is_block else (st.st_dev, st.st_ino)
        if target.identity is not None and got != target.identity:
            raise Refused(f"{target.path} changed while it was checked (now another file or device); "
                          "run again")  # fmt: skip
        target.identity = got
        if writes:
            _lock(target, fd)
    except BaseException:
        target.release(discard=True)
        raise


def _unheld(target: Target, e: OSError) -> Refused:
    if e.errno == errno.EBUSY:
        return Refused(f"{target.path} is in use (an exclusive open failed with EBUSY); {OVERRIDE}")
    if e.errno == errno.EEXIST:
        return Refused(f"{target.path} appeared while it was checked; run again to check it")
    if e.errno == errno.ELOOP:
        return Refused(f"{target.path} became a symbolic link while it was checked; run again")
    return Refused(f"{target.path}: cannot open it ({e.strerror})")


def _lock(target: Target, fd: int) -> None:
    """The per-target lock: two iofp runs never write one target at once (flock on the open file:
    released when the descriptor closes, also when iofp is killed)."""
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        raise Refused(f"{target.path} is being written by another iofp run; wait for it to finish") from None
    target.exclusive = True


def check_target(target: Target, *, writes: bool, allow_destructive: bool) -> None:
    """Raise Refused (exit 2) naming the object and the fix when writing to `target` is unsafe."""
    if not writes or allow_destructive or target.kind == "new-file":
        return
    if target.is_block:
        assert target.name is not None
        _check_device(target.name, f"/dev/{target.name}", held=target.fd is not None)
        return
    for name in target.backs:  # writing the file writes the device
        _check_device(name, f"{target.path} backs /dev/{name}, which")
    real = str(target.resolved or target.path)
    _refuse_writers(real, str(target.path))
    if not target.size:
        return
    sig = signature(real)
    what = f"carries a {sig}" if sig else f"is an existing file ({_mib(target.size)})"
    raise Refused(f"{target.path} {what}; {OVERRIDE}, pass --reads-only, or name a new file")


def _check_device(
    name: str, subject: str, *, held: bool = False, seen: frozenset[str] = frozenset()
) -> None:
    """Refuse a device in use; `subject` starts the message ("/dev/loop3" or "F backs /dev/loop3, which").
    `held`: this run holds it (with O_EXCL when it writes): the exclusive open was the busy test."""
    dev = f"/dev/{name}"
    parts = partitions(name)
    mounts = mountpoints([name, *parts])
    if mounts:
        where, via = mounts[0]
        through = f" (via /dev/{via})" if via != name else ""
        raise Refused(f"{subject} is mounted on {where}{through}; {OVERRIDE}")
    swaps = swap_users([name, *parts])
    if swaps:
        raise Refused(f"{subject} is in use as swap ({swaps[0]}); {OVERRIDE}")
    holders = holders_of([name, *parts])
    if holders:
        raise Refused(f"{subject} is held by {', '.join(holders)}; {OVERRIDE}")
    if parts:
        raise Refused(f"{subject} has partitions ({', '.join(parts)}); {OVERRIDE}")
    sig = signature(dev)
    if sig:
        raise Refused(f"{subject} carries a {sig}; {OVERRIDE} (or erase it first: wipefs -a {dev})")
    if not held and busy(dev):
        raise Refused(f"{subject} is in use (an exclusive open failed with EBUSY); {OVERRIDE}")
    _refuse_writers(dev, subject)
    _check_chain(name, subject, seen | {name})


def _check_chain(name: str, subject: str, seen: frozenset[str]) -> None:
    """A loop device over this one is a use of it (it is in use whatever that one holds); what backs
    a loop device is checked as the device itself (the block device under it, and every other loop
    device over the same file)."""
    for upper in (u for u in loops_over(name) if u not in seen):
        _check_device(upper, f"{subject} backs /dev/{upper}, which", seen=seen)
        raise Refused(f"{subject} backs /dev/{upper} (a loop device over it; losetup -d /dev/{upper} "
                      f"detaches it); {OVERRIDE}")  # fmt: skip
    disk = disk_of(name)
    # a partition is written through its disk: what uses the disk's blocks (a loop device over it,
    # another loop device over its backing file) may use the partition's
    if disk != name and disk not in seen:
        _check_chain(disk, f"{subject} is a partition of /dev/{disk}, which", seen | {disk})
    backing = loop_backing(name)
    if backing is None:
        return
    path, (dev, ino, rdev) = backing
    if rdev:  # a block device (a file's st_rdev is 0)
        lower = _block_name(rdev, Path(path))
        if lower not in seen:
            _check_device(lower, f"{subject} is backed by /dev/{lower}, which", seen=seen)
        return
    sharing = [n for n, (d, i, _) in _loops() if (d, i) == (dev, ino)]
    for other in (o for o in sharing if o not in seen):
        _check_device(other, f"{subject} shares its backing file {path} with /dev/{other}, which", seen=seen)


def _refuse_writers(path: str, subject: str) -> None:
    """Refuse a target another process has open for writing (a database on a raw device, a dd in
    progress): an open without O_EXCL claims nothing, so only its file descriptors show it."""
    found = writers(path)
    if found:
        pid, comm = found[0]
        more = f" and {len(found) - 1} more" if len(found) > 1 else ""
        raise Refused(f"{subject} is open for writing by {comm} (pid {pid}){more}; {OVERRIDE}")


def writers(path: str) -> list[tuple[int, str]]:
    """(pid, command) of every other process with `path` (a block device, or a file by device and
    inode) open for writing, from /proc/PID/fd and fdinfo's flags. Processes whose descriptors
    cannot be read (another user's, without root) are not seen."""
    try:
        st = os.stat(path)
    except OSError:
        return []
    is_block = stat.S_ISBLK(st.st_mode)
    found = []
    for proc in Path("/proc").iterdir():
        if not proc.name.isdecimal() or int(proc.name) == os.getpid():
            continue
        try:
            fds = list((proc / "fd").iterdir())
        except OSError:
            continue
        for fd in fds:
            if _same_file(fd, st, is_block) and _opened_for_writing(proc / "fdinfo" / fd.name):
                found.append((int(proc.name), _comm(proc)))
                break
    return found


def _same_file(fd: Path, st: os.stat_result, is_block: bool) -> bool:
    try:
        if not os.readlink(fd).startswith("/"):  # a socket, pipe or anon inode
            return False
        got = os.stat(fd)
    except OSError:
        return False
    if is_block:
        return stat.S_ISBLK(got.st_mode) and got.st_rdev == st.st_rdev
    return (got.st_dev, got.st_ino) == (st.st_dev, st.st_ino)


def _opened_for_writing(fdinfo: Path) -> bool:
    try:
        flags = next(x for x in fdinfo.read_text().splitlines() if x.startswith("flags:"))
    except (OSError, StopIteration):
        return False
    return int(flags.split()[1], 8) & os.O_ACCMODE in (os.O_WRONLY, os.O_RDWR)


def _comm(proc: Path) -> str:
    try:
        return (proc / "comm").read_text().strip()
    except OSError:
        return "?"


def check_target_size(target: Target, needed: int, *, folded: bool) -> None:
    """Refuse a target that cannot hold the selection's highest byte (reads past the end abort fio)."""
    if target.size is None or needed <= target.size:
        return
    fix = (
        "use a larger target" if folded else "pass --fold to fold the offsets into it, or use a larger target"
    )
    raise Refused(
        f"{target.path} ({_mib(target.size)}) is smaller than the selection (up to {_mib(needed)}); {fix}"
    )


def _mib(n: int) -> str:
    if n < 1 << 20:  # "0.0 MiB" would say nothing
        return f"{n} bytes"
    return f"{n / (1 << 20):.1f} MiB" if n % (1 << 20) else f"{n >> 20} MiB"


def partitions(name: str) -> list[str]:
    base = Path("/sys/class/block") / name
    try:
        return sorted(c.name for c in base.iterdir() if (c / "partition").exists())
    except OSError:
        return []


def holders_of(names: list[str]) -> list[str]:
    out: list[str] = []
    for n in names:
        h = Path("/sys/class/block") / n / "holders"
        if h.is_dir():
            out += sorted(x.name for x in h.iterdir())
    return out


def mountpoints(names: list[str]) -> list[tuple[str, str]]:
    """(mount point, device name) for every mount of the given devices, by major:minor."""
    wanted: dict[str, str] = {}
    for n in names:
        try:
            wanted[(Path("/sys/class/block") / n / "dev").read_text().strip()] = n
        except OSError:
            continue
    found = []
    with open("/proc/self/mountinfo") as f:
        for line in f:
            fields = line.split()
            if len(fields) > 4 and fields[2] in wanted:
                found.append((_unescape(fields[4]), wanted[fields[2]]))
    return found


def _unescape(path: str) -> str:
    # mountinfo escapes space, tab, newline and backslash as octal
    for code, ch in (("\\040", " "), ("\\011", "\t"), ("\\012", "\n"), ("\\134", "\\")):
        path = path.replace(code, ch)
    return path


def swap_users(names: list[str]) -> list[str]:
    try:
        lines = Path("/proc/swaps").read_text().splitlines()[1:]
    except OSError:
        return []
    devs = {f"/dev/{n}" for n in names}
    return [ln.split()[0] for ln in lines if ln.split() and os.path.realpath(ln.split()[0]) in devs]


def signature(dev: str) -> str | None:
    """What blkid finds on the device ("filesystem signature (ext4)", "partition table (dos)"), or None."""
    blkid = shutil.which("blkid")
    if blkid is None:
        raise MissingCapability(
            f"cannot check {dev} for signatures: blkid not found; "
            "install util-linux or pass --allow-destructive"
        )
    res = subprocess.run([blkid, "-p", "-o", "export", dev], capture_output=True, text=True, timeout=60)
    if res.returncode == 2:  # nothing found
        return None
    if res.returncode != 0:
        raise Refused(f"cannot probe {dev} for signatures (blkid exit {res.returncode}); {OVERRIDE}")
    tags = dict(ln.split("=", 1) for ln in res.stdout.splitlines() if "=" in ln)
    if not tags.keys() & {"TYPE", "PTTYPE", "USAGE"}:  # a partition's own entry (PART_ENTRY_*): no content
        return None
    if "PTTYPE" in tags and "TYPE" not in tags:
        return f"partition table ({tags['PTTYPE']})"
    # blkid's USAGE: filesystem, raid, crypto or other (swap, among others): say what it is
    usage = {"filesystem": "filesystem", "raid": "RAID/LVM", "crypto": "encryption"}.get(
        tags.get("USAGE", "filesystem"), "data"
    )
    return f"{usage} signature ({tags.get('TYPE', 'unknown type')})"


def busy(dev: str) -> bool:
    try:
        fd = os.open(dev, os.O_RDONLY | os.O_EXCL)
    except OSError as e:
        return e.errno == errno.EBUSY
    os.close(fd)
    return False
