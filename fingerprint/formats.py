"""Line parsers for other tools' trace formats, one class per format.

Each parser turns numbered text lines into rows of the trace contract. Parsers are streaming: they
keep only the state the format itself needs (blkparse: requests issued but not yet completed), so
memory does not grow with the file. A line that cannot be a record raises `LineError`; the import
driver adds the file name and line number. Columns a format does not have are left out of the rows
(and so are null in the trace), never invented.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Iterator
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import Any, ClassVar

# Windows FILETIME (100 ns ticks since 1601-01-01) of the Unix epoch.
FILETIME_UNIX_EPOCH = 116_444_736_000_000_000
TIME_UNITS_NS = {"ns": 1, "us": 1_000, "ms": 1_000_000, "s": 1_000_000_000}
# Alibaba's timestamps are Unix microseconds; below this (2001-09-09) we treat them as relative.
UNIX_US_PLAUSIBLE = 1_000_000_000_000_000
# The trace contract's column types bound what a record may hold: ts_ns, lat_ns and offset are
# int64, size is int32 bytes, pid int32, error int16. A value beyond them is a bad record, and is
# refused on its own line rather than by Arrow when a whole chunk is converted.
INT64_MAX = (1 << 63) - 1
SIZE_MAX = (1 << 31) - 1
INT32_MAX = (1 << 31) - 1
INT16_MIN, INT16_MAX = -(1 << 15), (1 << 15) - 1
# the same bounds in 512-byte sectors, for the formats that count in them
SECTOR_MAX, NSECT_MAX = INT64_MAX // 512, SIZE_MAX // 512


class LineError(ValueError):
    """This line is not a record of the format; the message says why."""


class BoundError(LineError):
    """The input went past what an import holds in memory at this line (the line itself may be
    fine): the message says why and what to do."""


def bounded(value: int, what: str, hi: int, unit: str) -> int:
    """`value` when 0 <= value <= hi; else a LineError naming the field. Offsets, sizes, times and
    latencies are never negative, and must fit the contract's column."""
    if value < 0:
        raise LineError(f"{what} {value} is negative")
    if value > hi:
        raise LineError(f"{what} {value} is too large (at most {hi:,} {unit})")
    return value


@dataclass
class ParseState:
    """What a parser learned beyond the rows: wall clock, devices, counters, sync rows."""

    capture_start_ns: int | None = None
    devices: set[str] = field(default_factory=set)
    counters: dict[str, int] = field(default_factory=dict)
    sync_rows: list[tuple] = field(default_factory=list)
    notes: dict[str, Any] = field(default_factory=dict)

    def count(self, key: str, n: int = 1) -> None:
        self.counters[key] = self.counters.get(key, 0) + n


def _ns_from_decimal_seconds(text: str) -> int:
    """'12.000345678' -> 12000345678 exactly (no float rounding)."""
    sec, _, frac = text.partition(".")
    if not sec.isdecimal() or (frac and not frac.isdecimal()):
        raise LineError(f"bad time {text!r}")
    ns = int(sec) * 1_000_000_000 + int((frac + "000000000")[:9])
    if ns > INT64_MAX:
        raise LineError(f"time {text} s is too large (at most {INT64_MAX // 10**9:,} s)")
    return ns


class Format:
    """One trace format: `sniff` recognises it, `parse` yields rows of `columns`."""

    name: ClassVar[str]
    record: ClassVar[str]  # what one record looks like, for the error of a file with none
    columns: ClassVar[tuple[str, ...]]
    sync_columns: ClassVar[tuple[str, ...]] = ()

    def __init__(self, path: Path, state: ParseState, **options: Any) -> None:
        self.path = path
        self.state = state

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        raise NotImplementedError

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        """Yield row tuples; raise LineError(lineno-less message) for a malformed record."""
        raise NotImplementedError

    def finish(self) -> Iterator[tuple]:
        """Rows still held when the input ends (blkparse's never-completed requests)."""
        return iter(())


# --------------------------------------------------------------------------------------------


_BLKREPLAY = re.compile(r"^\s*(\d+(?:\.\d+)?)\s*;\s*(\d+)\s*;\s*(\d+)\s*;\s*(RA|R|W)\s*;")
# A line that starts like a record (a number, then `;`): in the header it is a damaged record, not prose.
_BLKREPLAY_LIKE = re.compile(r"^\s*[-+]?[\d.]+\s*;")


class Blkreplay(Format):
    """blkreplay `.load`: `start ; sector ; length ; op ; replay_delay ; replay_duration`.

    The free-text header before the first record is skipped (it is not `#`-prefixed, and real loads
    repeat the column-name line `start ; sector; length ; op ; ...` inside it, so nothing but the
    first record ends it); after it every non-blank line must be a record. A header line that starts
    like a record (a number, then `;`) is a damaged record, not prose, and is refused too. There is
    no device column, so the device is named after the file.
    replay_delay and replay_duration describe an earlier *replay*, not the recorded I/O, so they are
    not imported.
    """

    name = "blkreplay"
    record = "`start ; sector ; length ; op ; ...`"
    columns = ("ts_ns", "device", "offset", "size", "op", "readahead")

    def __init__(self, path: Path, state: ParseState, **options: Any) -> None:
        super().__init__(path, state)
        self.device = path.name.removesuffix(".gz").removesuffix(".load")
        state.devices.add(self.device)

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        return any(_BLKREPLAY.match(x) for x in lines) or any(
            x.replace(" ", "").startswith("start;sector;") for x in lines
        )

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        in_header = True
        dev = self.device
        match = _BLKREPLAY.match
        for _, line in lines:
            m = match(line)
            if m is None:
                if not line.strip() or (in_header and not _BLKREPLAY_LIKE.match(line)):
                    continue
                raise LineError("not a blkreplay record `start ; sector ; length ; op ; ...`")
            in_header = False
            start, sector, length, op = m.groups()
            yield (
                _ns_from_decimal_seconds(start),
                dev,
                bounded(int(sector), "sector", SECTOR_MAX, "sectors") * 512,
                bounded(int(length), "length", NSECT_MAX, "sectors") * 512,
                "write" if op == "W" else "read",
                op == "RA",
            )


class Disksim(Format):
    """DiskSim ASCII `arrival device lba size type` (sectors; type 1 = read, 0 = write).

    MQSim writes `arrival` in nanoseconds, classic DiskSim in milliseconds: `--time-unit`.
    """

    name = "disksim"
    record = "`arrival device lba size type`"
    columns = ("ts_ns", "device", "offset", "size", "op")

    def __init__(self, path: Path, state: ParseState, *, time_unit: str = "ns", **options: Any) -> None:
        super().__init__(path, state)
        self.scale = TIME_UNITS_NS[time_unit]
        self.unit = time_unit

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        def ok(x: str) -> bool:
            p = x.split()
            return len(p) == 5 and all(_is_number(v) for v in p) and p[4] in ("0", "1")

        body = [x for x in lines if x.strip()]
        return bool(body) and all(ok(x) for x in body)

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        scale = self.scale
        devices = self.state.devices
        for _, line in lines:
            p = line.split()
            if not p:
                continue
            if len(p) != 5:
                raise LineError(f"expected 5 fields `arrival device lba size type`, got {len(p)}")
            try:
                arrival = float(p[0]) if "." in p[0] or "e" in p[0].lower() else int(p[0])
                dev, lba, size, typ = p[1], int(p[2]), int(p[3]), p[4]
            except ValueError:
                raise LineError("fields must be numbers `arrival device lba size type`") from None
            if typ not in ("0", "1"):
                raise LineError(f"type must be 1 (read) or 0 (write), got {typ!r}")
            ns = arrival * scale
            if not (math.isfinite(ns) and 0 <= ns <= INT64_MAX):  # 1e30, -5, nan, inf
                raise LineError(f"arrival {p[0]} is out of range (0 to {INT64_MAX // scale:,} {self.unit})")
            ts = round(ns)
            offset = bounded(lba, "lba", SECTOR_MAX, "sectors") * 512
            size = bounded(size, "size", NSECT_MAX, "sectors") * 512
            if dev not in devices:
                devices.add(dev)
            yield (ts, dev, offset, size, "read" if typ == "1" else "write")


class Msr(Format):
    """MSR Cambridge / SNIA IOTTA CSV: `Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`.

    Timestamp is a Windows FILETIME (100 ns ticks); ts_ns counts from the first record, whose FILETIME
    gives the wall clock. ResponseTime is the latency, also in 100 ns ticks. Device = `host_disk`.
    """

    name = "msr"
    record = "`Timestamp,Hostname,DiskNumber,Type,Offset,Size,ResponseTime`"
    columns = ("ts_ns", "lat_ns", "device", "offset", "size", "op")

    def __init__(self, path: Path, state: ParseState, **options: Any) -> None:
        super().__init__(path, state)

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        for x in lines:
            p = x.strip().split(",")
            if len(p) == 7 and p[0].isdecimal() and p[3].lower() in ("read", "write"):
                return True
        return False

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        st = self.state
        origin = None if st.capture_start_ns is None else st.notes["filetime_origin"]
        devices: dict[tuple[str, str], str] = {}
        for lineno, line in lines:
            line = line.strip()
            if not line or (lineno == 1 and line.lower().startswith("timestamp")):
                continue
            p = line.split(",")
            if len(p) != 7:
                raise LineError(f"expected 7 comma-separated fields, got {len(p)}")
            try:
                ft, off, size, rt = int(p[0]), int(p[4]), int(p[5]), int(p[6])
            except ValueError:
                raise LineError("Timestamp, Offset, Size and ResponseTime must be integers") from None
            typ = p[3].lower()
            if typ not in ("read", "write"):
                raise LineError(f"Type must be Read or Write, got {p[3]!r}")
            bounded(ft, "Timestamp", INT64_MAX, "100 ns ticks")
            bounded(off, "Offset", INT64_MAX, "bytes")
            bounded(size, "Size", SIZE_MAX, "bytes")
            bounded(rt, "ResponseTime", INT64_MAX // 100, "100 ns ticks")
            if origin is None:
                origin = ft
                st.notes["filetime_origin"] = ft
                st.capture_start_ns = (ft - FILETIME_UNIX_EPOCH) * 100
            if ft < origin:  # a truncated Timestamp lands decades back: ts_ns is never negative
                raise LineError(
                    f"Timestamp {ft} is before the first record's ({origin}); times count from it"
                )
            if ft - origin > INT64_MAX // 100:
                raise LineError(f"Timestamp {ft} is too far from the first record's ({origin})")
            key = (p[1], p[2])
            dev = devices.get(key)
            if dev is None:
                dev = devices[key] = f"{p[1]}_{p[2]}"
                st.devices.add(dev)
            yield ((ft - origin) * 100, rt * 100, dev, off, size, typ)


class Alibaba(Format):
    """Alibaba block traces: `device_id,opcode,offset,length,timestamp` (bytes; timestamp in µs).

    The 2020 release's timestamps are Unix microseconds: ts_ns counts from the first record, whose
    timestamp gives the wall clock (unless it is too small to be a Unix time, then there is none).
    """

    name = "alibaba"
    record = "`device_id,opcode,offset,length,timestamp`"
    columns = ("ts_ns", "device", "offset", "size", "op")

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        for x in lines:
            p = x.strip().split(",")
            if len(p) == 5 and p[1] in ("R", "W") and all(v.isdecimal() for v in (p[2], p[3], p[4])):
                return True
        return False

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        st = self.state
        origin = st.notes.get("us_origin")
        devices = st.devices
        for _, line in lines:
            line = line.strip()
            if not line:
                continue
            p = line.split(",")
            if len(p) != 5:
                raise LineError(f"expected 5 comma-separated fields, got {len(p)}")
            if p[1] not in ("R", "W"):
                raise LineError(f"opcode must be R or W, got {p[1]!r}")
            try:
                off, size, ts = int(p[2]), int(p[3]), int(p[4])
            except ValueError:
                raise LineError("offset, length and timestamp must be integers") from None
            bounded(off, "offset", INT64_MAX, "bytes")
            bounded(size, "length", SIZE_MAX, "bytes")
            bounded(ts, "timestamp", INT64_MAX // 1000, "µs")
            if origin is None:
                origin = st.notes["us_origin"] = ts
                if ts >= UNIX_US_PLAUSIBLE:
                    st.capture_start_ns = ts * 1000
            elif ts < origin:  # a truncated timestamp lands decades back: ts_ns is never negative
                raise LineError(
                    f"timestamp {ts} is before the first record's ({origin}); times count from it"
                )
            dev = p[0]
            if dev not in devices:
                devices.add(dev)
            yield ((ts - origin) * 1000, dev, off, size, "read" if p[1] == "R" else "write")


class FioIolog(Format):
    """fio iologs, version 2 and 3.

    v3 lines carry a timestamp in µs since the run started. v2 lines carry no time: fio paces them
    only with `wait` actions, so ts_ns is the sum of the waits before the I/O (all 0 in a log with
    no waits, which fio replays back to back): rates from such a log mean nothing, and the trace's
    metadata says so (`extra.timing`). `sync`/`datasync` are syscalls, so they go to the sync table.
    """

    name = "fio-iolog"
    record = "`[usec] file action [offset length]`"
    columns = ("ts_ns", "device", "offset", "size", "op")
    sync_columns = ("ts_ns", "call")
    _OPS: ClassVar[dict[str, str]] = {"read": "read", "write": "write", "trim": "discard"}
    _SYNCS: ClassVar[dict[str, str]] = {
        "sync": "fsync",
        "datasync": "fdatasync",
        "sync_file_range": "sync_file_range",
    }

    def __init__(self, path: Path, state: ParseState, **options: Any) -> None:
        super().__init__(path, state)
        self.version: int | None = None
        self.clock_ns = 0

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        return bool(lines) and lines[0].strip() in ("fio version 2 iolog", "fio version 3 iolog")

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        st = self.state
        for _lineno, line in lines:
            text = line.strip()
            if not text:
                continue
            if self.version is None:
                if text not in ("fio version 2 iolog", "fio version 3 iolog"):
                    raise LineError("first line must be `fio version 2 iolog` or `fio version 3 iolog`")
                self.version = int(text.split()[2])
                st.notes.setdefault("timing", {})[str(self.path)] = (
                    "v3: µs timestamps" if self.version == 3 else "v2: cumulative `wait` actions only"
                )
                continue
            p = text.split()
            if self.version == 3:
                if len(p) < 3 or not p[0].isdecimal():
                    raise LineError("v3 line must be `usec file action [offset length]`")
                ts_ns = bounded(int(p[0]), "time", INT64_MAX // 1000, "µs") * 1000
                p = p[1:]
            else:
                ts_ns = self.clock_ns
            if len(p) < 2:
                raise LineError("expected `file action [offset length]`")
            fname, act = self._device(p[0]), p[1]
            if act in ("add", "open", "close"):
                if act == "add":
                    st.devices.add(fname)
                continue
            if act == "wait":
                if self.version == 3:
                    raise LineError("`wait` is not allowed in a version 3 iolog")
                if len(p) < 3 or not p[2].isdecimal():
                    raise LineError("`wait` needs a delay in microseconds")
                self.clock_ns += int(p[2]) * 1000
                if self.clock_ns > INT64_MAX:
                    raise LineError(f"the waits add up to {self.clock_ns // 1000:,} µs, too long a trace")
                continue
            if act in self._SYNCS:
                st.sync_rows.append((ts_ns, self._SYNCS[act]))
                continue
            op = self._OPS.get(act)
            if op is None:
                raise LineError(f"unknown action {act!r}")
            if len(p) != 4 or not p[2].isdecimal() or not p[3].isdecimal():
                raise LineError(f"`{act}` needs `offset length` as integers")
            st.devices.add(fname)
            offset = bounded(int(p[2]), "offset", INT64_MAX, "bytes")
            yield (ts_ns, fname, offset, bounded(int(p[3]), "length", SIZE_MAX, "bytes"), op)

    @staticmethod
    def _device(fname: str) -> str:
        """The device a log's file name stands for: its last component (/dev/sdb is sdb). A name is
        never a path, and one that climbs out of its directory is no device."""
        if ".." in fname.split("/"):
            raise LineError(f"file {fname[:60]!r} climbs out of its directory ('..'); an iolog names devices")
        name = fname.rstrip("/").rsplit("/", 1)[-1]
        if not name:
            raise LineError(f"file {fname[:60]!r} names no device")
        return name


# blkparse default output: `maj,min cpu seq time pid action rwbs rest`
_BLKPARSE = re.compile(r"^\s*(\d+),(\d+)\s+\d+\s+\d+\s+(\d+\.\d+)\s+(\d+)\s+([A-Z]{1,2})\s+(\S+)\s*(.*)$")
_BLKPARSE_SUMMARY = re.compile(r"^(CPU\d+|Total) \(")


def parse_rwbs(rwbs: str) -> tuple[str | None, bool, bool, bool, bool, bool]:
    """Kernel RWBS flags -> (op, sync, fua, preflush, meta, readahead); op None for other ops.

    blk_fill_rwbs(): an optional leading F (REQ_PREFLUSH), the op (W, R, D discard, DE secure
    erase, F flush, N anything else; "FN" is an empty flush), then F (FUA), A (readahead),
    S (sync), M (meta).
    """
    i = 1 if rwbs.startswith("F") else 0
    preflush = i == 1
    c = rwbs[i : i + 1]
    ops = {"W": "write", "R": "read", "D": "discard", "F": "flush", "": "flush", "N": None}
    if c not in ops:
        raise LineError(f"bad RWBS flags {rwbs!r}")
    op = ops[c]
    if c == "N" and preflush:  # older blkparse prints an empty flush as "FN"
        op = "flush"
    rest = rwbs[i + 1 :]
    if op == "discard" and rest.startswith("E"):
        rest = rest[1:]
    if set(rest) - set("FASM"):
        raise LineError(f"bad RWBS flags {rwbs!r}")
    return op, "S" in rest, "F" in rest, preflush, "M" in rest, "A" in rest


def _process_tail(line: str) -> str | None:
    """The `[process]` (or, on a C event, `[error]`) that ends a blkparse line, if any."""
    if (b := line.rfind("[")) < 0:
        return None
    e = line.rfind("]")
    if e < b:
        raise LineError("unclosed `[process]`")
    return line[b + 1 : e]


def _sector_size(p: list[str]) -> tuple[int, int]:
    """`sector + size` in sectors from a split blkparse line; a flush has neither (0, 0)."""
    if len(p) >= 10 and p[8] == "+":
        if not (p[7].isdecimal() and p[9].isdecimal()):
            raise LineError(f"cannot read `sector + size` from {' '.join(p[7:10])!r}")
        sector, nsect = int(p[7]), int(p[9])
    elif len(p) >= 8 and p[7].isdecimal():
        sector, nsect = int(p[7]), 0
    elif len(p) == 7 or p[7].startswith("["):
        return 0, 0
    else:
        raise LineError(f"cannot read `sector + size [process]` from {' '.join(p[7:])!r}")
    if sector > SECTOR_MAX or nsect > NSECT_MAX:
        bounded(sector, "sector", SECTOR_MAX, "sectors")
        bounded(nsect, "size", NSECT_MAX, "sectors")
    return sector, nsect


class Blkparse(Format):
    """blkparse's default text output.

    D (issue) and C (complete) are matched by device and sector; Q (queue) gives queue_ns and the
    submitting process (pid/comm; the D line's is often a kworker). in-flight at issue is counted
    from the D/C stream itself (requests already in flight when the trace began are not seen).
    Requests issued but never completed are kept with a null latency and counted.
    """

    name = "blkparse"
    record = "`maj,min cpu seq time pid action rwbs ...`"
    columns = (
        "ts_ns",
        "queue_ns",
        "lat_ns",
        "device",
        "offset",
        "size",
        "op",
        "sync",
        "fua",
        "preflush",
        "meta",
        "readahead",
        "rwbs",
        "pid",
        "comm",
        "inflight",
        "error",
    )
    # Memory is bounded by the input's shape, not its length: ~600 bytes per held event. Queued bios
    # never issued under their own sector (merged, remapped) would pile up: past this many the oldest
    # is dropped and counted. Requests issued and not yet completed are what a device has in flight
    # (thousands at most); past this many the trace is missing its completions, and is refused.
    MAX_PENDING = 1 << 18
    MAX_ISSUED = 1 << 18

    def __init__(self, path: Path, state: ParseState, **options: Any) -> None:
        super().__init__(path, state)
        self.queued: dict[tuple[str, int], tuple[int, int, str | None]] = {}
        self.issued: dict[tuple[str, int], list] = {}
        self.inflight: dict[str, int] = {}
        self.in_summary = False

    @staticmethod
    def sniff(lines: list[str]) -> bool:
        return any(_BLKPARSE.match(x) for x in lines)

    def parse(self, lines: Iterable[tuple[int, str]]) -> Iterator[tuple]:
        # str.split() rather than one big regex: this loop is the import's hot path.
        queued, issued = self.queued, self.issued
        for _, line in lines:
            if self.in_summary:
                continue
            p = line.split()
            if len(p) < 7 or not _is_devno(p[0]):
                if not p:
                    continue
                if _BLKPARSE_SUMMARY.match(line):
                    self.in_summary = True  # the per-CPU/total statistics that end the output
                    continue
                raise LineError("not a blkparse event `maj,min cpu seq time pid action rwbs ...`")
            action = p[5]
            if action not in ("Q", "D", "C", "M", "F"):
                continue
            if not p[4].isdecimal() or (len(p[4]) > 9 and int(p[4]) > INT32_MAX):
                raise LineError(f"bad pid {p[4]!r}")
            ts = _ns_from_decimal_seconds(p[3])
            tail = _process_tail(line)
            sector, nsect = _sector_size(p)
            key = (p[0], sector)
            if action == "Q":
                if len(queued) >= self.MAX_PENDING:
                    queued.pop(next(iter(queued)))
                    self.state.count("dropped_queue_events")
                queued[key] = (ts, int(p[4]), tail)
            elif action == "D":
                self._issue(key, p, ts, tail, nsect)
            elif action == "C":
                d = issued.pop(key, None)
                if d is None:
                    self.state.count("unmatched_completions")
                    continue
                yield self._complete(d, p, ts, tail)
            else:  # M, F: a bio merged into another request never gets its own D
                queued.pop(key, None)

    def _issue(self, key: tuple[str, int], p: list[str], ts: int, tail: str | None, nsect: int) -> None:
        """A D event: the request as issued, held until its completion."""
        st, issued, dev = self.state, self.issued, key[0]
        op, sync, fua, preflush, meta, ra = _rwbs_cached(p[6])
        q = self.queued.pop(key, None)
        if op is None:  # zone management and driver-private requests: not workload I/O
            st.count("other_ops_skipped")
            return
        if key in issued:  # re-issued (requeue) or a duplicate: keep the newest issue
            issued.pop(key)
            self.inflight[dev] -= 1
            st.count("reissued")
        if len(issued) >= self.MAX_ISSUED:
            raise BoundError(
                f"{len(issued):,} requests issued and not completed, the most an import holds; "
                "does the trace lack its completions? keep them, e.g. blkparse -a issue -a complete"
            )
        n = self.inflight.get(dev, 0) + 1
        self.inflight[dev] = n
        if dev not in st.devices:
            st.devices.add(dev)
        qts, qpid, qcomm = q if q is not None else (None, int(p[4]), tail)
        issued[key] = (ts, qts, dev, key[1] * 512, nsect * 512, op, sync, fua, preflush, meta, ra,
                       p[6], qpid, qcomm, n)  # fmt: skip

    def _complete(self, d: tuple, p: list[str], ts: int, tail: str | None) -> tuple:
        """A C event of an issued request `d`: its row."""
        self.inflight[d[2]] -= 1
        if ts < d[0]:
            raise LineError(f"completion at {p[3]} s is before its issue at {d[0] / 1e9:.9f} s")
        err = int(tail) if tail is not None and tail.lstrip("-").isdecimal() else None
        if err is not None and not INT16_MIN <= err <= INT16_MAX:
            raise LineError(f"completion status {err} is out of range")
        return (d[0], d[1], ts - d[0], *d[2:], err)

    def finish(self) -> Iterator[tuple]:
        for d in self.issued.values():
            self.state.count("never_completed")
            yield (d[0], d[1], None, *d[2:], None)
        self.issued.clear()


@lru_cache(maxsize=256)
def _rwbs_cached(rwbs: str) -> tuple[str | None, bool, bool, bool, bool, bool]:
    return parse_rwbs(rwbs)


def _is_devno(s: str) -> bool:
    a, comma, b = s.partition(",")
    return bool(comma) and a.isdecimal() and b.isdecimal()


def _is_number(s: str) -> bool:
    try:
        float(s)
    except ValueError:
        return False
    return True


FORMATS: dict[str, type[Format]] = {f.name: f for f in (Blkparse, Blkreplay, Msr, Disksim, FioIolog, Alibaba)}
# Most specific first: a disksim line is also five numbers, an alibaba line also comma-separated.
DETECT_ORDER = (FioIolog, Blkparse, Blkreplay, Msr, Alibaba, Disksim)
