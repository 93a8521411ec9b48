"""Who, besides root and the one running iofp, can change what a path leads to.

iofp runs as root and writes its artifacts and scratch files by name. A directory that is private
itself is no help if another user can replace it or a link on the way to it: the owner of any
directory on the path (or anyone, where it is writable by others without the sticky bit) can rename
iofp's directory away between a check and a write and put a directory of their own, full of links,
in its place. So every directory the kernel passes through to reach a path, links followed as the
kernel follows them, must be changeable only by root or by the user running iofp (`sudo` keeps
the user who ran it in SUDO_UID: their own home directory is theirs to write in). A shared sticky
directory (/tmp, /dev/shm) is safe for what root or that user owns in it, and only for that.

Imports no stage.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Iterator

MAX_LINKS = 40  # the kernel's own limit on links followed in one lookup (ELOOP)


def trusted_uids() -> frozenset[int]:
    """Root, this process's user, and the user `sudo` ran it for."""
    uids = {0, os.geteuid()}
    sudo = os.environ.get("SUDO_UID", "")
    if sudo.isdigit():
        uids.add(int(sudo))
    return frozenset(uids)


def entries(path: str) -> Iterator[tuple[str, str, os.stat_result | None]]:
    """Every (directory, entry in it, the entry's lstat) the kernel passes through to reach `path`,
    links followed where the kernel follows them; ends at the first entry that does not exist (its
    lstat None: iofp will make it there). The directories are real paths (no links), so `..` is
    their parent."""
    todo = [c for c in os.path.abspath(path).split("/") if c]
    cur, links = "/", 0
    while todo:
        name = todo.pop(0)
        if name == ".":
            continue
        if name == "..":
            cur = os.path.dirname(cur)
            continue
        entry = os.path.join(cur, name)
        try:
            st = os.lstat(entry)
        except OSError:
            yield cur, entry, None
            return
        yield cur, entry, st
        if stat.S_ISLNK(st.st_mode) and links < MAX_LINKS:
            links += 1
            target = os.readlink(entry)
            cur = "/" if target.startswith("/") else cur
            todo = [c for c in target.split("/") if c] + todo
        else:
            cur = entry


def changeable(parent: os.stat_result, entry: os.stat_result | None, trusted: frozenset[int]) -> str | None:
    """Why another user can replace `entry` (None: one iofp will make) in the directory `parent`
    (None: they cannot)."""
    mode = parent.st_mode & 0o7777
    sticky = mode & stat.S_ISVTX
    if parent.st_uid not in trusted:
        return f"owned by uid {parent.st_uid}"
    if mode & 0o002 and not sticky:
        return f"mode {mode:o}: every user can write in it"
    if mode & 0o020 and not sticky and parent.st_gid != os.getegid():
        return f"mode {mode:o}: group {parent.st_gid} can write in it"
    # a shared sticky directory: the owner of an entry can still rename or remove it
    if mode & 0o022 and entry is not None and entry.st_uid not in trusted:
        return f"shared (mode {mode:o}), and what the path takes in it is owned by uid {entry.st_uid}"
    return None


def replaceable_by_others(path: str) -> tuple[str, str] | None:
    """The first directory on the way to `path` in which another user can replace what the path
    takes, and why; None when none is."""
    trusted = trusted_uids()
    for parent, _, entry in entries(path):
        try:
            why = changeable(os.stat(parent), entry, trusted)
        except OSError:
            return None
        if why is not None:
            return parent, why
    return None
