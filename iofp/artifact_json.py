"""How every JSON artifact is read (a file, or an s3:// object): a bounded size and depth, checked
before the work, and its text made one line.

A fingerprint, a result record or a trace's metadata comes from another team or a vendor as often as
from this machine. Read as it is, JSON nested a million levels deep is a RecursionError, a 169 MB
"fingerprint" takes 2-5x its size in memory in every command that reads it (and the catalog
that stores it), and a newline or an escape sequence in any of its strings reaches the terminal, a
job file's comment or a markdown table. So every reader goes through `load` (a file) or `parse`
(bytes already read, a Parquet footer's metadata): the size is checked before reading (a stated
limit per kind of artifact), the nesting while parsing, and every string (keys too) comes back as
one line of printable text (iofp/terminal.one_line: control characters escaped). iofp never
writes a control character into an artifact's text, so nothing of its own is changed.

Imports no stage.
"""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any

from iofp.errors import BadInput
from iofp.terminal import has_control, one_line

MiB = 1 << 20
# The largest artifact of each kind iofp reads: far above what iofp writes (a fingerprint is 25-40
# KB, a result record under 1 MB, a trace's metadata a few KB), far below what hurts a reader.
LIMITS = {
    "fingerprint": 16 * MiB,
    "result": 64 * MiB,
    "trace metadata": 8 * MiB,
    "spool metadata": 8 * MiB,  # a capture's spool: its capture.json, a segment's segment.json
}
MAX_DEPTH = 64  # iofp's own documents nest 7 levels at most


def load(path: Path | str, kind: str, fix: str) -> Any:
    """The JSON document in the file `path`, checked: BadInput (one line naming the file and `fix`,
    what to do instead) when it cannot be read, is larger than LIMITS[kind], is not JSON, or nests
    deeper than MAX_DEPTH."""
    from iofp import objstore

    if (url := objstore.url_of(path)) is not None:
        return _load_object(url, kind, fix)
    p = Path(path)
    limit = LIMITS[kind]
    try:
        with open(p, "rb") as f:
            size = _size(f)
            if size > limit:
                raise BadInput(_too_big(p, size, kind, fix))
            data = f.read(limit + 1)
    except OSError as e:
        raise BadInput(f"{p}: cannot read it ({e.strerror}); {fix}") from None
    if len(data) > limit:  # grew while read, or not a regular file
        raise BadInput(_too_big(p, len(data), kind, fix))
    return parse(data, str(p), kind, fix)


def _load_object(url: Any, kind: str, fix: str) -> Any:
    """An s3:// object, its size checked before it is fetched."""
    from iofp import objstore

    info = objstore.head(url)
    if info is None:
        raise BadInput(f"{url}: no such object; {fix}")
    if info["size"] > LIMITS[kind]:
        raise BadInput(_too_big(url, info["size"], kind, fix))
    return parse(objstore.get_bytes(url, LIMITS[kind]), str(url), kind, fix)


def parse(data: bytes | str, where: str, kind: str, fix: str) -> Any:
    """`data` as a checked JSON document (see `load`); `where` names it in an error."""
    if len(data) > LIMITS[kind]:
        raise BadInput(_too_big(where, len(data), kind, fix))
    try:
        text = data.decode("utf-8") if isinstance(data, bytes) else data
        doc = json.loads(text)
    except UnicodeDecodeError as e:
        raise BadInput(f"{where}: not UTF-8 text (byte {e.start}); {fix}") from None
    except RecursionError:
        raise BadInput(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; {fix}") from None
    except ValueError as e:
        raise BadInput(f"{where}: not valid JSON ({one_line(str(e))}); {fix}") from None
    return _checked(doc, where, fix)


def _checked(doc: Any, where: str, fix: str) -> Any:
    """`doc` with every string made one line, refused past MAX_DEPTH (walked without recursion)."""
    root: list[Any] = [doc]
    stack: list[tuple[Any, Any, Any, int]] = [(root, 0, doc, 1)]  # (parent, key, value, depth)
    while stack:
        parent, key, value, depth = stack.pop()
        if isinstance(value, str):
            parent[key] = one_line(value)
            continue
        if not isinstance(value, (dict, list)):
            continue
        if depth > MAX_DEPTH:
            raise BadInput(f"{where}: JSON nested deeper than {MAX_DEPTH} levels; {fix}")
        if isinstance(value, dict):
            if any(has_control(k) for k in value):
                value = {one_line(k): v for k, v in value.items()}
                parent[key] = value
            stack.extend((value, k, v, depth + 1) for k, v in value.items())
        else:
            stack.extend((value, i, v, depth + 1) for i, v in enumerate(value))
    return root[0]


def _size(f: Any) -> int:
    return os.fstat(f.fileno()).st_size


def check_size(where: Path | str, size: int, kind: str, fix: str) -> None:
    """Refuse, by its size alone, an artifact larger than LIMITS[kind] (one stored elsewhere: the
    catalog's documents)."""
    if size > LIMITS[kind]:
        raise BadInput(_too_big(where, size, kind, fix))


def _too_big(where: Path | str, size: int, kind: str, fix: str) -> str:
    most = LIMITS[kind] // MiB
    return f"{where}: {size / MiB:,.1f} MiB, larger than any {kind} iofp reads ({most} MiB); {fix}"
