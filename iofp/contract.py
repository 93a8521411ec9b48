"""The trace contract: the one Parquet schema that joins capture, fingerprint and replay.

A *trace* is a directory holding two tables, each a set of zstd Parquet files:

    TRACE/io/part-NNNNNN.parquet      one row per completed block request (IO_SCHEMA)
    TRACE/sync/part-NNNNNN.parquet    one row per fsync-family syscall (SYNC_SCHEMA); optional
    TRACE/trace.json                  the trace's metadata (also in every Parquet file's footer)

Files are written whole and renamed into place, so every file present is valid; a capture killed
with SIGKILL loses at most the file it had not yet written. Columns a source does not have are
null, never invented. Every stage imports this module; this module imports no stage.
"""

from __future__ import annotations

import contextlib
import errno
import json
import os
import platform
import shutil
import socket
import tempfile
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from iofp import __version__
from iofp.errors import BadInput, OutputFailed, SchemaMismatch

SCHEMA_VERSION = 1
META_KEY = b"iofp"  # Parquet key-value metadata key holding the JSON metadata
MANIFEST = "trace.json"
IO_TABLE = "io"
SYNC_TABLE = "sync"

OPS = ("read", "write", "discard", "flush")

IO_SCHEMA = pa.schema(
    [
        pa.field("ts_ns", pa.int64(), nullable=False),  # issue to driver, ns since capture start
        pa.field("queue_ns", pa.int64()),  # entered the block layer, ns since capture start
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

SCHEMAS = {IO_TABLE: IO_SCHEMA, SYNC_TABLE: SYNC_SCHEMA}


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
        try:
            raw = json.loads(text)
        except ValueError as e:
            raise BadInput(f"{where}: metadata is not valid JSON ({e})") from None
        check_schema_version(raw.get("schema_version"), where)
        known = {k: v for k, v in raw.items() if k in cls.__dataclass_fields__}
        return cls(**known)

    @property
    def lost_events(self) -> int:
        return int(sum(v for k, v in self.loss.items() if k.startswith("lost")))


def check_schema_version(version: Any, where: str) -> None:
    if version is None:
        raise SchemaMismatch(f"{where}: no iofp schema version; not an iofp trace")
    if int(version) != SCHEMA_VERSION:
        raise SchemaMismatch(f"{where}: schema v{version}; this iofp ({__version__}) reads v{SCHEMA_VERSION}")


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


# How every trace file is written (pyarrow.parquet.write_table keywords); writers may add to it
PARQUET_DEFAULTS: dict[str, Any] = {"compression": "zstd", "row_group_size": 1 << 20}


# inside a trace being overwritten: the previous trace, kept until the new one is whole
REPLACED = ".iofp-replaced"


def check_output_dir(root: Path, *, force: bool) -> None:
    """Refuse, before anything is written (or waited for), an output that cannot become a trace."""
    if root.exists() and not root.is_dir():
        raise BadInput(f"{root} is a file, not a trace directory; pass a new or empty directory")
    try:
        occupied = root.exists() and any(root.iterdir())
    except OSError as e:
        raise BadInput(f"cannot write the trace to {root}: {e.strerror}") from None
    if occupied and not force:
        raise BadInput(f"{root} already exists and is not empty; pass --force to overwrite it")
    try:
        _try_writing_in(root)
    except OSError as e:
        raise BadInput(f"cannot write the trace to {root}: {e.strerror}") from None


class TraceWriter:
    """Writes a trace directory one complete Parquet file at a time.

    Each `write(table, batch)` call produces one file, written under a temporary name and renamed,
    so that a crash never leaves an invalid file behind. `close()` writes trace.json. With `force`,
    a trace already there is set aside (REPLACED) rather than deleted: `abort()` (or leaving a
    `with` block by an exception) puts it back, and only `close()` deletes it.
    """

    def __init__(self, root: Path | str, meta: TraceMeta, *, force: bool = False) -> None:
        self.root = Path(root)
        self.meta = meta
        self._written: list[Path] = []
        self._made: list[Path] = []
        self._aside: Path | None = None
        check_output_dir(self.root, force=force)
        try:
            if self.root.exists() and any(p.name != REPLACED for p in self.root.iterdir()):
                self._set_aside()
            for d in (self.root, *(self.root / t for t in SCHEMAS)):
                if not d.exists():
                    d.mkdir(parents=True)
                    self._made.append(d)
        except OSError as e:
            self.abort()
            raise BadInput(f"cannot write the trace to {self.root}: {e.strerror}") from None
        self._seq = {t: 0 for t in SCHEMAS}
        self.rows = {t: 0 for t in SCHEMAS}

    def _set_aside(self) -> None:
        aside = self.root / REPLACED
        # one left by a run that was killed: the user has asked to overwrite twice since
        shutil.rmtree(aside, ignore_errors=True)
        aside.mkdir()
        self._aside = aside
        for name in (*SCHEMAS, MANIFEST):
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
        return path

    def write_manifest(self) -> None:
        atomic_write_bytes(
            self.root / MANIFEST, json.dumps(json.loads(self.meta.to_json()), indent=2).encode()
        )

    @property
    def replaced(self) -> Path | None:
        """Where the trace this one replaces is kept until close()."""
        return self._aside

    def close(self) -> None:
        self.write_manifest()
        if self._aside is not None:
            shutil.rmtree(self._aside, ignore_errors=True)
            self._aside = None

    def abort(self) -> None:
        """Undo this writer: remove what it wrote and put back the trace it was to replace."""
        for p in self._written:
            p.unlink(missing_ok=True)
        self._written.clear()
        for d in reversed(self._made):
            with contextlib.suppress(OSError):
                d.rmdir()
        self._made.clear()
        if self._aside is not None:
            for p in self._aside.iterdir():
                target = self.root / p.name
                if target.is_dir():
                    with contextlib.suppress(OSError):
                        target.rmdir()  # left empty by this writer
                os.replace(p, target)
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

    def has(self, table: str) -> bool:
        return bool(self.files.get(table))

    def relation(self, con: Any, table: str = IO_TABLE) -> Any:
        """A DuckDB relation over one table (an empty one with the right columns if absent)."""
        if not self.has(table):
            return con.from_arrow(SCHEMAS[table].empty_table())
        return con.read_parquet([str(p) for p in self.files[table]])

    def batches(self, table: str = IO_TABLE, columns: list[str] | None = None) -> Iterator[pa.RecordBatch]:
        """Stream the table's record batches in file order (constant memory)."""
        for p in self.files.get(table, []):
            yield from pq.ParquetFile(p).iter_batches(columns=columns, batch_size=1 << 16)

    def num_rows(self, table: str = IO_TABLE) -> int:
        return sum(pq.ParquetFile(p).metadata.num_rows for p in self.files.get(table, []))


def open_trace(path: Path | str) -> Trace:
    """Open a trace directory (or a single io Parquet file) and check its schema version."""
    root = Path(path)
    if not root.exists():
        raise BadInput(f"{root}: no such trace")
    if root.is_file():
        files = {IO_TABLE: [root], SYNC_TABLE: []}
        meta = _footer_meta(root)
        return Trace(root, meta, files)
    files = {t: sorted((root / t).glob("part-*.parquet")) for t in SCHEMAS}
    if not any(files.values()) and not (root / MANIFEST).exists():
        raise BadInput(f"{root}: not an iofp trace (no {IO_TABLE}/*.parquet, no {MANIFEST})")
    # The manifest is written last; a capture that was killed has none, so the newest file's
    # footer (which carries the counters up to that file) stands in for it.
    if (root / MANIFEST).exists():
        meta = TraceMeta.from_json((root / MANIFEST).read_text(), where=str(root / MANIFEST))
    else:
        newest = max((p for fs in files.values() for p in fs), key=lambda p: p.name)
        meta = _footer_meta(newest)
    for t, fs in files.items():
        for i, p in enumerate(fs):
            # every footer (a few KB each): a truncated or empty file is named here, not deep in a query
            got = _read_schema(p)
            if i == 0:
                _check_file_schema(p, got, SCHEMAS[t])
    return Trace(root, meta, files)


def _read_schema(path: Path) -> pa.Schema:
    try:
        return pq.read_schema(path)
    except (OSError, pa.ArrowInvalid) as e:
        raise BadInput(f"{path}: not a readable Parquet file ({e})") from None


def _footer_meta(path: Path) -> TraceMeta:
    md = _read_schema(path).metadata or {}
    if META_KEY not in md:
        raise SchemaMismatch(f"{path}: no iofp metadata; not an iofp trace")
    return TraceMeta.from_json(md[META_KEY], where=str(path))


def _check_file_schema(path: Path, got: pa.Schema, schema: pa.Schema) -> None:
    missing = [n for n in schema.names if n not in got.names]
    if missing:
        raise SchemaMismatch(f"{path}: missing columns {missing}; not a v{SCHEMA_VERSION} iofp trace")


def read_meta(path: Path | str) -> TraceMeta:
    return open_trace(path).meta
