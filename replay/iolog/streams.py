"""Replay streams: one fio job per submitting process, so one process's fsync does not stall another's,
and one commit job per process whose sync calls forced writes.

The original application's threads and processes were independent: a WAL writer blocked in fdatasync
did not stop the readers. One fio job replays its iolog in one thread, and fio 3.33's libaio runs each
`sync` synchronously in that thread (fio's io_u.c, do_io_u_sync), so a single-log replay of a
fsync-heavy trace stalls every other I/O behind each flush and falls behind for good. With
`--streams pid` the selection is split by the submitting pid (the capture attributes a flush to the
process whose fsync caused it): the `TOP_N` pids with the most I/Os get a stream each, everything else
(other pids, rows with no pid) one "rest" stream. Each stream gets its own iolog and its own fio job,
all in one fio run, all on one clock: every log's timestamps count from the selection's first I/O, so
the streams start together and stay aligned.

A data stream keeps its submitter's way of issuing: one that never had two I/Os in flight was a
synchronous writer (write, wait, fdatasync, as a WAL writer does) and replays as one, psync at QD1;
the others replay through libaio at their own peak in-flight count (`--engine` overrides: then every
data stream uses that engine). Each stream says why (`Stream.why`).

A commit job (commits.py) replays the sync calls of processes whose calls forced writes: the
forced writes as buffered writes at the call's time, then the call, in a psync QD1 job with direct=0,
so that fio's fdatasync writes those pages back and flushes inside the timed call, as the
application's did. Processes whose calls never overlapped (serialized by the application, as
PostgreSQL's backends are by its WAL lock) share one job, so they stay serialized; the others get a
job each. Everything else stays direct. Jobs past the TOP_N share one "commit-rest" job.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from iofp import duck
from iofp.errors import BadInput

SQL = "replay.iolog.sql"
TOP_N = 8
MODES = ("pid", "single")
DEFAULT_IODEPTH = 32


@dataclass
class Stream:
    index: int
    pid: int | None  # None: the rest (other pids and unattributed rows), or the whole selection
    ios: int
    reads: int
    writes: int
    flushes: int  # block flushes without a call, and sync calls replayed inline
    peak_inflight: int | None  # of this stream's own I/Os
    median_gap_ns: float | None
    engine: str = "libaio"
    iodepth: int = DEFAULT_IODEPTH
    direct: bool = True
    kind: str = "data"  # "data" | "commit"
    why: str = ""
    merged: list[int | None] = field(default_factory=list)  # flush-only groups folded in, or the other
    # callers of a commit job (None = rest)

    @property
    def name(self) -> str:
        who = f"pid-{self.pid}" if self.pid is not None else "rest"
        if self.kind == "commit" and self.pid is not None and self.merged:
            who += f"+{len(self.merged)}"  # a group of callers whose calls never overlapped
        return f"commit-{who}" if self.kind == "commit" else who

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"name": self.name}


@dataclass
class StreamPlan:
    mode: str  # "pid" or "single"
    streams: list[Stream]

    @property
    def split(self) -> bool:
        return len(self.streams) > 1

    def route(self, pid: pa.Array, commit: np.ndarray | None = None) -> np.ndarray:
        """The stream index of each row, from its pid column and whether it belongs to a commit group."""
        if not self.split:
            return np.zeros(len(pid), dtype=np.int32)
        pids = np.asarray(pid.fill_null(-1).to_numpy(zero_copy_only=False), dtype=np.int64)
        data = [s for s in self.streams if s.kind == "data"]
        out = _lookup(pids, data)
        if commit is not None and commit.any():
            com = _lookup(pids, [s for s in self.streams if s.kind == "commit"])
            out = np.where(commit, com, out)
        if (out < 0).any():  # cannot happen: the plan covers every pid of the selection
            raise AssertionError("a row matched no replay stream")
        return out

    def to_dict(self) -> dict[str, Any]:
        return {"mode": self.mode, "streams": [s.to_dict() for s in self.streams]}


def _lookup(pids: np.ndarray, streams: list[Stream]) -> np.ndarray:
    """Each pid's stream index among `streams` (their own pid, a merged one, else their rest stream)."""
    own = {s.pid: s.index for s in streams if s.pid is not None}
    own |= {m: s.index for s in streams for m in s.merged if m is not None}
    rest = next((s.index for s in streams if s.pid is None or None in s.merged), -1)
    if len(streams) == 1 and not own:
        return np.full(len(pids), streams[0].index, dtype=np.int32)
    keys = np.array(sorted(own), dtype=np.int64)
    vals = np.array([own[k] for k in sorted(own)], dtype=np.int32)
    if not len(keys):
        return np.full(len(pids), rest, dtype=np.int32)
    pos = np.clip(np.searchsorted(keys, pids), 0, len(keys) - 1)
    return np.where(keys[pos] == pids, vals[pos], rest).astype(np.int32)


def plan(
    con: duckdb.DuckDBPyConnection,
    params: dict[str, Any],
    commit_callers: list[dict[str, Any]],
    *,
    commit_groups: list[list[int]] | None = None,
    mode: str | None = None,
    engine: str = "auto",
    iodepth: int | None = None,
    top_n: int = TOP_N,
) -> StreamPlan:
    """Group the selection into data streams (`mode` None: "pid" when the selection has more than one
    pid), then add the commit jobs: one per group of `commit_groups` (commits.CommitPlan.groups), or
    one per caller in `commit_callers` (commits.CommitPlan.commit_callers) when no groups are given."""
    commit_pids = [c["pid"] for c in commit_callers]
    rows = duck.query(
        con,
        SQL,
        "stream_stats",
        params | {"top_n": top_n if mode != "single" else 0, "commit_pids": commit_pids},
    )
    pids = [r for r in rows if r["stream_pid"] is not None]
    if mode == "pid" and not pids:  # asked for by name: one log where OUT.0.iolog, ... were promised
        raise BadInput(
            "--streams pid: the selection has no per-process streams (an imported trace records no "
            "submitter); use --streams single"
        )
    if mode is None:
        mode = "pid" if len(pids) > 1 else "single"
    data = _data_rows(rows) if mode == "pid" else rows
    if mode == "pid" and len(data) <= 1:  # one process after all: its peak is the whole selection's
        return plan(
            con, params, commit_callers, commit_groups=commit_groups, mode="single", engine=engine,
            iodepth=iodepth, top_n=top_n,
        )  # fmt: skip
    streams = [_data_stream(i, r, engine, iodepth) for i, r in enumerate(data)]
    streams += _commit_streams(len(streams), commit_callers, commit_groups, top_n)
    return StreamPlan(mode, streams)


def _data_rows(rows: list[dict[str, Any]]) -> list[dict[str, Any]]:
    # fio 3.33 refuses an iolog with no read or write ("failed initializing iolog"), so a stream of
    # flushes alone (flushes the capture could not attribute, a process's calls whose writes a
    # kworker made) joins the stream with the most flushes: the writer whose cache they most likely
    # flushed.
    data = [dict(r) for r in rows if r["reads"] + r["writes"] > 0]
    if not data:
        return []
    host = max(data, key=lambda r: (r["flushes"], r["ios"]))
    for r in rows:
        if r["reads"] + r["writes"] == 0:
            for k in ("ios", "flushes"):
                host[k] += r[k]
            host.setdefault("merged", []).append(r["stream_pid"])
    return data


def _data_stream(i: int, r: dict[str, Any], engine: str, iodepth: int | None) -> Stream:
    peak = r["peak_inflight"]
    eng, depth, why = _engine(engine, peak, iodepth)
    return Stream(
        i, r["stream_pid"], r["ios"], r["reads"], r["writes"], r["flushes"], peak,
        None if r["median_gap_ns"] is None else float(r["median_gap_ns"]),
        engine=eng, iodepth=depth, why=why, merged=r.get("merged", []),
    )  # fmt: skip


def _engine(engine: str, peak: int | None, iodepth: int | None) -> tuple[str, int, str]:
    """(engine, iodepth, why) of a data stream."""
    if engine != "auto":
        depth = iodepth or peak or DEFAULT_IODEPTH
        return engine, depth, f"--engine {engine}" + (f", --iodepth {iodepth}" if iodepth else "")
    if peak == 1 and not iodepth:
        return "psync", 1, "never had two I/Os in flight: a synchronous submitter, replayed as one"
    if iodepth:
        return "libaio", iodepth, f"--iodepth {iodepth}"
    if peak is None:
        return "libaio", DEFAULT_IODEPTH, f"no latencies to count in-flight I/Os: QD{DEFAULT_IODEPTH}"
    return "libaio", peak, f"up to {peak} I/Os in flight"


def _commit_streams(
    first: int, callers: list[dict[str, Any]], groups: list[list[int]] | None, top_n: int
) -> list[Stream]:
    """A commit job per group of callers whose calls never overlapped (commits.serialized_groups;
    None: a job per caller); past `top_n` jobs, the rest share one."""
    by_pid = {c["pid"]: c for c in callers}
    groups = groups if groups is not None else [[c["pid"]] for c in callers]
    own, rest = groups[:top_n], [p for g in groups[top_n:] for p in g]
    jobs = [(g[0], g) for g in own] + ([(None, rest)] if rest else [])
    out = []
    for k, (pid, members) in enumerate(jobs):
        calls = sum(by_pid[p]["calls"] for p in members)
        forced = sum(by_pid[p]["forced_writes"] for p in members)
        why = (
            f"{calls:,} sync calls that forced {forced:,} writes: the writes buffered (direct=0) and the "
            "call after them, so the call does their writeback and flush as the application's did"
        )
        if pid is not None and len(members) > 1:
            why += (
                f"; {len(members)} processes whose calls never overlapped (the application serialized "
                "them), in one job to keep them serialized"
            )
        merged = list(members) if pid is None else list(members[1:])
        out.append(
            Stream(
                first + k, pid, calls + forced, 0, forced, calls, 1, None, engine="psync", iodepth=1,
                direct=False, kind="commit", why=why, merged=merged,
            )
        )  # fmt: skip
    return out
