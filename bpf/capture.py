"""`capture()`: record every block request (and fsync-family syscall) into a trace directory.

The loop, every 100 ms: ask each CPU to send its batch if it is older than 100 ms (so an idle
device's half-full batch is not held back), then drain the ring buffer (the kernel sends whole
batches, without wakeups). Every `rotate_s` (or sooner, past `buffer_bytes`, which bounds memory
whatever the device's rate) what arrived goes to a writer thread that converts it with numpy/pyarrow
and writes one complete Parquet file per table. Each file's footer carries the loss counters up to
that file, so a trace cut short by kill -9 is still valid and honest; trace.json is written at the
end. Rows are sorted by issue time within a file; a request lands in the file of the interval in
which it completed, so consecutive files can overlap by one request latency.
"""

from __future__ import annotations

import collections
import contextlib
import ctypes
import gc
import math
import os
import queue
import subprocess
import sys
import threading
import time
from collections.abc import Callable
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any, Protocol

import numpy as np
import pyarrow as pa

from bpf.btf import kernel_btf
from bpf.devices import device_names, disk_names, resolve_devices, stacked_devices
from bpf.doctor import check_syscall_tracepoints
from bpf.gil_guard import BEAT
from bpf.loader import KernelOptions
from bpf.record import InflightFixes, ReqBits
from bpf.spool import CAPTURE, DAMAGED, Interval, Spool, check_segment, segments
from iofp import terminal
from iofp.contract import (
    CALLS_TABLE,
    IO_TABLE,
    PARQUET_DEFAULTS,
    SPOOL,
    SYNC_TABLE,
    OnFile,
    TraceMeta,
    TraceWriter,
    check_output_dir,
    device_facts,
    footer_meta,
    inside,
    iofp_alive,
    read_meta,
)
from iofp.errors import BadInput, Interrupted, IofpError, OutputFailed, warn
from iofp.host_evidence import Sampler
from iofp.output import shell_command
from iofp.signals import StopRequest, stop_on_signals

FLUSH_TICK_S = 0.1
SPOOL_SEGMENT = "spool_segment"  # footer metadata: the spooled segment a file was encoded from
MAX_PENDING_BYTES = 64 << 20  # default: write a file early rather than hold more than this in memory
MIN_BUFFER_BYTES = 1 << 20
# default: raw records held on disk until the CPU is free to encode them (bpf/spool.py): ~30 M
# requests, minutes of a device's full rate; never more than half the output's free space
SPOOL_BYTES = 2 << 30
# whose block completions the tracefs witness records, for those the kernel runs no BPF program for
# (bpf/witness.py): the VM agent's threads (PID 1), every task, or none
WITNESS_MODES = ("agent", "all", "off")
MEMORY_INTERVALS = 4  # intervals queued in memory for the writer (see _Writer.put)
# Parquet's default dictionary-encodes every column: for timestamps and offsets that is a hash
# insert per value before it falls back to plain, the writer's largest cost at full rate. Only the
# columns with few distinct values get a dictionary; the sorted timestamps are delta-encoded (few
# bytes left for zstd to work on), and zstd runs at its cheapest level. Min/max statistics are kept
# only where a reader prunes row groups with them (time ranges, a device): on the other columns
# they were ~35 of the writer's ~250 ns per row (the string columns' min/max compares the most).
PARQUET_OPTIONS = {
    IO_TABLE: {
        "use_dictionary": ["device", "op", "rwbs", "comm", "pid", "size", "inflight", "error"],
        "column_encoding": {"ts_ns": "DELTA_BINARY_PACKED", "queue_ns": "DELTA_BINARY_PACKED"},
        "compression_level": 1,
        "write_statistics": ["ts_ns", "device"],
    },
    SYNC_TABLE: {
        "use_dictionary": ["call", "pid", "tid", "comm", "fd", "ret"],
        "compression_level": 1,
        "write_statistics": ["ts_ns"],
    },
    CALLS_TABLE: {
        "use_dictionary": ["call", "op", "device", "pid", "tid", "comm", "fd", "ret"],
        "column_encoding": {"ts_ns": "DELTA_BINARY_PACKED"},
        "compression_level": 1,
        "write_statistics": ["ts_ns"],
    },
}


class IntervalSink(Protocol):
    """Where a capture's intervals go instead of a trace (`CaptureOptions.sink`; `iofp record`'s ring).

    `start` is called once the probes are attached, with what encoding the records needs besides
    them (as bpf/spool.py's capture.json holds it: the capture's monotonic start, the kernel's flag
    bits, device names, the trace metadata with `capture_start_ns`, its wall clock). `put` is called
    in the capture's polling thread at the end of every interval (rotations fall on wall-clock
    multiples of `rotate_s`) and once more, `last`, when it ends: the records (bpf/spool.py's
    Interval; the arrays are reused once `put` returns, so keep copies) and `upto_ns`, a monotonic
    time before which every completed request has been handed over. It must return quickly: the
    kernel's ring buffer fills while it runs. An exception it raises ends the capture."""

    def start(self, t0_ns: int, bits: ReqBits, names: dict[int, str], meta: TraceMeta) -> None: ...

    def put(self, item: Interval, upto_ns: int, *, last: bool = False) -> None: ...


@dataclass
class CaptureOptions:
    output: Path
    devices: list[str] = field(default_factory=list)  # names like "loop3"; empty = all
    duration_s: float | None = None
    labels: dict[str, str] = field(default_factory=dict)
    comm: str | None = None
    pid: int | None = None
    rotate_s: float = 5.0
    force: bool = False
    syscalls: bool = True
    data_calls: bool = True  # with syscalls: the application's O_DIRECT and libaio calls (the calls table)
    dsync_writes: bool = True  # with syscalls: writes on O_DSYNC files as commits (the write(2) probes)
    buffer_bytes: int = MAX_PENDING_BYTES  # records held before a file is written early
    spool_bytes: int = SPOOL_BYTES  # raw records held on disk while the writer is busy; 0: none
    witness: str = "agent"  # whose completions the tracefs witness records (bpf/witness.py)
    on_file: OnFile | None = None  # told of each complete file (a shipper to an object store)
    sink: IntervalSink | None = None  # the intervals go here, and no trace is written to `output`


@dataclass
class CaptureSummary:
    output: Path
    io_events: int
    sync_events: int
    lost_events: int
    unmatched: int
    duration_s: float
    bytes: int
    files: int
    loss: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    call_events: int = 0  # the application's data calls (the calls table)

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["output"] = str(self.output)
        return d


ProgressFn = Callable[[dict[str, float]], None]


def _keep_freed_memory() -> None:
    """Every file converts a few MB-sized numpy columns that are freed once it is written. glibc
    hands blocks that big straight back to the kernel (mmap threshold, heap trim), so the next file
    page-faults and zeroes them all again: measured as ~30% of the capture's CPU at full rate. Keep
    them in the heap instead (process-wide; the heap stays at the peak of one file's conversion).
    One arena: the writer thread's own arena would be an mmap'd heap that glibc shrinks anyway; and
    Arrow allocates from glibc too, not from its bundled mimalloc, which returns freed pages to the
    kernel (profiled: after the mallopt alone, 22% of the capture's CPU was still zeroing pages)."""
    with contextlib.suppress(OSError, AttributeError):
        libc = ctypes.CDLL(None)
        libc.mallopt(_M_ARENA_MAX, 1)
        libc.mallopt(_M_MMAP_THRESHOLD, 32 << 20)  # glibc's maximum (HEAP_MAX_SIZE / 2)
        libc.mallopt(_M_TRIM_THRESHOLD, 1 << 30)
    pa.set_memory_pool(pa.system_memory_pool())


_M_TRIM_THRESHOLD, _M_MMAP_THRESHOLD, _M_ARENA_MAX = -1, -3, -8  # <malloc.h>


def _release_startup_memory() -> None:
    """Hand back what the compile (bcc's clang) and the BTF parse freed: with the trim threshold
    above, glibc would keep it for the whole capture (measured: 575 MiB resident when attached).
    Called before the warm-up, whose memory is the one worth keeping."""
    gc.collect()
    with contextlib.suppress(OSError, AttributeError):
        ctypes.CDLL(None).malloc_trim(0)


def _warm_up(bits: ReqBits, nbytes: int) -> None:
    """Convert and encode one file's worth of empty records before the probes attach, so that the
    memory a file's conversion needs is faulted in now (and kept: see _keep_freed_memory) rather
    than while the workload runs: zeroing fresh pages was ~16% of the capture's CPU in a 10 s run."""
    import pyarrow.parquet as pq

    from bpf.record import IO_DTYPE, io_table

    recs = np.zeros(nbytes // IO_DTYPE.itemsize, IO_DTYPE)
    tbl, _ = io_table(recs, 0, bits, {})
    del recs
    pq.write_table(tbl, pa.BufferOutputStream(), **{**PARQUET_DEFAULTS, **PARQUET_OPTIONS[IO_TABLE]})


# A capture holds two record buffers (one filling, one being written) and converts one of them into
# Arrow columns and a Parquet file, each about a buffer's size again: about four buffers' worth.
BUFFERS_HELD = 4


def max_buffer_bytes() -> int:
    """The largest --buffer whose BUFFERS_HELD copies fit in this machine's memory (MemTotal)."""
    try:
        info = Path("/proc/meminfo").read_text()
        total = int(next(x for x in info.splitlines() if x.startswith("MemTotal:")).split()[1]) << 10
    except (OSError, StopIteration, ValueError, IndexError):
        total = 4 << 30  # an unknown machine: a modest one
    return max(MIN_BUFFER_BYTES, total // BUFFERS_HELD >> 20 << 20)


def validate(opts: CaptureOptions) -> dict[str, int]:
    """Check the options before anything is loaded or written; returns {device name: dev_t}."""
    from bpf.doctor import require_capture

    if opts.duration_s is not None and opts.duration_s <= 0:
        raise BadInput(f"--duration must be positive, got {opts.duration_s:g}s")
    if opts.rotate_s <= 0:
        raise BadInput(f"--rotate must be positive, got {opts.rotate_s:g}s")
    if opts.witness not in WITNESS_MODES:
        raise BadInput(f"--witness {opts.witness!r}: use one of {', '.join(WITNESS_MODES)}")
    if opts.spool_bytes < 0:
        raise BadInput(f"--spool must be 0 (no spool) or a size, got {opts.spool_bytes} bytes")
    if opts.buffer_bytes < MIN_BUFFER_BYTES:
        raise BadInput(f"--buffer must be at least 1MiB, got {opts.buffer_bytes} bytes")
    if opts.buffer_bytes > (most := max_buffer_bytes()):
        raise BadInput(
            f"--buffer {opts.buffer_bytes / (1 << 30):g}GiB: a capture holds about {BUFFERS_HELD} such "
            f"buffers, more than this machine's memory allows; use at most --buffer {most >> 20}MiB"
        )
    if opts.pid is not None and opts.pid <= 0:
        raise BadInput(f"--pid must be a positive process id, got {opts.pid}")
    if opts.comm is not None and not opts.comm:
        raise BadInput("--comm must not be empty")
    if opts.sink is None:
        check_output_dir(Path(opts.output), force=opts.force)  # now, not after an --at wait
    devs = resolve_devices(opts.devices)
    require_capture()
    return devs


@dataclass
class Encoded:
    """An interval's records as the trace's tables (None: no rows), and what was left out."""

    io: pa.Table | None
    sync: pa.Table | None
    skipped_ops: int = 0  # records whose op is not block data I/O (zone management, driver-private)
    before_t0: int = 0  # requests issued, and sync calls entered, before t0: not rows
    calls: pa.Table | None = None  # the application's data calls (CALLS_SCHEMA)


def encode_interval(item: Interval, t0_ns: int, bits: ReqBits, names: dict[int, str]) -> Encoded:
    """One interval (bpf/spool.py's Interval, in memory or read back) as IO_SCHEMA, SYNC_SCHEMA and
    CALLS_SCHEMA tables, times counted from `t0_ns` (monotonic), the trace's clock origin; rows from
    before it (in a trace cut from a longer recording: an incident) are left out and counted. The
    syscall records hold both the fsync-family calls and the data calls: split here. Write the
    tables with PARQUET_OPTIONS."""
    from bpf.record import calls_table, io_table, split_calls, sync_table

    io, sync, _, fixes = item
    before = 0
    if len(io) and (early := io["issue_ns"] < np.uint64(t0_ns)).any():
        io, before = io[~early], int(np.count_nonzero(early))
    io_tbl, skipped = io_table(io, t0_ns, bits, names, fixes) if len(io) else (None, 0)
    # split first: a libaio reap's slots whose iocb was not tracked (any process's io_getevents on the
    # machine) are neither rows nor requests, and their times are whatever the slot held (0 mostly):
    # counted as before t0, they made an incident's before_start read 8,861 beside 9,929 rows, none left out
    commits, calls = split_calls(sync)
    entered = len(commits) + len(calls)
    commits, calls = commits[commits["enter_ns"] >= t0_ns], calls[calls["enter_ns"] >= t0_ns]
    before += entered - len(commits) - len(calls)
    sync_tbl = sync_table(commits, t0_ns) if len(commits) else None
    calls_tbl = calls_table(calls, t0_ns, disk_names(names)) if len(calls) else None
    return Encoded(io_tbl, sync_tbl, skipped, before, calls_tbl)


class _Writer(threading.Thread):
    """Converts and writes in the background so that polling never waits for Parquet.

    Off the peak: the thread runs at SCHED_IDLE, on CPU time nothing else wants, so that a burst's
    records are encoded after the burst rather than during it, at ~0.6 µs of CPU each; intervals
    that end while it is busy wait in the spool (bpf/spool.py), on disk. The capture loop hurries
    it (back to normal priority until its queue is empty) when what it holds back would break a
    promise: the spool within --spool, and memory within --buffer (an interval kept in memory
    because the spool could not take it, and the next buffer half full). Without a spool
    (--spool 0), also a file per --rotate interval at most one interval late."""

    def __init__(
        self,
        writer: TraceWriter,
        t0: int,
        bits: ReqBits,
        names: dict[int, str],
        release: Callable[[np.ndarray, np.ndarray], None] = lambda io, sync: None,
        spool: Spool | None = None,
        *,
        off_peak: bool = True,
        done: dict[int, set[str]] | None = None,
    ) -> None:
        super().__init__(name="iofp-writer", daemon=True)
        # recover: the tables of each spooled segment (by number) that are in the trace already, its
        # writer killed after writing them and before removing the segment (each file's footer says)
        self.done = done or {}
        self.writer = writer
        self.t0 = t0
        self.bits = bits
        self.names = names
        self.release = release  # hands the record buffers back once converted
        self.spool = spool
        self.off_peak = off_peak  # at SCHED_IDLE until hurried
        # an interval in memory (records, (loss, other) counters, what the kernel's in-flight counts
        # could not know), or one in the spool; None: the end
        self.q: queue.Queue[Interval | Path | None] = queue.Queue()
        self.working = False  # converting an interval now
        self.io_rows = 0
        self.sync_rows = 0
        self.call_rows = 0
        self.files = 0
        self.skipped_ops = 0
        self.error: BaseException | None = None
        self.tid = 0
        self.waiting: collections.deque[float] = collections.deque()  # when each queued item came
        self.in_memory = 0  # queued intervals held in memory (not spooled)
        self.hurried = False  # at normal priority until the queue is empty (hurry)
        # at most this many in memory: past it the capture loop waits (and the kernel's ring buffer
        # fills, then drops, counted) rather than memory grow without bound
        self._memory_slots = threading.Semaphore(MEMORY_INTERVALS)

    def put(self, item: Interval | Path | None) -> None:
        if isinstance(item, tuple):
            while not self._memory_slots.acquire(timeout=0.5):
                if self.error is not None or not self.is_alive():
                    break  # nobody will take it: waiting would hang the capture's end
            self.in_memory += 1
        self.waiting.append(time.monotonic())
        self.q.put(item)

    def idle(self) -> bool:
        return not self.working and self.q.empty()

    def hurry(self) -> None:
        """Normal priority until the queue is empty (called from the capture loop)."""
        self.hurried = True
        if self.tid:
            with contextlib.suppress(OSError):
                os.sched_setscheduler(self.tid, os.SCHED_OTHER, os.sched_param(0))

    def waited(self) -> float:
        """Seconds the oldest item not yet started has been waiting (0: none)."""
        return time.monotonic() - self.waiting[0] if self.waiting else 0.0

    def _idle(self) -> None:
        self.hurried = False
        if not self.off_peak:
            return
        with contextlib.suppress(OSError):
            os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))  # 0: this thread

    def run(self) -> None:
        self.tid = threading.get_native_id()
        self._idle()
        while (item := self.q.get()) is not None:
            self.working = True
            self.waiting.popleft()
            seg = item if isinstance(item, Path) else None
            try:
                if seg is None:
                    self.in_memory -= 1
                    self._memory_slots.release()
                item = item if seg is None else self.spool.read(seg)
                io, sync, (loss, counts), _ = item
                self._note_devices(io)
                self._note_call_devices(sync)
                enc = encode_interval(item, self.t0, self.bits, self.names)
                if seg is not None and (have := self.done.get(int(seg.name))):  # in the trace already
                    enc = replace(enc, io=None if IO_TABLE in have else enc.io,
                                  sync=None if SYNC_TABLE in have else enc.sync,
                                  calls=None if CALLS_TABLE in have else enc.calls)  # fmt: skip
                if enc.io is not None:
                    self.skipped_ops += enc.skipped_ops
                    counts = {**counts, "skipped_ops": self.skipped_ops}
                self.release(io, sync)
                self.writer.meta.loss = loss
                self.writer.meta.counts = counts
                if seg is not None:  # in each file's footer until the segment is removed (recover)
                    self.writer.meta.extra[SPOOL_SEGMENT] = int(seg.name)
                try:
                    if enc.io is not None:
                        self._write(IO_TABLE, enc.io)
                        self.io_rows += enc.io.num_rows
                    if enc.sync is not None:
                        self._write(SYNC_TABLE, enc.sync)
                        self.sync_rows += enc.sync.num_rows
                    if enc.calls is not None:
                        self._write(CALLS_TABLE, enc.calls)
                        self.call_rows += enc.calls.num_rows
                finally:
                    self.writer.meta.extra.pop(SPOOL_SEGMENT, None)
                if seg is not None:
                    self.spool.taken(seg)
            except BaseException as e:  # surfaced by the capture loop
                self.error = e
                return
            self.working = False
            if self.q.empty():
                self._idle()

    def _write(self, table: str, tbl: Any) -> None:
        if self.writer.write(table, tbl, parquet_options=PARQUET_OPTIONS[table]) is not None:
            self.files += 1

    @property
    def file_bytes(self) -> int:
        # sized by the writer before a shipper is told: a capture to a store may remove a shipped file
        return self.writer.bytes

    def _note_call_devices(self, sync: np.ndarray) -> None:
        """The devices the data calls' files are on named (encode_interval names each by its disk)."""
        if len(sync) and any(int(d) not in self.names for d in np.unique(sync["dev"]) if d):
            self.names.update(device_names())

    def _note_devices(self, io: np.ndarray) -> None:
        meta = self.writer.meta
        for d in np.unique(io["dev"]) if len(io) else ():
            name = self.names.get(int(d))
            if name is None:
                self.names.update(device_names())
                name = self.names.get(int(d))
            if name and name not in meta.devices:
                meta.devices[name] = device_facts(name)


# The writer's GIL, watched from outside the process (bpf/gil_guard.py): the loop beats every <= 100 ms
GIL_GUARD_S = 0.25


class _GilGuard:
    """Lends the idle-priority writer normal priority while the capture loop is stalled: a child
    process (bpf/gil_guard.py says why and how) that the loop's beats keep quiet."""

    def __init__(self) -> None:
        r, self._w = os.pipe()
        script = Path(__file__).with_name("gil_guard.py")
        # -I -S: nothing of the environment's or site's packages, a start in tens of milliseconds
        argv = [sys.executable, "-I", "-S", str(script), str(r), str(GIL_GUARD_S)]
        self._proc = subprocess.Popen(argv, pass_fds=(r,), stdin=subprocess.DEVNULL)
        os.close(r)
        os.set_blocking(self._w, False)

    def beat(self, out: _Writer) -> None:
        if self._w >= 0 and out.tid:
            with contextlib.suppress(OSError):
                os.write(self._w, BEAT.pack(out.tid, out.hurried))

    def close(self) -> None:
        if self._w >= 0:
            os.close(self._w)  # the child reads the end of the pipe and exits
            self._w = -1
            try:
                self._proc.wait(timeout=5)
            except subprocess.TimeoutExpired:
                self._proc.kill()
                self._proc.wait()


def capture(
    opts: CaptureOptions,
    stop: threading.Event | None = None,
    *,
    ready: threading.Event | None = None,
    progress: ProgressFn | None = None,
    kernel: KernelOptions | None = None,
) -> CaptureSummary:
    """Capture until `duration_s`, `stop.set()`, SIGINT, SIGTERM or SIGHUP; returns the summary.

    `ready` is set once the probes are attached and recording. `kernel` tunes the in-kernel side
    (batch and ring buffer sizes; its filters are taken from `opts`). Raises BadInput for bad options
    and MissingCapability when the machine cannot capture (before anything is written).

    The signal handlers are installed first and removed last, and a trace in the way (`force`) is
    set aside only once the probes are loaded, just before they attach: a signal before recording
    began leaves it where it was (Interrupted, exit 128 + the signal), one after ends the capture
    with every file whole and the new trace in its place.
    """
    with stop_on_signals(stop) as request:
        devs = validate(opts)
        _keep_freed_memory()
        kc, no_syscalls_why = _load(opts, devs, kernel)
        try:
            return _record(opts, devs, kc, request, no_syscalls_why, ready, progress)
        finally:
            kc.close()


def _not_started(opts: CaptureOptions) -> str:
    there = opts.force and Path(opts.output).exists() and any(Path(opts.output).iterdir())
    kept = f"; the trace in {opts.output} is as it was" if there else ""
    return f"the capture had not begun recording; nothing was written{kept}"


def _load(opts: CaptureOptions, devs: dict[str, int], kernel: KernelOptions | None) -> tuple[Any, str | None]:
    """Compile and load the probes (not attached yet); (the loaded capture, why syscalls are off)."""
    from bpf.loader import KernelCapture

    tuning = kernel or KernelOptions()
    syscalls, no_syscalls_why = opts.syscalls, None
    if syscalls and not (sc := check_syscall_tracepoints()).ok:
        # Block I/O is the point; a kernel without syscall tracepoints still gets a capture, said so
        syscalls, no_syscalls_why = False, sc.detail
        print(f"iofp: not recording fsync-family syscalls: {sc.detail}", file=sys.stderr)
    kc = KernelCapture(
        replace(
            tuning,
            devs=list(devs.values()),
            sync_devs=stacked_devices(list(devs)),
            pid=opts.pid,
            comm=opts.comm,
            syscalls=syscalls,
            data_calls=opts.data_calls,
            dsync_writes=opts.dsync_writes,
            sink_bytes=opts.buffer_bytes + (8 << 20),
            hand_over_bytes=opts.buffer_bytes,
            witness=opts.witness if kernel is None else kernel.witness,  # tests choose theirs there
        )
    )
    return kc, no_syscalls_why


def _record(
    opts: CaptureOptions,
    devs: dict[str, int],
    kc: Any,
    request: StopRequest,
    no_syscalls_why: str | None,
    ready: threading.Event | None,
    progress: ProgressFn | None,
) -> CaptureSummary:
    meta = _meta(opts, devs, kc, no_syscalls_why)
    bits = ReqBits.from_btf(kernel_btf())
    # The parsed BTF is ~10^5 Python objects: while cached, every full garbage collection walks them,
    # and interpreter exit spent ~0.5 s of CPU on them. All that is needed has been extracted.
    kernel_btf.cache_clear()
    _release_startup_memory()
    if opts.sink is not None:
        return _record_to_sink(opts, opts.sink, kc, request, meta, bits, ready, progress)
    _warm_up(bits, opts.buffer_bytes)
    request.check(_not_started(opts))
    writer = TraceWriter(opts.output, meta, force=opts.force, on_file=opts.on_file)
    out: _Writer | None = None
    guard: _GilGuard | None = None
    spool = _spool(opts)
    # what the host was doing meanwhile (iofp/host_evidence.py): a latency measured while tasks waited
    # for a CPU is the host's as much as the device's, and a diff of two captures needs to know
    host = Sampler(next(iter(devs), None))
    try:
        host.start()
        t0, wall0 = kc.start()
        if request.is_set():  # before "recording" was announced: as if it never started
            kc.stop()
            raise request.interrupted(_not_started(opts))
        meta.capture_start_ns = wall0
        meta.extra["witness"] = kc.witness_error or kc.opts.witness  # bpf/witness.py
        names = device_names()
        if spool is not None:
            spool.start(t0, bits, names, meta)
        out = _Writer(writer, t0, bits, names, kc.release, spool)
        guard = _GilGuard()
        out.start()
        if ready is not None:
            ready.set()
        end_reason = _loop(kc, out, opts, request.event, t0, progress, beat=lambda: guard.beat(out))
        duration_ns = kc.stop() - t0
        meta.duration_ns = duration_ns
        meta.extra["host"] = host.stop().to_dict()
        _hand_over(kc, out, last=True)
        io_bytes = kc.io_bytes()  # every record received is handed over by now
        meta.extra["end"] = end_reason
        meta.extra["inflight_at_end"] = kc.inflight_left()
    except BaseException as e:
        if out is None:
            if spool is not None:
                spool.remove()
            writer.abort()  # nothing was recorded: leave no half-made trace, any replaced one intact
            if isinstance(e, Interrupted):
                raise request.interrupted(_not_started(opts)) from None
        elif writer.replaced is not None:
            warn(f"the capture failed while recording; the trace it replaces is kept in {writer.replaced}")
        raise
    finally:
        if host.evidence is None:
            host.stop()
        if guard is not None:
            guard.close()
        if out is not None and out.is_alive():
            out.q.put(None)
            out.join()
    _settle(writer, meta, out)
    if spool is not None:
        spool.remove()
    return CaptureSummary(
        output=Path(opts.output),
        io_events=out.io_rows,
        sync_events=out.sync_rows,
        call_events=out.call_rows,
        lost_events=meta.lost_events,
        unmatched=int(meta.counts.get("unmatched_completions", 0)),
        duration_s=duration_ns / 1e9,
        bytes=io_bytes,
        files=out.files,
        loss=dict(meta.loss),
        counts=dict(meta.counts),
    )


def _record_to_sink(
    opts: CaptureOptions,
    sink: IntervalSink,
    kc: Any,
    request: StopRequest,
    meta: TraceMeta,
    bits: ReqBits,
    ready: threading.Event | None,
    progress: ProgressFn | None,
) -> CaptureSummary:
    """Every interval to `sink` (see IntervalSink): no trace, no writer thread, nothing encoded."""
    t0, wall0 = kc.start()
    if request.is_set():
        kc.stop()
        raise request.interrupted("the capture had not begun recording; nothing was recorded")
    meta.capture_start_ns = wall0
    meta.extra["witness"] = kc.witness_error or kc.opts.witness
    sink.start(t0, bits, device_names(), meta)
    if ready is not None:
        ready.set()
    handed = {"io": 0, "sync": 0}

    def deliver(last: bool = False) -> None:
        upto = time.monotonic_ns()
        io, sync, unseen = kc.hand_over()
        item = (io, sync, _accounting(kc), InflightFixes(kc.early_completions(), tuple(unseen)))
        try:
            sink.put(item, upto, last=last)
        finally:
            kc.release(io, sync)
        handed["io"] += len(io)
        handed["sync"] += len(sync)

    end_reason = _loop(kc, None, opts, request.event, t0, progress, deliver, lazy=True)
    duration_ns = kc.stop() - t0
    meta.duration_ns = duration_ns  # the sink holds `meta`: it sees how the capture ended
    meta.extra["end"] = end_reason
    deliver(last=True)
    loss, counts = _accounting(kc)
    return CaptureSummary(
        output=Path(opts.output), io_events=handed["io"], sync_events=handed["sync"],
        lost_events=sum(v for k, v in loss.items() if k.startswith("lost")),
        unmatched=int(counts.get("unmatched_completions", 0)), duration_s=duration_ns / 1e9,
        bytes=kc.io_bytes(), files=0, loss=loss, counts=counts,
    )  # fmt: skip


def _spool(opts: CaptureOptions) -> Spool | None:
    """The capture's spool, its size limited to half the output's free space; None without one."""
    if not opts.spool_bytes:
        return None
    try:
        st = os.statvfs(opts.output)
        free = st.f_bavail * st.f_frsize
    except OSError:
        return None
    return Spool(Path(opts.output), min(opts.spool_bytes, free // 2))


def _meta(opts: CaptureOptions, devs: dict[str, int], kc: Any, no_syscalls_why: str | None) -> TraceMeta:
    filters: dict[str, Any] = {"devices": sorted(devs), "comm": opts.comm, "pid": opts.pid}
    meta = TraceMeta(source="capture", filters=filters, labels=dict(opts.labels))
    meta.devices = {name: device_facts(name) for name in devs}
    syscalls = []
    if kc.opts.syscalls:  # which syscalls were probed: provenance of what the sync and calls tables can hold
        probed = ["fsync-family"] + ["dsync-writes"] * kc.opts.write_calls
        syscalls = ["syscalls:" + ",".join(probed + ["data-calls"] * kc.opts.data_calls)]
    meta.extra = {
        "probes": [tp for tp, _ in kc.probes()] + syscalls,
        "kernel_batch": kc.opts.io_batch,
        "rotate_s": opts.rotate_s,
    }
    if no_syscalls_why:
        meta.extra["syscalls_unavailable"] = no_syscalls_why
    if kc.fd_lookup is not None:  # which variant of the syscall probes ran (bpf/loader.py, load_program)
        meta.extra["fd_lookup"] = kc.fd_lookup
    meta.extra["block_reads"] = kc.block_reads  # the request's fields: BTF loads, or probe reads and why
    return meta


def _settle(writer: TraceWriter, meta: TraceMeta, out: _Writer) -> None:
    """Finish the trace once the writer thread is done: trace.json and the old trace dropped, or,
    if a write failed, one line saying what is whole and where the replaced trace is kept."""
    if isinstance(out.error, OutputFailed):
        # Stop at once (the loop did) and say so in one line; the files before are whole, and
        # trace.json is written if there is room for it. A trace this one was to replace (--force)
        # is kept where it was set aside: the new one is cut short.
        meta.extra["end"] = f"write failed: {out.error}"
        with contextlib.suppress(IofpError):
            writer.write_manifest()
        kept = f"; the trace it replaces is kept in {writer.replaced}" if writer.replaced else ""
        if left := segments(writer.root):
            kept += f"; {len(left)} intervals are spooled, not encoded: `iofp recover {writer.root}`"
        raise OutputFailed(
            f"capture stopped: {out.error}; the {out.files} files written before are complete{kept}"
        ) from None
    if out.error is not None:
        raise out.error
    writer.close()


def _accounting(kc: Any) -> tuple[dict[str, int], dict[str, int]]:
    """(loss, counts): events or data lost (each key starts with "lost"; a script may sum them), and
    what was counted but is no loss (filtered by design, kernel bookkeeping, rows left out)."""
    from bpf.record import KIND_IO, KIND_SYNC

    c = kc.counters()
    loss = {k: v for k, v in c.items() if k.startswith("lost_")}
    # Handed over by the kernel but never received: must be zero; counted so it could not be silent
    loss["lost_in_transit"] = max(0, c["io_records"] + kc.drained[KIND_IO] - kc.received[KIND_IO]) + max(
        0, c["sync_records"] + kc.drained[KIND_SYNC] - kc.received[KIND_SYNC]
    )
    loss["lost_recursion"] = kc.recursion_misses()
    # Completions the program never saw (bpf/witness.py): rows whose latency the witness did not
    # record are the loss; the others got its time
    loss["lost_completions"] = kc.unseen["received"] - kc.unseen["filled"]
    counts = {
        "unseen_completions": c["unseen_completions"] + kc.unseen["at_end"],
        "recovered_completions": kc.unseen["filled"] + kc.unseen["at_end"],
        "unmatched_completions": c["unmatched_completions"],  # of requests issued before the start
        "completed_unissued": c["completed_unissued"],  # empty PREFLUSHes: never issued, so not rows
        "sync_other_device": c["sync_other_device"],  # filtered out by --device
        "flush_seq_final": c["flush_seq_final"],  # blk-flush's second completions
        "early_overflow": c["early_overflow"],  # `inflight` undercounted near the start
        "sync_no_device": c["sync_no_device"],  # sync(2)/msync(2) left out by --device
        # completions, during the stop, of requests issued after block_rq_issue was detached
        "completed_after_stop": c["completed_after_stop"],
    }
    return loss, counts


def _hand_over(kc: Any, out: _Writer, *, last: bool = False) -> None:
    """The interval just ended to the writer: in memory if it is idle (or this is the last),
    else through the spool, so that encoding waits for a free CPU rather than for memory."""
    io, sync, unseen = kc.hand_over()
    item = (io, sync, _accounting(kc), InflightFixes(kc.early_completions(), tuple(unseen)))
    if out.spool is not None and not last and not out.idle() and not out.spool.full:
        try:
            seg = out.spool.put(item)
        except OSError:  # a full disk, mostly: held in memory instead, and --buffer still bounds it
            pass
        else:
            kc.release(io, sync)
            out.put(seg)
            return
    out.put(item)
    if last:
        out.hurry()


def _must_hurry(out: _Writer, kc: Any, opts: CaptureOptions) -> bool:
    """Whether the writer must run now rather than on idle CPU (see _Writer)."""
    memory = out.in_memory > 0 and kc.pending_bytes >= opts.buffer_bytes // 2
    if out.spool is None:
        return memory or out.waited() >= opts.rotate_s
    return memory or (out.spool.full and not out.idle())


def _next_rotation(opts: CaptureOptions, now: float) -> float:
    """When the interval begun at `now` (monotonic s) ends: `rotate_s` later; for a sink, at the next
    wall-clock multiple of `rotate_s`, so that its intervals are the seconds (or minutes) a person
    names (a trigger's window, a summary's row)."""
    if opts.sink is None:
        return now + opts.rotate_s
    wall = time.time()
    return now + (math.floor(wall / opts.rotate_s) + 1) * opts.rotate_s - wall


def _loop(
    kc: Any,
    out: _Writer | None,
    opts: CaptureOptions,
    stop: threading.Event,
    t0: int,
    progress: ProgressFn | None,
    deliver: Callable[[], None] | None = None,
    beat: Callable[[], None] | None = None,
    lazy: bool = False,
) -> str:
    """Poll until the end; each interval goes to `deliver` (default: the writer `out`); `beat` is
    called before each wait (_GilGuard). `lazy` (a sink, handed each interval whole): a tick that
    finds the ring nearly empty (kc.can_wait) leaves it for the interval's hand-over, which flushes
    and drains it anyway; the ticks' flush (a test run of a program on every CPU), drain and witness
    poll cost an idle `iofp record` ~3.5 ms of CPU a second (8 ms a second ticking every 0.1 s, 4-5
    with a 1 s tick, 2026-11-29)."""
    deliver = deliver or (lambda: _hand_over(kc, out))
    next_rotate = _next_rotation(opts, time.monotonic())
    last_report = time.monotonic()
    more = False  # the last consume stopped at --buffer: hand over and take the rest at once
    while True:
        if beat is not None:
            beat()
        waited = False
        if not more:
            stop.wait(max(0.0, min(FLUSH_TICK_S, next_rotate - time.monotonic())))
            waited = lazy and time.monotonic() < next_rotate and kc.can_wait()
            if not waited:
                kc.flush()
        more = False if waited else kc.consume()
        now = time.monotonic()
        if out is not None and out.error is not None:
            return "writer error"
        if stop.is_set():
            return "stopped"
        if opts.duration_s is not None and time.monotonic_ns() - t0 >= opts.duration_s * 1e9:
            return "duration"
        if now >= next_rotate or kc.pending_bytes >= opts.buffer_bytes:
            deliver()
            next_rotate = _next_rotation(opts, now)
        if out is not None and _must_hurry(out, kc, opts):
            out.hurry()  # see _Writer
        if progress is not None and now - last_report >= 1.0:
            c = kc.counters()
            progress(
                {
                    "elapsed_s": (time.monotonic_ns() - t0) / 1e9,
                    "events": c["io_records"],
                    "sync": c["sync_records"],
                    "bytes": kc.io_bytes(),
                    "lost": sum(v for k, v in c.items() if k.startswith("lost_")),
                    "files": out.files if out is not None else 0,
                    "file_bytes": out.file_bytes if out is not None else 0,
                }
            )
            last_report = now


def recover(root: Path) -> CaptureSummary:
    """Encode into the trace at `root` the intervals its capture spooled and, killed, never encoded.

    The trace stays without trace.json: the interval the capture held in memory when it was killed
    is lost, so readers keep saying it may be incomplete; the newest file's footer carries the loss
    counters up to the last interval recovered."""
    from bpf.spool import owner, read_capture

    root = Path(root)
    segs = segments(root)
    if not segs:
        raise BadInput(f"{root}: nothing to recover (no spooled records in {root / SPOOL})")
    _contained(root, segs)
    try:
        pid = owner(root)
        if iofp_alive(pid):  # its capture.json may still be incomplete, and it encodes its own spool
            raise BadInput(f"{root} is being captured (pid {pid}); it encodes its spool when it ends")
        cap = read_capture(root)
    except (OSError, ValueError, KeyError, TypeError) as e:
        why = e.strerror if isinstance(e, OSError) else f"{type(e).__name__}: {e}"
        raise BadInput(f"{root / SPOOL}: capture.json is unreadable ({why}); cannot encode it") from None
    for seg in segs:
        check_segment(seg)
    files = [p for t in (IO_TABLE, SYNC_TABLE, CALLS_TABLE) for p in (root / t).glob("part-*.parquet")]
    # the newest footer carries the counters up to the last file written
    meta = read_meta(max(files, key=lambda p: p.name)) if files else cap["meta"]
    spool = Spool(root, 0)
    out = _Writer(TraceWriter(root, meta, resume=True), cap["t0_ns"], cap["bits"], cap["names"],
                  spool=spool, off_peak=False, done=_encoded_segments(files))  # fmt: skip
    out.skipped_ops = int(meta.counts.get("skipped_ops", 0))
    for seg in segs:
        out.put(seg)
    out.put(None)
    out.run()
    if isinstance(out.error, IofpError):
        raise out.error
    if out.error is not None:  # records no capture writes (an opcode BTF never named): not iofp's
        why = f"{type(out.error).__name__}: {terminal.one_line(str(out.error))[:80]}"
        raise BadInput(f"{root / SPOOL}: a segment's records are damaged ({why}); {DAMAGED}")
    spool.remove()
    return CaptureSummary(
        output=root,
        io_events=out.io_rows,
        sync_events=out.sync_rows,
        call_events=out.call_rows,
        lost_events=meta.lost_events,
        unmatched=int(meta.counts.get("unmatched_completions", 0)),
        duration_s=0.0,
        bytes=0,
        files=out.files,
        loss=dict(meta.loss),
        counts=dict(meta.counts),
    )


def _encoded_segments(files: list[Path]) -> dict[int, set[str]]:
    """Of each spooled segment (by number), the tables whose file is in the trace: a writer killed
    between writing a segment's files and removing it left both, and encoding it again would double
    its rows. Each file written from a segment names it in its footer (SPOOL_SEGMENT)."""
    done: dict[int, set[str]] = {}
    for p in files:
        seg = footer_meta(p).extra.get(SPOOL_SEGMENT)
        if isinstance(seg, int):
            done.setdefault(seg, set()).add(p.parent.name)
    return done


def _contained(root: Path, segs: list[Path]) -> None:
    """What recover reads (the spool, its segments and their files) lies inside the trace, unless
    iofp --follow-links; where it writes (the tables' directories) lies inside it always: a trace's
    `io` linked to /etc/cron.d had recover write its files there, as root."""
    spool = root / SPOOL
    for p in [spool, spool / CAPTURE, *segs, *(f for s in segs if s.is_dir() for f in s.iterdir())]:
        inside(root, p, "a spooled file")
    base = root.resolve()
    for t in (IO_TABLE, SYNC_TABLE, CALLS_TABLE):
        d = root / t
        if d.is_symlink() or (d.exists() and d.resolve().parent != base):
            raise BadInput(f"{d} is a link, and recover writes the trace's files there; "
                           "make it a directory of the trace")  # fmt: skip


class BackgroundCapture:
    """A capture running in a thread; `stop()` ends it and returns its summary."""

    def __init__(self, opts: CaptureOptions, kernel: KernelOptions | None = None) -> None:
        self.opts = opts
        self.kernel = kernel
        self._stop = threading.Event()
        self._ready = threading.Event()
        self._summary: CaptureSummary | None = None
        self._error: BaseException | None = None
        self._thread = threading.Thread(target=self._run, name="iofp-capture", daemon=True)

    def _run(self) -> None:
        try:
            self._summary = capture(self.opts, self._stop, ready=self._ready, kernel=self.kernel)
        except BaseException as e:
            self._error = e
        finally:
            self._ready.set()

    def _start(self) -> None:
        self._thread.start()
        self._ready.wait()
        if self._error is not None:
            self._thread.join()
            raise self._error

    def stop(self) -> CaptureSummary:
        self._stop.set()
        self._thread.join()
        if self._error is not None:
            raise self._error
        assert self._summary is not None
        return self._summary

    def __enter__(self) -> BackgroundCapture:
        return self

    def __exit__(self, *exc: object) -> None:
        if self._thread.is_alive():
            self.stop()


def start_capture(opts: CaptureOptions, *, kernel: KernelOptions | None = None) -> BackgroundCapture:
    """Start capturing in the background; returns once the probes are attached and recording."""
    bg = BackgroundCapture(opts, kernel)
    bg._start()
    return bg


def progress_line(every_s: float, stream: Any = None) -> ProgressFn:
    """What a capture prints while it runs, as iostat does: on a terminal one line rewritten every
    second; elsewhere (a log, a pipe, a systemd unit) a line every `every_s` (its --rotate interval),
    so a 10-minute capture is never silent. Each gives the request rate and the bytes of I/O over
    the last interval, the sync calls, the events lost so far and the files written."""
    stream = stream or terminal.raw(sys.stderr)  # its own escape sequences: numbers only
    tty = stream.isatty()
    last = {"elapsed_s": 0.0, "events": 0, "bytes": 0, "sync": 0}

    def show(p: dict[str, float]) -> None:
        dt = p["elapsed_s"] - last["elapsed_s"]
        if dt <= 0 or (not tty and dt < every_s):
            return
        line = (
            f"{p['elapsed_s']:,.0f}s: {(p['events'] - last['events']) / dt:,.0f} requests/s, "
            f"{(p['bytes'] - last['bytes']) / dt / 1e6:,.1f} MB/s, "
            f"{(p['sync'] - last['sync']) / dt:,.0f} sync calls/s; lost {int(p['lost']):,}; "
            f"{int(p['files']):,} files ({p['file_bytes'] / 1e6:,.1f} MB) written"
        )
        stream.write(f"\r{line}\x1b[K" if tty else f"iofp: {line}\n")
        stream.flush()
        last.update({k: p[k] for k in last})

    return show


def render_summary(s: CaptureSummary) -> list[str]:
    rate = s.io_events / s.duration_s if s.duration_s > 0 else 0.0
    calls = f", {s.sync_events:,} sync calls and {s.call_events:,} data calls" if s.call_events else (
        f" and {s.sync_events:,} sync calls")
    lines = [
        f"Captured {s.io_events:,} block requests ({rate:,.0f}/s){calls} in "
        f"{s.duration_s:,.1f} s ({s.bytes / 1e6:,.1f} MB of I/O) into {s.files:,} "
        f"file{'' if s.files == 1 else 's'}; {s.lost_events:,} events lost.",
    ]
    if s.unmatched:
        lines.append(f"{s.unmatched:,} completions of requests issued before the capture were left out.")
    if nameless := s.counts.get("sync_no_device", 0):
        why = "no file names their device (--comm keeps them)"
        lines.append(f"{nameless:,} sync/msync calls left out: {why}.")
    lines.append(f"Wrote {s.output}. Next: {shell_command('iofp', 'fingerprint', s.output)}")
    return lines


def loss_warning(s: CaptureSummary) -> str | None:
    if not s.lost_events:
        return None
    parts = ", ".join(f"{k}={v}" for k, v in sorted(s.loss.items()) if k.startswith("lost") and v)
    return f"WARNING: this capture LOST {s.lost_events} events ({parts}); the trace is incomplete"


__all__ = [
    "PARQUET_OPTIONS",
    "BackgroundCapture",
    "CaptureOptions",
    "CaptureSummary",
    "Encoded",
    "IntervalSink",
    "capture",
    "encode_interval",
    "recover",
    "start_capture",
]
