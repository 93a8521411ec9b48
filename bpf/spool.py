"""The capture's spool: intervals of raw records kept on disk until the CPU is free to encode them.

Encoding a record into the trace's Parquet costs ~0.6 µs of CPU; copying it to a file costs a
memcpy. At a device's full rate the first is ~5% of a 2-CPU machine, taken from the workload being
measured, at its peak. So when an interval ends while the writer is still busy with an earlier one,
the capture writes the interval's records to the spool as they came from the kernel (blktrace's
split between relay files and blkparse) and the writer, at idle priority, encodes it later: after
the burst, or when the capture ends, or sooner when the spool reaches its size limit.

A segment is one interval: a directory `spool/NNNNNN/` holding `io.bin` and `sync.bin` (the
records, as bpf/record.py's dtypes), and `segment.json` (the loss counters up to then and the
in-flight fixes). It is made under a temporary name and renamed, so a segment is whole or absent.
`spool/capture.json`, written when the capture starts, holds what encoding needs besides the
records (the capture's start, the kernel's flag bits, device names, the trace's metadata), so that
after a kill -9 `iofp recover TRACE` can encode what was spooled, on any machine.

`iofp record` keeps its ring of the last minutes as such segments, `compress`ed: the records
byte-shuffled (byte k of every record together, as Blosc does: a timestamp's high bytes barely
change from one record to the next) then zstd'ed (`io.zst`, `sync.zst`; ~5.6x smaller, ~70 ns a
record where zstd alone gave 3.7x at ~130 ns; no Parquet encoding until an incident needs it), with
the recorder's own facts about the segment (`extra`) in segment.json.
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
from dataclasses import asdict
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa

from bpf.record import IO_DTYPE, OPS, SYNC_DTYPE, InflightFixes, ReqBits
from iofp import artifact_json
from iofp.contract import SPOOL, TraceMeta, atomic_write_bytes
from iofp.errors import BadInput
from iofp.filecheck import name_problem
from iofp.terminal import one_line

CAPTURE = "capture.json"
SEGMENT = "segment.json"
# A spool read back by `iofp recover` may come from another machine, or from anyone: its JSON is read
# as every artifact's is (bounded size and depth), and a segment's records are refused past what one
# interval of a capture can hold here (its --buffer at most, the largest this machine allows), before
# a byte is allocated: a segment.json declaring 10 TB of records to decompress was a MemoryError.
DAMAGED = "the spool is damaged; recover what is whole by removing that segment"

# (io records, sync records, (loss, counts), fixes): an interval, in memory or read back
Interval = tuple[np.ndarray, np.ndarray, tuple[dict[str, int], dict[str, int]], InflightFixes]


class Spool:
    """The spool directory of the trace at `root`, written by its capture."""

    def __init__(self, root: Path, limit_bytes: int, *, compress: bool = False) -> None:
        self.dir = Path(root) / SPOOL
        self.limit = limit_bytes
        self.compress = compress
        self.bytes = 0  # held now: written and not yet encoded
        self._seq = max((int(p.name) for p in segments(root)), default=0)  # resumed: numbered after
        # the io records of the segment being encoded are read into this one buffer, grown to the
        # largest segment: a fresh array per segment grew the capture's heap (glibc keeps what is
        # freed, see bpf/capture.py) past what --buffer promises
        self._rbuf = np.empty(0, np.uint8)

    def start(self, t0: int, bits: ReqBits, names: dict[int, str], meta: TraceMeta) -> None:
        """Write what encoding a segment needs besides the records (see the module's docstring)."""
        self.dir.mkdir(exist_ok=True)
        doc = {
            "pid": os.getpid(),
            "t0_ns": t0,
            "bits": _bits_doc(bits),
            "names": {str(k): v for k, v in names.items()},
            "meta": json.loads(meta.to_json()),
        }
        atomic_write_bytes(self.dir / CAPTURE, json.dumps(doc).encode())

    @property
    def full(self) -> bool:
        return self.bytes >= self.limit

    def put(self, item: Interval, extra: dict[str, Any] | None = None) -> Path:
        """Write one interval (OSError if it cannot: the caller keeps it in memory); `extra` is kept
        in its segment.json (segment_extra reads it back)."""
        io, sync, (loss, counts), fixes = item
        self._seq += 1
        seg = self.dir / f"{self._seq:06d}"
        tmp = self.dir / f".{self._seq:06d}.tmp"
        try:
            tmp.mkdir()
            doc = {
                "loss": loss,
                "counts": counts,
                "early": {str(d): t.tolist() for d, t in fixes.early.items()},
                "unseen": [list(u) for u in fixes.unseen],
                "extra": extra or {},
            }
            if self.compress:
                doc["raw_bytes"] = {"io": io.nbytes, "sync": sync.nbytes}
                (tmp / "io.zst").write_bytes(_pack(io))
                (tmp / "sync.zst").write_bytes(_pack(sync))
            else:
                io.tofile(tmp / "io.bin")
                sync.tofile(tmp / "sync.bin")
            (tmp / SEGMENT).write_text(json.dumps(doc))
            os.rename(tmp, seg)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise
        self.bytes += segment_bytes(seg) if self.compress else io.nbytes + sync.nbytes
        return seg

    def read(self, seg: Path) -> Interval:
        """One interval back; its io records valid until the next read (the writer converts each
        segment before it reads the next)."""
        doc, fixes = _segment_doc(seg)
        if "raw_bytes" in doc:  # compressed
            io = _unpack(seg / "io.zst", doc["raw_bytes"]["io"], IO_DTYPE)
            sync = _unpack(seg / "sync.zst", doc["raw_bytes"]["sync"], SYNC_DTYPE)
            return io, sync, (doc["loss"], doc["counts"]), fixes
        path = seg / "io.bin"
        n = path.stat().st_size
        _check_records(path, n, IO_DTYPE)
        _check_records(seg / "sync.bin", (seg / "sync.bin").stat().st_size, SYNC_DTYPE)
        if len(self._rbuf) < n:
            self._rbuf = np.empty(n, np.uint8)
        with open(path, "rb") as f:
            got = f.readinto(memoryview(self._rbuf)[:n])
        io = self._rbuf[: got - got % IO_DTYPE.itemsize].view(IO_DTYPE)
        sync = np.fromfile(seg / "sync.bin", SYNC_DTYPE)
        return io, sync, (doc["loss"], doc["counts"]), fixes

    def taken(self, seg: Path) -> None:
        """`seg` is encoded into the trace: its space is free again."""
        self.bytes -= segment_bytes(seg)
        remove_segment(seg)

    def remove(self) -> None:
        """Once every segment is encoded (what a kill left half removed goes too)."""
        (self.dir / CAPTURE).unlink(missing_ok=True)
        remove_leftovers(self.dir)
        with contextlib.suppress(OSError):
            self.dir.rmdir()


_CODEC = pa.Codec("zstd", compression_level=1)


def _pack(recs: np.ndarray) -> bytes:
    """Records byte-shuffled (row-major records -> byte-major), then zstd'ed. The shuffle goes in two
    steps, records to 8-byte words (few, wide elements), then each word's column to its 8 byte
    rows: ~0.7 of the time of a byte transpose done 512 records at a time (20,000 records,
    2026-11-29), the same bytes. The records are the kernel's structs, 8-byte aligned (iofp_record.h)."""
    if not len(recs):
        return b""
    n, width = len(recs), recs.dtype.itemsize
    words = np.ascontiguousarray(recs.view(np.uint64).reshape(n, width // 8).T)
    shuffled = np.empty((width, n), np.uint8)
    for k in range(width // 8):
        shuffled[8 * k : 8 * k + 8] = words[k].view(np.uint8).reshape(n, 8).T
    return _CODEC.compress(shuffled, asbytes=True)


def _unpack(path: Path, nbytes: int, dtype: np.dtype) -> np.ndarray:
    _check_records(path, nbytes, dtype)
    if not nbytes:
        return np.empty(0, dtype)
    if path.stat().st_size > nbytes + (1 << 20):  # zstd adds a few bytes per block at worst
        raise BadInput(f"{path}: larger than the records it says it holds; {DAMAGED}")
    data = path.read_bytes()
    try:
        packed = _CODEC.decompress(data, decompressed_size=nbytes, asbytes=True)
    except (OSError, ValueError, pa.ArrowException) as e:  # pyarrow's zstd errors are OSError
        raise BadInput(f"{path}: its records do not decompress ({one_line(str(e))}); {DAMAGED}") from None
    raw = np.frombuffer(packed, np.uint8)
    return np.ascontiguousarray(raw.reshape(dtype.itemsize, -1).T).view(dtype).reshape(-1)


def segment_extra(seg: Path) -> dict[str, Any]:
    """What the writer of segment `seg` kept with it (Spool.put's `extra`)."""
    extra = _json(seg / SEGMENT).get("extra", {})
    return extra if isinstance(extra, dict) else {}


def check_segment(seg: Path) -> None:
    """BadInput when segment `seg` is damaged in what can be seen before encoding it (its JSON, the
    sizes of its records): `iofp recover` checks every segment before it writes anything."""
    doc, _ = _segment_doc(seg)
    if "raw_bytes" in doc:
        for name, dtype in (("io", IO_DTYPE), ("sync", SYNC_DTYPE)):
            _check_records(seg / f"{name}.zst", doc["raw_bytes"][name], dtype)
        return
    for name, dtype in (("io", IO_DTYPE), ("sync", SYNC_DTYPE)):
        path = seg / f"{name}.bin"
        _check_records(path, path.stat().st_size, dtype)


def _json(path: Path) -> dict[str, Any]:
    """A spool's JSON file (capture.json, segment.json), read as every artifact's is."""
    fix = DAMAGED if path.name == SEGMENT else "the spool cannot be encoded without it"
    with open(path, "rb") as f:  # OSError goes up: recover names what it could not read
        data = f.read(artifact_json.LIMITS["spool metadata"] + 1)
    doc = artifact_json.parse(data, str(path), "spool metadata", fix)
    if not isinstance(doc, dict):
        raise BadInput(f"{path}: not a JSON object; {fix}")
    return doc


def _segment_doc(seg: Path) -> tuple[dict[str, Any], InflightFixes]:
    """segment.json, its fields checked for what reading the segment takes from them."""
    doc = _json(seg / SEGMENT)
    try:
        for key in ("loss", "counts"):
            doc[key] = {str(k): int(v) for k, v in doc[key].items()}
        fixes = InflightFixes(
            {int(d): np.array(t, np.int64) for d, t in doc["early"].items()},
            tuple((int(a), int(b), int(c)) for a, b, c in doc["unseen"]),
        )
        if "raw_bytes" in doc:
            doc["raw_bytes"] = {k: int(doc["raw_bytes"][k]) for k in ("io", "sync")}
    except (KeyError, TypeError, ValueError, AttributeError, OverflowError) as e:
        raise BadInput(f"{seg / SEGMENT}: a field is missing or odd ({type(e).__name__}: "
                       f"{one_line(str(e))[:80]}); {DAMAGED}") from None  # fmt: skip
    return doc, fixes


def _check_records(path: Path, nbytes: int, dtype: np.dtype) -> None:
    """Refuse, before anything is allocated, records of a size no interval of a capture has here."""
    from bpf.capture import max_buffer_bytes

    if nbytes > (most := max_buffer_bytes()):
        raise BadInput(f"{path}: {nbytes / (1 << 30):,.1f} GiB of records, more than an interval of a "
                       f"capture holds here ({most / (1 << 30):.1f} GiB); {DAMAGED}")  # fmt: skip
    if nbytes < 0 or nbytes % dtype.itemsize:
        raise BadInput(f"{path}: {nbytes} bytes is no whole number of records; {DAMAGED}")


def segments(root: Path) -> list[Path]:
    """The whole segments a capture left in the trace at `root`, oldest first."""
    d = Path(root) / SPOOL
    return sorted(p for p in d.glob("[0-9]*") if p.is_dir()) if d.is_dir() else []


_GONE = ".gone"  # a segment being removed: .NNNNNN.gone (segments() sees only numbered names)


def remove_segment(seg: Path) -> None:
    """A segment removed as one step: renamed out of segments()' sight first, then its files. A kill -9
    in the middle of removing its files (a capture's writer had encoded it) left a numbered segment
    without its records, which recover then read as damaged (a fresh-clone CI run, 2026-11-30)."""
    gone = seg.with_name(f".{seg.name}{_GONE}")
    try:
        os.rename(seg, gone)
    except OSError:
        gone = seg
    shutil.rmtree(gone, ignore_errors=True)


def remove_leftovers(spool: Path) -> None:
    """What a kill left in a spool directory: a segment being written (.NNNNNN.tmp) or removed
    (.NNNNNN.gone): neither is a whole segment, and the one being removed is in the trace already."""
    for p in spool.glob(".*"):
        if p.name.endswith((".tmp", _GONE)) and p.is_dir() and not p.is_symlink():
            shutil.rmtree(p, ignore_errors=True)


def segment_bytes(seg: Path) -> int:
    """The records' bytes on disk (segment.json's few hundred left out)."""
    return sum(f.stat().st_size for f in map(seg.joinpath, _RECORD_FILES) if f.exists())


_RECORD_FILES = ("io.bin", "sync.bin", "io.zst", "sync.zst")


def owner(root: Path) -> int:
    """The pid of the capture that wrote the spool at `root` (OSError / ValueError / KeyError if
    capture.json is missing or damaged)."""
    return int(_json(Path(root) / SPOOL / CAPTURE)["pid"])


def read_capture(root: Path) -> dict[str, Any]:
    """capture.json of the spool at `root`: t0_ns, bits (ReqBits), names ({dev_t: name}), meta
    (TraceMeta). OSError / ValueError / KeyError if it is missing or damaged."""
    doc = _json(Path(root) / SPOOL / CAPTURE)
    return {
        "t0_ns": int(doc["t0_ns"]),
        "bits": _bits_from(doc["bits"]),
        "names": {int(k): _name(v) for k, v in doc["names"].items()},
        "meta": TraceMeta.from_json(json.dumps(doc["meta"]), where=str(Path(root) / SPOOL / CAPTURE)),
    }


def _bits_doc(bits: ReqBits) -> dict[str, Any]:
    d = asdict(bits)
    d["ops"] = {str(k): v for k, v in bits.ops.items()}
    d["rwbs_op"] = {str(k): v for k, v in bits.rwbs_op.items()}
    return d


def _name(name: Any) -> str:
    """A device's name (a trace's device column): a name, never a path (iofp/filecheck.name_problem)."""
    if not isinstance(name, str) or (why := name_problem(name)):
        raise ValueError(f"device name {str(name)[:40]!r}: {why if isinstance(name, str) else 'not text'}")
    return name


def _bits_from(d: dict[str, Any]) -> ReqBits:
    """ReqBits from capture.json; ValueError for an op no capture records (the encoder's index)."""
    if odd := sorted(str(v) for v in d["ops"].values() if v not in OPS):
        raise ValueError(f"an op iofp does not record: {odd[0][:40]!r}")
    return ReqBits(
        **{
            **d,
            "ops": {int(k): v for k, v in d["ops"].items()},
            "rwbs_op": {int(k): v for k, v in d["rwbs_op"].items()},
        }
    )
