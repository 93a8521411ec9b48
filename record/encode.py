"""`python -m record.encode INCIDENT`: an incident's segments into the trace's Parquet files.

Run by the recorder in a process of its own (record/incident.py), so that encoding (~0.6 µs of CPU
a request) never holds a lock the recorder's polling waits for. It encodes the segments in
`INCIDENT/.segments/` oldest first as they arrive, into files of up to FILE_ROWS requests, with the
trace's clock starting at the incident's start (wall clock) whatever recorder run (session) a
segment came from; requests issued before that start are left out and counted (`before_start`).
Once the recorder marks the incident closed and every segment is encoded it writes trace.json,
with incident.json in `extra.incident`, and removes `.segments`. If the recorder dies first it
stops, leaving the rest for the recorder's next start.

Exit status: 0 done, 4 the recorder went away before closing the incident, 1 a write failed.
"""

from __future__ import annotations

import json
import os
import shutil
import sys
import time
from pathlib import Path
from typing import Any

import pyarrow as pa
import pyarrow.parquet as pq

from bpf import PARQUET_OPTIONS, Spool, encode_interval, read_capture, segment_extra, segments
from iofp.contract import CALLS_TABLE, IO_TABLE, META_KEY, SYNC_TABLE, TraceMeta, TraceWriter
from iofp.errors import IofpError
from record.incident import CLOSED, PENDING, IncidentDoc

FILE_ROWS = 1 << 19  # requests per Parquet file (~40 MB of Arrow held at most)
POLL_S = 0.2
CURSOR = "encoder"  # in each file's footer: the flush's number and the last segment in the files


def _flush_no(meta: TraceMeta) -> int:
    return int(meta.extra.get(CURSOR, {}).get("flush", 0))


class _Encoder:
    def __init__(self, incident: Path) -> None:
        self.root = incident
        self.doc = IncidentDoc.read(incident)
        self.sessions: dict[str, dict[str, Any]] = {}
        self.writer: TraceWriter | None = None
        self.held: dict[str, list[pa.Table]] = {IO_TABLE: [], SYNC_TABLE: [], CALLS_TABLE: []}
        self.held_rows = 0
        self.loss: dict[str, int] = {}
        self.counts: dict[str, int] = {"before_start": 0, "skipped_ops": 0}
        self.done = 0  # segments encoded
        self.last_end_ns = self.doc.start_ns
        self.times: dict[str, int] = {}
        self.encoded: list[Path] = []  # segments whose rows are held, not yet in a file: kept till then
        self.flushes = 0
        self.through: tuple[str, str] | None = None  # the last segment (session, name) in a file
        self._resume()

    def _resume(self) -> None:
        """An encoder that stopped before (the recorder, or the encoder itself, was killed) left files:
        the footer of its last flush holds the counters and the last segment in them. The last flush
        is found by its number, not by a file's name: each table numbers its own files, and a flush
        writes only the tables it holds rows of (a sort by name read an older flush's counters)."""
        best: TraceMeta | None = None
        for f in self.root.glob("*/part-*.parquet"):
            meta = TraceMeta.from_json(pq.read_schema(f).metadata[META_KEY], where=str(f))
            if best is None or _flush_no(meta) > _flush_no(best):
                best = meta
        if best is None:
            return
        self.loss, self.counts = {**best.loss}, {**self.counts, **best.counts}
        self.last_end_ns = self.doc.start_ns + (best.duration_ns or 0)
        self.flushes = _flush_no(best)
        cursor = best.extra.get(CURSOR, {}).get("through")
        self.through = (str(cursor[0]), str(cursor[1])) if cursor else None

    def pending(self) -> list[tuple[str, Path]]:
        """The segments not encoded yet, oldest first; those a file already holds (the encoder was
        killed between writing it and removing them) removed, not encoded twice."""
        out = []
        for sdir in (self.root / PENDING).iterdir():
            if sdir.is_dir():
                out += [(sdir.name, seg) for seg in segments(sdir) if seg not in self.encoded]
        out.sort(key=lambda x: self._order(x[0], x[1].name))
        if self.through is not None:
            done = self._order(*self.through)
            for _, seg in [x for x in out if self._order(x[0], x[1].name) <= done]:
                shutil.rmtree(seg)
            out = [x for x in out if self._order(x[0], x[1].name) > done]
        return out

    def _order(self, session: str, seg: str) -> tuple[int, str]:
        return self._session(session)["wall0_ns"], seg

    def _session(self, name: str) -> dict[str, Any]:
        if name not in self.sessions:
            cap = read_capture(self.root / PENDING / name)
            wall0 = cap["meta"].capture_start_ns or 0
            # the monotonic time, on this session's clock, of the incident's start
            cap["t0_incident"] = cap["t0_ns"] + (self.doc.start_ns - wall0)
            cap["wall0_ns"] = wall0
            cap["spool"] = Spool(self.root / PENDING / name, 0)
            self.sessions[name] = cap
            if self.writer is None:
                self.writer = TraceWriter(self.root, self._meta(cap["meta"]), resume=True)
        return self.sessions[name]

    def _meta(self, first: TraceMeta) -> TraceMeta:
        meta = TraceMeta(source="record", capture_start_ns=self.doc.start_ns, devices=first.devices,
                         filters=first.filters, labels=first.labels)  # fmt: skip
        kept = ("probes", "witness", "kernel_batch", "fd_lookup")  # fd_lookup: which syscall probes ran
        meta.extra = {k: first.extra[k] for k in kept if k in first.extra}
        return meta

    def encode(self, name: str, seg: Path) -> None:
        s = self._session(name)
        item = s["spool"].read(seg)
        enc = encode_interval(item, s["t0_incident"], s["bits"], s["names"])
        x = segment_extra(seg)
        for k, v in x.get("loss", {}).items():
            self.loss[k] = self.loss.get(k, 0) + v
        for k, v in x.get("counts", {}).items():
            self.counts[k] = self.counts.get(k, 0) + v
        self.counts["before_start"] += enc.before_t0
        self.counts["skipped_ops"] += enc.skipped_ops
        for table, tbl in ((IO_TABLE, enc.io), (SYNC_TABLE, enc.sync), (CALLS_TABLE, enc.calls)):
            if tbl is not None:
                self.held[table].append(tbl)
                self.held_rows += tbl.num_rows
        self.last_end_ns = max(self.last_end_ns, x.get("end_ns", 0))
        self.encoded.append(seg)  # removed once a file holds its rows: a kill before then loses none
        self.through = (name, seg.name)
        self.done += 1
        if self.held_rows >= FILE_ROWS:
            self.flush()
        if self.done == self.doc.history_segments:
            self.flush()
            self.times["history_encoded_ns"] = time.time_ns()

    def flush(self) -> None:
        if self.writer is None:
            return
        meta = self.writer.meta
        meta.loss, meta.counts = dict(self.loss), dict(self.counts)
        meta.duration_ns = max(0, self.last_end_ns - self.doc.start_ns)
        if self.encoded:
            self.flushes += 1
            meta.extra[CURSOR] = {"flush": self.flushes, "through": list(self.through or ())}
        for table, parts in self.held.items():
            if parts:
                self.writer.write(table, pa.concat_tables(parts), parquet_options=PARQUET_OPTIONS[table])
                parts.clear()
        self.held_rows = 0
        for seg in self.encoded:
            shutil.rmtree(seg)
        self.encoded.clear()

    def finish(self) -> None:
        self.flush()
        doc = json.loads((self.root / "incident.json").read_text())
        if self.writer is None:  # no segment at all (the recorder stopped at once): an empty trace
            empty = TraceMeta(source="record", capture_start_ns=self.doc.start_ns)
            self.writer = TraceWriter(self.root, empty, resume=True)
        meta = self.writer.meta
        meta.duration_ns = max(0, self.last_end_ns - self.doc.start_ns)
        meta.loss, meta.counts = dict(self.loss), dict(self.counts)
        meta.extra.pop(CURSOR, None)  # the files' own bookkeeping, not the trace's
        meta.extra["incident"] = doc | self.times | {"complete_ns": time.time_ns()}
        self.writer.write_manifest()
        shutil.rmtree(self.root / PENDING)


def run(incident: Path) -> int:
    enc = _Encoder(incident)
    parent = os.getppid()
    while True:
        closed = (incident / PENDING / CLOSED).exists()  # read before listing: nothing comes after it
        for name, seg in enc.pending():
            enc.encode(name, seg)
        if closed:
            enc.finish()
            return 0
        if os.getppid() != parent:  # the recorder is gone: its next start finishes this incident
            enc.flush()
            return 4
        time.sleep(POLL_S)


def main() -> None:
    try:
        sys.exit(run(Path(sys.argv[1])))
    except IofpError as e:
        print(f"iofp: {e}", file=sys.stderr)
        sys.exit(1)


if __name__ == "__main__":
    main()
