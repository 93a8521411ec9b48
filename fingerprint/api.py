"""Entry points over paths for the CLI (and the catalog): open a trace, fingerprint it, save it.

The analyses themselves (`compute`, `diff`, `report`) take relations and dicts; this module is the
one place that turns paths into those, and the one place that writes fingerprint files.
"""

from __future__ import annotations

import json
import tempfile
from pathlib import Path
from typing import Any

from fingerprint.compute import Options, compute
from iofp import duck
from iofp.contract import IO_TABLE, SYNC_TABLE, atomic_write_bytes, check_output_file, open_trace
from iofp.errors import BadInput


def fingerprint_trace(path: Path | str, options: Options | None = None) -> dict[str, Any]:
    """Open the trace at `path` through the contract and fingerprint it."""
    trace = open_trace(path)
    # A capture of an idle device is a valid trace with no io files: say so, rather than let the
    # queries below fail on a relation with nothing behind it.
    if trace.num_rows(IO_TABLE) == 0:
        raise BadInput(
            f"{path} holds no block I/O (was the device idle during the capture?); nothing to fingerprint"
        )
    # A scratch database file rather than memory: the prepared rows of a 50 M-row trace are
    # several GB uncompressed; on file they are compressed and paged by DuckDB's buffer manager.
    with tempfile.TemporaryDirectory(prefix="iofp-fp-") as scratch:
        con = duck.connect(Path(scratch) / "fp.duckdb")
        try:
            return compute(con, trace.relation(con), trace.relation(con, SYNC_TABLE), trace.meta, options)
        finally:
            con.close()


def write_json(doc: dict[str, Any], out: Path, *, force: bool = False) -> Path:
    """Write a JSON artifact whole (temp file + rename); never over an existing one without force."""
    check_output_file(out, force=force)
    atomic_write_bytes(out, json.dumps(doc, indent=1, default=_jsonable).encode())
    return out


def write_text(text: str, out: Path, *, force: bool = False) -> Path:
    check_output_file(out, force=force)
    atomic_write_bytes(out, text.encode())
    return out


def read_json(path: Path) -> dict[str, Any]:
    """Read a fingerprint file, checked (fingerprint.document)."""
    from fingerprint import document

    return document.load(path)


def _jsonable(o: Any) -> Any:
    if hasattr(o, "item"):  # numpy scalars
        return o.item()
    if isinstance(o, (set, tuple)):
        return list(o)
    import decimal

    if isinstance(o, decimal.Decimal):
        return float(o)
    raise TypeError(f"not JSON serialisable: {type(o).__name__}")
