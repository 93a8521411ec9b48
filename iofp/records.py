"""Versioned JSON records (a probe's probe.json, a sweep's headroom.json): read and checked in one
place, so that every result contract refuses a foreign, damaged or other-version file the same way,
in one line naming the file and the fix. Imports no stage."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iofp import artifact_json
from iofp.errors import BadInput


def read(
    path: Path | str, record: str, kind: str, version: int | tuple[int, ...], command: str
) -> tuple[Path, dict[str, Any]]:
    """The record `record` of a result directory written by `iofp COMMAND` (or the file itself),
    with its `kind` and `version` (or one of the versions, oldest first) checked: (the file, its
    parsed JSON object)."""
    p = Path(path)
    f = p / record if p.is_dir() else p
    noun = f"{command} result"
    if not f.exists():
        raise BadInput(f"{f}: cannot read it (No such file or directory); pass a directory written by "
                       f"`iofp {command}`")  # fmt: skip
    doc = artifact_json.load(f, "result", f"the record is damaged: run `iofp {command}` again")
    if not isinstance(doc, dict) or doc.get("kind") != kind:
        raise BadInput(f"{f}: not an iofp {noun}; pass a directory written by `iofp {command}`")
    versions = (version,) if isinstance(version, int) else version
    if doc.get("version") not in versions:
        reads = f"v{versions[0]}" + (f"-v{versions[-1]}" if len(versions) > 1 else "")
        raise BadInput(f"{f}: {noun} v{doc.get('version')}; this iofp reads {reads}")
    return f, doc
