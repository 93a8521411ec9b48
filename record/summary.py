"""The per-second summary on disk: kept for the whole run (and across restarts), tiny, exact.

Each final second (record/seconds.py) is one JSON line appended to the hour's log,
`summary/<YYYYmmddTHH>.<session>.jsonl`, as soon as it is final: a kill -9 loses at most the second
being written (a torn last line is skipped). When the hour ends, or the recorder stops, the log is
compacted into `<same name>.parquet` (written whole, then the log removed; a Parquet file found
beside its log is the complete one). Reading takes both.

A row per second, device and op (SUMMARY_OPS; `none`, count 0: a second recorded with no I/O, so
that a quiet second reads as zero, not as missing): count, bytes, the latencies' sum and most, the
count whose latency is unknown, the most in flight at an issue, and the latency histogram's
non-empty bins (`bins`) with their counts (`bin_counts`).
"""

from __future__ import annotations

import contextlib
import json
import time
from pathlib import Path
from typing import IO, Any

import pyarrow as pa
import pyarrow.parquet as pq

from iofp.contract import atomic_write_bytes
from record.seconds import Second

SUMMARY = "summary"
NONE = "none"

SCHEMA = pa.schema(
    [
        pa.field("t", pa.int64(), nullable=False),  # wall-clock second (Unix)
        pa.field("device", pa.string(), nullable=False),
        pa.field("op", pa.string(), nullable=False),
        pa.field("count", pa.int64(), nullable=False),
        pa.field("bytes", pa.int64(), nullable=False),
        pa.field("lat_sum_ns", pa.int64(), nullable=False),
        pa.field("lat_max_ns", pa.int64(), nullable=False),
        pa.field("lat_unknown", pa.int64(), nullable=False),
        pa.field("inflight_max", pa.int32(), nullable=False),
        pa.field("bins", pa.list_(pa.int32()), nullable=False),
        pa.field("bin_counts", pa.list_(pa.int64()), nullable=False),
    ]
)


def _rows(s: Second) -> list[list[Any]]:
    out = []
    for (dev, op), c in sorted(s.cells.items()):
        idx, n = c.bins
        out.append([dev, op, c.count, c.bytes, c.lat_sum_ns, c.lat_max_ns, c.lat_unknown, c.inflight_max,
                    idx.tolist(), n.tolist()])  # fmt: skip
    return out or [["", NONE, 0, 0, 0, 0, 0, 0, [], []]]


class SummaryLog:
    """This session's summary log: `write` each batch of final seconds, `close` at the end."""

    def __init__(self, root: Path, session: str) -> None:
        self.dir = Path(root) / SUMMARY
        self.session = session
        self._hour: str | None = None
        self._f: IO[str] | None = None

    def write(self, seconds: list[Second]) -> None:
        for s in seconds:
            hour = time.strftime("%Y%m%dT%H", time.localtime(s.t))
            if hour != self._hour:
                self.close()
                self.dir.mkdir(parents=True, exist_ok=True)
                self._hour = hour
                self._f = open(self.dir / f"{hour}.{self.session}.jsonl", "a")  # noqa: SIM115 (kept open)
            assert self._f is not None
            self._f.write(json.dumps({"t": s.t, "rows": _rows(s)}, separators=(",", ":")) + "\n")
        if self._f is not None:
            self._f.flush()  # in the page cache: a kill -9 of the recorder loses nothing written

    def close(self) -> None:
        if self._f is not None:
            path = Path(self._f.name)
            self._f.close()
            self._f = None
            compact(path)


def compact(log: Path) -> None:
    """A closed hour's log as Parquet (whole, then the log removed)."""
    out = log.with_suffix(".parquet")
    if not out.exists():
        buf = pa.BufferOutputStream()
        pq.write_table(_read_log(log), buf, compression="zstd")
        atomic_write_bytes(out, buf.getvalue().to_pybytes())
    log.unlink(missing_ok=True)


def compact_left(root: Path, session: str) -> None:
    """Compact the logs that earlier sessions left open (a kill -9, a crash)."""
    for log in sorted((Path(root) / SUMMARY).glob("*.jsonl")):
        if not log.name.endswith(f".{session}.jsonl"):
            compact(log)


def _read_log(log: Path) -> pa.Table:
    cols: dict[str, list[Any]] = {f.name: [] for f in SCHEMA}
    names = SCHEMA.names[1:]
    with open(log) as f:
        for line in f:
            with contextlib.suppress(ValueError, KeyError):  # a line torn by a kill: the rest is whole
                doc = json.loads(line)
                for row in doc["rows"]:
                    cols["t"].append(doc["t"])
                    for name, v in zip(names, row, strict=True):
                        cols[name].append(v)
    return pa.table(cols, schema=SCHEMA)


def read_summary(root: Path, lo_s: int | None = None, hi_s: int | None = None) -> pa.Table:
    """Every summary row of the recorder at `root` with lo_s <= t < hi_s, in time order."""
    d = Path(root) / SUMMARY
    parts = []
    for p in sorted(d.glob("*.parquet")) if d.is_dir() else []:
        parts.append(pq.read_table(p, schema=SCHEMA))
    for p in sorted(d.glob("*.jsonl")) if d.is_dir() else []:
        if not p.with_suffix(".parquet").exists():
            parts.append(_read_log(p))
    tbl = pa.concat_tables(parts) if parts else SCHEMA.empty_table()
    if lo_s is not None or hi_s is not None:
        import pyarrow.compute as pc

        keep = pc.and_(pc.greater_equal(tbl["t"], lo_s or 0), pc.less(tbl["t"], hi_s or 2**62))
        tbl = tbl.filter(keep)
    return tbl.sort_by([("t", "ascending")])
