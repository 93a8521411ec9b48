"""Replay streams: one fio job per submitting process, so one process's fsync does not stall another's.

The original application's threads and processes were independent: a WAL writer blocked in fdatasync
did not stop the readers. One fio job replays its iolog in one thread, and fio 3.33's libaio runs each
`sync` synchronously in that thread (fio's io_u.c, do_io_u_sync), so a single-log replay of a
fsync-heavy trace stalls every other I/O behind each flush and falls behind for good (1.5). With
`--streams pid` the selection is split by the submitting pid (the capture attributes a flush to the
process whose fsync caused it): the `TOP_N` pids with the most I/Os get a stream each, everything else
(other pids, rows with no pid) one "rest" stream. Each stream gets its own iolog and its own fio job
(iodepth = the stream's own peak in-flight count), all in one fio run, all on one clock: every log's
timestamps count from the selection's first I/O, so the streams start together and stay aligned.

A stream's engine: libaio, or with `--engine auto` psync for a stream that never had more than one I/O
in flight (a synchronous writer such as a WAL: write, then fdatasync, as the app did).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from iofp import duck
from replay import selection as selmod

SQL = "replay.sql"
TOP_N = 8
MODES = ("pid", "single")


@dataclass
class Stream:
    index: int
    pid: int | None  # None: the rest (other pids and unattributed rows), or the whole selection
    ios: int
    reads: int
    writes: int
    flushes: int
    peak_inflight: int | None  # of this stream's own I/Os
    median_gap_ns: float | None
    engine: str = "libaio"
    merged: list[int | None] = field(default_factory=list)  # flush-only groups folded in (None = rest)

    @property
    def name(self) -> str:
        return f"pid-{self.pid}" if self.pid is not None else "rest"

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"name": self.name}


@dataclass
class StreamPlan:
    mode: str  # "pid" or "single"
    streams: list[Stream]

    @property
    def split(self) -> bool:
        return len(self.streams) > 1

    def route(self, pid: pa.Array) -> np.ndarray:
        """The stream index of each row, from its pid column."""
        if not self.split:
            return np.zeros(len(pid), dtype=np.int32)
        own = {s.pid: s.index for s in self.streams if s.pid is not None}
        own |= {m: s.index for s in self.streams for m in s.merged if m is not None}
        rest = next((s.index for s in self.streams if s.pid is None or None in s.merged), -1)
        pids = np.asarray(pid.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        keys = np.array(sorted(own), dtype=np.int64)
        vals = np.array([own[k] for k in sorted(own)], dtype=np.int32)
        pos = np.clip(np.searchsorted(keys, pids), 0, len(keys) - 1)
        out = np.where(keys[pos] == pids, vals[pos], rest).astype(np.int32)
        if (out < 0).any():  # cannot happen: the plan covers every pid of the selection
            raise AssertionError("a row matched no replay stream")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "streams": [s.to_dict() for s in self.streams]}


def plan(
    con: duckdb.DuckDBPyConnection,
    sel: selmod.Selection,
    stats: selmod.SelectionStats,
    mode: str | None = None,
    engine: str = "libaio",
    top_n: int = TOP_N,
) -> StreamPlan:
    """Group the selection into streams (`mode` None: "pid" when the selection has more than one pid)."""
    params = {
        "device": sel.device,
        "t_lo_ns": stats.t_lo_ns,
        "t_hi_ns": stats.t_hi_ns,
        "reads_only": sel.reads_only,
        "top_n": top_n if mode != "single" else 0,
    }
    rows = duck.query(con, SQL, "stream_stats", params)
    pids = [r for r in rows if r["stream_pid"] is not None]
    if mode is None:
        mode = "pid" if len(pids) > 1 else "single"
    if mode == "single" or len(rows) <= 1:
        whole = Stream(
            0,
            None,
            stats.rows,
            stats.reads,
            stats.writes,
            stats.flushes,
            stats.peak_inflight,
            _median_gap(rows),
            _engine(engine, stats.peak_inflight),
        )
        return StreamPlan("single", [whole])
    # fio 3.33 refuses an iolog with no read or write ("failed initializing iolog"), so a stream of
    # flushes alone (typically flushes the capture could not attribute) joins the stream with the
    # most flushes: the writer whose cache they most likely flushed.
    data = [r for r in rows if r["reads"] + r["writes"] > 0]
    if not data:
        return plan(con, sel, stats, "single", engine, top_n)
    flush_only = [r for r in rows if r["reads"] + r["writes"] == 0]
    if flush_only:
        host = max(data, key=lambda r: (r["flushes"], r["ios"]))
        for r in flush_only:
            for k in ("ios", "flushes"):
                host[k] += r[k]
            host.setdefault("merged", []).append(r["stream_pid"])
        rows = data
    if len(rows) == 1:
        return plan(con, sel, stats, "single", engine, top_n)
    streams = [
        Stream(
            i,
            r["stream_pid"],
            r["ios"],
            r["reads"],
            r["writes"],
            r["flushes"],
            r["peak_inflight"],
            r["median_gap_ns"],
            _engine(engine, r["peak_inflight"]),
            merged=r.get("merged", []),
        )
        for i, r in enumerate(rows)
    ]
    return StreamPlan("pid", streams)


def _median_gap(rows: list[dict[str, Any]]) -> float | None:
    gaps = [r["median_gap_ns"] for r in rows if r["median_gap_ns"] is not None]
    return float(np.median(gaps)) if gaps else None


def _engine(engine: str, peak: int | None) -> str:
    if engine != "auto":
        return engine
    return "psync" if peak == 1 else "libaio"
