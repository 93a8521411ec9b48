"""Entry points over paths for the CLI (and the catalog): open a trace, fingerprint it, save it.

The analyses themselves (`compute`, `timeline`, `diff`, `report`) take relations and documents; this is the
one place that turns paths into those, and the one place that writes fingerprint files.
"""

from __future__ import annotations

import tempfile
from pathlib import Path
from typing import Any

from fingerprint.compute import fingerprint, frame
from fingerprint.frame import Options
from fingerprint.timeline import Timeline, timeline
from iofp import duck
from iofp import fingerprint_doc as doc
from iofp.contract import CALLS_TABLE, IO_TABLE, SYNC_TABLE, atomic_write_bytes, check_output_file, open_trace
from iofp.errors import BadInput
from iofp.scratch import directory as scratch_dir


def fingerprint_trace(path: Path | str, options: Options | None = None) -> doc.Fingerprint:
    """Open the trace at `path` through the contract and fingerprint it."""
    return _analyse(path, options, with_timeline=False)[0]


def report_trace(path: Path | str, options: Options | None = None) -> tuple[doc.Fingerprint, Timeline]:
    """The fingerprint of the trace at `path` and its timeline (the report's charts), in one pass
    over one DuckDB connection: the timeline is drawn in the fingerprint's windows."""
    fp, tl = _analyse(path, options, with_timeline=True)
    assert tl is not None
    return fp, tl


def _analyse(
    path: Path | str, options: Options | None, *, with_timeline: bool
) -> tuple[doc.Fingerprint, Timeline | None]:
    trace = open_trace(path)
    # A capture of an idle device is a valid trace with no io files: say so, rather than let the
    # queries below fail on a relation with nothing behind it.
    if trace.num_rows(IO_TABLE) == 0:
        raise BadInput(
            f"{path} holds no block I/O (was the device idle during the capture?); nothing to fingerprint"
        )
    # A scratch database file rather than memory: the prepared rows of a 50 M-row trace are
    # several GB uncompressed; on file they are compressed and paged by DuckDB's buffer manager.
    with tempfile.TemporaryDirectory(prefix="fp-", dir=scratch_dir()) as scratch:
        con = duck.connect(Path(scratch) / "fp.duckdb")
        try:
            calls = trace.relation(con, CALLS_TABLE) if trace.has(CALLS_TABLE) else None
            io, sync = trace.relation(con), trace.relation(con, SYNC_TABLE)
            f = frame(con, io, sync, trace.meta, options, calls, trace.io_extent)
            fp = fingerprint(con, f)
            return fp, timeline(con, f) if with_timeline else None
        finally:
            con.close()


def write_json(fp: doc.Fingerprint | dict[str, Any], out: Path, *, force: bool = False) -> Path:
    """Write a fingerprint (or another JSON artifact) whole (temp file + rename); never over an
    existing one without force."""
    check_output_file(out, force=force)
    atomic_write_bytes(out, doc.dumps(fp).encode())
    return out


def write_text(text: str, out: Path, *, force: bool = False) -> Path:
    check_output_file(out, force=force)
    atomic_write_bytes(out, text.encode())
    return out


def read_json(path: Path) -> doc.Fingerprint:
    """Read a fingerprint file, checked (iofp/fingerprint_doc.py)."""
    return doc.load(path)
