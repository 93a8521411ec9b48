"""`iofp import`: turn other tools' traces into an iofp trace, streaming, in constant memory.

Input is read line by line (gzip transparently) and written through the trace contract's
TraceWriter one chunk of rows at a time, so memory is bounded by the chunk, not the file: a line is
read at most MAX_LINE characters at a time (a file without newlines is refused at its first line,
not held whole), and a parser holds a bounded number of pending events (fingerprint/formats.py). A
line that is not a record stops the import with a one-line error naming the file and line; the
partial output directory is removed, so nothing half-imported is left looking like a trace. SIGINT,
SIGTERM and SIGHUP do the same between lines: an import is whole or not there, and a trace it was
to replace (--force) is put back.
"""

from __future__ import annotations

import functools
import gzip
import io
import socket
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.compute as pc

from fingerprint.formats import (
    DETECT_ORDER,
    FORMATS,
    TIME_UNITS_NS,
    BoundError,
    Format,
    LineError,
    ParseState,
)
from iofp import bounds, fingerprint_doc
from iofp.contract import IO_SCHEMA, IO_TABLE, SYNC_SCHEMA, SYNC_TABLE, TraceMeta, TraceWriter
from iofp.errors import BadInput, Interrupted
from iofp.filecheck import name_problem
from iofp.signals import StopRequest, stop_on_signals
from iofp.terminal import one_line

# Rows per Parquet file. A row is a Python tuple until its chunk is converted, ~0.5-1 KB with
# blkparse's 17 columns, so 512 Ki rows bound the parser's memory to a few hundred MB.
CHUNK_ROWS = 1 << 19
SNIFF_LINES = 64
# Longer than any record of any format (the longest, blkparse's, is ~150 characters).
MAX_LINE = 1 << 16
STOP_EVERY = 1 << 12  # lines between two looks at the stop flag
MAX_DEVICES = 1 << 16  # distinct device names (Alibaba's 2020 release has ~1,000 volumes)
FORMAT_NAMES = (*FORMATS, "auto")


@dataclass
class ImportResult:
    out: Path
    format: str
    rows: int
    sync_rows: int
    files: int
    devices: list[str]
    counters: dict[str, int]


def open_text(path: Path) -> io.TextIOBase:
    """Open a text trace, gunzipping when the file starts with the gzip magic."""
    try:
        with open(path, "rb") as f:
            magic = f.read(2)
        if magic == b"\x1f\x8b":
            return io.TextIOWrapper(gzip.open(path, "rb"), encoding="utf-8", errors="replace")
        return open(path, encoding="utf-8", errors="replace")
    except OSError as e:
        raise BadInput(f"{path}: cannot read it ({e.strerror})") from None


def detect_format(path: Path) -> str:
    """Name the format of `path` from its first lines, or say how to name it."""
    with open_text(path) as f:
        try:
            head = [f.readline(MAX_LINE) for _ in range(SNIFF_LINES)]
        except (OSError, EOFError) as e:
            raise BadInput(f"{path}: cannot read it ({e})") from None
    body = [x for x in head if x.strip()]
    for fmt in DETECT_ORDER:
        if fmt.sniff(body):
            return fmt.name
    names = ", ".join(FORMATS)
    raise BadInput(f"{path}: cannot tell its format; name it, e.g. `iofp import msr {path} -o T` ({names})")


def _numbered(f: io.TextIOBase, path: Path, where: list[int], stop: StopRequest) -> Iterator[tuple[int, str]]:
    n = 0
    try:
        for n, line in enumerate(iter(functools.partial(f.readline, MAX_LINE), ""), 1):
            where[0] = n
            if len(line) == MAX_LINE and not line.endswith("\n"):
                raise BadInput(
                    f"{path}:{n}: a line longer than {MAX_LINE:,} characters; not a trace "
                    "(every format has one short record per line)"
                )
            if not n % STOP_EVERY and stop.is_set():
                raise stop.interrupted("import abandoned")
            yield n, line
    except (OSError, EOFError, gzip.BadGzipFile) as e:
        raise BadInput(f"{path}:{n + 1}: cannot read on ({e})") from None


def import_trace(
    fmt: str,
    paths: Sequence[Path],
    out: Path,
    *,
    force: bool = False,
    time_unit: str = "ns",
    chunk_rows: int = CHUNK_ROWS,
    labels: dict[str, str] | None = None,
) -> ImportResult:
    """Import `paths` (read in the order given) in format `fmt` (or "auto") into the trace `out`.
    `labels` go into its metadata as a capture's do; `host` among them names the host that recorded
    it (an import's host is otherwise unknown)."""
    if fmt not in FORMAT_NAMES and Path(fmt).is_file():
        # `iofp import trace.gz -o t`: the file took the format's place (typer would only have said
        # "Missing argument 'PATH...'", which names neither the mistake nor the fix)
        raise BadInput(f"{fmt} is an input file: name the format first, e.g. iofp import auto {fmt} -o TRACE")
    if not paths:
        raise BadInput("no input files; e.g. iofp import blkparse trace.txt -o trace")
    for p in paths:
        if p.is_dir():
            raise BadInput(f"{p} is a directory; name the trace file(s) in it")
        if not p.is_file():
            raise BadInput(f"{p}: no such file")
        if fingerprint_doc.is_fingerprint_file(p):
            raise BadInput(f"{p} is a fingerprint, not a trace: there is nothing to import")
    if fmt not in FORMAT_NAMES:
        raise BadInput(f"unknown format {fmt!r}; use one of {', '.join(FORMAT_NAMES)}")
    if time_unit not in TIME_UNITS_NS:
        raise BadInput(f"unknown --time-unit {time_unit!r}; use one of {', '.join(TIME_UNITS_NS)}")
    if fmt == "auto":
        fmt = detect_format(paths[0])
    cls = FORMATS[fmt]
    state = ParseState()
    # The trace was recorded elsewhere: the host and kernel that recorded it are unknown (unless the
    # user names the host: a lake files traces by it).
    given = dict(labels or {})
    meta = TraceMeta(source=f"import:{fmt}", host=given.pop("host", None) or "unknown", kernel="unknown")
    meta.labels = given
    meta.extra = {
        "format": fmt,
        "source_files": [str(p) for p in paths],
        "imported_on": socket.gethostname(),
    }
    if fmt == "disksim":
        meta.extra["time_unit"] = time_unit
    # The handlers go in before anything is set aside and out after the last file is in place: a
    # signal at any moment leaves the import whole, or not there and the trace it replaces intact.
    with stop_on_signals() as stop:
        writer = TraceWriter(out, meta, force=force)
        try:
            rows = _run(cls, paths, state, writer, time_unit, chunk_rows, stop)
            if rows["span_ns"] is not None:  # what every reader would refuse is not written
                bounds.check_span(", ".join(map(str, paths)), rows["span_ns"])
            if stop.is_set():  # after the last line was read: still before anything replaced the old
                raise stop.interrupted("import abandoned")
        except BaseException as e:
            kept = f"; {out} holds the trace it was to replace, as it was" if writer.replaced else ""
            writer.abort()  # a bad record leaves no half trace, and a trace it was to replace intact
            if isinstance(e, Interrupted):
                raise stop.interrupted(f"import of {out} abandoned, nothing written{kept}") from None
            raise
        meta.capture_start_ns = state.capture_start_ns
        meta.devices = {d: {} for d in sorted(state.devices)}
        meta.loss = {
            k: v for k, v in state.counters.items() if k in ("unmatched_completions", "never_completed")
        }
        meta.extra.update({k: v for k, v in state.counters.items() if k not in meta.loss})
        if "timing" in state.notes:
            meta.extra["timing"] = state.notes["timing"]
        meta.duration_ns = rows["span_ns"]
        writer.meta = meta
        writer.close()
    return ImportResult(
        out=out,
        format=fmt,
        rows=writer.rows[IO_TABLE],
        sync_rows=writer.rows[SYNC_TABLE],
        files=rows["files"],
        devices=sorted(state.devices),
        counters=dict(state.counters),
    )


def _run(
    cls: type[Format],
    paths: Sequence[Path],
    state: ParseState,
    writer: TraceWriter,
    time_unit: str,
    chunk_rows: int,
    stop: StopRequest,
) -> dict[str, Any]:
    io_types = {f.name: f.type for f in IO_SCHEMA}
    sync_types = {f.name: f.type for f in SYNC_SCHEMA}
    lo, hi = None, None
    files = 0
    checked: set[str] = set()  # device names found valid

    def flush(buf: list[tuple], columns: tuple[str, ...], table: str, types: dict, where: str) -> None:
        nonlocal lo, hi, files
        if not buf:
            return
        cols = list(zip(*buf, strict=True))
        arrays = {}
        for name, values in zip(columns, cols, strict=True):
            t = types[name]
            try:
                arrays[name] = pa.array(values, t.value_type if pa.types.is_dictionary(t) else t)
            except (pa.ArrowInvalid, OverflowError) as e:
                # The parsers bound every value to its column; this is the net under a parser that
                # missed one, so that it is still one line naming the file, never a traceback.
                raise BadInput(f"{where}: a {name} value does not fit the trace ({e})") from None
        tbl = pa.table(arrays)
        if table == IO_TABLE:
            ts = arrays["ts_ns"]
            mm = pc.min_max(ts)
            lo = mm["min"].as_py() if lo is None else min(lo, mm["min"].as_py())
            hi = mm["max"].as_py() if hi is None else max(hi, mm["max"].as_py())
        if len(state.devices) > MAX_DEVICES:  # names are kept for the whole import, and in trace.json
            raise BadInput(
                f"{where}: more than {MAX_DEVICES:,} device names; is the device column another field?"
            )
        for name in state.devices - checked:
            if (why := name_problem(name)) is not None:
                raise BadInput(f"{where}: device {one_line(name)[:60]!r} is {why}; a trace names devices")
        checked.update(state.devices)
        writer.write(table, tbl)
        bounds.check_rows(where, writer.rows[IO_TABLE] + writer.rows[SYNC_TABLE])
        files += 1
        buf.clear()

    for path in paths:
        parser = cls(path, state, time_unit=time_unit)
        where = [0]
        buf: list[tuple] = []
        records = 0
        syncs_before = writer.rows[SYNC_TABLE] + len(state.sync_rows)
        with open_text(path) as f:
            rows = parser.parse(_numbered(f, path, where, stop))
            try:
                for row in rows:
                    buf.append(row)
                    records += 1
                    if len(buf) >= chunk_rows:
                        flush(buf, cls.columns, IO_TABLE, io_types, f"{path}:{where[0]}")
                    if len(state.sync_rows) >= chunk_rows:
                        flush(state.sync_rows, cls.sync_columns, SYNC_TABLE, sync_types, f"{path}:{where[0]}")
                buf.extend(parser.finish())
            except BoundError as e:
                raise BadInput(f"{path}:{where[0]}: {e}") from None
            except LineError as e:
                raise BadInput(f"{path}:{where[0]}: {e}; fix or remove that line") from None
            except UnicodeDecodeError as e:
                raise BadInput(f"{path}:{where[0]}: not text ({e.reason})") from None
        if where[0] == 0:
            raise BadInput(f"{path}: empty file")
        # Lines a format may skip (a header, comments, other events) must not pass a file with no
        # records at all, e.g. prose given as blkreplay, as an import of 0 I/Os.
        if not buf and not records and writer.rows[SYNC_TABLE] + len(state.sync_rows) == syncs_before:
            raise BadInput(
                f"{path}: no {cls.name} records in its {where[0]:,} lines (a record is {cls.record}); "
                f"is it a {cls.name} trace?"
            )
        flush(buf, cls.columns, IO_TABLE, io_types, f"{path}:{where[0]}")
    flush(state.sync_rows, cls.sync_columns, SYNC_TABLE, sync_types, str(paths[-1]))
    span = None if lo is None else hi - lo
    return {"span_ns": span, "files": files}
