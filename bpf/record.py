"""The kernel's records as numpy dtypes (mirroring bpf/iofp_record.h), and their conversion to the
trace contract's Arrow tables, a whole batch at a time.

Opcodes and flag bits are not hard-coded: they are enumerators of the running kernel (`enum req_op`,
`enum req_flag_bits`) read from BTF, because their values have changed between kernel versions.
"""

from __future__ import annotations

import contextlib
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from bpf.btf import BTF, BTFError
from iofp.contract import CALL_OPS, CALLS_SCHEMA, DATA_CALLS, IO_SCHEMA, OPS, SYNC_CALLS, SYNC_SCHEMA

HEADER = Path(__file__).with_name("iofp_record.h")

IO_DTYPE = np.dtype(
    [
        ("issue_ns", "<u8"),
        ("queue_ns", "<u8"),
        ("complete_ns", "<u8"),
        ("sector", "<u8"),
        ("bytes", "<u4"),
        ("cmd_flags", "<u4"),
        ("dev", "<u4"),
        ("pid", "<u4"),
        ("inflight", "<i4"),
        ("error", "<i2"),
        ("_pad", "<u2"),
        ("comm", "S16"),
    ]
)

SYNC_DTYPE = np.dtype(
    [
        ("enter_ns", "<u8"),
        ("exit_ns", "<u8"),
        ("ret", "<i8"),
        ("offset", "<u8"),
        ("pid", "<u4"),
        ("tid", "<u4"),
        ("fd", "<i4"),
        ("call", "<u4"),
        ("dev", "<u4"),
        ("_pad", "<u4"),
        ("comm", "S16"),
    ]
)

# A syscall record's `call`: an index into SYNC_CALLS, or DATA_CALL_BASE + an index into DATA_CALLS
DATA_CALL_BASE = 64
NO_OFFSET = np.uint64(0xFFFFFFFFFFFFFFFF)  # IOFP_NO_OFFSET: the call named no offset
_CALL_WRITES = np.array(["write" in c for c in DATA_CALLS])  # pwrite64, aio_write, ...: op write

BATCH_HDR = np.dtype([("kind", "<u4"), ("count", "<u4"), ("first_ns", "<u8")])
KIND_IO, KIND_SYNC = 1, 2

# enum iofp_counter, in order
COUNTERS = (
    "io_records",
    "sync_records",
    "lost_io_ringbuf",
    "lost_io_map_full",
    "lost_sync_ringbuf",
    "lost_sync_map_full",
    "unmatched_completions",
    "completed_unissued",
    "flush_busy",
    "completions",
    "unseen_completions",
    "sync_other_device",
    "flush_seq_final",
    "early_overflow",
    "lost_aio_map_full",
    "lost_aio_batch",
    "sync_no_device",
    "completed_after_stop",
)

MINORBITS = 20  # kernel dev_t: major << 20 | minor (include/linux/kdev_t.h, stable)


def kdev(major: int, minor: int) -> int:
    return (major << MINORBITS) | minor


@dataclass(frozen=True)
class ReqBits:
    """Where the kernel keeps the op and the flags in `cmd_flags` (from BTF enums)."""

    op_mask: int
    ops: dict[int, str]  # opcode -> contract op; opcodes absent here are not block data I/O
    sync: int
    meta: int
    fua: int
    preflush: int
    rahead: int
    atomic: int | None
    rwbs_op: dict[int, str]  # opcode -> the letters blk_fill_rwbs prints

    @classmethod
    def from_btf(cls, btf: BTF) -> ReqBits:
        v = btf.enum_values(
            [
                "REQ_OP_READ",
                "REQ_OP_WRITE",
                "REQ_OP_FLUSH",
                "REQ_OP_DISCARD",
                "REQ_OP_SECURE_ERASE",
                "REQ_OP_WRITE_ZEROES",
                "__REQ_FAILFAST_DEV",
                "__REQ_SYNC",
                "__REQ_META",
                "__REQ_FUA",
                "__REQ_PREFLUSH",
                "__REQ_RAHEAD",
            ]
        )
        optional = {}
        for name in ("REQ_OP_ZONE_APPEND", "REQ_OP_DRV_IN", "REQ_OP_DRV_OUT", "__REQ_ATOMIC"):
            # older kernels lack some; those ops simply never occur there
            with contextlib.suppress(BTFError):
                optional[name] = btf.enum_value(name)
        ops = {
            v["REQ_OP_READ"]: "read",
            v["REQ_OP_WRITE"]: "write",
            v["REQ_OP_FLUSH"]: "flush",
            v["REQ_OP_DISCARD"]: "discard",
            v["REQ_OP_SECURE_ERASE"]: "discard",
            v["REQ_OP_WRITE_ZEROES"]: "write",
        }
        rwbs_op = {
            v["REQ_OP_READ"]: "R",
            v["REQ_OP_WRITE"]: "W",
            v["REQ_OP_FLUSH"]: "F",
            v["REQ_OP_DISCARD"]: "D",
            v["REQ_OP_SECURE_ERASE"]: "DE",
        }
        if "REQ_OP_ZONE_APPEND" in optional:
            ops[optional["REQ_OP_ZONE_APPEND"]] = "write"
            rwbs_op[optional["REQ_OP_ZONE_APPEND"]] = "ZA"
        if "REQ_OP_DRV_IN" in optional:
            ops[optional["REQ_OP_DRV_IN"]] = "read"
        if "REQ_OP_DRV_OUT" in optional:
            ops[optional["REQ_OP_DRV_OUT"]] = "write"
        atomic = optional.get("__REQ_ATOMIC")
        return cls(
            op_mask=(1 << v["__REQ_FAILFAST_DEV"]) - 1,  # the flag bits start right after REQ_OP_BITS
            ops=ops,
            sync=1 << v["__REQ_SYNC"],
            meta=1 << v["__REQ_META"],
            fua=1 << v["__REQ_FUA"],
            preflush=1 << v["__REQ_PREFLUSH"],
            rahead=1 << v["__REQ_RAHEAD"],
            atomic=None if atomic is None else 1 << atomic,
            rwbs_op=rwbs_op,
        )

    def rwbs(self, flags: int) -> str:
        """The flag letters as the kernel's blk_fill_rwbs() prints them."""
        out = "F" if flags & self.preflush else ""
        out += self.rwbs_op.get(flags & self.op_mask, "N")
        if flags & self.fua:
            out += "F"
        if flags & self.rahead:
            out += "A"
        if flags & self.sync:
            out += "S"
        if flags & self.meta:
            out += "M"
        if self.atomic and flags & self.atomic:
            out += "U"
        return out


def _encode(values: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """Hash-encode a column with few distinct values: (indices, distinct values)."""
    enc = pc.dictionary_encode(pa.array(values))
    return enc.indices.to_numpy(zero_copy_only=False), enc.dictionary.to_numpy(zero_copy_only=False)


def _names(raw: np.ndarray) -> tuple[np.ndarray, list[str]]:
    """NUL-padded 16-byte names (comm) -> (indices, decoded distinct names)."""
    buf = pa.py_buffer(np.ascontiguousarray(raw).view(np.uint8))
    enc = pc.dictionary_encode(pa.Array.from_buffers(pa.binary(16), len(raw), [None, buf]))
    names = [b.rstrip(b"\0").decode("utf-8", "replace") for b in enc.dictionary.to_pylist()]
    return enc.indices.to_numpy(zero_copy_only=False), names


def _strings(indices: np.ndarray, values: list[str], mask: np.ndarray | None = None) -> pa.Array:
    idx = pa.array(indices.astype(np.int32), pa.int32(), mask=mask)
    return pa.DictionaryArray.from_arrays(idx, pa.array(values, pa.string())).cast(pa.string())


def _mask(m: np.ndarray) -> np.ndarray | None:
    """A null mask, or None when nothing is null (saves Arrow building a validity bitmap)."""
    return m if m.any() else None


@dataclass(frozen=True)
class InflightFixes:
    """What the kernel's in-flight count at issue could not know, per device (monotonic ns).

    `early`: when the requests issued before the capture completed (sorted): a request issued
    before one of them completed had it in flight as well, but the kernel's count started at zero.
    `unseen`: (device, completed, found out) of requests whose completion the program missed: the
    kernel counted each in flight until it found out, i.e. one too many for requests issued between."""

    early: dict[int, np.ndarray] = field(default_factory=dict)
    unseen: tuple[tuple[int, int, int], ...] = ()

    def apply(self, inflight: np.ndarray, dev: np.ndarray, issue: np.ndarray) -> None:
        for d, done in self.early.items():  # done: sorted, not empty
            rows = np.flatnonzero((dev == d) & (issue < done[-1]))
            inflight[rows] += (len(done) - np.searchsorted(done, issue[rows], side="right")).astype(np.int32)
        for d, done, found in self.unseen:
            inflight[(dev == d) & (issue > done) & (issue < found)] -= 1


def _issue_order(recs: np.ndarray, bits: ReqBits) -> tuple[np.ndarray, np.ndarray, np.ndarray, int]:
    """(row order by issue time, each kept row's index into the distinct cmd_flags, those flags, the
    number of records left out because their op is not block data I/O)."""
    flag_idx, uflags = _encode(recs["cmd_flags"])
    known_flag = np.array([(int(f) & bits.op_mask) in bits.ops for f in uflags], dtype=bool)
    order = np.argsort(recs["issue_ns"], kind="stable")
    keep = known_flag[flag_idx]
    skipped = int(len(recs) - np.count_nonzero(keep))
    if skipped:
        order = order[keep[order]]
    return order, flag_idx[order], uflags, skipped


def _flag_columns(flag_idx: np.ndarray, uflags: np.ndarray, bits: ReqBits) -> dict[str, pa.Array]:
    """op, rwbs and the flag columns: computed once per distinct cmd_flags value, then gathered."""
    op_of = np.array([OPS.index(bits.ops[int(f) & bits.op_mask]) for f in uflags], dtype=np.int8)

    def flag(bit: int) -> pa.Array:
        return pa.array(((uflags & bit) != 0)[flag_idx])

    return {
        "op": pa.DictionaryArray.from_arrays(pa.array(op_of[flag_idx], pa.int8()), pa.array(OPS)),
        "sync": flag(bits.sync),
        "fua": flag(bits.fua),
        "preflush": flag(bits.preflush),
        "meta": flag(bits.meta),
        "readahead": flag(bits.rahead),
        "rwbs": _strings(flag_idx, [bits.rwbs(int(f)) for f in uflags]),
    }


def _device_column(dev_raw: np.ndarray, dev_names: dict[int, str]) -> pa.Array:
    dev_idx, devs = _encode(dev_raw)
    names = [dev_names.get(int(d), f"dev{int(d) >> 20}:{int(d) & 0xFFFFF}") for d in devs]
    return pa.DictionaryArray.from_arrays(pa.array(dev_idx.astype(np.int32)), pa.array(names))


def io_table(
    recs: np.ndarray,
    t0_ns: int,
    bits: ReqBits,
    dev_names: dict[int, str],
    fixes: InflightFixes | None = None,
) -> tuple[pa.Table, int]:
    """Records -> an IO_SCHEMA table sorted by issue time, and the number of records skipped because
    their op is not block data I/O (zone management, driver-private commands).

    Each column is gathered in issue order straight from the records (no sorted copy of the whole
    record), and the result never shares memory with `recs`, whose buffer the caller reuses."""
    order, flag_idx, uflags, skipped = _issue_order(recs, bits)

    def col(name: str) -> np.ndarray:
        return np.take(recs[name], order)

    issue = col("issue_ns").view(np.int64)
    queue = col("queue_ns").view(np.int64)
    complete = col("complete_ns").view(np.int64)
    # negative: IOFP_UNSEEN, a completion the program never saw and the witness did not record
    no_complete = _mask(complete < 0)
    inflight = col("inflight")
    dev_raw = col("dev")
    if fixes is not None:
        fixes.apply(inflight, dev_raw, issue)
    no_queue = _mask(queue == 0)
    complete -= issue
    queue -= t0_ns
    issue -= t0_ns
    pid = col("pid").view(np.int32)
    unknown_pid = pid == 0
    comm_idx, comm_names = _names(col("comm"))
    # Requests without a position (a flush: __sector = (sector_t)-1) are at 0, as the kernel prints them
    offset = col("sector").view(np.int64)
    offset[offset == -1] = 0
    offset *= 512
    cols = {
        "ts_ns": pa.array(issue, pa.int64()),
        "queue_ns": pa.array(queue, pa.int64(), mask=no_queue),
        "lat_ns": pa.array(complete, pa.int64(), mask=no_complete),
        "device": _device_column(dev_raw, dev_names),
        "offset": pa.array(offset, pa.int64()),
        "size": pa.array(col("bytes").view(np.int32), pa.int32()),
        **_flag_columns(flag_idx, uflags, bits),
        "pid": pa.array(pid, pa.int32(), mask=_mask(unknown_pid)),
        "comm": _strings(comm_idx, comm_names, mask=_mask(unknown_pid)),
        "inflight": pa.array(inflight, pa.int32()),
        "error": pa.array(col("error"), pa.int16()),
    }
    return pa.Table.from_pydict(cols, schema=IO_SCHEMA), skipped


def split_calls(recs: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """The syscall records as (fsync-family calls, data calls): the kernel sends both in one stream.
    A slot of a libaio reap whose iocb was not tracked (call IOFP_NO_CALL) is neither."""
    call = recs["call"]
    data = (call >= DATA_CALL_BASE) & (call < DATA_CALL_BASE + len(DATA_CALLS))
    return recs[call < DATA_CALL_BASE], recs[data]


def calls_table(recs: np.ndarray, t0_ns: int, dev_names: dict[int, str]) -> pa.Table:
    """Data calls (records with call >= DATA_CALL_BASE) as the trace contract's calls table, by entry
    time. `dev_names`: kernel dev_t -> the captured disk it is, or is a partition of or stacked on."""
    recs = recs[np.argsort(recs["enter_ns"], kind="stable")]
    enter = recs["enter_ns"].astype(np.int64)
    comm_idx, comm_names = _names(recs["comm"])
    call_idx = np.minimum(recs["call"] - DATA_CALL_BASE, len(DATA_CALLS) - 1).astype(np.int8)
    op_idx = _CALL_WRITES[call_idx].astype(np.int8)
    dev_idx, devs = _encode(recs["dev"])
    names = [dev_names.get(int(d)) for d in devs]
    known = np.array([n is not None for n in names], dtype=bool)[dev_idx] if len(devs) else np.zeros(0, bool)
    no_offset = recs["offset"] == NO_OFFSET
    cols = {
        "ts_ns": pa.array(enter - t0_ns, pa.int64()),
        "lat_ns": pa.array(recs["exit_ns"].astype(np.int64) - enter, pa.int64()),
        "call": pa.DictionaryArray.from_arrays(pa.array(call_idx, pa.int8()), pa.array(DATA_CALLS)),
        "op": pa.DictionaryArray.from_arrays(pa.array(op_idx, pa.int8()), pa.array(CALL_OPS)),
        "device": pa.DictionaryArray.from_arrays(
            pa.array(dev_idx.astype(np.int32), pa.int32(), mask=_mask(~known)),
            pa.array([n or "" for n in names], pa.string()),
        ),
        "offset": pa.array(recs["offset"].astype(np.int64), pa.int64(), mask=_mask(no_offset)),
        "ret": pa.array(recs["ret"], pa.int64()),
        "pid": pa.array(recs["pid"].astype(np.int32), pa.int32()),
        "tid": pa.array(recs["tid"].astype(np.int32), pa.int32()),
        "comm": _strings(comm_idx, comm_names),
        "fd": pa.array(recs["fd"], pa.int32()),
    }
    return pa.Table.from_pydict(cols, schema=CALLS_SCHEMA)


def sync_table(recs: np.ndarray, t0_ns: int) -> pa.Table:
    recs = recs[np.argsort(recs["enter_ns"], kind="stable")]
    enter = recs["enter_ns"].astype(np.int64)
    comm_idx, comm_names = _names(recs["comm"])
    call_idx = np.minimum(recs["call"], len(SYNC_CALLS) - 1).astype(np.int8)
    cols = {
        "ts_ns": pa.array(enter - t0_ns, pa.int64()),
        "lat_ns": pa.array(recs["exit_ns"].astype(np.int64) - enter, pa.int64()),
        "call": pa.DictionaryArray.from_arrays(pa.array(call_idx, pa.int8()), pa.array(SYNC_CALLS)),
        "pid": pa.array(recs["pid"].astype(np.int32), pa.int32()),
        "tid": pa.array(recs["tid"].astype(np.int32), pa.int32()),
        "comm": _strings(comm_idx, comm_names),
        "fd": pa.array(recs["fd"], pa.int32()),
        "ret": pa.array(recs["ret"], pa.int64()),
    }
    return pa.Table.from_pydict(cols, schema=SYNC_SCHEMA)


@dataclass(frozen=True)
class Completions:
    """What a summary of completed requests needs from the records, column by column (no trace)."""

    op: np.ndarray  # int8: index into the contract's OPS; -1 for ops that are not block data I/O
    done_ns: np.ndarray  # int64 monotonic: completed (or, unseen by the program, when found out)
    lat_ns: np.ndarray  # int64 issue to completion; -1 where unknown (a completion nobody saw)
    bytes: np.ndarray  # int64
    dev: np.ndarray  # uint32 kernel dev_t
    inflight: np.ndarray  # int32: in flight at issue, itself included (the kernel's count)


_UNSEEN = np.uint64(1 << 63)  # IOFP_UNSEEN (iofp_record.h): a completion the program never saw


def completions(recs: np.ndarray, bits: ReqBits) -> Completions:
    """The records' ops, completion times and latencies, vectorised (`iofp record`'s summary)."""
    op_of = np.full(bits.op_mask + 1, -1, np.int8)  # opcode -> OPS index, by table: no hashing
    for code, op in bits.ops.items():
        op_of[code] = OPS.index(op)
    complete = recs["complete_ns"]
    unseen = (complete & _UNSEEN) != 0
    done = (complete & ~_UNSEEN).view(np.int64)
    lat = np.where(unseen, -1, done - recs["issue_ns"].view(np.int64))
    return Completions(
        op=op_of[recs["cmd_flags"] & np.uint32(bits.op_mask)],
        done_ns=done,
        lat_ns=lat,
        bytes=recs["bytes"].astype(np.int64),
        dev=recs["dev"],
        inflight=recs["inflight"],
    )
