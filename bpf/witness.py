"""A tracefs witness of block completions that the kernel does not hand to BPF programs.

On this lab VM (kernel 6.18.44-fc) no BPF program runs while one of the VM agent's threads (PID 1,
`process_api`'s tokio-rt-worker) is the current task, not even in a softirq that interrupts it:
every block completion processed there is invisible to iofp's program, to any other raw-tracepoint
or perf-event BPF program, and to `perf record`, while ftrace's own event recording still sees it
(bench/completion_skips.py and BENCHMARKS.md give the evidence). A private tracefs instance records
block_rq_complete for the captured devices, restricted with set_event_pid to PID 1's threads
(event-fork adds the threads they start): ftrace checks that filter before it reserves anything,
so the other ~all completions cost ~60 ns each instead of the ~430 ns of recording them (measured).
iofp fills in the latency of a request whose completion its program never saw from here.

The instance's per-CPU ring is read raw (trace_pipe_raw: 4 KiB pages of compressed event headers,
Documentation/trace/ring-buffer-design.rst) without blocking on every capture tick; the events
are kept, newest last, up to a fixed count.
"""

from __future__ import annotations

import contextlib
import os
import re
import struct
import uuid
from dataclasses import dataclass
from pathlib import Path

import numpy as np

TRACEFS = Path("/sys/kernel/tracing")
EVENT = Path("events/block/block_rq_complete")
KEEP = 1 << 16  # events kept for look-ups: minutes of what the agent's threads complete

# struct buffer_data_page: u64 time_stamp, local_t commit (its low bits: bytes of events), data
_PAGE_HDR = 16
_COMMIT_MASK = (1 << 27) - 1
# ring_buffer_event.type_len values (include/linux/ring_buffer.h)
_PADDING, _TIME_EXTEND, _TIME_STAMP = 29, 30, 31

EVENTS = np.dtype([("ts", "<i8"), ("dev", "<u4"), ("nr_sector", "<u4"), ("sector", "<u8")])


@dataclass(frozen=True)
class _Layout:
    """Where block_rq_complete keeps its fields (from the event's `format` file)."""

    event_id: int
    dev: int
    sector: int
    nr_sector: int

    @classmethod
    def read(cls, event_dir: Path) -> _Layout:
        text = (event_dir / "format").read_text()
        fields = re.finditer(r"field:[^;]*?(\w+)(?:\[\d+\])?;\s*offset:(\d+);", text)
        offsets = {m[1]: int(m[2]) for m in fields}
        event_id = re.search(r"^ID:\s*(\d+)", text, re.M)
        if event_id is None or not {"dev", "sector", "nr_sector"} <= offsets.keys():
            raise OSError(f"{event_dir}/format: unexpected layout")
        return cls(int(event_id[1]), offsets["dev"], offsets["sector"], offsets["nr_sector"])


def parse_page(page: bytes, layout: _Layout) -> list[tuple[int, int, int, int]]:
    """(ts, dev, nr_sector, sector) of every block_rq_complete event in one ring-buffer page."""
    if len(page) < _PAGE_HDR:
        return []
    ts, commit = struct.unpack_from("<QQ", page, 0)
    end = _PAGE_HDR + min(commit & _COMMIT_MASK, len(page) - _PAGE_HDR)
    out = []
    pos = _PAGE_HDR
    while pos + 4 <= end:
        (hdr,) = struct.unpack_from("<I", page, pos)
        type_len, delta = hdr & 0x1F, hdr >> 5
        if type_len == _PADDING:
            if delta == 0:
                break  # the rest of the page is empty
            ts += delta
            pos += 4 + struct.unpack_from("<I", page, pos + 4)[0]
            continue
        if type_len in (_TIME_EXTEND, _TIME_STAMP):
            ext = delta + (struct.unpack_from("<I", page, pos + 4)[0] << 27)
            ts = ts + ext if type_len == _TIME_EXTEND else (ts & ~((1 << 59) - 1)) | ext
            pos += 8
            continue
        ts += delta
        if type_len == 0:  # a long event: its length is in the next word
            size, data = struct.unpack_from("<I", page, pos + 4)[0], pos + 8
            nxt = pos + 4 + size
        else:
            data, nxt = pos + 4, pos + 4 + 4 * type_len
        if struct.unpack_from("<H", page, data)[0] == layout.event_id:
            out.append(
                (
                    ts,
                    struct.unpack_from("<I", page, data + layout.dev)[0],
                    struct.unpack_from("<I", page, data + layout.nr_sector)[0],
                    struct.unpack_from("<Q", page, data + layout.sector)[0],
                )
            )
        pos = nxt
    return out


PREFIX = "iofp-witness-"  # then the owning capture's pid


def remove_orphans(root: Path = TRACEFS) -> list[str]:
    """Remove the witness instances of captures that are gone (kill -9 runs no clean-up): an
    instance left enabled keeps recording, and costs every block completion on the machine a
    second tracepoint handler. Returns the names removed."""
    removed = []
    with contextlib.suppress(OSError):
        for inst in (root / "instances").glob(f"{PREFIX}*"):
            pid = inst.name.removeprefix(PREFIX).split("-")[0]
            if pid.isdigit() and Path(f"/proc/{pid}").exists():
                continue  # a capture still running (or, harmlessly kept, a reused pid)
            with contextlib.suppress(OSError):
                (inst / EVENT / "enable").write_text("0")
            with contextlib.suppress(OSError):
                inst.rmdir()
                removed.append(inst.name)
    return removed


def agent_threads() -> list[int]:
    """The thread ids of PID 1: the tasks whose context this VM's kernel hides from BPF."""
    with contextlib.suppress(OSError):
        return sorted(int(t.name) for t in Path("/proc/1/task").iterdir() if t.name.isdigit())
    return [1]


class CompletionWitness:
    """A private tracefs instance recording block_rq_complete of `devs` (kernel dev_t's; empty: all)
    in the context of `pids` (None: every task)."""

    def __init__(self, devs: list[int], pids: list[int] | None, root: Path = TRACEFS) -> None:
        remove_orphans(root)
        self.inst = root / "instances" / f"{PREFIX}{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.inst.mkdir()
        self._fds: list[int] = []
        self._events = np.empty(0, EVENTS)
        self.recorded = 0  # events read so far (the kept ones are the last of them)
        self.lost_pages = 0  # pages the kernel overwrote before we read them
        try:
            self.layout = _Layout.read(self.inst / EVENT)
            (self.inst / "buffer_size_kb").write_text("1024")
            (self.inst / "trace_clock").write_text("mono")  # = bpf_ktime_get_ns()
            (self.inst / "options" / "overwrite").write_text("0")
            if pids is not None:
                (self.inst / "options" / "event-fork").write_text("1")
                (self.inst / "set_event_pid").write_text(" ".join(map(str, pids)))
            if devs:
                (self.inst / EVENT / "filter").write_text(" || ".join(f"dev == {d}" for d in devs))
            for cpu_dir in sorted((self.inst / "per_cpu").iterdir()):
                self._fds.append(os.open(cpu_dir / "trace_pipe_raw", os.O_RDONLY | os.O_NONBLOCK))
            (self.inst / EVENT / "enable").write_text("1")
        except BaseException:
            self.close()
            raise

    def poll(self) -> None:
        """Read whatever the instance has recorded since the last poll."""
        new = []
        for fd in self._fds:
            while True:
                try:
                    page = os.read(fd, 4096)
                except BlockingIOError:
                    break
                if not page:
                    break
                if struct.unpack_from("<Q", page, 8)[0] & (1 << 31):  # RB_MISSED_EVENTS
                    self.lost_pages += 1
                new.extend(parse_page(page, self.layout))
        if new:
            self._events = np.concatenate([self._events, np.array(new, EVENTS)])[-KEEP:]
            self.recorded += len(new)

    def since(self, recorded: int) -> np.ndarray:
        """The events read after the first `recorded` (by count: the CPUs' rings are read one after
        the other, so a later read may hold an earlier time)."""
        return self._events[len(self._events) - min(self.recorded - recorded, len(self._events)) :]

    def completion(self, dev: int, end_sector: int, after_ns: int, before_ns: int) -> int | None:
        """The time (monotonic ns) of the first completion on `dev` ending at `end_sector` (512-byte
        sectors) in (after_ns, before_ns], or None."""
        e = self._events
        hit = np.flatnonzero(
            (e["dev"] == dev)
            & (e["sector"] + e["nr_sector"] == end_sector)
            & (e["ts"] > after_ns)
            & (e["ts"] <= before_ns)
        )
        return int(e["ts"][hit[0]]) if len(hit) else None

    def close(self) -> None:
        for fd in self._fds:
            os.close(fd)
        self._fds = []
        with contextlib.suppress(OSError):
            (self.inst / EVENT / "enable").write_text("0")
        with contextlib.suppress(OSError):
            self.inst.rmdir()


UNSEEN = np.uint64(1 << 63)  # IOFP_UNSEEN (bpf/iofp_record.h)


def fill_unseen(recs: np.ndarray, witness: CompletionWitness | None) -> list[tuple[int, int, int]]:
    """Give every record marked unseen (IO_DTYPE) the completion time the witness recorded for it,
    in place. Returns (dev, completed, found out) of each one filled: until it was found out, the
    kernel counted it in flight."""
    rows = np.flatnonzero(recs["complete_ns"] & UNSEEN)
    if witness is None or not len(rows):
        return []
    filled = []
    for i in rows:
        rec = recs[i]
        found = int(rec["complete_ns"] & ~UNSEEN)
        start = 0 if rec["sector"] == np.uint64(0xFFFFFFFFFFFFFFFF) else int(rec["sector"])  # a flush
        end = start + int(rec["bytes"]) // 512
        done = witness.completion(int(rec["dev"]), end, int(rec["issue_ns"]), found)
        if done is not None:
            recs["complete_ns"][i] = done
            filled.append((int(rec["dev"]), done, found))
    return filled


NEVER = (1 << 63) - 1  # found out: not yet


def undetected(events: np.ndarray, tracked: np.ndarray) -> list[tuple[int, int, int]]:
    """(dev, completed, NEVER) for each witness event whose request the program still tracks as
    issued (iofp_req rows): a completion it missed and has not found out about yet."""
    if not len(events) or not len(tracked):
        return []
    start = np.where(tracked["sector"] == np.uint64(0xFFFFFFFFFFFFFFFF), 0, tracked["sector"])
    ends = start + tracked["bytes"] // 512
    out = []
    for ev in events:
        hit = (tracked["dev"] == ev["dev"]) & (ends == ev["sector"] + ev["nr_sector"])
        if np.any(hit & (tracked["issue_ns"] < np.uint64(ev["ts"]))):
            out.append((int(ev["dev"]), int(ev["ts"]), NEVER))
    return out
