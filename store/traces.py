"""A trace written into a lake: `-o s3://bucket/prefix` on a command that writes a trace.

The trace is written locally, in the spool, through the contract's TraceWriter as ever; each file
it completes (Parquet parts as they are written, trace.json last) is handed to the Shipper for
PREFIX/host=H/service=S/date=D/ (iofp.contract.hive_parts), so a reader of the store sees a trace
only once its manifest is there, after every part it names. A capture ships each file as it is
written (on_file); an import, whose date is known only once its last record is read, ships the
finished trace the same way, file by file, its manifest last (ship_written).
"""

from __future__ import annotations

import os
import shutil
import uuid
from dataclasses import dataclass
from pathlib import Path

import pyarrow.parquet as pq

from iofp import objstore
from iofp.contract import (
    MANIFEST,
    SCHEMAS,
    OnFile,
    TraceMeta,
    check_date_label,
    hive_parts,
    hive_path,
    open_trace,
)
from iofp.errors import BadInput
from iofp.values import parse_size_bytes
from store.ship import DEFAULT_LIMIT, Shipper

LOST_KEY = "lost_ship_spool_full"  # rows of the files the full spool turned away (TraceMeta.loss)


def spool_root() -> Path:
    """$IOFP_SPOOL_DIR, else /var/tmp/iofp-spool (kept across reboots, unlike /tmp)."""
    return Path(os.environ.get("IOFP_SPOOL_DIR") or "/var/tmp/iofp-spool")


def spool_limit() -> int:
    text = os.environ.get("IOFP_SPOOL_LIMIT")
    return DEFAULT_LIMIT if not text else parse_size_bytes(text, "$IOFP_SPOOL_LIMIT")


class TraceShipping:
    """A TraceWriter's on_file: ships each completed file to the trace's place in the lake."""

    def __init__(self, lake: objstore.Url, shipper: Shipper) -> None:
        self.lake = lake
        self.shipper = shipper
        self.dest: objstore.Url | None = None
        self.shipped = False  # every file is in the store

    def __call__(self, path: Path, name: str, meta: TraceMeta) -> None:
        if self.dest is None:  # the date is the capture's start, known once it has started
            self.dest = self.lake.join(hive_path(hive_parts(meta)))
        rows = 0 if name == MANIFEST else pq.ParquetFile(path).metadata.num_rows
        if not self.shipper.ship(path, self.dest.join(name)):
            meta.loss[LOST_KEY] = meta.loss.get(LOST_KEY, 0) + rows  # the manifest, shipped last, says so


@dataclass
class TraceOutput:
    """Where a trace command writes (`local`) and, for a store URL, what ships it."""

    local: Path
    shipping: TraceShipping | None = None

    @property
    def on_file(self) -> OnFile | None:
        return self.shipping

    @property
    def shown(self) -> str:
        """Where the trace is, as the user names it: its place in the lake once shipped there."""
        if self.shipping is None or self.shipping.dest is None or not self.shipping.shipped:
            return str(self.local)
        return str(self.shipping.dest)

    def ship_written(self, wait_s: float | None = None) -> str | None:
        """Ship a trace written whole (an import): each file in the order a writer completes them,
        the manifest last; then `finish`. BadInput, the trace kept here, when it has no place in the
        lake (no date: neither a wall clock nor --label date=)."""
        if self.shipping is None:
            return None
        meta = open_trace(self.local).meta
        try:
            hive_parts(meta)
        except BadInput as e:
            self.shipping.shipper.close()
            raise BadInput(f"{self.shipping.lake}: {e}; the trace is kept in {self.local}") from None
        parts = sorted(p for t in SCHEMAS for p in (self.local / t).glob("part-*.parquet"))
        for p in (*parts, self.local / MANIFEST):
            self.shipping(p, p.relative_to(self.local).as_posix(), meta)
        return self.finish(wait_s)

    def finish(self, wait_s: float | None = None) -> str | None:
        """Wait for the uploads (up to `wait_s`); the line that says where the trace is."""
        if self.shipping is None:
            return None
        shipper = self.shipping.shipper
        try:
            done = shipper.drain(wait_s)
        finally:
            shipper.close()
        st = shipper.stats
        where = self.shipping.dest or self.shipping.lake
        dropped = f"; {st.dropped_files} file(s) dropped, the spool was full" if st.dropped_files else ""
        if not done:
            return (f"{shipper.pending()} file(s) still spooled in {shipper.spool} for {where} (the "
                    f"store does not answer); `iofp ship {shipper.spool}` sends them{dropped}")
        self.shipping.shipped = True
        if not any(self.local.rglob("*.parquet")):
            shutil.rmtree(self.local, ignore_errors=True)
        return f"Shipped {st.shipped + st.already} file(s) to {where}{dropped}"


def trace_output(
    out: Path | str, labels: dict[str, str], needs: tuple[str, ...] = ("service",)
) -> TraceOutput:
    """The local directory a trace command writes to; for `s3://LAKE`, a spool directory whose
    files ship to LAKE/host=/service=/date=/. Checked before any work: a bucket that is not there,
    no credentials, a store that does not answer, a trace without the labels `needs` (a capture
    knows its host; an import is told it)."""
    url = objstore.url_of(out)
    if url is None:
        return TraceOutput(Path(out))
    if missing := [k for k in needs if not labels.get(k)]:
        need = " and ".join(needs)
        flags = " ".join(f"--label {k}=NAME" for k in missing)
        raise BadInput(f"{url}: a trace in a store is filed by {need}: pass {flags}")
    if "date" in labels:
        check_date_label(labels["date"])
    objstore.check_bucket(url)
    root = spool_root()
    local = root / "traces" / f"{uuid.uuid4().hex[:12]}"
    return TraceOutput(local, TraceShipping(url, Shipper(root / "queue", limit_bytes=spool_limit())))
