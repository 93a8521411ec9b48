"""The ring: the last minutes of raw records on disk, as complete compressed segments, bounded.

Each recorder run is a session, `ring/<session>/spool/` (bpf/spool.py's layout, `compress`ed: the
kernel's records as zstd frames, ~16 bytes a request, nothing encoded until an incident needs it),
one segment per interval (a second). Bounded by age (`--history`: a segment that ended longer ago
goes) and by size (`--keep`: the ring's disk use, directories and metadata included, as `du` counts
it): the oldest segment goes first, and every one dropped is counted, with the records it held.
A new segment is made room for before it is written (twice the largest recent segment), so the bound
holds at every instant, not only after each eviction.

A restart keeps the ring: the sessions found are loaded, oldest first, and age out like any other.
An incident takes its segments by hard link (record/incident.py), so the ring can drop them on
schedule while the incident still holds them.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections import deque
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bpf import (
    Interval,
    ReqBits,
    Spool,
    read_capture,
    remove_leftovers,
    remove_segment,
    segment_extra,
    segments,
)
from iofp.contract import SPOOL, TraceMeta

RING = "ring"
# room made before a segment is written: twice the largest of the latest ones (FIRST_MARGIN before any),
# at least a segment's directory and three files on a 4 KiB-block filesystem
MIN_MARGIN = 16 << 10
FIRST_MARGIN = 256 << 10


def disk_bytes(path: Path) -> int:
    """What `path` occupies on disk (allocated blocks, as du counts them); a directory with its files."""
    try:
        total = os.lstat(path).st_blocks * 512
    except OSError:
        return 0
    if path.is_dir() and not path.is_symlink():
        for dirpath, dirs, files in os.walk(path):
            for name in (*dirs, *files):
                with contextlib.suppress(OSError):
                    total += os.lstat(os.path.join(dirpath, name)).st_blocks * 512
    return total


@dataclass
class Session:
    """One recorder run's spool: what encoding its segments needs besides their records."""

    name: str
    dir: Path  # ring/<session>: the Spool's root
    t0_ns: int  # monotonic start
    wall0_ns: int  # wall clock at t0

    @property
    def spool(self) -> Path:
        return self.dir / SPOOL

    def capture(self) -> dict[str, Any]:
        return read_capture(self.dir)


@dataclass
class Segment:
    path: Path
    session: Session
    start_ns: int  # wall clock: the interval it holds
    end_ns: int
    records: int
    disk: int  # bytes on disk


class Ring:
    def __init__(self, root: Path, keep_bytes: int, history_ns: int) -> None:
        self.dir = Path(root) / RING
        self.keep = keep_bytes
        self.history_ns = history_ns
        self.segments: deque[Segment] = deque()
        self.sessions: dict[str, Session] = {}
        self.dropped_segments = 0
        self.dropped_records = 0
        self._segment_bytes = 0
        self._spool: Spool | None = None
        self._session: Session | None = None
        self._recent: deque[int] = deque(maxlen=16)  # sizes of the latest segments
        self._fixed: int | None = None  # the directories' and capture.json files' use, when known

    @property
    def bytes(self) -> int:
        """The ring's disk use: its segments, and its directories and capture.json files."""
        if self._fixed is None:
            self._fixed = self._stat_fixed()
        return self._segment_bytes + self._fixed

    def _stat_fixed(self) -> int:
        """The ring's and its sessions' directories and capture.json files, stat'ed now: a directory
        grows with its entries (and never shrinks on ext4: after an eviction the figure kept is at worst
        high). Stat'ed again once a segment is added or a session comes or goes, not on each look:
        those were ~4 lstats a session, several times a second."""
        own = os.lstat(self.dir).st_blocks * 512 if self.dir.exists() else 0
        return own + sum(_overhead(s) for s in self.sessions.values())

    def _append(self, seg: Segment) -> None:
        self.segments.append(seg)
        self._segment_bytes += seg.disk
        self._fixed = None

    def load(self) -> None:
        """The sessions a previous run left (a restart keeps the ring), oldest first; half-written
        segments (a kill -9 while one was written) removed."""
        found = []
        for d in sorted(self.dir.glob("*/")) if self.dir.is_dir() else []:
            remove_leftovers(d / SPOOL)  # a kill -9 while a segment was written or removed
            try:
                cap = read_capture(d)
            except (OSError, ValueError, KeyError, TypeError):
                shutil.rmtree(d, ignore_errors=True)  # never got its first segment: nothing to keep
                continue
            found.append(Session(d.name, d, cap["t0_ns"], cap["meta"].capture_start_ns or 0))
        for s in sorted(found, key=lambda s: s.wall0_ns):
            self.sessions[s.name] = s
            for seg in segments(s.dir):
                x = segment_extra(seg)
                self._append(Segment(seg, s, x["start_ns"], x["end_ns"], x["records"], disk_bytes(seg)))
            if not segments(s.dir):
                self._drop_session(s)

    def begin(self, name: str, t0_ns: int, bits: ReqBits, names: dict[int, str], meta: TraceMeta) -> Session:
        """A new session: this run's segments go there."""
        d = self.dir / name
        d.mkdir(parents=True)
        self._spool = Spool(d, 0, compress=True)
        self._spool.start(t0_ns, bits, names, meta)
        self._session = Session(name, d, t0_ns, meta.capture_start_ns or 0)
        self.sessions[name] = self._session
        self._fixed = None
        return self._session

    def add(self, item: Interval, start_ns: int, end_ns: int, extra: dict[str, Any]) -> Segment:
        """Write one interval as a segment (wall-clock span [start_ns, end_ns)), within the bounds;
        `extra` (what was lost and counted in it) is kept with it for an incident's metadata."""
        assert self._spool is not None and self._session is not None
        records = len(item[0]) + len(item[1])
        self.evict(end_ns, room=max(MIN_MARGIN, 2 * max(self._recent, default=FIRST_MARGIN // 2)))
        doc = {"start_ns": start_ns, "end_ns": end_ns, "records": records, **extra}
        path = self._spool.put(item, doc)
        seg = Segment(path, self._session, start_ns, end_ns, records, disk_bytes(path))
        self._recent.append(seg.disk)
        self._append(seg)
        self.evict(end_ns)
        return seg

    def evict(self, now_ns: int, room: int = 0) -> None:
        """Drop the oldest segments until the ring holds `room` more bytes within --keep and none
        ended more than --history before `now_ns`."""
        while self.segments and (
            self.segments[0].end_ns < now_ns - self.history_ns or self.bytes + room > self.keep
        ):
            seg = self.segments.popleft()
            self._segment_bytes -= seg.disk
            remove_segment(seg.path)  # (a directory does not shrink: _fixed holds)
            self.dropped_segments += 1
            self.dropped_records += seg.records
            s = seg.session
            if s is not self._session and not any(x.session is s for x in self.segments):
                self._drop_session(s)

    def between(self, lo_ns: int, hi_ns: int) -> list[Segment]:
        """The segments whose span meets [lo_ns, hi_ns), oldest first."""
        return [s for s in self.segments if s.end_ns > lo_ns and s.start_ns < hi_ns]

    def _drop_session(self, s: Session) -> None:
        shutil.rmtree(s.dir, ignore_errors=True)
        self.sessions.pop(s.name, None)
        self._fixed = None

    def status(self) -> dict[str, Any]:
        return {
            "bytes": self.bytes,
            "keep_bytes": self.keep,
            "segments": len(self.segments),
            "oldest_ns": self.segments[0].start_ns if self.segments else None,
            "dropped_segments": self.dropped_segments,
            "dropped_records": self.dropped_records,
        }


def _overhead(s: Session) -> int:
    """A session's own disk use: its two directories and capture.json."""
    total = 0
    for p in (s.dir, s.spool, s.spool / "capture.json"):
        with contextlib.suppress(OSError):
            total += os.lstat(p).st_blocks * 512
    return total


def session_name(wall_ns: int) -> str:
    """A session's directory name: its start, local time, and the recorder's pid (two runs in one
    second are two sessions)."""
    import time

    return time.strftime("%Y%m%dT%H%M%S", time.localtime(wall_ns / 1e9)) + f"-{os.getpid()}"
