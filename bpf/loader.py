"""Compiles capture.bpf.c with bcc, attaches it, and moves the kernel's record batches to numpy.

Everything kernel-specific reaches the C code as a -D define computed here: struct offsets and
enum values from BTF, the filters, the batch and buffer sizes. bcc is imported lazily so that
`import bpf` works on a machine without it.
"""

from __future__ import annotations

import contextlib
import ctypes
import errno
import mmap
import os
import queue
import struct
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from bpf.btf import BTF, BTFError, btf_with_struct, kernel_btf
from bpf.record import BATCH_HDR, COUNTERS, DATA_CALL_BASE, IO_DTYPE, KIND_IO, KIND_SYNC, SYNC_DTYPE
from bpf.witness import EVENTS, UNSEEN, CompletionWitness, agent_threads, fill_unseen, undetected
from iofp.contract import DATA_CALLS, SYNC_CALLS

SRC = Path(__file__).with_name("capture.bpf.c")

# every kernel struct field the probes read: -D define -> (struct, member, the size the program reads)
KERNEL_FIELDS: dict[str, tuple[str, str, int | None]] = {
    "IOFP_OFF_RQ_Q": ("request", "q", 8),
    "IOFP_OFF_RQ_CMD_FLAGS": ("request", "cmd_flags", 4),
    "IOFP_OFF_RQ_DATA_LEN": ("request", "__data_len", 4),
    "IOFP_OFF_RQ_SECTOR": ("request", "__sector", 8),
    "IOFP_OFF_RQ_START_TIME": ("request", "start_time_ns", 8),
    "IOFP_OFF_RQ_RQ_FLAGS": ("request", "rq_flags", 4),
    "IOFP_OFF_Q_DISK": ("request_queue", "disk", 8),
    "IOFP_OFF_DISK_MAJOR": ("gendisk", "major", 4),
    "IOFP_OFF_DISK_FIRST_MINOR": ("gendisk", "first_minor", 4),
    "IOFP_OFF_TASK_TGID": ("task_struct", "tgid", 4),
    "IOFP_OFF_TASK_COMM": ("task_struct", "comm", 16),
    # fd -> struct file -> device, for the syscalls
    "IOFP_OFF_TASK_FILES": ("task_struct", "files", 8),
    "IOFP_OFF_FILES_FDT": ("files_struct", "fdt", 8),
    "IOFP_OFF_FDT_MAX_FDS": ("fdtable", "max_fds", 4),
    "IOFP_OFF_FDT_FD": ("fdtable", "fd", 8),
    "IOFP_OFF_FILE_INODE": ("file", "f_inode", 8),
    "IOFP_OFF_FILE_FLAGS": ("file", "f_flags", 4),
    "IOFP_OFF_INODE_MODE": ("inode", "i_mode", 2),
    "IOFP_OFF_INODE_RDEV": ("inode", "i_rdev", 4),
    "IOFP_OFF_INODE_SB": ("inode", "i_sb", 8),
    "IOFP_OFF_SB_BDEV": ("super_block", "s_bdev", 8),
    "IOFP_OFF_BDEV_DEV": ("block_device", "bd_dev", 4),
}

# overlayfs (built in, or the `overlay` module's BTF): a container's file -> its upper layer's device.
# None: the member's position is used, nothing is read at it.
OVERLAY_FIELDS: dict[str, tuple[str, str, int | None]] = {
    "IOFP_OFF_OVL_VFS_INODE": ("ovl_inode", "vfs_inode", None),
    "IOFP_OFF_OVL_UPPER": ("ovl_inode", "__upperdentry", 8),
    "IOFP_OFF_DENTRY_INODE": ("dentry", "d_inode", 8),
    "IOFP_OFF_SB_MAGIC": ("super_block", "s_magic", 8),
}

_MAX_SPAN = 96  # bytes: beyond this, three small reads beat one big one

# bpf(2) commands and flags (include/uapi/linux/bpf.h; stable ABI)
_SYS_BPF = 321  # x86_64
_BPF_PROG_TEST_RUN = 10
_BPF_MAP_LOOKUP_BATCH = 24
_BPF_OBJ_GET_INFO_BY_FD = 15
_BPF_PROG_LOAD = 5
_BPF_RAW_TRACEPOINT_OPEN = 17
_BPF_PROG_TYPE_TRACING = 26
_BPF_TRACE_RAW_TP = 23  # enum bpf_attach_type: a BTF tracepoint (tp_btf)
_MAP_INFO_LEN = 24  # struct bpf_map_info up to max_entries (the kernel fills what fits)
_BPF_F_TEST_RUN_ON_CPU = 1


class _TestRunAttr(ctypes.Structure):
    _fields_ = [
        ("prog_fd", ctypes.c_uint32),
        ("retval", ctypes.c_uint32),
        ("data_size_in", ctypes.c_uint32),
        ("data_size_out", ctypes.c_uint32),
        ("data_in", ctypes.c_uint64),
        ("data_out", ctypes.c_uint64),
        ("repeat", ctypes.c_uint32),
        ("duration", ctypes.c_uint32),
        ("ctx_size_in", ctypes.c_uint32),
        ("ctx_size_out", ctypes.c_uint32),
        ("ctx_in", ctypes.c_uint64),
        ("ctx_out", ctypes.c_uint64),
        ("flags", ctypes.c_uint32),
        ("cpu", ctypes.c_uint32),
        ("batch_size", ctypes.c_uint32),
        ("_pad", ctypes.c_uint32),
    ]


class _ProgLoadAttr(ctypes.Structure):
    """union bpf_attr for BPF_PROG_LOAD, up to attach_btf_id (the kernel takes a shorter attr whole)."""

    _fields_ = [
        ("prog_type", ctypes.c_uint32),
        ("insn_cnt", ctypes.c_uint32),
        ("insns", ctypes.c_uint64),
        ("license", ctypes.c_uint64),
        ("log_level", ctypes.c_uint32),
        ("log_size", ctypes.c_uint32),
        ("log_buf", ctypes.c_uint64),
        ("kern_version", ctypes.c_uint32),
        ("prog_flags", ctypes.c_uint32),
        ("prog_name", ctypes.c_char * 16),
        ("prog_ifindex", ctypes.c_uint32),
        ("expected_attach_type", ctypes.c_uint32),
        ("prog_btf_fd", ctypes.c_uint32),
        ("func_info_rec_size", ctypes.c_uint32),
        ("func_info", ctypes.c_uint64),
        ("func_info_cnt", ctypes.c_uint32),
        ("line_info_rec_size", ctypes.c_uint32),
        ("line_info", ctypes.c_uint64),
        ("line_info_cnt", ctypes.c_uint32),
        ("attach_btf_id", ctypes.c_uint32),
    ]


class _RawTpOpenAttr(ctypes.Structure):
    _fields_ = [("name", ctypes.c_uint64), ("prog_fd", ctypes.c_uint32), ("_pad", ctypes.c_uint32)]


class _InfoAttr(ctypes.Structure):
    _fields_ = [("bpf_fd", ctypes.c_uint32), ("info_len", ctypes.c_uint32), ("info", ctypes.c_uint64)]


_libc = ctypes.CDLL(None, use_errno=True)


class _BatchHdr(ctypes.Structure):
    _fields_ = [("kind", ctypes.c_uint32), ("count", ctypes.c_uint32), ("first_ns", ctypes.c_uint64)]


_HDR_SIZE = ctypes.sizeof(_BatchHdr)
assert BATCH_HDR.itemsize == _HDR_SIZE


class _Sink:
    """Records of one kind, copied from the ring straight into a byte buffer that is reused.

    Per batch the only Python work is one header read and one memmove (no bytes objects, no join);
    the buffers go round between the poller and the writer (take, then release), so the memory is
    faulted in once rather than once per file."""

    def __init__(self, dtype: np.dtype, cap: int, prefault: int = 0) -> None:
        self.dtype = dtype
        self.cap = cap
        self._free: queue.SimpleQueue[np.ndarray] = queue.SimpleQueue()
        for _ in range(prefault):
            # First touch of fresh memory (a page fault and zeroing per page, slow in a VM) would
            # otherwise happen while records arrive, i.e. during the workload's peak
            buf = np.empty(self.cap, np.uint8)
            buf.fill(0)
            self._free.put(buf)
        self._new()

    def _new(self) -> None:
        try:
            buf = self._free.get_nowait()
        except queue.Empty:
            buf = np.empty(self.cap, np.uint8)
        self.buf, self.addr, self.used = buf, buf.ctypes.data, 0

    def append(self, src: int, nbytes: int) -> None:
        if self.used + nbytes > len(self.buf):
            self.cap = max(2 * len(self.buf), self.used + nbytes)
            bigger = np.empty(self.cap, np.uint8)
            bigger[: self.used] = self.buf[: self.used]
            self.buf, self.addr = bigger, bigger.ctypes.data
        ctypes.memmove(self.addr + self.used, src, nbytes)
        self.used += nbytes

    def take(self) -> np.ndarray:
        if not self.used:
            return np.empty(0, self.dtype)
        out = self.buf[: self.used].view(self.dtype)
        self._new()
        return out

    def release(self, recs: np.ndarray) -> None:
        """`recs` (from take) is no longer used: its buffer may be filled again."""
        buf = recs.base  # numpy points a view's base at the array owning the memory
        if isinstance(buf, np.ndarray) and buf.base is None and len(buf) == self.cap:
            self._free.put(buf)


class _BatchAttr(ctypes.Structure):
    _fields_ = [
        ("in_batch", ctypes.c_uint64),
        ("out_batch", ctypes.c_uint64),
        ("keys", ctypes.c_uint64),
        ("values", ctypes.c_uint64),
        ("count", ctypes.c_uint32),
        ("map_fd", ctypes.c_uint32),
        ("elem_flags", ctypes.c_uint64),
        ("flags", ctypes.c_uint64),
    ]


# struct iofp_early (capture.bpf.c)
_EARLY_DTYPE = np.dtype([("done_ns", "<u8"), ("dev", "<u4"), ("_pad", "<u4")])


def _read_array(map_fd: int, n: int, value_size: int) -> np.ndarray | None:
    """An array map's values as raw rows (n x value_size bytes, one BPF_MAP_LOOKUP_BATCH), or None
    where the kernel has no batch lookup for arrays (before v5.6)."""
    values = np.zeros((n, value_size), np.uint8)
    keys = np.zeros(n, np.uint32)
    out = ctypes.c_uint32(0)
    attr = _BatchAttr(
        in_batch=0,
        out_batch=ctypes.addressof(out),
        keys=keys.ctypes.data,
        values=values.ctypes.data,
        count=n,
        map_fd=map_fd,
    )
    rc = _bpf(_BPF_MAP_LOOKUP_BATCH, attr)
    if rc != 0 and ctypes.get_errno() != errno.ENOENT:  # ENOENT: the walk reached the end
        return None
    return values[: attr.count].reshape(-1)


def _map_array(map_fd: int, n: int, value_size: int) -> tuple[mmap.mmap, np.ndarray] | None:
    """An array map created BPF_F_MMAPABLE, mapped read-only: the mapping (the caller unmaps it) and
    its values as raw rows (n x value_size bytes, read in place, no copy), or None where it cannot be
    mapped (the flag is missing)."""
    elem = (value_size + 7) // 8 * 8  # the kernel rounds each element up to 8 bytes
    if elem != value_size:  # rows would not be contiguous values: not mapped at all
        return None
    page = mmap.PAGESIZE
    try:
        m = mmap.mmap(map_fd, (n * elem + page - 1) // page * page, mmap.MAP_SHARED, mmap.PROT_READ)
    except OSError:
        return None
    return m, np.frombuffer(m, np.uint8, n * elem)


class _RingReader:
    """The kernel's ring buffer (BPF_MAP_TYPE_RINGBUF) read in place, as libbpf's ring_buffer__consume
    reads it (tools/lib/bpf/ringbuf.c), without its per-record callback into Python through ctypes
    (bcc's open_ring_buffer): the consumer position's page mapped read-write, the producer's page and
    the data (mapped twice in a row by the kernel, so that a record across the end is contiguous)
    read-only. Each record: an 8-byte header (its length, and the busy and discard bits), then the
    record, the whole rounded up to 8 bytes.

    The positions are read, and the consumer's written, as one aligned 8-byte access each (a u64
    memoryview): the kernel's reserve reads consumer_pos without a lock at any moment, and a value
    seen half-written is believed. struct.pack_into zeroed its target before writing the value
    (CPython's s_pack_internal): a reserve that read that 0 once the ring had taken more than its size
    found it full and dropped its batch (lost_io_ringbuf 64-640 in `iofp capture` at full rate beside
    two CPU hogs, which preempt the poller between the two writes: 3 of 4 runs; the ring was never
    more than a third full). On x86-64 such a load has acquire and such a store release semantics,
    which the protocol needs (libbpf's smp_load_acquire, smp_store_release); elsewhere bcc's reader is
    used (_ring_reader)."""

    BUSY, DISCARD = 1 << 31, 1 << 30

    def __init__(self, map_fd: int, size: int) -> None:
        page = mmap.PAGESIZE
        self.mask = size - 1
        self.cons = mmap.mmap(map_fd, page, mmap.MAP_SHARED, mmap.PROT_READ | mmap.PROT_WRITE)
        try:
            self.data = mmap.mmap(map_fd, page + 2 * size, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        except BaseException:
            self.cons.close()
            raise
        self._cons_pos = memoryview(self.cons).cast("Q")  # [0]: consumer_pos
        whole = memoryview(self.data)
        self._prod_pos = whole[:8].cast("Q")  # [0]: producer_pos
        whole.release()
        self._view = np.frombuffer(self.data, np.uint8)  # its address, for memmove
        self.base = self._view.ctypes.data + page  # the data's first byte

    def held(self) -> int:
        """Bytes written and not yet consumed (records still being written included)."""
        return self._prod_pos[0] - self._cons_pos[0]

    def consume(self, take: Any) -> None:
        """take(address, length) for each record written whole, in order, until it returns True (the
        record is taken, the rest stays) or the ring is empty; the consumer position is advanced
        past each record once it is taken."""
        page, mask, base, data = mmap.PAGESIZE, self.mask, self.base, self.data
        cons_pos, prod_pos = self._cons_pos, self._prod_pos
        cons = cons_pos[0]
        while True:
            prod = prod_pos[0]
            if cons >= prod:
                return
            while cons < prod:
                off = cons & mask
                hdr = struct.unpack_from("<I", data, page + off)[0]
                if hdr & self.BUSY:
                    return  # being written: it and what follows wait for the next consume
                n = hdr & ~(self.BUSY | self.DISCARD)
                cons += (n + 8 + 7) & ~7
                stop = not hdr & self.DISCARD and take(base + off + 8, n)
                cons_pos[0] = cons  # one store, after the record is read (see the class)
                if stop:
                    return

    def close(self) -> None:
        # the views first: a mapping that a view still points into cannot be closed (BufferError)
        self._view = None  # type: ignore[assignment]
        self._cons_pos.release()
        self._prod_pos.release()
        self.data.close()
        self.cons.close()


def _ring_reader(map_fd: int) -> _RingReader | None:
    """The ring read in place where that is safe (x86-64: see _RingReader); None elsewhere, or where
    it cannot be mapped (bcc's reader then)."""
    if os.uname().machine != "x86_64":
        return None
    info = ctypes.create_string_buffer(_MAP_INFO_LEN)
    attr = _InfoAttr(bpf_fd=map_fd, info_len=_MAP_INFO_LEN, info=ctypes.addressof(info))
    if _bpf(_BPF_OBJ_GET_INFO_BY_FD, attr) != 0:
        return None
    size = struct.unpack_from("<I", info.raw, 16)[0]  # bpf_map_info.max_entries: the ring's bytes
    try:
        return _RingReader(map_fd, size)
    except (OSError, ValueError):
        return None


DEVSET_BITS = 8  # IOFP_DEVSET_BITS (capture.bpf.c)


def devset_slot(dev: int) -> int:
    """A device number's slot in sync_devset, as dev_captured computes it (a 32-bit Fibonacci hash)."""
    return ((dev * 2654435761) & 0xFFFFFFFF) >> (32 - DEVSET_BITS)


def _kernel_at_least(major: int, minor: int) -> bool:
    try:
        have = tuple(int(x) for x in os.uname().release.split("-")[0].split(".")[:2])
    except ValueError:
        return False
    return have >= (major, minor)


def _req_dtype(req_t: type[ctypes.Structure], names: list[str]) -> np.dtype:
    """A numpy view of the ctypes struct bcc built for struct iofp_req (fields by their offsets)."""
    formats = []
    for n in names:
        ct = dict(req_t._fields_)[n]
        is_array = issubclass(ct, ctypes.Array)
        formats.append(np.dtype((np.bytes_, ctypes.sizeof(ct))) if is_array else np.dtype(ct))
    return np.dtype(
        {"names": names, "formats": formats, "offsets": [getattr(req_t, n).offset for n in names],
         "itemsize": ctypes.sizeof(req_t)}
    )  # fmt: skip


def _bpf(cmd: int, attr: ctypes.Structure) -> int:
    return _libc.syscall(_SYS_BPF, cmd, ctypes.byref(attr), ctypes.sizeof(attr))


def online_cpus() -> list[int]:
    text = Path("/sys/devices/system/cpu/online").read_text().strip()
    cpus: list[int] = []
    for part in text.split(","):
        lo, _, hi = part.partition("-")
        cpus.extend(range(int(lo), int(hi or lo) + 1))
    return cpus


@dataclass
class KernelOptions:
    devs: list[int] = field(default_factory=list)  # kernel dev_t's; empty = every device
    sync_devs: list[int] = field(default_factory=list)  # devs + their partitions and holders
    pid: int | None = None
    comm: str | None = None
    syscalls: bool = True
    # with syscalls, the data calls too (O_DIRECT reads and writes, libaio's iocbs): one record per
    # such I/O, and io_submit/io_getevents probes that cost ~1 us an I/O (BENCHMARKS); commits
    # (fsync family, O_DSYNC writes) are recorded either way
    data_calls: bool = True
    # with syscalls, the write family probed for writes on O_DSYNC files (commits): ~0.3 us more on every
    # write(2) on the machine (BENCHMARKS); on whenever data_calls is
    dsync_writes: bool = True
    io_batch: int = 256  # records per kernel batch (power of two)
    sync_batch: int = 64  # fsync-family and data calls: one of the latter per O_DIRECT I/O
    aio_max: int = 64  # iocbs looked at per io_submit and per io_getevents
    aio_inflight: int = 65536  # libaio iocbs between io_submit and their reaping
    flush_ms: int = 100  # a batch older than this is sent
    ringbuf_bytes: int = 32 << 20  # a power-of-two number of pages
    max_inflight: int = 65536  # hash-map entries, for requests whose table slot is taken
    slot_bits: int = 16  # direct-mapped in-flight table: 2**16 slots of 80 bytes (5 MiB)
    early_n: int = 16384  # completions of requests from before the capture kept (16 bytes each)
    # records buffered in user space between hand-overs: the capture's buffer plus one 100 ms tick
    # at ~1 M events/s, so that a buffer never has to grow (a copy) before it is handed over
    sink_bytes: int = 72 << 20
    # records (both kinds) held before the poller stops taking from the ring buffer for a hand-over:
    # a poller that fell behind (a busy machine) would otherwise take the whole ring at once, past
    # the sinks' size (each grown by doubling copies, kept in the rotation: +275 MiB beside two CPU
    # hogs at a 4 MiB --buffer); what it leaves waits in the ring, which drops and counts when full
    hand_over_bytes: int = 64 << 20
    # whose completions the tracefs witness records (bpf/witness.py): "agent" (PID 1's threads, the
    # context this VM's kernel hides from BPF), "all" (every task: tests) or "off"
    witness: str = "agent"
    unseen_every: int = 0  # tests only: the program ignores every Nth completion (fault injection)
    stop_pause_s: float = 0.0  # tests only: a wait after each block probe's detach (a busy host's slow stop)
    start_pause_s: float = 0.0  # tests only: a wait after each block probe's attach (a slow start)
    # how the syscall probes find an fd's file: "auto" (typed loads from files_struct's embedded table,
    # and probe reads if this kernel's verifier refuses them), "probe" (probe reads only)
    fd_lookup: str = "auto"
    # tests only: the typed loads point past files_struct's end, as a kernel whose layout differs from
    # the BTF the offsets came from would have them, so that the verifier refuses the typed variant;
    # and the typed block programs are loaded for a type that is no tracepoint's, so they are refused
    refuse_typed: bool = False
    # the programs that start and issue a request as BTF tracepoints (typed request reads, no probe
    # reads; the raw tracepoint variant where this kernel refuses them); False: raw tracepoints
    typed_rq: bool = True

    @property
    def write_calls(self) -> bool:
        """Whether the write(2) family is probed: for O_DSYNC commits, or for the data calls."""
        return self.syscalls and (self.dsync_writes or self.data_calls)


def comm_words(comm: str) -> tuple[int, int]:
    """The kernel's 16-byte, NUL-padded comm as two little-endian u64 words (truncated to 15)."""
    raw = comm.encode()[:15].ljust(16, b"\0")
    return struct.unpack("<QQ", raw)


def field_defines(btf: BTF, fields: dict[str, tuple[str, str, int | None]]) -> list[str]:
    """-DNAME=offset for each field; BTFError if one is absent, RuntimeError if its size is not the
    width the program reads (None: only its position is used)."""
    out = []
    for define, (struct_name, member, want) in fields.items():
        off, size = btf.member(struct_name, member)
        if want is not None and size != want:
            raise RuntimeError(f"kernel BTF: {struct_name}.{member} is {size} bytes, not {want}")
        out.append(f"-D{define}={off}")
    return out


def cflags(opts: KernelOptions, btf: BTF | None = None) -> list[str]:
    btf = btf or kernel_btf()
    out = field_defines(btf, KERNEL_FIELDS)
    # One probe read (a helper call, ~50 ns here) for the request fields each program reads,
    # when they lie close together
    spans = {
        "RQ": ("cmd_flags", "rq_flags", "__data_len", "__sector", "start_time_ns"),
        "START": ("q", "cmd_flags"),
    }
    for prefix, members in spans.items():
        span = [btf.member("request", m) for m in members]
        lo, hi = min(o for o, _ in span), max(o + n for o, n in span)
        if hi - lo <= _MAX_SPAN:
            out += [f"-DIOFP_{prefix}_SPAN_OFF={lo}", f"-DIOFP_{prefix}_SPAN_LEN={hi - lo}"]
    major, first_minor = btf.member("gendisk", "major")[0], btf.member("gendisk", "first_minor")[0]
    if first_minor != major + 4:
        raise RuntimeError("kernel BTF: gendisk.first_minor does not follow gendisk.major")
    ev = btf.enum_values(["REQ_OP_FLUSH", "__REQ_FAILFAST_DEV", "__REQ_PREFLUSH"])
    out += [
        f"-DIOFP_REQ_OP_MASK={(1 << ev['__REQ_FAILFAST_DEV']) - 1}",
        f"-DIOFP_REQ_OP_FLUSH={ev['REQ_OP_FLUSH']}",
        f"-DIOFP_REQ_PREFLUSH={1 << ev['__REQ_PREFLUSH']}U",
        f"-DIOFP_IO_REC_SIZE={IO_DTYPE.itemsize}",
        f"-DIOFP_SYNC_REC_SIZE={SYNC_DTYPE.itemsize}",
        f"-DIOFP_IO_BATCH={opts.io_batch}",
        f"-DIOFP_SYNC_BATCH={opts.sync_batch}",
        f"-DIOFP_FLUSH_NS={opts.flush_ms * 1_000_000}ULL",
        f"-DIOFP_MAX_INFLIGHT={opts.max_inflight}",
        f"-DIOFP_SLOT_BITS={opts.slot_bits}",
        f"-DIOFP_EARLY_N={opts.early_n}",
        f"-DIOFP_RINGBUF_PAGES={max(1, opts.ringbuf_bytes // os.sysconf('SC_PAGE_SIZE'))}",
    ]
    with contextlib.suppress(BTFError):  # an enum since v6.5; a #define (not in BTF) before
        out.append(f"-DIOFP_RQF_FLUSH_SEQ={1 << btf.enum_values(['__RQF_FLUSH_SEQ'])['__RQF_FLUSH_SEQ']}U")
    if has_io_start(btf):
        out.append("-DIOFP_HAVE_IO_START")
    if opts.typed_rq and all(btf.has_typedef(f"btf_trace_{tp}") for tp, _ in typed_probes(btf)):
        out.append(_TYPED_RQ)
    if _kernel_at_least(5, 5):  # BPF_F_MMAPABLE arrays: the in-flight table read in place
        out.append("-DIOFP_SLOTS_MMAP")
    if opts.devs:
        out.append("-DIOFP_FILTER_DEV")
        out += overlay_cflags(btf)
    if opts.pid is not None:
        out.append(f"-DIOFP_FILTER_PID={int(opts.pid)}")
    if opts.comm is not None:
        w0, w1 = comm_words(opts.comm)
        out += ["-DIOFP_FILTER_COMM", f"-DIOFP_COMM_W0={w0}ULL", f"-DIOFP_COMM_W1={w1}ULL"]
    if opts.syscalls:
        out += ["-DIOFP_SYSCALLS", f"-DIOFP_CALL_DSYNC_WRITE={SYNC_CALLS.index('dsync_write')}"]
        if opts.fd_lookup == "auto":
            out += _fd_array_cflags(btf, past_end=opts.refuse_typed)
        out += [f"-DIOFP_DATA_{c.upper()}={DATA_CALL_BASE + i}" for i, c in enumerate(DATA_CALLS)]
        from bpf.doctor import aio_tracepoints  # here: bpf.doctor imports this module

        if opts.data_calls:
            out.append("-DIOFP_DATA_CALLS")
        if opts.write_calls:
            out.append("-DIOFP_WRITE_CALLS")
        if opts.data_calls and all(aio_tracepoints()):  # a kernel built without CONFIG_AIO has no io_submit
            out += ["-DIOFP_AIO", f"-DIOFP_AIO_MAX={opts.aio_max}"]
            out += _reap_arg_cflags(btf)
            out.append(f"-DIOFP_AIO_MAX_INFLIGHT={opts.aio_inflight}")
    if opts.unseen_every:
        out.append(f"-DIOFP_TEST_UNSEEN_EVERY={int(opts.unseen_every)}")
    out.append(f"-I{SRC.parent}")
    return out


_TYPED_FD = "-DIOFP_OFF_FILES_FD_ARRAY="


def _fd_array_cflags(btf: BTF, past_end: bool = False) -> list[str]:
    """Where files_struct's embedded table of the first 64 fds is, so that the syscall probes load an
    fd's file as a BTF pointer (plain loads, no probe reads) while a process's table is that one;
    [] (every lookup through fdt->fd, probe reads) if the kernel's is not 64 pointers there.
    past_end (tests): the table placed at the struct's end, where the verifier refuses every load."""
    try:
        off, size = btf.member("files_struct", "fd_array")
    except BTFError:
        return []
    if size != 64 * 8:
        return []
    if past_end:
        off = btf.sizeof(btf.struct_id("files_struct"))
    return [f"{_TYPED_FD}{off}", f"-DIOFP_FD_ARRAY_N={size // 8}"]


_TYPED_RQ = "-DIOFP_TYPED_RQ"


def typed_probes(btf: BTF) -> list[tuple[str, str]]:
    """(tracepoint, program) of the block programs loaded as BTF tracepoints under IOFP_TYPED_RQ: those
    that read the request's fields (the others only key their tables by it)."""
    start = [p for p in block_probes(has_io_start(btf)) if p[1] in ("iofp_io_start", "iofp_rq_insert")]
    return [*start, ("block_rq_issue", "iofp_rq_issue")]


def load_typed(b: Any, fn: str, tp: str, btf_id: int) -> int:
    """Program `fn` of the compiled object `b` loaded as a BTF tracepoint on `tp` (its typedef's BTF id
    `btf_id`): its fd. bcc loads tracing programs only as fentry/fexit/LSM, so this is the bpf(2) call
    itself, on the instructions bcc compiled (their map references already the maps' fds). OSError
    with the verifier's reason if refused."""
    insns = b.dump_func(fn.encode())
    code = ctypes.create_string_buffer(insns, len(insns))
    log = ctypes.create_string_buffer(1 << 16)
    gpl = ctypes.create_string_buffer(b"GPL")
    attr = _ProgLoadAttr(
        prog_type=_BPF_PROG_TYPE_TRACING, insn_cnt=len(insns) // 8, insns=ctypes.addressof(code),
        license=ctypes.addressof(gpl), prog_name=fn.encode()[:15], expected_attach_type=_BPF_TRACE_RAW_TP,
        attach_btf_id=btf_id,
    )  # fmt: skip
    fd = _bpf(_BPF_PROG_LOAD, attr)
    if fd < 0:  # again with the verifier's log, for the reason
        err = ctypes.get_errno()
        attr.log_level, attr.log_size, attr.log_buf = 1, len(log), ctypes.addressof(log)
        fd = _bpf(_BPF_PROG_LOAD, attr)
        if fd < 0:
            text = log.value.decode(errors="replace")
            raise OSError(err, f"{fn} as a BTF tracepoint: {_verifier_reason(text)}")
    return fd


def attach_typed(prog_fd: int) -> int:
    """Attach a BTF tracepoint program (to the tracepoint it was loaded for): the link's fd, which
    detaches it when closed."""
    attr = _RawTpOpenAttr(name=0, prog_fd=prog_fd)
    fd = _bpf(_BPF_RAW_TRACEPOINT_OPEN, attr)
    if fd < 0:
        err = ctypes.get_errno()
        raise OSError(err, f"cannot attach a BTF tracepoint: {os.strerror(err)}")
    return fd


def probe_read_cflags(flags: list[str]) -> list[str]:
    """The same program with every fd looked up through probe reads (no typed loads)."""
    return [f for f in flags if not f.startswith((_TYPED_FD, "-DIOFP_FD_ARRAY_N="))]


def _bpf_class() -> Any:
    """bcc's BPF, which loads and attaches the syscall TRACEPOINT_PROBEs as it is constructed; when
    one of them is refused, those attached before it are detached (bcc would keep them attached,
    writing to maps nobody reads, until the process exits: its atexit holds the object)."""
    from bcc import BPF

    class _BPF(BPF):  # type: ignore[misc]
        def _trace_autoload(self) -> None:
            try:
                super()._trace_autoload()
            except Exception:
                self.cleanup()
                raise

    return _BPF


def _verifier_reason(log: str) -> str:
    """The verifier's own reason from the log bcc printed for a refused program (its last line that
    is not the bcc tail or the instruction count), or the whole log's last line."""
    lines = [ln.strip() for ln in log.splitlines() if ln.strip()]
    skip = ("processed ", "HINT:", "Traceback", "Exception", "bcc", "verification time")
    for ln in reversed(lines):
        if not ln.startswith(skip) and not ln[:1].isdigit():
            return ln[:160]
    return lines[-1][:160] if lines else "no verifier log"


_NO_FD_ARRAY = "no 64-fd table in this kernel's BTF"


def load_program(flags: list[str], untyped_why: str = _NO_FD_ARRAY) -> tuple[Any, str]:
    """Compile and load the program (bcc attaches the syscall probes as it loads them): (the BPF object,
    how its syscall probes find an fd's file: "btf" or "probe_read", with the reason where the typed
    variant was refused). The typed variant is tried first; where this kernel's verifier refuses it (a
    layout other than the BTF's, a kernel that types the loads differently) the program is compiled
    again with probe reads only, said in one line on stderr. The verifier's log, which bcc prints,
    is kept out of stderr on the first try and only its reason shown."""
    bpf_class = _bpf_class()
    typed = any(f.startswith(_TYPED_FD) for f in flags)
    if not typed:
        return bpf_class(src_file=str(SRC).encode(), cflags=flags), f"probe_read: {untyped_why}"
    import tempfile

    saved = os.dup(2)
    with tempfile.TemporaryFile() as log:
        os.dup2(log.fileno(), 2)
        try:
            b, err = bpf_class(src_file=str(SRC).encode(), cflags=flags), None
        except Exception as e:  # bcc raises Exception: compile or load failed
            # its text only: the exception's traceback holds the caller's frame, and with it the
            # in-flight table's mapping, which close() could then not unmap
            b, err = None, str(e)
        finally:
            os.dup2(saved, 2)
            os.close(saved)
        log.seek(0)
        text = log.read().decode(errors="replace")
    if b is not None:
        if text:  # the compiler's warnings, if any: shown as bcc would have
            sys.stderr.write(text)
        return b, "btf"
    reason = f"{_verifier_reason(text)} ({err[:120]})"
    print(
        f"iofp: the typed fd lookups were refused by this kernel ({reason}); "
        "the syscall probes read each fd's file with probe reads (slower)",
        file=sys.stderr,
    )
    b = bpf_class(src_file=str(SRC).encode(), cflags=probe_read_cflags(flags))
    return b, f"probe_read: typed refused: {reason}"


def _reap_arg_cflags(btf: BTF | None) -> list[str]:
    """Where a syscall's 4th argument is kept in the saved user registers (x86-64: r10), so that
    io_getevents' exit reads its io_event array there (bpf_task_pt_regs, v5.15+) without an entry
    probe; [] elsewhere (the entry probe keeps it per thread)."""
    if btf is None or not _kernel_at_least(5, 15):
        return []
    try:
        return field_defines(btf, {"IOFP_OFF_PT_REGS_ARG4": ("pt_regs", "r10", 8)})
    except (BTFError, RuntimeError):
        return []


def overlay_cflags(base: BTF | None = None) -> list[str]:
    """Offsets for following an overlayfs file to its upper layer; none (overlay files then count as
    on no captured device) when the kernel has no overlayfs BTF or it changed shape."""
    btf = btf_with_struct("ovl_inode", "overlay", base)
    if btf is None:
        return []
    try:
        return field_defines(btf, OVERLAY_FIELDS)
    except (BTFError, RuntimeError):  # absent, or not the width the program reads
        return []


def has_io_start(btf: BTF) -> bool:
    """block_io_start (v6.5, 5a80bd075f3b) exists iff the kernel has its raw tracepoint typedef."""
    return btf.has_typedef("btf_trace_block_io_start")


def block_probes(have_io_start: bool) -> list[tuple[str, str]]:
    """(raw tracepoint, program) the capture attaches, in attach order; it detaches them in the
    reverse order. A request meets them the other way round (start, issue, requeue and issue again,
    complete), so a request is tracked only while the programs that end it are attached: were
    block_rq_complete detached first, a request completing before block_io_start was, its pointer
    taken by a new request, would be sent as a completion the program missed (send_lost), and the
    witness, which sees only the VM agent's completions, has no time for it: `lost_completions` on
    a host busy enough to stretch the stop (a 50 ms stretch: ~140 of them at 2,000 IOPS). Requeue
    goes before issue: a re-issue whose requeue was not seen keeps the request in flight once.
    block_rq_complete first at the start: a request it meets untracked was issued before the
    start. Not so at the stop, once block_rq_issue is detached: KernelCapture.stop says so to the
    program first (`issue_off`), so that such a completion is not taken for one from before."""
    return [
        ("block_rq_complete", "iofp_rq_complete"),
        ("block_rq_merge", "iofp_rq_merge"),
        ("block_rq_issue", "iofp_rq_issue"),
        ("block_rq_requeue", "iofp_rq_requeue"),
        ("block_io_start", "iofp_io_start") if have_io_start else ("block_rq_insert", "iofp_rq_insert"),
    ]


def test_compile() -> None:
    """Compile and load (verify) every block program and the flush program without attaching
    anything. The syscall programs are left out: bcc attaches those as it loads them."""
    from bcc import BPF

    btf = kernel_btf()
    flags = cflags(KernelOptions(syscalls=False), btf)
    typed = {fn: tp for tp, fn in typed_probes(btf)} if _TYPED_RQ in flags else {}
    b = BPF(src_file=str(SRC).encode(), cflags=flags)
    try:
        for fn in [fn for _, fn in block_probes(has_io_start(btf))] + ["iofp_flush"]:
            if fn in typed:
                os.close(load_typed(b, fn, typed[fn], btf.typedef_id(f"btf_trace_{typed[fn]}")))
            else:
                b.load_func(fn.encode(), BPF.RAW_TRACEPOINT)
    finally:
        b.cleanup()


class KernelCapture:
    """The loaded program: attach, poll, flush, drain, count. Not thread-safe; one owner thread."""

    def __init__(self, opts: KernelOptions) -> None:
        from bcc import BPF

        self.opts = opts
        self._BPF = BPF
        btf = kernel_btf()
        self.have_io_start = has_io_start(btf)
        # Kept, rather than the parsed BTF (~10^5 Python objects), which the capture lets go of
        self._prog_info = prog_info_layout(btf)
        # TRACEPOINT_PROBEs (the syscalls) attach as bcc loads them; block probes attach in start()
        # how the syscall probes find an fd's file ("btf", "probe_read: why"); None without them
        self.fd_lookup: str | None
        why = "asked (fd_lookup=probe)" if opts.fd_lookup == "probe" else _NO_FD_ARRAY
        flags = cflags(opts, btf)
        self.bpf, self.fd_lookup = load_program(flags, why)
        if self.fd_lookup != "btf":
            flags = probe_read_cflags(flags)  # what it was compiled with
        if not opts.syscalls:
            self.fd_lookup = None
        # how the request's start and issue programs read it ("btf", "probe_read: why"); their fds
        self.block_reads, self._typed = self._load_typed(flags, btf)
        self._links: dict[str, int] = {}  # tracepoint -> the link of its BTF tracepoint program
        if opts.devs:
            devs = self.bpf["devs"]
            for d in opts.devs:
                devs[devs.Key(d)] = devs.Leaf(1)
            if opts.syscalls:
                # a filesystem's device may be a partition or a dm/md device on top of the disk
                sync_devs, devset = self.bpf["sync_devs"], self.bpf["sync_devset"]
                for d in opts.sync_devs or opts.devs:
                    sync_devs[sync_devs.Key(d)] = sync_devs.Leaf(1)
                    i = devset_slot(d)  # the first device to a slot keeps it; the others stay in the hash
                    if devset[devset.Key(i)].value == 0:
                        devset[devset.Key(i)] = devset.Leaf(d)
        # two buffers go round between poller and writer
        self._io = _Sink(IO_DTYPE, opts.sink_bytes, prefault=2)
        # sized as the I/O sink (its pages touched only as records arrive): the data calls, one per
        # O_DIRECT I/O, would otherwise grow it by doubling copies, each kept in the rotation
        self._sync = _Sink(SYNC_DTYPE, opts.sink_bytes)
        # records received per kind: checked against the kernel's count of records handed over
        self.received = {KIND_IO: 0, KIND_SYNC: 0}
        self.drained = {KIND_IO: 0, KIND_SYNC: 0}  # read from the batch maps at the end
        self._io_bytes, self._tallied = 0, 0  # bytes of I/O in the records received; records counted
        self._bounded = True  # consume() stops at hand_over_bytes (not once the probes are detached)
        self.more = False  # consume() stopped there: the ring holds more
        # the ring read in place (_RingReader); through bcc's callback per record where it is not
        self._ring = _ring_reader(self.bpf["events"].map_fd)
        if self._ring is None:
            self.bpf["events"].open_ring_buffer(self._on_batch)
        self._flush_fn = self.bpf.load_func(b"iofp_flush", BPF.RAW_TRACEPOINT)
        # the in-flight table, mapped read-only where it was made mappable (cflags): read every second
        slots = self.bpf["slots"]
        # (the mapping holds the map, 5 MiB, until it is unmapped: close() does, whoever keeps this object)
        mapped = _map_array(slots.map_fd, len(slots), ctypes.sizeof(slots.Leaf))
        self._slots_map, self._slots_view = mapped if mapped is not None else (None, None)
        self._cpus = online_cpus()
        self._ncpus: int | None = None  # possible CPUs: a per-CPU map's values per key
        self._attached: list[str] = []
        self._flush_ok = True
        self._early: tuple[int, dict[int, np.ndarray]] = (0, {})  # entries read, and their times per device
        self.witness: CompletionWitness | None = None
        self.witness_error: str | None = None  # why there is no witness, when there is none
        self._checked = 0  # records looked at for unseen completions
        self.unseen = {"received": 0, "filled": 0, "at_end": 0}
        self.unseen_fixes: list[tuple[int, int, int]] = []  # (dev, completed, found out) of those filled
        self._witness_checked = 0  # witness events (by count) looked for among the tracked
        self._pending = np.empty(0, EVENTS)  # witness events whose request was still tracked when last looked

    def _load_typed(self, flags: list[str], btf: BTF) -> tuple[str, dict[str, int]]:
        """The typed block programs (of the object compiled with `flags`) loaded as BTF tracepoints;
        where this kernel refuses one, said in one line on stderr, the program is compiled again
        without them (raw tracepoints, probe reads)."""
        if _TYPED_RQ not in flags:
            return "probe_read: " + ("asked (typed_rq=False)" if not self.opts.typed_rq else
                                     "no BTF tracepoint types in this kernel"), {}  # fmt: skip
        fds: dict[str, int] = {}
        try:
            for tp, fn in typed_probes(btf):
                tid = btf.typedef_id(f"btf_trace_{tp}")
                if self.opts.refuse_typed:  # tests: a type that is no tracepoint's, as a kernel refusing them
                    tid = btf.struct_id("request")
                fds[fn] = load_typed(self.bpf, fn, tp, tid)
            return "btf", fds
        except (OSError, BTFError) as e:
            for fd in fds.values():
                os.close(fd)
            reason = str(e.args[-1] if isinstance(e, OSError) else e)[:200]
        print(f"iofp: the typed request reads were refused by this kernel ({reason}); the block "
              "programs read each request with probe reads (slower)", file=sys.stderr)  # fmt: skip
        self.bpf.cleanup()  # its syscall probes are attached: the program compiled again attaches its own
        self.bpf = _bpf_class()(src_file=str(SRC).encode(), cflags=[f for f in flags if f != _TYPED_RQ])
        return f"probe_read: typed refused: {reason}", {}

    # ---- lifecycle ------------------------------------------------------------------------

    def probes(self) -> list[tuple[str, str]]:
        return block_probes(self.have_io_start)

    def start(self) -> tuple[int, int]:
        """Attach the block probes; returns (monotonic ns, wall-clock ns) of the capture's start."""
        self._start_witness()
        mono, wall = time.monotonic_ns(), time.time_ns()
        for tp, fn in self.probes():
            if fn in self._typed:
                self._links[tp] = attach_typed(self._typed[fn])
            else:
                self.bpf.attach_raw_tracepoint(tp=tp.encode(), fn_name=fn.encode())
            self._attached.append(tp)
            if self.opts.start_pause_s:
                time.sleep(self.opts.start_pause_s)
        return mono, wall

    def stop(self) -> int:
        """Detach every probe, then hand over what the per-CPU batches still hold. Returns the
        monotonic ns at which the block probes were detached: the capture's end (detaching the
        ~20 syscall tracepoints after them takes a second or more on a busy machine). The block
        probes go in the reverse of their attach order, block_rq_complete last (block_probes).
        Before block_rq_issue goes, the program is told (`issue_off`): a request issued after it is
        not tracked, and its completion, still seen, was counted as one from before the start, which
        added one to every row's `inflight` (+50 on all 983 rows of a CI run beside a CPU hog)."""
        for tp in reversed(self._attached):
            if tp == "block_rq_issue":
                off = self.bpf["issue_off"]
                off[off.Key(0)] = off.Leaf(1)
            if tp in self._links:
                os.close(self._links.pop(tp))
            else:
                self.bpf.detach_raw_tracepoint(tp=tp.encode())
            if self.opts.stop_pause_s:
                time.sleep(self.opts.stop_pause_s)
        self._attached.clear()
        stopped = time.monotonic_ns()
        for tp in list(self.bpf.tracepoint_fds):
            self.bpf.detach_tracepoint(tp)
        # A program run that began before the detach may still be appending on another CPU; give
        # it time to finish, send every batch, then read what a flush that backed off (busy) left.
        time.sleep(0.05)
        self._bounded = False  # all of it now: the ring holds what was sent before the detach, no more
        self.flush(force=True)
        self.consume()
        self._drain_maps()
        self._check_unseen()
        self._unseen_at_end(stopped)
        return stopped

    def close(self) -> None:
        if self.witness is not None:
            self.witness.close()
        # the view first: a mapping a numpy array still points into cannot be closed (BufferError)
        self._slots_view = None
        if self._slots_map is not None:
            self._slots_map.close()
            self._slots_map = None
        if self._ring is not None:
            self._ring.close()
            self._ring = None
        for fd in [*self._links.values(), *self._typed.values()]:
            os.close(fd)
        self._links, self._typed = {}, {}
        self.bpf.cleanup()

    def _start_witness(self) -> None:
        if self.opts.witness == "off":
            self.witness_error = "turned off"
            return
        pids = None if self.opts.witness == "all" else agent_threads()
        try:
            self.witness = CompletionWitness(self.opts.devs, pids)
        except OSError as e:  # no tracefs, or no instances: unseen completions stay without latency
            self.witness_error = f"no tracefs instance: {e}"

    # ---- data -----------------------------------------------------------------------------

    def _on_batch(self, _ctx: Any, data: int, size: int) -> None:
        hdr = _BatchHdr.from_address(data)
        kind, count = hdr.kind, hdr.count
        if kind == KIND_IO:
            self._io.append(data + _HDR_SIZE, count * IO_DTYPE.itemsize)
        elif kind == KIND_SYNC:
            self._sync.append(data + _HDR_SIZE, count * SYNC_DTYPE.itemsize)
        else:
            return 0
        self.received[kind] += count
        if self._bounded and self._io.used + self._sync.used >= self.opts.hand_over_bytes:
            self.more = True
            return -1  # libbpf stops consuming after this record (it is taken): the rest stays
        return 0

    @property
    def pending_bytes(self) -> int:
        return self._io.used + self._sync.used

    def ring_bytes(self) -> int | None:
        """Bytes the kernel's ring buffer holds that have not been consumed (records being written
        included); None where it is not mapped."""
        return self._ring.held() if self._ring is not None else None

    def _take(self, data: int, size: int) -> bool:
        return self._on_batch(None, data, size) != 0

    def can_wait(self) -> bool:
        """Whether a polling tick may leave the ring as it is (no flush, no drain, no witness poll)
        until the next hand-over: the ring holds under an eighth of its size, and the witness, if
        any, records only the VM agent's few completions (with --witness all its 1 MiB per CPU would
        not hold a second of a loaded device's)."""
        if self.witness is not None and self.opts.witness == "all":
            return False
        held = self.ring_bytes()
        return held is not None and held < self.opts.ringbuf_bytes // 8

    def consume(self) -> bool:
        """Take what the ring holds (the kernel sends without wakeups; see IOFP_RB_FLAGS), up to
        hand_over_bytes held (True: it stopped there, and the ring holds more; hand over), then
        what the witness recorded: every completion before the last record received is in it by
        then (a missed one, before the program found it out and sent the request; one that
        completed before a row was issued, before that row's own completion)."""
        self.more = False
        if self._ring is not None:
            self._ring.consume(self._take)
        else:
            self.bpf.ring_buffer_consume()
        if self.witness is not None:
            self.witness.poll()
        self._check_unseen()
        return self.more

    def _check_unseen(self) -> None:
        """Fill in the completion time of the requests just received whose completion the program
        never saw, from the witness; those it has not recorded stay marked (no latency)."""
        n = self._io.used // IO_DTYPE.itemsize
        if n <= self._checked:
            return
        new = self._io.buf[self._checked * IO_DTYPE.itemsize : n * IO_DTYPE.itemsize].view(IO_DTYPE)
        self._checked = n
        if not np.any(new["complete_ns"] >> np.uint64(63)):
            return
        self.unseen["received"] += int(np.count_nonzero(new["complete_ns"] >> np.uint64(63)))
        fixes = fill_unseen(new, self.witness)
        self.unseen["filled"] += len(fixes)
        self.unseen_fixes.extend(fixes)

    def take(self) -> tuple[np.ndarray, np.ndarray]:
        """Everything received since the last take, as record arrays."""
        self._check_unseen()
        self._checked = 0
        self._tally()
        self._tallied = 0
        return self._io.take(), self._sync.take()

    def io_bytes(self) -> int:
        """Bytes of I/O the records received so far describe (the live display's MB/s: the
        writer's own count moves only when it writes a file)."""
        self._tally()
        return self._io_bytes

    def _tally(self) -> None:
        n = self._io.used // IO_DTYPE.itemsize
        if n > self._tallied:
            new = self._io.buf[self._tallied * IO_DTYPE.itemsize : n * IO_DTYPE.itemsize].view(IO_DTYPE)
            self._io_bytes += int(new["bytes"].sum(dtype=np.int64))
            self._tallied = n

    def release(self, io: np.ndarray, sync: np.ndarray) -> None:
        """The arrays from take() are no longer used (thread-safe)."""
        self._io.release(io)
        self._sync.release(sync)

    def flush(self, force: bool = False) -> None:
        """Ask every CPU to send its batch if it is older than flush_ms (or at all, if force)."""
        if not self._flush_ok:
            return
        arg = ctypes.c_uint64(1 if force else 0)
        for cpu in self._cpus:
            attr = _TestRunAttr(
                prog_fd=self._flush_fn.fd,
                ctx_size_in=8,
                ctx_in=ctypes.addressof(arg),
                flags=_BPF_F_TEST_RUN_ON_CPU,
                cpu=cpu,
            )
            if _bpf(_BPF_PROG_TEST_RUN, attr) != 0:
                # No raw_tp test runs here (before v5.10): batches are sent when full or aged on
                # the next event, and drained from the maps once the probes are detached.
                self._flush_ok = False
                return

    def _drain_maps(self) -> None:
        """Read the per-CPU batches directly; only safe once nothing is attached."""
        for name, kind, dtype in (("io_batch", KIND_IO, IO_DTYPE), ("sync_batch", KIND_SYNC, SYNC_DTYPE)):
            table = self.bpf[name]
            for leaf in table.getvalue(table.Key(0)):
                raw = bytes(leaf)
                _, count, _ = struct.unpack_from("<IIQ", raw)
                if not count:
                    continue
                body = np.frombuffer(raw, np.uint8, count * dtype.itemsize, BATCH_HDR.itemsize)
                (self._io if kind == KIND_IO else self._sync).append(body.ctypes.data, body.nbytes)
                self.received[kind] += count
                self.drained[kind] += count

    # ---- accounting -----------------------------------------------------------------------

    def counters(self) -> dict[str, int]:
        """The program's counters, summed over the CPUs: one batch look-up of the per-CPU array (each
        value 8 bytes a possible CPU), where bcc's look-up per counter took 17 syscalls a second."""
        table = self.bpf["counters"]
        if self._ncpus is None:
            self._ncpus = len(table.getvalue(table.Key(0)))
        raw = _read_array(table.map_fd, len(COUNTERS), 8 * self._ncpus)
        if raw is not None and len(raw) == 8 * self._ncpus * len(COUNTERS):
            sums = raw.view("<u8").reshape(len(COUNTERS), self._ncpus).sum(axis=1)
            return {name: int(v) for name, v in zip(COUNTERS, sums, strict=True)}
        return {name: int(sum(table.getvalue(table.Key(i)))) for i, name in enumerate(COUNTERS)}

    def early_completions(self) -> dict[int, np.ndarray]:
        """When the requests issued before the capture completed (monotonic ns, sorted), per device."""
        count = self.bpf["early_n"]
        n = min(int(count[count.Key(0)].value), self.opts.early_n)
        if n != self._early[0]:  # the table only grows: read it again only when it has
            table = self.bpf["early"]
            raw = _read_array(table.map_fd, n, ctypes.sizeof(table.Leaf))
            if raw is None:
                raw = np.frombuffer(b"".join(bytes(table[table.Key(i)]) for i in range(n)), np.uint8)
            recs = raw.view(_EARLY_DTYPE)
            recs = recs[recs["done_ns"] != 0]  # 0: still being written; read again next time
            by_dev = {
                int(d): np.sort(recs["done_ns"][recs["dev"] == d].astype(np.int64))
                for d in np.unique(recs["dev"])
            }
            self._early = (len(recs) if len(recs) == n else -1, by_dev)
        return self._early[1]

    def _tracked(self) -> np.ndarray:
        """The requests the program still tracks as issued (issue_ns != 0), as iofp_req rows."""
        slots = self.bpf["slots"]
        leaf = slots.Leaf
        req_t = type(leaf().r)
        names = [n for n, _ in req_t._fields_ if not n.startswith("_")]
        dtype = _req_dtype(req_t, names)
        raw = self._slots_view  # read in place (no copy, no syscall) where the kernel maps it
        if raw is None:  # the whole table in one syscall (bcc's per-slot walk took 0.3-0.5 s)
            raw = _read_array(slots.map_fd, len(slots), ctypes.sizeof(leaf))
        if raw is not None:
            view = raw.view(np.dtype({"names": ["rq", "r"], "formats": ["<u8", dtype],
                                      "offsets": [leaf.rq.offset, leaf.r.offset],
                                      "itemsize": ctypes.sizeof(leaf)}))  # fmt: skip
            in_slots = view["r"][(view["rq"] != 0) & (view["r"]["issue_ns"] != 0)]
        else:
            walked = b"".join(bytes(v.r) for _, v in slots.items() if v.rq and v.r.issue_ns)
            in_slots = np.frombuffer(walked, dtype)
        in_map = [bytes(v) for _, v in self.bpf["reqs"].items() if v.issue_ns]
        extra = np.frombuffer(b"".join(in_map), dtype) if in_map else np.empty(0, dtype)
        return np.concatenate([in_slots, extra])

    def _unseen_at_end(self, stopped_ns: int) -> None:
        """Requests still marked issued when the probes were detached whose completion the witness
        recorded before that: completions the program never saw and no later request revealed (the
        pointer was not used again). Recorded like any other, with the witness's time."""
        if self.witness is None:
            return
        self.witness.poll()
        left = self._tracked()
        recs = np.zeros(len(left), IO_DTYPE)
        for name in set(IO_DTYPE.names) & set(left.dtype.names):
            recs[name] = left[name]
        recs["complete_ns"] = np.uint64(stopped_ns) | UNSEEN
        fixes = fill_unseen(recs, self.witness)
        recs = recs[~(recs["complete_ns"] >> np.uint64(63)).astype(bool)]
        if self.opts.pid is not None:
            recs = recs[recs["pid"] == self.opts.pid]
        if self.opts.comm is not None:
            recs = recs[recs["comm"] == self.opts.comm.encode()[:15]]
        self.unseen["at_end"] = len(fixes)
        self.unseen_fixes.extend(fixes)
        if len(recs):
            self._io.append(recs.ctypes.data, recs.nbytes)
            self._checked += len(recs)

    def hand_over(self) -> tuple[np.ndarray, np.ndarray, list[tuple[int, int, int]]]:
        """Everything received up to now (take()), with the in-flight fixes for it: (dev, completed,
        found out) of every completion the program missed that the witness recorded, found out or
        not yet (until found out, the kernel counts each in flight).

        The requests still tracked as issued are read first, at `snap`: a miss the program finds out
        about after that has its record received in the drain that follows; one it has not is among
        them. A request issued after `snap` is in neither, so when the witness recorded a completion
        after `snap`, the rows that completed after it wait for the next hand-over."""
        snap = time.monotonic_ns()
        tracked = None
        if self.witness is not None:
            # The table (2^16 slots) is read only when there is a witness event to look for in it:
            # the agent's few completions leave most intervals without one (~1 ms of CPU a second)
            self.witness.poll()
            if len(self._pending) or self.witness.recorded > self._witness_checked:
                tracked = self._tracked()
        self.flush(force=True)
        self.consume()
        io, sync = self.take()
        fixes = self.unseen_fixes[-4096:]
        if self.witness is None:
            return io, sync, fixes
        new = self.witness.since(self._witness_checked)
        self._witness_checked = self.witness.recorded
        events = np.concatenate([self._pending, new])
        if not len(events):
            return io, sync, fixes
        if tracked is None:
            # recorded between the poll above and the drain's: looked for at the next hand-over, with
            # the rows that completed after `snap`, as a late event's are
            self._pending = events
            return self._keep_for_later(io, snap), sync, fixes
        pending = undetected(events, tracked)
        late = events["ts"] > snap
        self._pending = events[np.isin(events["ts"], [ts for _, ts, _ in pending]) | late]
        found = {(d, done) for d, done, _ in fixes}
        fixes = fixes + [f for f in pending if f[:2] not in found]
        if late.any():
            io = self._keep_for_later(io, snap)
        return io, sync, fixes

    def _keep_for_later(self, io: np.ndarray, snap: int) -> np.ndarray:
        """The records that completed up to `snap`; the others go back for the next take()."""
        late = (io["complete_ns"] & ~UNSEEN) > np.uint64(snap)
        if not late.any():
            return io
        now, later = io[~late], io[late]  # copies: `io`'s buffer can go back at once
        self._io.append(later.ctypes.data, later.nbytes)
        self._checked += len(later)
        self._tallied += len(later)
        self._io.release(io)
        return now

    def inflight_left(self) -> int:
        """Requests issued during the capture that had not completed when it stopped."""
        return len(self._tracked()) - self.unseen["at_end"]

    def recursion_misses(self) -> int:
        """Program runs the kernel skipped because the program was already running on that CPU
        (e.g. a completion interrupt arriving inside our own handler): events lost before we saw them."""
        return recursion_misses([fn.fd for fn in self.bpf.funcs.values()], self._prog_info)


def prog_info_layout(btf: BTF) -> tuple[int, int, int] | None:
    """(offset, size of recursion_misses, size) of struct bpf_prog_info; None before v5.12."""
    try:
        off, size = btf.member("bpf_prog_info", "recursion_misses")
        return off, size, btf.sizeof(btf.struct_id("bpf_prog_info"))
    except BTFError:
        return None


def recursion_misses(prog_fds: list[int], layout: tuple[int, int, int] | None) -> int:
    """The kernel's count of runs it skipped, summed over the programs (BPF_OBJ_GET_INFO_BY_FD)."""
    if layout is None:
        return 0
    off, size, info_len = layout
    total = 0
    for fd in prog_fds:
        buf = ctypes.create_string_buffer(info_len)
        attr = _InfoAttr(bpf_fd=fd, info_len=info_len, info=ctypes.addressof(buf))
        if _bpf(_BPF_OBJ_GET_INFO_BY_FD, attr) == 0 and size == 8:
            total += struct.unpack_from("<Q", buf.raw, off)[0]
    return total
