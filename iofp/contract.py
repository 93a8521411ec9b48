"""The trace contract: the one Parquet schema that joins capture, fingerprint and replay.

A *trace* is a directory holding two tables, each a set of zstd Parquet files:

    TRACE/io/part-NNNNNN.parquet      one row per completed block request (IO_SCHEMA)
    TRACE/sync/part-NNNNNN.parquet    one row per fsync-family syscall (SYNC_SCHEMA); optional
    TRACE/calls/part-NNNNNN.parquet   one row per data call of an application on a captured device
                                      (CALLS_SCHEMA): what it waited, above the block layer too; optional
    TRACE/trace.json                  the trace's metadata (also in every Parquet file's footer)
    TRACE/spool/                      while a capture runs: raw records not yet encoded (bpf/spool.py)

Files are written whole and renamed into place, so every file present is valid; a capture killed
with SIGKILL loses at most the interval it had not yet written (what it spooled, `iofp recover`
adds). Columns a source does not have are
null, never invented. Every stage imports this module; this module imports no stage.
"""

from __future__ import annotations

import atexit
import contextlib
import datetime
import errno
import functools
import json
import os
import platform
import re
import shutil
import socket
import stat
import tempfile
import time
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from iofp import __version__, artifact_json, bounds, fingerprint_doc, objstore, path_owners
from iofp.errors import BadInput, OutputFailed, SchemaMismatch, warn
from iofp.filecheck import (
    RowRules,
    check_columns,
    check_rows,
    check_text,
    damage_in,
    extent,
    name_problem,
    read_schema,
)

SCHEMA_VERSION = 1
META_KEY = b"iofp"  # Parquet key-value metadata key holding the JSON metadata
MANIFEST = "trace.json"
IO_TABLE = "io"
SYNC_TABLE = "sync"
CALLS_TABLE = "calls"

OPS = ("read", "write", "discard", "flush")

IO_SCHEMA = pa.schema(
    [
        pa.field("ts_ns", pa.int64(), nullable=False),  # issue to driver, ns since capture start
        pa.field("queue_ns", pa.int64()),  # entered the block layer, ns since start; null for a flush
        pa.field("lat_ns", pa.int64()),  # issue to completion
        pa.field("device", pa.dictionary(pa.int32(), pa.string()), nullable=False),
        pa.field("offset", pa.int64(), nullable=False),  # bytes
        pa.field("size", pa.int32(), nullable=False),  # bytes
        pa.field("op", pa.dictionary(pa.int8(), pa.string()), nullable=False),  # one of OPS
        pa.field("sync", pa.bool_()),
        pa.field("fua", pa.bool_()),
        pa.field("preflush", pa.bool_()),
        pa.field("meta", pa.bool_()),
        pa.field("readahead", pa.bool_()),
        pa.field("rwbs", pa.string()),  # flags as the kernel prints them, e.g. "WS", "FF", "RA"
        pa.field("pid", pa.int32()),  # submitting process, not the kworker that issued it
        pa.field("comm", pa.string()),
        pa.field("inflight", pa.int32()),  # requests in flight on the device at issue, itself included
        pa.field("error", pa.int16()),  # blk_status_t at completion, 0 = ok
    ]
)

SYNC_CALLS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync", "msync", "dsync_write")

SYNC_SCHEMA = pa.schema(
    [
        pa.field("ts_ns", pa.int64(), nullable=False),  # syscall entry, ns since capture start
        pa.field("lat_ns", pa.int64()),  # entry to return
        pa.field("call", pa.dictionary(pa.int8(), pa.string()), nullable=False),  # one of SYNC_CALLS
        pa.field("pid", pa.int32()),  # thread-group id (the process)
        pa.field("tid", pa.int32()),
        pa.field("comm", pa.string()),
        pa.field("fd", pa.int32()),
        pa.field("ret", pa.int64()),
    ]
)

# An application's data calls on a captured device, timed from its side: an O_DIRECT read or write
# syscall from entry to return, a libaio iocb from its io_submit to the io_getevents that reaps it.
# The time holds everything between the application and the device, including what no block
# tracepoint sees: blk-throttle (a cgroup's io.max / blkio.throttle cap) holds a bio before the block
# layer's first tracepoint, so a capped request's wait is in its call's time, not in its request's.
DATA_CALLS = ("read", "pread64", "readv", "preadv", "preadv2", "write", "pwrite64", "writev", "pwritev",
              "pwritev2", "aio_read", "aio_write")  # fmt: skip
CALL_OPS = ("read", "write")

CALLS_SCHEMA = pa.schema(
    [
        pa.field("ts_ns", pa.int64(), nullable=False),  # entry (an iocb: its io_submit), ns since start
        pa.field("lat_ns", pa.int64()),  # entry to return (an iocb: to its reaping)
        pa.field("call", pa.dictionary(pa.int8(), pa.string()), nullable=False),  # one of DATA_CALLS
        pa.field("op", pa.dictionary(pa.int8(), pa.string()), nullable=False),  # read or write
        pa.field("device", pa.dictionary(pa.int32(), pa.string())),  # the file's disk; null: unknown
        pa.field("offset", pa.int64()),  # the file offset asked for; null when the call names none
        pa.field("ret", pa.int64()),  # bytes done, or -errno
        pa.field("pid", pa.int32()),
        pa.field("tid", pa.int32()),
        pa.field("comm", pa.string()),
        pa.field("fd", pa.int32()),
    ]
)

SCHEMAS = {IO_TABLE: IO_SCHEMA, SYNC_TABLE: SYNC_SCHEMA, CALLS_TABLE: CALLS_SCHEMA}

# What no row can hold, checked in every file when a trace is opened (iofp/filecheck.py): a
# request has a time, a device, an offset, a size and an op; times, latencies, offsets and sizes are
# never negative (queue_ns may be: a request queued before the capture began).
ROW_RULES = {
    IO_TABLE: RowRules(
        not_null=("ts_ns", "device", "offset", "size", "op"),
        not_negative=("ts_ns", "lat_ns", "offset", "size"),
        closed="op",
        allowed=OPS,
        names=("device",),
    ),
    SYNC_TABLE: RowRules(not_null=("ts_ns", "call"), not_negative=("ts_ns", "lat_ns"), closed="call",
                         allowed=SYNC_CALLS),
    CALLS_TABLE: RowRules(not_null=("ts_ns", "call", "op"), not_negative=("ts_ns", "lat_ns"), closed="call",
                          allowed=DATA_CALLS),
}  # fmt: skip


# --------------------------------------------------------------------------------------------
# Metadata
# --------------------------------------------------------------------------------------------


@dataclass
class TraceMeta:
    """Provenance and loss accounting; stored as JSON in each file footer and in trace.json.

    `source` is "capture" or "import:<format>". `capture_start_ns` is the wall-clock (Unix epoch, ns)
    of ts_ns == 0, or None when the source had no wall clock. `devices` maps a device name to its
    sysfs facts (model, size_bytes, rotational, scheduler, logical_block_size). `loss` holds what
    was lost (every key starts with "lost", e.g. {"lost_io_ringbuf": 0}; an importer's
    "unmatched_completions" are records its source lost), `counts` what was counted but is no loss
    (e.g. {"sync_other_device": 12}: filtered out by --device).
    """

    source: str = "capture"
    host: str = field(default_factory=socket.gethostname)
    kernel: str = field(default_factory=platform.release)
    tool_version: str = __version__
    schema_version: int = SCHEMA_VERSION
    capture_start_ns: int | None = None
    duration_ns: int | None = None
    devices: dict[str, dict[str, Any]] = field(default_factory=dict)
    filters: dict[str, Any] = field(default_factory=dict)
    labels: dict[str, str] = field(default_factory=dict)
    loss: dict[str, int] = field(default_factory=dict)
    counts: dict[str, int] = field(default_factory=dict)
    extra: dict[str, Any] = field(default_factory=dict)

    def to_json(self) -> str:
        return json.dumps(self.__dict__, sort_keys=True)

    @classmethod
    def from_json(cls, text: str | bytes, where: str = "trace") -> TraceMeta:
        raw = artifact_json.parse(text, where, "trace metadata", "not an iofp trace")
        if not isinstance(raw, dict):
            what = type(raw).__name__
            raise BadInput(f"{where}: metadata is a JSON {what}, not an object; not an iofp trace")
        check_schema_version(raw.get("schema_version"), where)
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        for key, value in known.items():
            _check_meta_value(key, value, where)
        return cls(**known)

    @property
    def lost_events(self) -> int:
        return int(sum(v for k, v in self.loss.items() if k.startswith("lost")))


def check_schema_version(version: Any, where: str) -> None:
    if version is None:
        raise SchemaMismatch(f"{where}: no iofp schema version; not an iofp trace")
    if not _is_int(version):
        raise SchemaMismatch(f"{where}: schema_version is {version!r}, not a number; not an iofp trace")
    if version != SCHEMA_VERSION:
        raise SchemaMismatch(f"{where}: schema v{version}; this iofp ({__version__}) reads v{SCHEMA_VERSION}")


# The JSON type of each metadata field (None: may be null); a trace.json edited by hand or written by
# another tool is refused naming the field, not met later as a TypeError deep in a fingerprint.
_META_TYPES: dict[str, tuple[type, ...]] = {
    "source": (str,), "host": (str,), "kernel": (str,), "tool_version": (str,), "schema_version": (int,),
    "capture_start_ns": (int, type(None)), "duration_ns": (int, type(None)), "devices": (dict,),
    "filters": (dict,), "labels": (dict,), "loss": (dict,), "counts": (dict,), "extra": (dict,),
}  # fmt: skip


def _is_int(v: Any) -> bool:
    return isinstance(v, int) and not isinstance(v, bool)


def _check_meta_value(key: str, value: Any, where: str) -> None:
    types = _META_TYPES[key]
    ok = isinstance(value, types) and not (isinstance(value, bool) and int in types)
    if key in ("loss", "counts") and ok:
        bad = next((k for k, v in value.items() if not _is_int(v)), None)
        if bad is not None:
            shown = _short(value[bad])
            raise BadInput(f"{where}: {key}.{bad} is {shown}, not a count; not a valid iofp trace")
    if key == "devices" and ok:
        for name in value:
            if (why := name_problem(name)) is not None:
                raise BadInput(f"{where}: device {name[:60]!r} is {why}; not a valid iofp trace")
    if not ok:
        want = " or ".join("null" if t is type(None) else _JSON_NAMES[t] for t in types)
        raise BadInput(f"{where}: {key} is {_short(value)}, not {want}; not a valid iofp trace")


def _short(value: Any) -> str:
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


_JSON_NAMES = {str: "a string", int: "an integer", dict: "an object"}


def disk_of(name: str) -> str:
    """The disk a block device `name` is on: its sysfs parent for a partition, else `name` itself."""
    part = Path("/sys/class/block") / name
    return part.resolve().parent.name if (part / "partition").exists() else name


def device_facts(name: str) -> dict[str, Any]:
    """What sysfs says about a block device, for provenance. Missing facts are left out."""
    base = Path("/sys/block") / name
    facts: dict[str, Any] = {}

    def read(rel: str) -> str | None:
        try:
            return (base / rel).read_text().strip()
        except OSError:
            return None

    for key, rel in (("model", "device/model"), ("vendor", "device/vendor"), ("serial", "device/serial")):
        if (v := read(rel)) is not None:
            facts[key] = v
    if (v := read("size")) is not None:
        facts["size_bytes"] = int(v) * 512
    if (v := read("queue/rotational")) is not None:
        facts["rotational"] = v == "1"
    if (v := read("queue/scheduler")) is not None:
        # "[mq-deadline] kyber none" -> the bracketed one is active
        facts["scheduler"] = next((w.strip("[]") for w in v.split() if w.startswith("[")), v)
    if (v := read("queue/logical_block_size")) is not None:
        facts["logical_block_size"] = int(v)
    if (v := read("loop/backing_file")) is not None:
        facts["backing_file"] = v
    if (v := read("dev")) is not None:
        facts["dev"] = v
    return facts


# --------------------------------------------------------------------------------------------
# Writing
# --------------------------------------------------------------------------------------------


def check_output_file(path: Path, *, force: bool) -> None:
    """Refuse, before any work, an output file that could not be written: call it before computing
    what goes in it (a 50 M-row fingerprint takes a minute)."""
    if path.is_dir():
        raise BadInput(f"{path} is a directory; name a file to write")
    if path.exists() and not path.is_file():  # --force would replace /dev/null itself with a file
        raise BadInput(f"{path} is not a regular file (a device or a pipe); name a file to write")
    if path.exists() and not force:
        raise BadInput(f"{path} already exists; pass --force to overwrite it")
    try:
        _try_writing_in(path.parent)
    except OSError:
        parent = path.parent
        while not parent.exists():
            parent = parent.parent
        raise BadInput(f"cannot write {path}: {parent} is not a writable directory") from None


def _try_writing_in(d: Path) -> None:
    """Make the missing directories down to `d` and a file in it, then remove all of it; OSError if
    that fails. Trying is the only honest test: access() says yes to root even on /proc."""
    made: list[Path] = []
    try:
        for a in reversed([d, *d.parents]):
            if not a.exists():
                a.mkdir()
                made.append(a)
        probe = d / f".iofp-write-test-{os.getpid()}"
        probe.write_bytes(b"")
        probe.unlink()
    finally:
        for a in reversed(made):
            with contextlib.suppress(OSError):
                a.rmdir()


def _umask() -> int:
    """The process umask, read without setting it (os.umask would change it for every thread)."""
    with contextlib.suppress(OSError, StopIteration, ValueError):
        status = Path("/proc/self/status").read_text().splitlines()
        return int(next(line for line in status if line.startswith("Umask:")).split()[1], 8)
    return 0o022


def atomic_write_bytes(path: Path, data: bytes) -> None:
    """Write a whole file or nothing: a reader never sees a half-written artifact."""
    tmp: str | None = None
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fchmod(f.fileno(), 0o666 & ~_umask())  # mkstemp's 0600: artifacts are meant to be shared
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException as e:
        if tmp is not None:
            Path(tmp).unlink(missing_ok=True)
        if not isinstance(e, OSError):
            raise
        # a full disk or a failing one is not the user's input; a path that cannot be written is
        err = OutputFailed if e.errno in (errno.ENOSPC, errno.EDQUOT, errno.EIO) else BadInput
        raise err(f"cannot write {path}: {e.strerror}") from None


# Told of each complete file of a trace being written: (local path, name in the trace, metadata)
OnFile = Callable[[Path, str, "TraceMeta"], None]

# How every trace file is written (pyarrow.parquet.write_table keywords); writers may add to it
PARQUET_DEFAULTS: dict[str, Any] = {"compression": "zstd", "row_group_size": 1 << 20}


# inside a trace being overwritten: the previous trace, kept until the new one is whole
REPLACED = ".iofp-replaced"
# Raw records a capture has not encoded yet (bpf/spool.py); left behind only by a capture killed
# with -9 (or one still running), and then `iofp recover` encodes them into the trace
SPOOL = "spool"
# in REPLACED: who set it aside (pid, time), so that no later run mistakes it for its own
OWNER = ".iofp-owner"
# Room kept for trace.json while a trace is written: a capture stopped by a full disk still gets its
# manifest (how it ended), which it otherwise lost where its spool had taken the last blocks (a CI run
# beside CPU hogs). A manifest is ~2.4 KB; freed just before it is written.
RESERVE = ".iofp-reserve"
RESERVE_BYTES = 64 << 10


def _reserve(path: Path) -> None:
    """Hold RESERVE_BYTES of the disk at `path` (allocated, not sparse), or nothing where it cannot."""
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC | os.O_NOFOLLOW, 0o600)
    except OSError:
        return
    try:
        os.posix_fallocate(fd, 0, RESERVE_BYTES)
    except OSError:
        path.unlink(missing_ok=True)
    finally:
        os.close(fd)


def check_output_dir(root: Path, *, force: bool) -> None:
    """Refuse, before anything is written (or waited for), an output that cannot become a trace."""
    check_utf8_path(root)
    check_own_dir(root, "the trace")
    if root.exists() and not root.is_dir():
        raise BadInput(f"{root} is a file, not a trace directory; pass a new or empty directory")
    try:
        occupied = root.exists() and any(root.iterdir())
    except OSError as e:
        raise BadInput(f"cannot write the trace to {root}: {e.strerror}") from None
    if occupied and not force:
        raise BadInput(f"{root} already exists and is not empty; pass --force to overwrite it")
    if (root / REPLACED).exists():
        raise BadInput(_left_aside(root))
    try:
        _try_writing_in(root)
    except OSError as e:
        raise BadInput(f"cannot write the trace to {root}: {e.strerror}") from None


def check_own_dir(path: Path, what: str) -> None:
    """Refuse an output directory that another user can write in, or can replace: iofp runs as root
    and writes its artifacts there by name (fio's output, the job file), so a link planted in it
    between this check and a write (an empty directory of theirs, fio.stdout -> /etc/shadow) would
    be followed, as root; and the owner of a directory above it (or anyone, where that one is
    writable by all without the sticky bit) can rename it away and put one of theirs in its place.
    A directory iofp makes itself is the user's own; its parents are checked before it is made."""
    trusted = path_owners.trusted_uids()
    try:
        st = os.stat(path)
    except OSError:
        st = None
    if st is not None and stat.S_ISDIR(st.st_mode):
        group = st.st_mode & 0o020 and st.st_gid != os.getegid()
        if st.st_uid not in trusted or st.st_mode & 0o002 or group:
            raise BadInput(f"{path}: another user can write in it (owner uid {st.st_uid}, mode "
                           f"{st.st_mode & 0o7777:o}), and a link planted there would be followed; write "
                           f"{what} to a directory of your own")  # fmt: skip
    if (above := path_owners.replaceable_by_others(str(path))) is not None:
        parent, why = above
        raise BadInput(f"{path}: another user can replace it in {parent} ({why}), and what iofp writes "
                       f"there as root with it; write {what} under directories only root or you can "
                       f"change")  # fmt: skip


def check_utf8_path(path: Path) -> None:
    """DuckDB and Arrow take paths as UTF-8 text: refuse a trace path that is not, before any work
    (a capture would otherwise record and then fail to write its first file)."""
    try:
        str(path).encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(path).decode("utf-8", "backslashreplace")
        raise BadInput(
            f"{shown}: a trace path must be UTF-8 text; rename it, or link it to a UTF-8 name"
        ) from None


def _left_aside(root: Path) -> str:
    """Why a trace set aside by another run blocks this one, and how to settle it."""
    aside = root / REPLACED
    owner: dict[str, Any] = {}
    with contextlib.suppress(OSError, ValueError):
        owner = json.loads((aside / OWNER).read_text())
    pid = owner.get("pid") if isinstance(owner, dict) else None
    by = f" by iofp (pid {pid}, {owner.get('started', 'start unknown')})" if pid else ""
    if isinstance(pid, int) and iofp_alive(pid):
        return f"{root} is being written{by}; wait for it to finish, or stop it, then run again"
    return (
        f"{aside} holds the trace an unfinished run{by} was replacing; keep it (rm -r {root}/io "
        f"{root}/sync && mv {aside}/* {root}/ && rm -r {aside}) or delete it (rm -r {aside}), then run again"
    )


def iofp_alive(pid: int) -> bool:
    """Whether `pid` is a running iofp (not this one): a pid reused since by another program is not."""
    if pid == os.getpid():
        return False  # not another run: this process set nothing aside yet
    try:
        cmdline = Path(f"/proc/{pid}/cmdline").read_bytes()
    except OSError:
        return False
    return b"iofp" in cmdline or b"cli.app" in cmdline


class TraceWriter:
    """Writes a trace directory one complete Parquet file at a time.

    Each `write(table, batch)` call produces one file, written under a temporary name and renamed,
    so that a crash never leaves an invalid file behind. `close()` writes trace.json. With `force`,
    a trace already there is set aside (REPLACED) rather than deleted: `abort()` (or leaving a
    `with` block by an exception) puts it back, and only `close()` deletes it.
    """

    def __init__(
        self, root: Path | str, meta: TraceMeta, *, force: bool = False, resume: bool = False,
        on_file: OnFile | None = None,
    ) -> None:
        """`resume`: add files to the unfinished trace at `root` (a killed capture's, with `iofp
        recover`), numbered after those there. `on_file(path, name, meta)` is told of each file once
        it is complete (name: "io/part-000001.parquet", MANIFEST last): a shipper's cue."""
        self.root = Path(root)
        self.meta = meta
        self.on_file = on_file
        self._written: list[Path] = []
        self._made: list[Path] = []
        self._aside: Path | None = None
        self._seq = {t: 0 for t in SCHEMAS}
        self.rows = {t: 0 for t in SCHEMAS}
        self.bytes = 0  # of the Parquet files written, sized before a shipper is told (it may remove them)
        if resume:
            for t in SCHEMAS:
                (self.root / t).mkdir(exist_ok=True)
                parts = [p.name for p in (self.root / t).glob("part-*.parquet")]
                self._seq[t] = max((int(n[5:11]) for n in parts if n[5:11].isdigit()), default=0)
            return
        check_output_dir(self.root, force=force)
        try:
            if self.root.exists() and any(p.name != REPLACED for p in self.root.iterdir()):
                self._set_aside()
            for d in (self.root, *(self.root / t for t in SCHEMAS)):
                if not d.exists():
                    d.mkdir(parents=True)
                    self._made.append(d)
            _reserve(self.root / RESERVE)
        except OSError as e:
            self.abort()
            raise BadInput(f"cannot write the trace to {self.root}: {e.strerror}") from None

    def _set_aside(self) -> None:
        aside = self.root / REPLACED
        # Never remove one found there: it is the only copy of a trace that a killed run was
        # replacing (check_output_dir refused it; this is the same check, now, atomically).
        try:
            aside.mkdir()
        except FileExistsError:
            raise BadInput(_left_aside(self.root)) from None
        self._aside = aside
        stamp = {"pid": os.getpid(), "started": time.strftime("%Y-%m-%d %H:%M:%S")}
        (aside / OWNER).write_text(json.dumps(stamp))
        for name in (*SCHEMAS, MANIFEST, SPOOL):
            if (self.root / name).exists():
                os.replace(self.root / name, aside / name)

    def write(
        self,
        table: str,
        batch: pa.Table | pa.RecordBatch,
        *,
        parquet_options: Mapping[str, Any] | None = None,
    ) -> Path | None:
        """Write one complete Parquet file. `parquet_options` (pyarrow.parquet.write_table keywords,
        e.g. use_dictionary, column_encoding) lets a writer that knows its columns save CPU."""
        if batch.num_rows == 0:
            return None
        schema = SCHEMAS[table]
        tbl = batch if isinstance(batch, pa.Table) else pa.Table.from_batches([batch])
        tbl = conform(tbl, schema)
        self._seq[table] += 1
        path = self.root / table / f"part-{self._seq[table]:06d}.parquet"
        tmp = path.with_name(f".{path.name}.tmp")
        md = {META_KEY: self.meta.to_json().encode(), b"iofp_table": table.encode()}
        try:
            pq.write_table(
                tbl.replace_schema_metadata(md),
                tmp,
                **{**PARQUET_DEFAULTS, **(parquet_options or {})},
            )
            os.replace(tmp, path)
        except BaseException as e:
            tmp.unlink(missing_ok=True)
            if not isinstance(e, OSError):
                raise
            # a full disk, mostly: the files before this one are whole
            reason = os.strerror(e.errno) if e.errno else str(e)
            raise OutputFailed(f"cannot write {path}: {reason}") from None
        self._written.append(path)
        self.rows[table] += tbl.num_rows
        self.bytes += path.stat().st_size
        if self.on_file is not None:
            self.on_file(path, f"{table}/{path.name}", self.meta)
        return path

    def write_manifest(self) -> None:
        (self.root / RESERVE).unlink(missing_ok=True)  # the room kept for it
        atomic_write_bytes(
            self.root / MANIFEST, json.dumps(json.loads(self.meta.to_json()), indent=2).encode()
        )

    @property
    def replaced(self) -> Path | None:
        """Where the trace this one replaces is kept until close()."""
        return self._aside

    def close(self) -> None:
        self.write_manifest()
        if self.on_file is not None:
            self.on_file(self.root / MANIFEST, MANIFEST, self.meta)
        if self._aside is not None:
            shutil.rmtree(self._aside, ignore_errors=True)
            self._aside = None

    def abort(self) -> None:
        """Undo this writer: remove what it wrote and put back the trace it was to replace."""
        for p in self._written:
            p.unlink(missing_ok=True)
        self._written.clear()
        (self.root / RESERVE).unlink(missing_ok=True)
        for d in reversed(self._made):
            with contextlib.suppress(OSError):
                d.rmdir()
        self._made.clear()
        if self._aside is not None:
            for p in self._aside.iterdir():
                if p.name == OWNER:
                    continue
                target = self.root / p.name
                if target.is_dir():
                    with contextlib.suppress(OSError):
                        target.rmdir()  # left empty by this writer
                os.replace(p, target)
            (self._aside / OWNER).unlink(missing_ok=True)  # last: until now it was not all back
            self._aside.rmdir()
            self._aside = None

    def __enter__(self) -> TraceWriter:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        if exc_type is None:
            self.close()
        else:
            self.abort()


def conform(tbl: pa.Table, schema: pa.Schema) -> pa.Table:
    """Order, add (as nulls) and cast columns to the contract's schema. Unknown columns are an error."""
    extra = set(tbl.column_names) - set(schema.names)
    if extra:
        raise ValueError(f"columns not in the trace contract: {sorted(extra)}")
    cols = []
    for f in schema:
        if f.name in tbl.column_names:
            col = tbl.column(f.name)
            if not col.type.equals(f.type):
                col = col.cast(f.type)
        else:
            col = pa.nulls(tbl.num_rows, f.type)
        cols.append(col)
    return pa.Table.from_arrays(cols, schema=schema)


# --------------------------------------------------------------------------------------------
# Reading
# --------------------------------------------------------------------------------------------


@dataclass
class Trace:
    """An opened, checked trace. Analyses get relations from it, never paths."""

    root: Path
    meta: TraceMeta
    files: dict[str, list[Path]]
    # the io table's rows, first and last ts_ns, as its footers gave them to the opening's checks
    # (the times None where a file with rows had none)
    io_extent: tuple[int, int | None, int | None] | None = None
    origin: str | None = None  # the s3:// URL of a trace read from a store (root is its local copy)

    @property
    def where(self) -> str:
        """The trace as a user and a record name it: its URL in a store, else its path."""
        return self.origin or str(self.root)

    def has(self, table: str) -> bool:
        return bool(self.files.get(table))

    def relation(self, con: Any, table: str = IO_TABLE) -> Any:
        """A DuckDB relation over one table (an empty one with the right columns if absent)."""
        if not self.has(table):
            return con.from_arrow(SCHEMAS[table].empty_table())
        from iofp import duck  # DuckDB is loaded by whatever reads a relation, not to open a trace

        return con.read_parquet(duck.literal(self.files[table]))

    def batches(self, table: str = IO_TABLE, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Stream the table's record batches in file order (constant memory)."""
        for p in self.files.get(table, []):
            yield from pq.ParquetFile(p).iter_batches(columns=columns, batch_size=1 << 16)

    def num_rows(self, table: str = IO_TABLE) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.files.get(table, []))


def open_trace(path: Path | str) -> Trace:
    """Open a trace directory (or a single io Parquet file) and check it: its schema version, every
    file's footer and columns, and every row for values no request can have (a negative offset, a
    null time, an unknown op). A trace without trace.json is read, with a warning that it may be
    incomplete (its writer did not finish). An `s3://` trace is copied to a local scratch
    directory first (fetch_trace), and only once it is complete."""
    if (url := objstore.url_of(path)) is not None:
        # A directory of its own for every copy: a name made from the URL (or from a count that stops
        # growing) was re-used, and the parts an earlier trace left there were read as this one's.
        into = Path(tempfile.mkdtemp(prefix=f"{url.name or 'trace'}-", dir=_scratch()))
        trace = open_trace(fetch_trace(url, into))
        trace.origin = str(url)
        return trace
    root = Path(path)
    check_utf8_path(root)
    if not root.exists():
        raise BadInput(f"{root}: no such trace")
    if root.is_file():
        _check_is_parquet(root)
        files = {IO_TABLE: [root], SYNC_TABLE: [], CALLS_TABLE: []}
        io_extent = _check_files(files, root)
        return _opened(Trace(root, footer_meta(root), files, io_extent))
    files = {t: [inside(root, p, "a trace file") for p in _parts(root / t)] for t in SCHEMAS}
    manifest = root / MANIFEST
    if not any(files.values()) and not manifest.exists():
        if (root / SPOOL).is_dir():
            raise BadInput(f"{root}: {_spooled(root)}")
        raise BadInput(f"{root}: not an iofp trace (no {IO_TABLE}/*.parquet, no {MANIFEST})")
    io_extent = _check_files(files, root)
    if manifest.exists():
        meta = TraceMeta.from_json(_read_manifest(manifest), where=str(manifest))
        if meta.duration_ns is not None:  # the capture window: a trace's span too (rates, timelines)
            bounds.check_span(str(manifest), meta.duration_ns, "start to end of its capture window")
    else:
        # The manifest is written last; a capture that was killed has none, so the newest file's
        # footer (which carries the counters up to that file) stands in for it.
        newest = max((p for fs in files.values() for p in fs), key=lambda p: p.name)
        meta = footer_meta(newest)
        meta.extra = {**meta.extra, "incomplete": _incomplete(root)}
    return _opened(Trace(root, meta, files, io_extent))


# An artifact's references (a trace's part files, a result's capture, a headroom step's directory)
# are read only where they lie inside the artifact: a link out of it (a part linked to another
# trace, a step's dir of ../../x) is refused unless the user says to follow links (`iofp
# --follow-links`, which sets this for the command).
FOLLOW_LINKS = False


def inside(root: Path, ref: Path, what: str) -> Path:
    """`ref` (a path within the artifact at `root`), checked to resolve inside it; BadInput naming
    it otherwise, unless FOLLOW_LINKS. Returns `ref`."""
    if FOLLOW_LINKS:
        return ref
    base, got = Path(root).resolve(), Path(ref).resolve()
    if got != base and not got.is_relative_to(base):
        raise BadInput(f"{ref}: {what} leads out of {root} (to {got}); pass iofp --follow-links to read "
                       "it there")  # fmt: skip
    return ref


PART = re.compile(r"part-\d{6,}\.parquet")  # what TraceWriter names a file: nothing else is read


def _parts(d: Path) -> list[Path]:
    """A table's files, in order: those named as the writer names them (a `part-*.parquet` that is
    not, such as `part-[1].parquet`, is another tool's, and would be a pattern to DuckDB)."""
    return sorted(p for p in d.glob("part-*.parquet") if PART.fullmatch(p.name))


def _check_is_parquet(path: Path) -> None:
    """A file handed over as a trace that is no Parquet file at all is most often one of the two
    things a user has beside a trace: the raw trace before its import, or a fingerprint."""
    try:
        with open(path, "rb") as f:
            magic = f.read(4)
    except OSError as e:
        raise BadInput(f"{path}: cannot read it ({e.strerror})") from None
    if magic == b"PAR1":
        return
    if path.name == MANIFEST:
        raise BadInput(f"{path} is a trace's manifest; pass its directory, {path.parent}")
    if not magic:
        raise BadInput(f"{path} is empty; not a trace")
    if fingerprint_doc.is_fingerprint_file(path):
        raise BadInput(
            f"{path} is a fingerprint, not a trace; iofp diff and iofp catalog add take it as it is"
        )
    raise BadInput(f"{path} is not a trace (Parquet); if it is a raw trace, import it: "
                   f"iofp import auto {path} -o TRACE")  # fmt: skip


def _read_manifest(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise BadInput(f"{path}: cannot read it ({e.strerror}); not an iofp trace") from None


def _incomplete(root: Path) -> str:
    """Say that a trace's writer did not finish (on stderr, whoever reads it); the note also goes
    into the trace's metadata, so a fingerprint of it says so too."""
    why = (
        f"{root} has no {MANIFEST}: the capture or import that wrote it did not finish; it may be incomplete"
    )
    if (root / REPLACED).exists():
        why += f" (the trace it was replacing is kept in {root / REPLACED})"
    if (root / SPOOL).is_dir():
        why += f"; {_spooled(root)}"
    warn(why)
    return why


def _spooled(root: Path) -> str:
    return (
        f"its capture spooled records it had not encoded yet ({root / SPOOL}); if that capture was "
        f"killed, `iofp recover {root}` adds them to the trace"
    )


def _check_files(
    files: dict[str, list[Path]], where: Path
) -> tuple[int, int | None, int | None] | None:
    """Every footer first (a few KB each: a truncated or foreign file is named here, not deep in a
    query), and the trace's rows and span against iofp/bounds.py before any file's rows are read.
    The io table's extent (rows, first and last ts_ns; None where a file with rows gave no times),
    which spares the fingerprint a read of every time (fingerprint/compute.py checks it)."""
    rows, lo, hi = 0, None, None
    io_rows, io_lo, io_hi, io_known = 0, None, None, True
    for t, fs in files.items():
        for p in fs:
            got = read_schema(p)
            if META_KEY in (got.metadata or {}):  # another version's columns differ: say that first
                TraceMeta.from_json(got.metadata[META_KEY], where=str(p))
            check_columns(p, got, SCHEMAS[t], SCHEMA_VERSION)
            check_text(p, SCHEMAS[t])
            n, a, b = extent(p)
            rows += n
            bounds.check_rows(str(where), rows)
            if a is not None and b is not None:
                lo, hi = (a, b) if lo is None or hi is None else (min(lo, a), max(hi, b))
            if t == IO_TABLE and n:
                io_rows += n
                if a is None or b is None:
                    io_known = False
                else:
                    io_lo = a if io_lo is None else min(io_lo, a)
                    io_hi = b if io_hi is None else max(io_hi, b)
    if lo is not None and hi is not None:
        bounds.check_span(str(where), hi - lo)
    for t, fs in files.items():
        for p in fs:
            check_rows(p, ROW_RULES[t])
    return (io_rows, io_lo, io_hi) if io_rows and io_known else None


def footer_meta(path: Path) -> TraceMeta:
    """The metadata in one Parquet file's footer, whichever table it belongs to (nothing else read)."""
    md = read_schema(path).metadata or {}
    if META_KEY not in md:
        raise SchemaMismatch(f"{path}: no iofp metadata; not an iofp trace")
    return TraceMeta.from_json(md[META_KEY], where=str(path))


# The traces this process opened (the newest few): a read that fails later, deep in a query, is
# explained by the damaged file behind it (cli/app.py asks read_failure()).
_opened_traces: list[Trace] = []


def _opened(trace: Trace) -> Trace:
    _opened_traces.append(trace)
    del _opened_traces[:-8]
    return trace


def read_failure(error: BaseException) -> BadInput | None:
    """The one-line error for a DuckDB or Arrow failure while reading one of the traces this process
    opened, naming the damaged file; None when the failure is not a damaged trace."""
    import duckdb  # loaded by whatever read the trace; not needed to open one

    if not isinstance(error, (duckdb.Error, pa.ArrowException)):
        return None
    for trace in reversed(_opened_traces):
        found = damage_in([p for fs in trace.files.values() for p in fs], error)
        if found is not None:
            return found
    return None


def read_meta(path: Path | str) -> TraceMeta:
    return open_trace(path).meta


# --------------------------------------------------------------------------------------------
# In an object store: a fleet's traces as a hive-partitioned lake
# --------------------------------------------------------------------------------------------

# Where a trace goes in a lake: PREFIX/host=H/service=S/date=YYYY-MM-DD/ (its io/, sync/, trace.json),
# one trace per host, service and day: a table engine (Spark, DuckDB) reads the lake with these
# three as partition columns. The fingerprint of the trace sits beside them as FINGERPRINT.
HIVE_KEYS = ("host", "service", "date")
FINGERPRINT = "fingerprint.json"
_PART = re.compile(r"(io|sync)/part-\d{6}\.parquet")


def hive_parts(meta: TraceMeta) -> dict[str, str]:
    """The partition values of a trace: its host, its service label and its capture's UTC date."""
    service = meta.labels.get("service")
    if not service:
        raise BadInput("a trace shipped to a store needs its service: pass --label service=NAME")
    label = meta.labels.get("date")
    if meta.capture_start_ns is None:
        if not label:
            raise BadInput("a trace shipped to a store is filed by date, and this one has no wall clock: "
                           "pass --label date=YYYY-MM-DD")  # fmt: skip
        day = check_date_label(label)
    else:
        day = time.strftime("%Y-%m-%d", time.gmtime(meta.capture_start_ns / 1e9))
        if label and label != day:
            raise BadInput(f"--label date={label}, but its clock starts on {day}: drop the label")
    parts = {"host": meta.host, "service": service, "date": day}
    for k, v in parts.items():
        if not v or "/" in v or "=" in v:
            raise BadInput(f"{k} {v!r} cannot name a partition (no '/' or '='); relabel it")
    return parts


def check_date_label(text: str) -> str:
    """A `date` label as a lake's date= partition takes it (Spark reads it as a date): YYYY-MM-DD."""
    try:
        ok = datetime.date.fromisoformat(text).isoformat() == text
    except ValueError:
        ok = False
    if not ok:
        raise BadInput(f"--label date={text}: give the day as YYYY-MM-DD, e.g. date=2026-01-05")
    return text


def hive_path(parts: Mapping[str, str]) -> str:
    return "/".join(f"{k}={parts[k]}" for k in HIVE_KEYS)


def fetch_trace(url: objstore.Url, into: Path) -> Path:
    """Copy the trace at `url` to the local directory `into` (made; left to the caller), which must
    hold nothing yet: a trace is every part in its directory, so a file already there would be read
    as one of its parts. Only a complete trace: its manifest is shipped last, so objects without one
    are a trace still being written (or abandoned), and reading them would be reading a part as the
    whole."""
    if into.exists() and any(into.iterdir()):
        raise ValueError(f"{into}: not empty; a trace from {url} is copied only into a directory of its own")
    prefix = url.key.rstrip("/") + "/"
    names = [k[len(prefix):] for k, _ in objstore.listing(url)]
    if MANIFEST not in names:
        if any(_PART.fullmatch(n) for n in names):
            raise BadInput(f"{url}: no {MANIFEST} yet: the capture shipping it has not finished "
                           "(or stopped); nothing was read")  # fmt: skip
        raise BadInput(f"{url}: no trace there (no {MANIFEST}); list the prefix for the traces it holds")
    for name in (*sorted(n for n in names if _PART.fullmatch(n)), MANIFEST):
        local = into / name
        local.parent.mkdir(parents=True, exist_ok=True)
        objstore.download(url.join(name), local)
    return into


@functools.cache
def _scratch() -> Path:
    """This process's directory for traces copied from a store (removed when it exits)."""
    d = Path(tempfile.mkdtemp(prefix="iofp-fetched-"))
    atexit.register(shutil.rmtree, d, ignore_errors=True)
    return d
