"""This process's scratch directory: private, bounded by its users, and gone when the process is.

Scratch files (DuckDB's spill of a large sort, the links that make a trace's paths literal) go in one
directory per process, made by mkdtemp in the temp directory ($TMPDIR, else /tmp): mode 0700 and a
name nobody can guess, so that no other user can plant a link where iofp will write. It is removed
when the command ends, on every path out of it (cli/app.py: a normal end, an error, a stop signal);
a process killed with SIGKILL cannot, and the next iofp removes what such a process left (`sweep`:
directories of this prefix whose process is gone).

Imports no stage.
"""

from __future__ import annotations

import atexit
import contextlib
import os
import shutil
import tempfile
from pathlib import Path

PREFIX = "iofp-scratch-"
LEGACY = "iofp-duckdb-"  # DuckDB's spill directory before this module (/tmp/iofp-duckdb-PID)

_dir: Path | None = None


def directory() -> Path:
    """The scratch directory of this process, made on first use (after sweeping away the leftovers of
    processes that are gone)."""
    global _dir
    if _dir is None or not _dir.is_dir():
        sweep()
        _dir = Path(tempfile.mkdtemp(prefix=f"{PREFIX}{os.getpid()}-"))
    return _dir


def remove() -> None:
    """Remove this process's scratch directory (the next use makes a new one)."""
    global _dir
    if _dir is not None:
        shutil.rmtree(_dir, ignore_errors=True)
        _dir = None


atexit.register(remove)


def sweep(root: Path | None = None) -> list[Path]:
    """Remove the scratch directories of processes that are gone (killed with SIGKILL, or a machine
    that lost power); returns what was removed. A directory is only ever removed when it is a real
    directory (never a link), owned by this user, and its process is no iofp any more."""
    base = Path(root or tempfile.gettempdir())
    removed = []
    for d in (*base.glob(f"{PREFIX}*"), *base.glob(f"{LEGACY}*")):
        pid = _pid_of(d.name)
        if pid is None or _alive(pid):
            continue
        with contextlib.suppress(OSError):
            st = d.lstat()
            if d.is_symlink() or not d.is_dir() or st.st_uid != os.geteuid():
                continue
            shutil.rmtree(d)
            removed.append(d)
    return removed


def _pid_of(name: str) -> int | None:
    rest = name.removeprefix(PREFIX).removeprefix(LEGACY)
    head = rest.split("-", 1)[0]
    return int(head) if head.isdecimal() else None


def _alive(pid: int) -> bool:
    """Whether `pid` is a running iofp (this process included): a pid reused since by another program
    is not."""
    if pid == os.getpid():
        return True
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"iofp" in cmdline or b"cli.app" in cmdline or b"pytest" in cmdline
