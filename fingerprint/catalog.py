"""The fingerprint catalog for quarterly reviews: a service's fingerprints over time, in DuckDB.

A catalog is one DuckDB file (default: $IOFP_CATALOG, else $XDG_DATA_HOME/iofp/catalog.duckdb, else
~/.local/share/iofp/catalog.duckdb), or a lake in an object store (s3://BUCKET/PREFIX:
fingerprint/catalog_store.py), which many hosts add to at once. Fingerprint documents are stored
whole; the same document is stored once per service. `trend` walks a service's fingerprints in
capture order and diffs each with the one before (fingerprint.diff), so a reviewer sees every
quarter's drift and its verdict: "the workload got harder" or "the device got slower".
"""

from __future__ import annotations

import hashlib
import itertools
import json
import os
import re
import time
from dataclasses import dataclass, field
from datetime import datetime
from pathlib import Path
from typing import Any

import duckdb

from fingerprint import catalog_store
from fingerprint.diff import DiffResult, diff
from iofp import artifact_json, duck, fingerprint_doc, objstore
from iofp.errors import BadInput, Busy, OutputFailed
from iofp.slo import Slo
from iofp.sqlfiles import load_sql
from iofp.values import parse_duration_ns

SQL = "fingerprint.sql"
UNREADABLE = "iofp_unreadable_object"  # the stand-in for a stored object that is no fingerprint


def busy_wait_s() -> float:
    """How long a catalog command waits for another process's write (DuckDB locks the file) before it
    says the catalog is busy: a `catalog add` holds it for well under a second. $IOFP_CATALOG_WAIT,
    a duration (30s, 2m; a bare number is seconds), read when a catalog is opened: a bad value
    concerns the catalog commands only."""
    text = os.environ.get("IOFP_CATALOG_WAIT", "30")
    return parse_duration_ns(text, "$IOFP_CATALOG_WAIT", allow_zero=True) / 1e9  # 0: do not wait


def default_path() -> Path:
    if env := os.environ.get("IOFP_CATALOG"):
        return Path(env)
    data = Path(os.environ.get("XDG_DATA_HOME") or Path.home() / ".local" / "share")
    return data / "iofp" / "catalog.duckdb"


@dataclass
class Entry:
    id: int
    service: str
    taken_at: datetime
    taken_is_added_time: bool
    source_file: str | None
    source: str | None
    host: str | None
    scope: str
    iops: float | None
    mbps: float | None
    read_share: float | None
    p99_us: float | None
    flush_per_s: float | None
    shape: str | None
    bound: str | None
    doc_text: str | None = field(repr=False)  # None: larger than the catalog reads (doc_bytes)
    doc_bytes: int = 0

    @property
    def doc(self) -> dict[str, Any]:
        """The stored document, read as a fingerprint file is (iofp/artifact_json.py): only when a
        command needs it, so that one bad entry never stops the listing of the others."""
        where, fix = f"catalog entry #{self.id}", f"remove it: iofp catalog rm {self.id}"
        artifact_json.check_size(where, self.doc_bytes, "fingerprint", fix)
        doc = artifact_json.parse(self.doc_text or "", where, "fingerprint", fix)
        if isinstance(doc, dict) and UNREADABLE in doc:
            raise BadInput(f"{where} ({self.source_file}) cannot be read: {doc[UNREADABLE]}; {fix}")
        return doc

    def headline(self) -> dict[str, Any]:
        d = {k: v for k, v in self.__dict__.items() if k not in ("doc_text", "doc_bytes")}
        d["taken_at"] = self.taken_at.isoformat()
        return d


@dataclass
class TrendStep:
    before: Entry
    after: Entry
    diff: DiffResult


class Catalog:
    """A DuckDB-backed store of fingerprints; use as a context manager."""

    def __init__(self, path: Path | str | None = None, *, read_only: bool = False) -> None:
        """Open (or, unless `read_only`, create) the catalog. Reading never creates or changes a file:
        a mistyped --catalog must not leave an empty database behind that looks like a real one.
        While another process writes it (DuckDB locks the file), wait up to busy_wait_s()."""
        self.url = objstore.url_of(path) if path else None
        self._made = False
        if self.url is not None:  # the store is the catalog; an index of it is made here, in memory
            self.path: Path | objstore.Url = self.url
            self.con = duck.connect()
            self._run("catalog_schema")
            for url, service, doc, why in catalog_store.documents(self.url):
                if doc is None:
                    self._insert_unreadable(url, service, why or "unreadable")
                else:
                    self._insert(doc, service, url)
            return
        self.path = Path(path) if path else default_path()
        if self.path.is_dir():
            raise BadInput(f"--catalog {self.path} is a directory; name the catalog file, e.g. "
                           f"{self.path / 'catalog.duckdb'}")  # fmt: skip
        if read_only and not self.path.is_file():
            raise BadInput(
                f"{self.path}: no such catalog; add a fingerprint first: iofp catalog add FP.json "
                f"--service NAME --catalog {self.path}"
            )
        made = False
        try:
            if not read_only:
                self.path.parent.mkdir(parents=True, exist_ok=True)
                made = not self.path.exists() and self._create()
            self.con = self._connect(read_only)
        except OSError as e:
            raise BadInput(
                f"cannot open the catalog {self.path}: {e.strerror}; pass --catalog PATH"
            ) from None
        except duckdb.Error as e:
            if _no_space(e):
                raise self._full() from None
            raise BadInput(
                f"cannot open the catalog {self.path}: {_first_line(e)}; restore it from a copy, "
                "or pass --catalog NEW to start another"
            ) from None
        self._run("catalog_check" if read_only else "catalog_schema")
        # Removed again if this command fails (a full disk mid-add), but only while no other add has
        # landed in it: the file's lock is held from here on, and one may have come in before it.
        self._made = made and self._run("catalog_empty")[0]["empty"]

    def _full(self) -> OutputFailed:
        """A catalog write that ran out of space (making the catalog or adding to it)."""
        return OutputFailed(f"cannot write the catalog {self.path}: no space left on its disk; "
                            "nothing was added, and the catalog is as it was")  # fmt: skip

    def _create(self) -> bool:
        """Make a new catalog whole beside its path, then put it there in one step; False when another
        process put one there first. DuckDB writes a new file's header after creating it: eight adds
        starting at once on no catalog, and one of them opened the half-made file as "not a valid
        DuckDB database file"."""
        tmp = self.path.with_name(f".{self.path.name}.{os.getpid()}.new")
        try:
            con = duck.connect(tmp)
            try:
                con.execute(load_sql(SQL, "catalog_schema"))
            finally:
                con.close()
            try:
                os.link(tmp, self.path)  # fails if a catalog is there: never replaces one
            except FileExistsError:
                return False
            return True
        finally:
            for p in (tmp, tmp.with_name(tmp.name + ".wal")):
                p.unlink(missing_ok=True)

    def _connect(self, read_only: bool) -> duckdb.DuckDBPyConnection:
        """Connect, waiting (with backoff) while another process holds the file's lock."""
        wait_s = busy_wait_s()
        deadline = time.monotonic() + wait_s
        delay = 0.02
        while True:
            try:
                return duck.connect(self.path, read_only=read_only)
            except duckdb.IOException as e:
                if "lock" not in str(e).lower():
                    raise
                if time.monotonic() + delay > deadline:
                    raise Busy(
                        f"the catalog {self.path} is busy: {_holder(e)} has held it for over "
                        f"{wait_s:g} s; run this again once it is done"
                    ) from None
                time.sleep(delay)
                delay = min(2 * delay, 0.5)

    def _run(self, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
        """Run a catalog query, its rows as dicts; a catalog file that fails to read is named in one
        line, not a traceback."""
        try:
            return duck.dicts(self.con.execute(load_sql(SQL, name), params or {}))
        except duckdb.Error as e:
            if isinstance(e, (duckdb.ParserException, duckdb.BinderException)):
                raise  # the query's fault, not the file's
            if _no_space(e):  # the disk's, not the catalog's
                raise self._full() from None
            raise BadInput(
                f"{self.path}: not a readable iofp catalog ({_first_line(e)}); "
                "restore it from a copy, or pass --catalog NEW to start another"
            ) from None

    def close(self) -> None:
        self.con.close()

    def __enter__(self) -> Catalog:
        return self

    def __exit__(self, exc_type: type[BaseException] | None, *exc: object) -> None:
        self.close()
        if exc_type is not None and self._made and isinstance(self.path, Path):  # a full disk mid-add
            for p in (self.path, self.path.with_name(self.path.name + ".wal")):  # leaves no empty catalog
                p.unlink(missing_ok=True)

    def add(
        self, doc: fingerprint_doc.Fingerprint | dict[str, Any], service: str, source_file: str | None = None
    ) -> int:
        """Store a fingerprint for `service`; returns its id. The same document is refused twice."""
        if not service.strip():
            raise BadInput("--service must name the service, e.g. --service order-router")
        if isinstance(doc, dict):
            doc = fingerprint_doc.from_dict(doc, source_file or "document")
        if self.url is not None:
            at = catalog_store.place(self.url, doc, service)
            if not catalog_store.put(at, fingerprint_doc.dumps(doc)):
                raise BadInput(f"{source_file or 'this fingerprint'} is already in the catalog as {at}")
            return self._insert(doc.to_dict(), service, str(at))
        return self._insert(doc.to_dict(), service, source_file)

    def _insert(self, doc: dict[str, Any], service: str, source_file: str | None) -> int:
        text = json.dumps(doc, sort_keys=True)
        if len(text) > artifact_json.LIMITS["fingerprint"]:  # what every reader of the catalog would refuse
            most = artifact_json.LIMITS["fingerprint"] >> 20
            raise BadInput(f"{source_file or 'this fingerprint'}: {len(text) >> 20} MiB, larger than the "
                           f"catalog stores ({most} MiB)")  # fmt: skip
        digest = hashlib.sha256(text.encode()).hexdigest()
        dup = self._run("catalog_find_digest", {"service": service, "digest": digest})
        if dup:
            raise BadInput(
                f"{source_file or 'this fingerprint'} is already in the catalog as #{dup[0]['id']}"
            )
        start_ns = doc["provenance"]["capture_start_ns"]
        params = {
            "service": service,
            "added_us": time.time_ns() // 1000,
            "captured_us": None if start_ns is None else start_ns // 1000,
            "source_file": source_file,
            "digest": digest,
            "doc": text,
        }
        return int(self._run("catalog_insert", params)[0]["id"])

    def _insert_unreadable(self, url: str, service: str, why: str) -> None:
        """A stored object that is no readable fingerprint, listed (so that `catalog rm` finds it) by
        a stand-in document that says why: every figure of it is null, reading it is BadInput."""
        params = {
            "service": service,
            "added_us": 0,
            "captured_us": None,
            "source_file": url,
            "digest": f"unreadable {url}",
            "doc": json.dumps({UNREADABLE: why}),
        }
        self._run("catalog_insert", params)

    def entries(self, service: str | None = None, entry_id: int | None = None) -> list[Entry]:
        out = []
        most = artifact_json.LIMITS["fingerprint"]
        for rec in self._run("catalog_entries", {"service": service, "id": entry_id, "max_doc_bytes": most}):
            rec["doc_text"] = rec.pop("doc")
            out.append(Entry(**rec))
        return out

    def remove(self, entry_id: int) -> dict[str, Any]:
        """Remove fingerprint #entry_id; what it was (id, service, source_file)."""
        gone = self._run("catalog_delete", {"id": entry_id})
        if not gone:
            raise BadInput(f"no fingerprint #{entry_id} in {self.path}; see iofp catalog list")
        if self.url is not None and (obj := objstore.url_of(gone[0]["source_file"])) is not None:
            objstore.delete(obj)  # the store is the catalog: the index here is rebuilt from it
        return gone[0]

    def get(self, entry_id: int) -> Entry:
        found = self.entries(entry_id=entry_id)
        if not found:
            raise BadInput(f"no fingerprint #{entry_id} in {self.path}; see iofp catalog list")
        return found[0]

    def services(self) -> list[tuple[str, int, datetime, datetime]]:
        return [tuple(r.values()) for r in self._run("catalog_services")]

    def service_entries(self, service: str) -> list[Entry]:
        """The service's fingerprints in capture order; none is bad input that names the services there
        (a typo in a service's name is the usual cause)."""
        found = self.entries(service=service)
        if not found:
            known = [s[0] for s in self.services()]
            hint = f"its services: {', '.join(known)}" if known else "add one with iofp catalog add"
            raise BadInput(f"no fingerprints for service {service!r} in {self.path}; {hint}")
        return found

    def trend(self, service: str, slo: Slo | None = None) -> tuple[list[Entry], list[TrendStep]]:
        """The service's fingerprints in capture order, and the diff of each with the one before."""
        found = self.service_entries(service)
        steps = [
            TrendStep(a, b, diff(_read(a), _read(b), f"#{a.id}", f"#{b.id}", slo))
            for a, b in itertools.pairwise(found)
        ]
        return found, steps


def _first_line(e: BaseException) -> str:
    return str(e).splitlines()[0] if str(e) else type(e).__name__


def _holder(e: BaseException) -> str:
    """Who holds the catalog, from DuckDB's lock error ("... (PID 1234) ..."), with its command line."""
    m = re.search(r"\(PID (\d+)\)", str(e))
    if m is None:
        return "another process"
    try:
        raw = Path(f"/proc/{m[1]}/cmdline").read_bytes()
        cmd = " ".join(raw.decode(errors="replace").split("\0")).strip()
    except OSError:
        cmd = ""
    if len(cmd) > 60:
        cmd = cmd[:57] + "..."
    return f"pid {m[1]}" + (f" ({cmd})" if cmd else "")


def _read(e: Entry) -> fingerprint_doc.Fingerprint:
    """A stored document, checked as a file is (a catalog written by an older iofp may hold v1)."""
    return fingerprint_doc.from_dict(e.doc, f"catalog entry #{e.id}")


def _no_space(e: duckdb.Error) -> bool:
    return "No space left on device" in str(e)
