"""Reading a fingerprint JSON document: the one place its structure is checked.

A fingerprint file may have been edited by hand, truncated or written by something else. `diff`, the
catalog and the views index it freely (`doc["whole"]["durability"]`), so every key they rely on is
checked here, once, on load; a bad one is a one-line BadInput naming the file and the key.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from fingerprint.compute import FINGERPRINT_VERSION
from fingerprint.diff import METRICS
from iofp.errors import BadInput

MAKE_ONE = "make one with iofp fingerprint TRACE --json OUT"
REGIME_SCOPES = ("steady", "spike", "between")
# The parts of a scope summary that readers open as objects (docs/fingerprint-schema.md); each may be null.
SCOPE_OBJECTS = ("intensity", "mix", "size", "sequential", "seek", "inflight", "interarrival", "burstiness",
                 "durability", "latency", "footprint", "shape", "bound")  # fmt: skip


def load(path: Path) -> dict[str, Any]:
    """Read and check the fingerprint JSON at `path`."""
    try:
        doc = json.loads(Path(path).read_text())
    except OSError as e:
        raise BadInput(f"{path}: cannot read it ({e.strerror})") from None
    except ValueError as e:
        raise BadInput(f"{path}: not JSON ({e})") from None
    return check(doc, str(path))


def check(doc: Any, where: str) -> dict[str, Any]:
    """`doc` if it is a fingerprint every reader can use; else BadInput naming `where` and the key."""
    if not isinstance(doc, dict) or "fingerprint_version" not in doc:
        raise BadInput(f"{where}: not an iofp fingerprint; {MAKE_ONE}")
    if doc["fingerprint_version"] != FINGERPRINT_VERSION:
        raise BadInput(
            f"{where}: fingerprint v{doc['fingerprint_version']!r}; this iofp reads v{FINGERPRINT_VERSION}"
        )
    for key in ("provenance", "whole"):
        if doc.get(key) is None:
            raise BadInput(f"{where}: no `{key}`; not a complete iofp fingerprint ({MAKE_ONE})")
    _want(doc, ("provenance",), dict, where)
    _want(doc, ("provenance", "labels"), dict, where)
    _want(doc, ("provenance", "capture_start_ns"), int, where)
    for scope in ("whole", *REGIME_SCOPES):
        if _want(doc, (scope,), dict, where) is None:
            continue
        for part in SCOPE_OBJECTS:
            _want(doc, (scope, part), dict, where)
        for m in METRICS:
            _want(doc, (scope, *m.path), (int, float), where)
        calls = _want(doc, (scope, "durability", "sync_calls"), dict, where) or {}
        for call in calls:
            _want(doc, (scope, "durability", "sync_calls", call), dict, where)
            _want(doc, (scope, "durability", "sync_calls", call, "calls"), (int, float), where)
            _want(doc, (scope, "durability", "sync_calls", call, "p99_us"), (int, float), where)
    return doc


def _want(doc: dict[str, Any], path: tuple[str, ...], types: type | tuple[type, ...], where: str) -> Any:
    """The value at `path` when it is absent, null or of `types`; else BadInput. A value under a
    missing or null parent counts as absent."""
    value: Any = doc
    for key in path:
        if not isinstance(value, dict):
            return None
        value = value.get(key)
    if value is None:
        return None
    if isinstance(value, bool) or not isinstance(value, types):  # JSON true is no number
        want = "an object" if types is dict else "an integer" if types is int else "a number"
        raise BadInput(f"{where}: `{'.'.join(path)}` is {_kind(value)}; expected {want} or null")
    return value


def _kind(value: Any) -> str:
    if isinstance(value, bool):
        return "true/false"
    if isinstance(value, (int, float)):
        return "a number"
    if isinstance(value, str):
        return "a string"
    return "a list" if isinstance(value, list) else "an object"
