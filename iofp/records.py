"""Versioned JSON records (a probe's probe.json, a sweep's headroom.json): read and checked in one
place, so that every result contract refuses a foreign, damaged or other-version file the same way,
in one line naming the file and the fix. Imports no stage."""

from __future__ import annotations

import dataclasses
import math
import types
import typing
from pathlib import Path
from typing import Any

from iofp import artifact_json, results_dir
from iofp.errors import BadInput


def read(
    path: Path | str, record: str, kind: str, version: int | tuple[int, ...], command: str
) -> tuple[Path, dict[str, Any]]:
    """The record `record` of a result directory written by `iofp COMMAND` (or the file itself),
    with its `kind` and `version` (or one of the versions, oldest first) checked: (the file, its
    parsed JSON object). An s3:// URL is read from its local copy (iofp/results_dir.py)."""
    p = results_dir.local(path)
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


def check_typed(obj: Any, where: str = "") -> None:
    """Raise TypeError naming the first field of the dataclass `obj` whose value is not of its declared
    type (a record damaged or edited by hand parses, and its readers format and add its fields):
    str, bool, int, a finite float, list and dict items, nested dataclasses, optionals; Any is anything."""
    _check(obj, type(obj), where or type(obj).__name__)


def _check(v: Any, tp: Any, path: str) -> None:
    origin, args = typing.get_origin(tp), typing.get_args(tp)
    if tp is Any:
        return
    if origin in (typing.Union, types.UnionType):
        if v is None and type(None) in args:
            return
        errors = []
        for inner in (a for a in args if a is not type(None)):
            try:
                return _check(v, inner, path)
            except TypeError as e:
                errors.append(str(e))
        raise TypeError(errors[0])
    if dataclasses.is_dataclass(tp):
        if not isinstance(v, tp):
            raise TypeError(f"{path} is {type(v).__name__}, not an object")
        hints = typing.get_type_hints(tp)
        for f in dataclasses.fields(tp):
            _check(getattr(v, f.name), hints[f.name], f"{path}.{f.name}")
        return
    if origin is list or tp is list:
        if not isinstance(v, list):
            raise TypeError(f"{path} is {type(v).__name__}, not a list")
        for i, x in enumerate(v):
            _check(x, args[0] if args else Any, f"{path}[{i}]")
        return
    if origin is dict or tp is dict:
        if not isinstance(v, dict):
            raise TypeError(f"{path} is {type(v).__name__}, not an object")
        for k, x in v.items():
            _check(x, args[1] if args else Any, f"{path}.{k}")
        return
    if not _fits(v, tp):
        raise TypeError(f"{path} is {v!r:.40}, not {getattr(tp, '__name__', tp)}")


def _fits(v: Any, tp: Any) -> bool:
    if tp is bool:
        return isinstance(v, bool)
    if isinstance(v, bool):
        return False
    if tp is int:
        return isinstance(v, int) and abs(v) < 2**63
    if tp is float:  # every figure iofp records fits an int64 (ns, bytes, counts) or is a ratio
        return isinstance(v, (int, float)) and math.isfinite(v) and abs(v) < 2**63
    if tp is str:
        return isinstance(v, str)
    return True  # a type this check does not know: the record's own checks
