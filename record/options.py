"""`iofp record`'s options, checked before anything is loaded or attached: a bad one is one line
naming the fix (exit 2), and the ring is left as it was."""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import IO

from bpf import CaptureOptions
from bpf import validate as check_capture
from bpf.schedule import next_occurrence
from iofp.contract import check_output_dir, iofp_alive
from iofp.errors import BadInput
from iofp.slo import Slo
from iofp.values import duration_text
from record.ring import RING, disk_bytes
from record.trigger import check_recordable

MIN = 60 * 10**9
STATE = "recorder.json"  # who records into the directory (pid, start, options): --dump reads it
LOCK = ".lock"
MAX_WINDOW_S = 60


@dataclass
class RecordOptions:
    output: Path
    devices: list[str] = field(default_factory=list)  # names like "nvme0n1"; empty = all
    history_ns: int = 10 * MIN
    keep_bytes: int = 2 << 30
    trigger: Slo | None = None
    window_ns: int = 10**9
    for_ns: int | None = None  # None: one window
    after_ns: int = 2 * MIN
    cooldown_ns: int = 5 * MIN
    max_incidents: int = 20
    at: list[str] = field(default_factory=list)  # HH:MM[:SS]: save an incident at these times daily
    duration_s: float | None = None  # stop after this long (tests, benchmarks); None: until a signal
    labels: dict[str, str] = field(default_factory=dict)
    syscalls: bool = True
    # Off by default, unlike capture's: always on, the data calls' probes (io_submit, io_getevents,
    # O_DIRECT reads and writes) cost more than the block requests' (~1 us an I/O at 20k IOPS,
    # BENCHMARKS); the triggers and the summary never read them, only an incident's calls table does
    data_calls: bool = False
    # Off by default too: the write(2) probes that find writes on O_DSYNC files cost every write on the
    # machine ~0.3 us (BENCHMARKS), for a commit style few databases use by default (PostgreSQL's
    # open_datasync; fsync and fdatasync are always probed)
    dsync_writes: bool = False
    witness: str = "agent"

    @property
    def hold(self) -> int:
        """--for in windows (at least one)."""
        w = self.window_ns
        return max(1, -(-(self.for_ns or w) // w))

    @property
    def window_s(self) -> int:
        return self.window_ns // 10**9


def validate(opts: RecordOptions) -> None:
    """BadInput for options that cannot work, before any probe is loaded."""
    if opts.trigger is not None:
        check_recordable(opts.trigger)
    if opts.window_ns % 10**9 or not 1 <= opts.window_s <= MAX_WINDOW_S:
        window = duration_text(opts.window_ns)
        raise BadInput(f"--window {window}: use whole seconds from 1s to {MAX_WINDOW_S}s, e.g. --window 5s")
    if opts.history_ns < 10**9:
        raise BadInput(f"--history {duration_text(opts.history_ns)}: keep at least 1s (e.g. --history 10m)")
    if opts.after_ns > opts.history_ns:
        raise BadInput(
            f"--after {duration_text(opts.after_ns)} is longer than --history "
            f"{duration_text(opts.history_ns)}: while an incident is written its after part waits in the "
            f"ring beside its history, which --keep is sized for; use --after "
            f"{duration_text(opts.history_ns)} or less, or --history {duration_text(opts.after_ns)}"
        )
    if opts.max_incidents < 1:
        raise BadInput(f"--max-incidents {opts.max_incidents}: use 1 or more")
    for at in opts.at:
        next_occurrence(at, datetime.now())  # BadInput naming the time
    _check_directory(Path(opts.output), opts.keep_bytes)
    # the devices and the machine, as capture checks them (a recorder's capture writes no trace)
    check_capture(CaptureOptions(output=opts.output, devices=list(opts.devices), sink=_NOT_YET))


class _NotYet:
    """Stands for the recorder's sink while the options are checked: capture's checks only ask
    whether there is one (a trace directory is then not needed)."""

    def start(self, *_: object) -> None:
        raise AssertionError("a placeholder")

    def put(self, *_: object, **__: object) -> None:
        raise AssertionError("a placeholder")


_NOT_YET = _NotYet()


def _check_directory(root: Path, keep: int) -> None:
    check_output_dir(root, force=True)  # a file, an unwritable place, a trace being replaced
    if root.is_dir() and any(root.iterdir()) and not (root / STATE).exists() and not (root / RING).exists():
        raise BadInput(f"{root} holds something other than a recorder's ring; pass a new directory, "
                       "or the one a recorder used before (it keeps its ring)")  # fmt: skip
    if (pid := running(root)) is not None:
        raise BadInput(f"{root} is being recorded into by iofp (pid {pid}); stop it first (kill {pid})")
    there = root
    while not there.exists():
        there = there.parent
    st = os.statvfs(there)
    free = st.f_bavail * st.f_frsize + disk_bytes(root / RING)  # a restart reuses its own ring's space
    if free < keep:
        raise BadInput(
            f"{root} is on a filesystem with {_size(free)} free, less than --keep {_size(keep)}; "
            f"free space there, put the ring elsewhere, or pass --keep {_size(free * 9 // 10)}"
        )


def _size(n: int) -> str:
    """A size as --keep takes it: 1.5GiB, 812MiB, 1,000,000TiB."""
    for unit, shift in (("TiB", 40), ("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift:
            v = n / (1 << shift)
            return f"{v:.3g}{unit}" if v < 1000 else f"{v:,.0f}{unit}".replace(",", "")
    return f"{n}B"


def running(root: Path) -> int | None:
    """The pid of the iofp recording into `root`, if one is."""
    try:
        pid = int(json.loads((Path(root) / STATE).read_text())["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None
    return pid if iofp_alive(pid) else None


def lock(root: Path) -> IO[bytes]:
    """Hold the directory for this run (released when the process ends, however it ends)."""
    root.mkdir(parents=True, exist_ok=True)
    f = open(root / LOCK, "ab")  # noqa: SIM115 (held for the run)
    try:
        fcntl.flock(f, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        f.close()
        pid = running(root)
        raise BadInput(f"{root} is being recorded into by another iofp{f' (pid {pid})' if pid else ''}; "
                       "stop it first") from None  # fmt: skip
    with contextlib.suppress(OSError):
        os.set_inheritable(f.fileno(), False)
    return f
