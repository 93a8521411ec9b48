"""The per-second summary, built from each interval's raw records as the capture hands them over.

A request belongs to the wall-clock second in which it completed (the second in which /sys/block
counts it); a sync call to the second in which it returned. Per second, device and op: the count,
the bytes, the sum and the most of the latencies, the requests whose latency nobody saw, the most in
flight at an issue, and the latency histogram (record/histogram.py). A second is final once the
capture has handed over everything that completed before its end; the rare record that arrives after
that (a kernel batch that missed a flush) is counted in the oldest second still open, and `late`
says how many were, so the counts still sum to /sys/block's.

Ops: the contract's read, write, discard, flush; `commit` for the sync calls (fsync, fdatasync,
O_DSYNC writes, ...; the SLO grammar's commit and fsync); `lost` for the events the capture lost
(counters, not requests). The block layer's empty flush barriers, which complete without being issued
(the capture's `completed_unissued`), are flushes /sys/block counts: they are counted as flushes
whose latency is unknown, in the second that ends the interval that counted them.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Iterator
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from bpf import completions
from iofp.contract import OPS
from record import histogram

NS = 1_000_000_000
COMMIT = "commit"
LOST = "lost"
SUMMARY_OPS = (*OPS, COMMIT, LOST)
ALL_DEVICES = "*"  # sync calls, losses and barriers, when more than one device is recorded


@dataclass
class Cell:
    """One second, one device, one op."""

    count: int = 0
    bytes: int = 0
    lat_sum_ns: int = 0
    lat_max_ns: int = 0
    lat_unknown: int = 0
    inflight_max: int = 0
    hist: np.ndarray | None = None  # dense: histogram.NBINS counts
    lats: list[np.ndarray] = field(default_factory=list)  # raw latencies: a trigger's exact percentiles

    def add(self, lat: np.ndarray, nbytes: int, inflight_max: int, unknown: int) -> None:
        self.count += len(lat) + unknown
        self.bytes += nbytes
        self.lat_unknown += unknown
        self.inflight_max = max(self.inflight_max, inflight_max)
        if len(lat):
            self.lat_sum_ns += int(lat.sum())
            self.lat_max_ns = max(self.lat_max_ns, int(lat.max()))
            h = histogram.counts(lat)
            self.hist = h if self.hist is None else self.hist + h
            self.lats.append(lat)

    @property
    def bins(self) -> tuple[np.ndarray, np.ndarray]:
        """The non-empty bins and their counts."""
        if self.hist is None:
            return np.empty(0, np.int64), np.empty(0, np.int64)
        idx = np.flatnonzero(self.hist)
        return idx, self.hist[idx]

    def latencies(self) -> np.ndarray:
        return np.concatenate(self.lats) if self.lats else np.empty(0, np.int64)


@dataclass
class Second:
    t: int  # wall-clock second (Unix)
    cells: dict[tuple[str, str], Cell] = field(default_factory=dict)  # (device, op)

    def cell(self, device: str, op: str) -> Cell:
        return self.cells.setdefault((device, op), Cell())


class Seconds:
    """The seconds still open, filled interval by interval; `close(upto)` returns those now final."""

    def __init__(self, names: dict[int, str], one_device: str | None, start_wall_ns: int) -> None:
        self.names = names
        self.other = one_device or ALL_DEVICES  # where what has no device of its own is counted
        self.open: dict[int, Second] = {}
        self.final_upto = start_wall_ns // NS  # every second before this one is final (or not ours)
        self.late = 0

    def _second(self, t: int, n: int) -> Second:
        """The second `n` records completed in: their own, or if it is final already, the oldest open."""
        if t < self.final_upto:
            self.late += n
            t = min(self.open) if self.open else self.final_upto
        return self.open.setdefault(t, Second(t))

    def add_io(self, io: np.ndarray, bits: Any, wall_offset_ns: int) -> None:
        """The io records of one interval (`wall_offset_ns`: wall clock minus monotonic, ns)."""
        c = completions(io, bits)
        keep = c.op >= 0
        if not keep.all():
            c = type(c)(*(getattr(c, f)[keep] for f in c.__dataclass_fields__))
        sec = (c.done_ns + wall_offset_ns) // NS
        for (t, dev, op), rows in _groups(sec, c.dev, c.op):
            lat = c.lat_ns[rows]
            known = lat[lat >= 0]
            cell = self._second(t, len(lat)).cell(self._name(dev), OPS[op])
            cell.add(known, int(c.bytes[rows].sum()), int(c.inflight[rows].max()), len(lat) - len(known))

    def add_sync(self, sync: np.ndarray, wall_offset_ns: int) -> None:
        if not len(sync):
            return
        done = sync["exit_ns"].astype(np.int64)
        lat = done - sync["enter_ns"].astype(np.int64)
        sec = (done + wall_offset_ns) // NS
        for t in np.unique(sec).tolist():
            rows = lat[sec == t]
            self._second(t, len(rows)).cell(self.other, COMMIT).add(rows, 0, 0, 0)

    def add_counted(self, op: str, n: int, at_wall_ns: int) -> None:
        """`n` of what was only counted (lost events, unissued flushes) in the interval handed over at
        `at_wall_ns`: in the last second it closes (the rotations fall just after a second's end)."""
        if n > 0:
            cell = self._second(at_wall_ns // NS - 1, 0).cell(self.other, op)
            cell.count += n
            cell.lat_unknown += n

    def close(self, upto_wall_ns: int) -> list[Second]:
        """The seconds that ended by `upto_wall_ns`, oldest first, now final; a second without I/O
        among them too (a quiet second is a recorded zero, not a gap)."""
        upto = upto_wall_ns // NS
        out = [self.open.pop(t, None) or Second(t) for t in range(self.final_upto, upto)]
        self.final_upto = max(self.final_upto, upto)
        return out

    def close_all(self) -> list[Second]:
        """Every second still open (the recording ended), the last one cut short."""
        last = max(self.open, default=self.final_upto - 1)
        return self.close((last + 1) * NS)

    def _name(self, dev: int) -> str:
        return self.names.get(dev) or f"dev{dev >> 20}:{dev & 0xFFFFF}"


Group = tuple[tuple[int, int, int], np.ndarray]


def _groups(sec: np.ndarray, dev: np.ndarray, op: np.ndarray) -> Iterator[Group]:
    """((second, dev, op), a mask of its rows) for each combination present. An interval holds a
    second or two, a device or a few and up to four ops: a pass per combination over the rows, no
    sort (a lexsort of the interval cost ~100 ns a record)."""
    if not len(sec):
        return
    first = int(sec.min())
    devs = [int(dev[0])] if (dev == dev[0]).all() else np.unique(dev).tolist()
    for d in devs:
        of_dev = None if len(devs) == 1 else dev == d
        key = (sec - first) * len(OPS) + op
        if of_dev is not None:
            key = np.where(of_dev, key, -1)
        for k in np.flatnonzero(np.bincount(key[key >= 0] if of_dev is not None else key)).tolist():
            yield (first + k // len(OPS), d, k % len(OPS)), key == k


class Windows:
    """The last few final seconds, for a trigger's window of `n` seconds."""

    def __init__(self, n: int) -> None:
        self.n = n
        self.recent: deque[Second] = deque(maxlen=n)

    def push(self, s: Second) -> bool:
        """Add a final second; True when it ends a window (windows fall on multiples of n)."""
        if self.recent and self.recent[-1].t != s.t - 1:
            self.recent.clear()  # a gap (the recorder was down): windows start afresh
        self.recent.append(s)
        return (s.t + 1) % self.n == 0 and len(self.recent) == self.n
