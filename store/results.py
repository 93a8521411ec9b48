"""A results directory written to a store: `-o s3://BUCKET/PREFIX` on `iofp replay`, `iofp probe` and
`iofp headroom`.

The command writes its directory as ever, locally, in the spool ($IOFP_SPOOL_DIR/results/ID/NAME, NAME
the prefix's last name, which a reader shows as the candidate's when it has no device label); when
it ends, every file of it goes to the Shipper for PREFIX/<its path>, the records last (a sweep's
steps' before its own headroom.json), so a reader (iofp/results_dir.py) sees a results directory
only once it is complete. The store is checked before any work: a bucket that is not there, no
credentials, a store that does not answer, and a prefix that holds anything already (unless
--force, which removes, when the new run ships, the record first and then what that command writes,
by the same names it clears locally; nothing else under the prefix).

A run that fails or is stopped after it recorded something ships that too (a partial record says it
is one), and keeps its local copy, which the error names. A store that does not answer when the run
ends loses nothing: the files stay spooled and `iofp ship` sends them. Each run ships through a
queue of its own beside its directory (ID/queue: the files are on disk already, so it holds nothing
more than them, and never another writer's entries).
"""

from __future__ import annotations

import shutil
import uuid
from dataclasses import dataclass
from fnmatch import fnmatch
from pathlib import Path

from iofp import objstore
from iofp.errors import BadInput, warn
from iofp.results_dir import RECORDS
from store.ship import SHIP_WAIT_S, Shipper
from store.traces import spool_root


@dataclass
class ResultsOutput:
    """Where a results command writes (`local`) and, for a store URL, where it ships it."""

    local: Path
    url: objstore.Url | None = None
    artifacts: tuple[str, ...] = ()  # the names the command writes at the top of its directory
    force: bool = False
    shipped: bool | None = None  # None: not yet (or local); False: the results stayed here

    def __enter__(self) -> ResultsOutput:
        return self

    def __exit__(self, exc_type: object, exc: object, tb: object) -> None:
        """A run that failed or was stopped: what it recorded ships too, and stays here (its error
        names files here)."""
        if exc is not None and (line := self.finish(keep=True)) is not None:
            warn(line)

    def shown(self, path: Path) -> str:
        """`path` (in `local`) as the user names it: its URL in the store when it went there."""
        if self.url is None or self.shipped is False:
            return str(path)
        rel = Path(path).absolute().relative_to(self.local.absolute()).as_posix()
        return str(self.url.join(rel)) if rel != "." else str(self.url)

    def finish(self, wait_s: float | None = SHIP_WAIT_S, *, keep: bool = False) -> str | None:
        """Ship the directory (waiting up to `wait_s` for the store; with `keep`, the local copy
        stays); the line that says where it is. None for a local directory, or when the run
        recorded nothing (nothing to ship)."""
        if self.url is None:
            return None
        files = _in_shipping_order(self.local)
        if not files or files[-1].name not in RECORDS:
            if not keep:
                shutil.rmtree(self.local.parent, ignore_errors=True)
            return None
        self.shipped = False
        total = sum(f.stat().st_size for f in files)
        shipper = Shipper(self.local.parent / "queue", limit_bytes=max(total, 1))
        try:
            if self.force:
                self._clear()
            for f in files:
                shipper.ship(f, self.url.join(f.relative_to(self.local).as_posix()), keep=keep)
            done = shipper.drain(wait_s)
        finally:
            shipper.close()
        if not done:
            return (f"{shipper.pending()} file(s) still spooled in {shipper.spool} for {self.url} (the store "
                    f"does not answer); `iofp ship {shipper.spool}` sends them")  # fmt: skip
        self.shipped = True
        if keep:
            return f"Shipped {len(files)} file(s) to {self.url}; they are also in {self.local}"
        shutil.rmtree(self.local.parent, ignore_errors=True)
        return f"Shipped {len(files)} file(s) to {self.url}"

    def _clear(self) -> None:
        """--force: the previous run's record goes first (the prefix stops reading as a result), then
        the rest of what the command writes."""
        assert self.url is not None
        prefix = self.url.key.rstrip("/") + "/" if self.url.key else ""
        keys = [k for k, _ in objstore.listing(self.url)]
        ours = [k for k in keys if any(fnmatch(k[len(prefix) :].split("/")[0], a) for a in self.artifacts)]
        for k in sorted(ours, key=lambda k: k[len(prefix) :].split("/")[0] not in RECORDS):
            objstore.delete(objstore.Url(self.url.bucket, k))


def _in_shipping_order(root: Path) -> list[Path]:
    """Every file under `root`, the records after the rest and the deepest record first: a record is
    shipped after every file of its directory, the top one last of all."""
    files = sorted(p for p in root.rglob("*") if p.is_file() and not p.is_symlink())
    rest = [p for p in files if p.name not in RECORDS]
    records = sorted((p for p in files if p.name in RECORDS), key=lambda p: -len(p.relative_to(root).parts))
    return rest + records


def results_output(out: Path | str, artifacts: tuple[str, ...], *, force: bool) -> ResultsOutput:
    """The directory a results command writes to; for `s3://PREFIX`, a spool directory that ships
    there when the command ends. Checked before any work: the bucket, the credentials, the store's
    answer, and a prefix already holding anything (unless `force`)."""
    url = objstore.url_of(out)
    if url is None:
        return ResultsOutput(Path(out))
    if not url.key:
        raise BadInput(f"{url}: name a prefix for the results, e.g. {url.join('results', 'ram-loop')}")
    objstore.check_bucket(url)
    if not force and objstore.listing(url, most=0):
        raise BadInput(f"{url} already holds objects; pass --force or choose another --output")
    local = spool_root() / "results" / uuid.uuid4().hex[:12] / url.name
    return ResultsOutput(local, url, artifacts, force)
