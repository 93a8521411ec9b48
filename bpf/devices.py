"""Block device names <-> kernel dev_t, from sysfs (/sys/class/block/NAME/dev holds "MAJOR:MINOR")."""

from __future__ import annotations

import contextlib
from pathlib import Path

from bpf.record import kdev
from iofp.contract import disk_of
from iofp.errors import BadInput

SYS_CLASS_BLOCK = Path("/sys/class/block")
SYS_BLOCK = Path("/sys/block")


def _read_dev(name: str) -> tuple[int, int] | None:
    try:
        major, minor = (SYS_CLASS_BLOCK / name / "dev").read_text().strip().split(":")
    except (OSError, ValueError):
        return None
    return int(major), int(minor)


def device_names() -> dict[int, str]:
    """Every block device the kernel knows: kernel dev_t -> name (e.g. "loop3")."""
    out: dict[int, str] = {}
    try:
        entries = sorted(p.name for p in SYS_CLASS_BLOCK.iterdir())
    except OSError:
        return out
    for name in entries:
        mm = _read_dev(name)
        if mm is not None:
            out[kdev(*mm)] = name
    return out


def resolve_devices(names: list[str]) -> dict[str, int]:
    """Validate user-given device names ("loop3" or "/dev/loop3") -> {name: kernel dev_t}.

    The block tracepoints report requests against the whole disk, so a partition is refused with
    the name of its disk rather than silently capturing nothing.
    """
    out: dict[str, int] = {}
    for given in names:
        name = given.removeprefix("/dev/")
        if "/" in name or not name or _read_dev(name) is None:
            raise BadInput(f"no block device named {given!r}; pass --device NAME from `lsblk -d`, e.g. loop3")
        if not (SYS_BLOCK / name).exists():
            disk = (SYS_CLASS_BLOCK / name).resolve().parent.name
            raise BadInput(
                f"{given} is a partition; requests are traced per disk: pass --device {disk} "
                f"and filter by offset"
            )
        mm = _read_dev(name)
        assert mm is not None
        out[name] = kdev(*mm)
    return out


def stacked_devices(names: list[str]) -> list[int]:
    """The disks, their partitions and every device stacked on any of them (dm, md: sysfs
    `holders`), as kernel dev_t's: a file's fsync lands on whichever of these its filesystem is on."""
    seen: set[str] = set()
    todo = list(names)
    while todo:
        name = todo.pop()
        if name in seen or _read_dev(name) is None:
            continue
        seen.add(name)
        base = SYS_CLASS_BLOCK / name
        with contextlib.suppress(OSError):
            todo += [p.name for p in base.iterdir() if p.name.startswith(name) and (p / "partition").exists()]
        with contextlib.suppress(OSError):
            todo += [p.name for p in (base / "holders").iterdir()]
    return sorted(kdev(*mm) for n in seen if (mm := _read_dev(n)) is not None)


def disk_names(names: dict[int, str]) -> dict[int, str]:
    """`names` (kernel dev_t -> name) with every partition named after its disk: the block
    tracepoints name requests by disk, and an application's call on a partition's file is I/O on it."""
    return {dev: disk_of(name) for dev, name in names.items()}
