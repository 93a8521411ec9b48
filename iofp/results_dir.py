"""A results directory where it lives: a local path, or an `s3://` prefix that `iofp replay`, `iofp
probe` or `iofp headroom -o s3://...` shipped (store/results.py), read by copying it here first.

Each result kind's contract (iofp/replay_result.py, probe_result.py, headroom_result.py) reads its
record through `local`, so `iofp compare s3://lake/results/r-ram` reads the record the same way as
a local one: the same size and depth limits (iofp/artifact_json.py), the same checks. What is
copied is what readers read, no more: the records (a sweep's steps' too) and, for `iofp report`,
each replay's capture (its trace files); not the iologs, fio's output or the expected I/Os, which
can be gigabytes and which no reader opens.

A results directory is complete when its record is there: the shipper sends it last, so a prefix of
files without one is a run still being shipped (or abandoned), and reading it would be reading part
of a run as the whole. A store's keys are not a file system's paths: a key whose path within the
prefix is not plain names (`..`, an empty name, control characters), or is deeper than any results
directory, is refused by name, never followed; the copies sit in this process's private scratch
directory (iofp/scratch.py), removed when it ends, and must fit in it.

Imports no stage.
"""

from __future__ import annotations

import re
import shutil
from pathlib import Path

from iofp import artifact_json, objstore, scratch
from iofp.errors import BadInput
from iofp.terminal import has_control

# The records of the three result kinds (replay_result.RECORD, probe_result.RECORD, headroom_result.RECORD;
# a test holds them equal), each shipped last in its directory.
RECORDS = ("results.json", "probe.json", "headroom.json")
CAPTURE = "capture"  # a replay's capture of the target (the report's curves): an iofp trace
TRACE_FILE = re.compile(r"trace\.json|(io|sync)/part-\d{6,}\.parquet")  # the files a trace reader opens
MAX_DEPTH = 8  # holder/headroom/steps/NN/capture/io/part-N.parquet is 7 names deep
MAX_OBJECTS = 100_000  # a results directory holds hundreds; a prefix of millions is no results directory
FIX = "pass the s3:// prefix a replay, probe or headroom wrote with -o"

_fetched: dict[Path, objstore.Url] = {}  # local copy -> where it came from (shown, as its provenance)


def local(path: Path | str, *, captures: bool = False) -> Path:
    """`path` itself when it is local; for an s3:// URL (a results prefix, a record's key, or a prefix
    holding results directories) the local copy of what readers read, with `captures` each replay's
    capture too. BadInput (one line) for a prefix with no complete result, a key that is no plain
    name, a record over the size limit, or copies that do not fit here."""
    url = objstore.url_of(path)
    if url is None:
        return Path(path)
    record = url.name if url.name in RECORDS else None
    root = url.parent if record else url
    names = _names(root)
    want = {n: size for n, size in names.items() if _wanted(n, captures)}
    complete = [record] if record else _complete(want)
    if not complete or complete[0] not in names:
        raise BadInput(_none_complete(root, names))
    for n, size in want.items():
        if n.rsplit("/", 1)[-1] in RECORDS:
            artifact_json.check_size(root.join(n), size, "result", "the record is damaged: run it again")
    into = scratch.directory() / "results" / str(len(_fetched)) / (root.name or root.bucket)
    _check_room(root, sum(want.values()), into.parent)
    for n in sorted(want):
        dest = into / n
        dest.parent.mkdir(parents=True, exist_ok=True)
        objstore.download(root.join(n), dest)
    _fetched[into] = root
    return into / record if record else into


def shown(path: Path | str) -> str:
    """How to name `path` to a user: the s3:// URL a local copy (or a file in it) came from."""
    p = Path(path)
    for into, url in _fetched.items():
        if p == into or p.is_relative_to(into):
            rel = p.relative_to(into).as_posix()
            return str(url.join(rel)) if rel != "." else str(url)
    return str(path)


def named(text: str) -> str:
    """`text` (an error message) with every local copy named by the s3:// URL it came from."""
    for into, url in _fetched.items():
        text = text.replace(str(into), str(url))
    return text


def _names(root: objstore.Url) -> dict[str, int]:
    """The objects under `root` by their path within it (their size), every one a plain relative path."""
    prefix = root.key.rstrip("/") + "/" if root.key else ""
    found = objstore.listing(root, most=MAX_OBJECTS)
    if len(found) > MAX_OBJECTS:
        raise BadInput(
            f"{root}: more than {MAX_OBJECTS:,} objects, more than a results directory holds; {FIX}"
        )
    names = {}
    for key, size in found:
        rel = key[len(prefix) :]
        parts = rel.split("/")
        bad = next((p for p in parts if not _plain(p)), None)
        if bad is not None:
            raise BadInput(f"{root}: the key {rel!r} is no path within it ({bad!r} in it); nothing was read")
        names[rel] = size
    return names


def _complete(names: dict[str, int]) -> list[str]:
    """The records that make `names` results: one at the top (a results directory), or one in each
    results directory it holds (a comparison's directory, as `iofp report` takes)."""
    return [n for n in names if n in RECORDS or (n.count("/") == 1 and n.split("/")[1] in RECORDS)]


def _plain(name: str) -> bool:
    """A name a local path can take as one component, meaning what it says."""
    return name not in ("", ".", "..") and not has_control(name) and len(name.encode()) <= 255


def _wanted(name: str, captures: bool) -> bool:
    parts = name.split("/")
    if len(parts) > MAX_DEPTH:
        return False
    if parts[-1] in RECORDS:
        return True
    if captures and CAPTURE in parts[:-1]:
        at = len(parts) - 1 - parts[::-1].index(CAPTURE)  # the last `capture` directory on the path
        return TRACE_FILE.fullmatch("/".join(parts[at + 1 :])) is not None
    return False


def _none_complete(root: objstore.Url, names: dict[str, int]) -> str:
    records = "/".join(RECORDS)
    if names:
        return (f"{root}: no {records} there yet: the command shipping it has not finished (or stopped); "
                "nothing was read")  # fmt: skip
    return f"{root}: nothing there; {FIX}"


def _check_room(root: objstore.Url, size: int, where: Path) -> None:
    where.mkdir(parents=True, exist_ok=True)
    free = shutil.disk_usage(where).free
    if size > free:
        raise BadInput(f"{root}: {size / 2**20:,.0f} MiB to copy, {free / 2**20:,.0f} MiB free in {where}; "
                       "free space there or set TMPDIR to a larger file system")  # fmt: skip


__all__ = ["RECORDS", "local", "named", "shown"]
