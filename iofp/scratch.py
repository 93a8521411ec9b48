"""This process's scratch directory: private, bounded by its users, and gone when the process is.

Scratch files (DuckDB's spill of a large sort, the links that make a trace's paths literal) go in one
directory per process, made by mkdtemp in the temp directory ($TMPDIR, else /tmp): mode 0700 and a
name nobody can guess, so that no other user can plant a link where iofp will write. It is removed
when the command ends, on every path out of it (cli/app.py: a normal end, an error, a stop signal);
a process killed with SIGKILL cannot, and the next iofp removes what such a process left (`sweep`:
directories of this prefix whose process is gone). A process holds an exclusive lock on its
directory's LOCK file for as long as it lives (the kernel drops it however the process ends): a
directory whose lock can be taken is a leftover. Its command line says nothing either way: a
benchmark, a Spark worker or a script fingerprinting through the library is as alive as `iofp`.

Imports no stage.
"""

from __future__ import annotations

import atexit
import contextlib
import fcntl
import os
import shutil
import tempfile
from pathlib import Path

from iofp import path_owners
from iofp.errors import BadInput

PREFIX = "iofp-scratch-"
MAKING = ".iofp-making-"  # a scratch directory before its lock is taken (_make)
LEGACY = "iofp-duckdb-"  # DuckDB's spill directory before this module (/tmp/iofp-duckdb-PID)
LOCK = "LOCK"

_dir: Path | None = None
_lock: int | None = None  # the open, locked LOCK file of _dir


def directory() -> Path:
    """The scratch directory of this process, made on first use (after sweeping away the leftovers of
    processes that are gone)."""
    global _dir, _lock
    if _dir is None or not _dir.is_dir():
        sweep()
        if _lock is not None:
            os.close(_lock)
            _lock = None
        _dir, _lock = _make()
        if (above := path_owners.replaceable_by_others(str(_dir))) is not None:
            shutil.rmtree(_dir, ignore_errors=True)  # its own mode is no help: it can be swapped
            os.close(_lock)
            _dir = _lock = None
            raise BadInput(f"{tempfile.gettempdir()}: another user can replace iofp's scratch directory "
                           f"in {above[0]} ({above[1]}); set TMPDIR to a directory only root or you can "
                           f"change")  # fmt: skip
    return _dir


def _make() -> tuple[Path, int]:
    """A new scratch directory and its open, locked LOCK file. It is made and locked under a name
    sweep() leaves alone while its process lives, then renamed to its PREFIX name: a directory seen
    under PREFIX is locked from the first instant. Made under PREFIX and locked after, another
    process's sweep took the new LOCK between its creation and its flock and removed the directory in
    use (eight `catalog add` at once: one failed on its vanished spill directory)."""
    making = Path(tempfile.mkdtemp(prefix=f"{MAKING}{os.getpid()}-"))
    try:
        fd = os.open(making / LOCK, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
        fcntl.flock(fd, fcntl.LOCK_EX)
        final = making.with_name(PREFIX + making.name.removeprefix(MAKING))
        os.rename(making, final)  # the lock is the open file's: it stays with the renamed directory
    except OSError:
        shutil.rmtree(making, ignore_errors=True)
        raise
    return final, fd


def remove() -> None:
    """Remove this process's scratch directory (the next use makes a new one)."""
    global _dir, _lock
    if _dir is not None:
        shutil.rmtree(_dir, ignore_errors=True)
        _dir = None
    if _lock is not None:
        os.close(_lock)
        _lock = None


atexit.register(remove)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories of processes that are gone (killed with SIGKILL, or a machine
    that lost power); returns what was removed. A directory is only ever removed when it is a real
    directory (never a link), owned by this user, and its process is gone: nobody holds its lock."""
    base = Path(root or tempfile.gettempdir())
    removed = []
    for d in (*base.glob(f"{PREFIX}*"), *base.glob(f"{MAKING}*"), *base.glob(f"{LEGACY}*")):
        pid = _pid_of(d.name)
        making = d.name.startswith(MAKING)  # its LOCK may be made but not yet taken: judged by its pid
        if pid is None or (Path(f"/proc/{pid}").exists() if making else _alive(d, pid)):
            continue
        with contextlib.suppress(OSError):
            st = d.lstat()
            if d.is_symlink() or not d.is_dir() or st.st_uid != os.geteuid():
                continue
            shutil.rmtree(d)
            removed.append(d)
    return removed


def _pid_of(name: str) -> int | None:
    rest = name.removeprefix(PREFIX).removeprefix(MAKING).removeprefix(LEGACY)
    head = rest.split("-", 1)[0]
    return int(head) if head.isdecimal() else None


def _alive(d: Path, pid: int) -> bool:
    """Whether the process that made `d` may still use it: this process, one holding the directory's
    lock, or, for a directory with no lock (DuckDB's spill before this module, or one an iofp before
    _make made an instant ago), any process with its pid."""
    if pid == os.getpid():
        return True
    try:
        fd = os.open(d / LOCK, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    except FileNotFoundError:
        return Path(f"/proc/{pid}").exists()
    except OSError:
        return True  # not ours to judge
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        return False  # taken: its owner is gone (the lock is dropped as the directory goes)
    except BlockingIOError:
        return True
    finally:
        os.close(fd)
