"""Shipping completed files to an object store: a local spool first, then uploads that outlast an outage.

`Shipper.ship(path, dest)` is the public API a writer calls for each file it has finished (a trace's
Parquet part, its manifest last; a recorder's segment or incident): the file is already whole on
local disk, so the spool is the file where it lies plus one small entry (`NNNNNNNNNN.json`: path,
destination, SHA-256, size) written beside the others in the spool directory. One thread uploads the
entries in order, each a single PUT with its SHA-256 for the store to verify; a failure (the store
down, a timeout, a 5xx) is retried with exponential backoff (capped) for as long as it takes, so an
outage of an hour loses nothing: the entries wait. A PUT that reached the store but whose answer
was lost is not sent twice: before each attempt the object's checksum is asked for, and an object
already there with the same SHA-256 is the upload done (idempotent). An object already there with a
different content is never overwritten: counted as a conflict and said.

The spool is bounded (`limit_bytes` of files waiting): a file offered when it is full is not
spooled; it is deleted, counted (`dropped_files`, `dropped_bytes`) and said on stderr, never silent.
Entries left by a process that died are shipped by the next Shipper on the same spool directory.
"""

from __future__ import annotations

import contextlib
import json
import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path

from iofp import objstore
from iofp.contract import atomic_write_bytes
from iofp.errors import BadInput, warn

DEFAULT_LIMIT = 1 << 30  # 1 GiB of files waiting
BACKOFF_S = (0.2, 30.0)  # first retry after 0.2 s, doubling to 30 s between tries
SHIP_WAIT_S = 600.0  # at the end of a command: what is not shipped by then stays spooled for `iofp ship`


@dataclass
class ShipStats:
    offered: int = 0
    shipped: int = 0  # uploads confirmed by the store
    already: int = 0  # found there with the same SHA-256 (a retry whose first answer was lost)
    retries: int = 0
    dropped_files: int = 0  # offered when the spool was full: deleted, not shipped
    dropped_bytes: int = 0
    conflicts: list[str] = field(default_factory=list)  # a different object already at the destination

    def to_dict(self) -> dict[str, object]:
        return asdict(self)


@dataclass
class _Entry:
    seq: int
    path: str
    dest: str
    sha256: str
    size: int
    keep: bool  # leave the local file after shipping (a writer that still needs it)


class Shipper:
    """Uploads completed files from a bounded local spool; use as a context manager (or close())."""

    def __init__(
        self, spool: Path, *, limit_bytes: int = DEFAULT_LIMIT, backoff_s: tuple[float, float] = BACKOFF_S
    ) -> None:
        self.spool = Path(spool)
        self.limit_bytes = limit_bytes
        self.backoff_s = backoff_s
        self.stats = ShipStats()
        self._cv = threading.Condition()
        self._queue: list[_Entry] = []
        self._closing = False
        self._failing: str | None = None
        try:
            self.spool.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise BadInput(f"cannot make the shipping spool {self.spool}: {e.strerror}") from None
        self._queue = self._left_behind()
        self._seq = max((e.seq for e in self._queue), default=0)
        self._thread = threading.Thread(target=self._run, name="iofp-shipper", daemon=True)
        self._thread.start()

    # -- the writer's side ----------------------------------------------------------------------

    def ship(self, path: Path, dest: objstore.Url | str, *, keep: bool = False) -> bool:
        """Hand over a completed file for upload to `dest`; False when the spool was full (the file
        is then deleted, unless `keep`, and counted). Returns at once: the upload is the thread's."""
        url = dest if isinstance(dest, objstore.Url) else objstore.url_of(dest)
        if url is None:
            raise BadInput(f"{dest}: not an object-store URL (s3://bucket/key)")
        size = path.stat().st_size
        with self._cv:
            self.stats.offered += 1
            if self.pending_bytes() + size > self.limit_bytes:
                self.stats.dropped_files += 1
                self.stats.dropped_bytes += size
                if not keep:
                    path.unlink(missing_ok=True)
                warn(f"the shipping spool {self.spool} is full ({self.limit_bytes:,} bytes waiting for "
                     f"the store): {path.name} not shipped ({self.stats.dropped_files} dropped so far)")
                return False
            self._seq += 1
            entry = _Entry(self._seq, str(path), str(url), objstore.file_sha256_b64(path), size, keep)
            atomic_write_bytes(self._entry_path(entry), json.dumps(asdict(entry)).encode())
            self._queue.append(entry)
            self._cv.notify_all()
        return True

    def pending_bytes(self) -> int:
        return sum(e.size for e in self._queue)

    def pending(self) -> int:
        with self._cv:
            return len(self._queue)

    def drain(self, timeout_s: float | None = None) -> bool:
        """Wait until every entry is shipped (True), or `timeout_s` passes (False: they stay spooled)."""
        deadline = None if timeout_s is None else time.monotonic() + timeout_s
        with self._cv:
            while self._queue:
                left = None if deadline is None else deadline - time.monotonic()
                if left is not None and left <= 0:
                    return False
                self._cv.wait(left if left is not None else 1.0)
        return True

    def close(self) -> None:
        """Stop the thread; what is not shipped stays in the spool for the next Shipper."""
        with self._cv:
            self._closing = True
            self._cv.notify_all()
        self._thread.join()

    def __enter__(self) -> Shipper:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    # -- the thread -----------------------------------------------------------------------------

    def _run(self) -> None:
        while True:
            with self._cv:
                while not self._queue and not self._closing:
                    self._cv.wait()
                if self._closing:
                    return
                entry = self._queue[0]
            outcome = self._upload_with_retries(entry)
            if outcome is not None:
                self._done(entry, keep=entry.keep or outcome == "conflict")

    def _upload_with_retries(self, entry: _Entry) -> str | None:
        """How the entry ended ("shipped", "already", "conflict"), or None when closed first."""
        delay = self.backoff_s[0]
        while True:
            try:
                outcome = self._upload(entry)
                if self._failing is not None:
                    warn(f"the store answers again; shipping resumed ({self.pending()} file(s) waiting)")
                    self._failing = None
                return outcome
            except (BadInput, OSError) as e:  # the store's failures are all worth waiting out
                if self._failing is None:
                    warn(f"cannot ship {entry.dest} ({e}); keeping it spooled in {self.spool} and retrying")
                self._failing = str(e)
            with self._cv:
                self.stats.retries += 1
                if self._cv.wait_for(lambda: self._closing, timeout=delay):
                    return None
            delay = min(2 * delay, self.backoff_s[1])

    def _upload(self, entry: _Entry) -> str:
        url = objstore.url_of(entry.dest)
        assert url is not None
        there = objstore.head(url)
        if there is not None:
            if there.get("sha256") == entry.sha256:
                self.stats.already += 1
                return "already"
            self.stats.conflicts.append(entry.dest)
            warn(f"{entry.dest} already holds another object; {entry.path} is kept, not shipped over it")
            return "conflict"
        got = objstore.put_file(url, Path(entry.path))
        if got != entry.sha256:  # the file changed since it was offered: not a completed file
            raise BadInput(f"{entry.path} changed after it was handed over for shipping")
        self.stats.shipped += 1
        return "shipped"

    def _done(self, entry: _Entry, *, keep: bool) -> None:
        with self._cv:
            if not keep:
                Path(entry.path).unlink(missing_ok=True)
            self._entry_path(entry).unlink(missing_ok=True)
            self._queue.pop(0)
            self._cv.notify_all()

    # -- the spool on disk ----------------------------------------------------------------------

    def _entry_path(self, entry: _Entry) -> Path:
        return self.spool / f"{entry.seq:010d}.json"

    def _left_behind(self) -> list[_Entry]:
        """Entries a previous process spooled and did not ship, in order; one whose file is gone
        (shipped, then the process died before removing its entry; or deleted by hand) is dropped."""
        out = []
        for p in sorted(self.spool.glob("[0-9]" * 10 + ".json")):
            with contextlib.suppress(OSError, ValueError, TypeError):
                entry = _Entry(**json.loads(p.read_text()))
                if os.path.exists(entry.path):
                    out.append(entry)
                    continue
            p.unlink(missing_ok=True)
        return out
