"""iofp's own figures of a run, from its capture (sql/measure_ops.sql, sql/measure_syncs.sql).

A replay measures the capture of its target (only fio's requests and calls); `iofp compare
--baseline` measures the original trace over the replays' selection with the same code, so the
baseline row and the candidates' rows are the same figures. Commit latency is the sync table's
(each call, entry to return: fdatasync's writeback and flush); a capture without a sync table falls
back to the block flushes and says so (`commit_from`).
"""

from __future__ import annotations

from typing import Any

from iofp import duck
from iofp.contract import IO_TABLE, SYNC_TABLE, Trace
from iofp.replay_result import Latency, Measured

SQL = "replay.run.sql"
DATA_OPS = ("read", "write", "discard")
_ALL = (-(2**63), 2**63 - 1)


def measure(
    trace: Trace,
    source: str,
    *,
    comm: str | None = None,
    device: str | None = None,
    span_ns: tuple[int | None, int | None] = (None, None),
) -> Measured:
    """The figures of `trace` (its requests of `comm` on `device` issued in `span_ns`, half-open)."""
    lo = _ALL[0] if span_ns[0] is None else span_ns[0]
    hi = _ALL[1] if span_ns[1] is None else span_ns[1]
    con = duck.connect()
    try:
        trace.relation(con, IO_TABLE).create_view("io")
        trace.relation(con, SYNC_TABLE).create_view("sync")
        span = {"comm": comm, "t_lo_ns": lo, "t_hi_ns": hi}
        ops = duck.query(con, SQL, "measure_ops", span | {"device": device})
        syncs = duck.query(con, SQL, "measure_syncs", span) if trace.has(SYNC_TABLE) else []
    finally:
        con.close()
    return figures(source, ops, syncs)


def figures(source: str, ops: list[dict[str, Any]], syncs: list[dict[str, Any]]) -> Measured:
    m = Measured(source=source)
    m.ops = {r["op"]: _latency(r) for r in ops}
    m.syncs = {r["call"]: _latency(r) for r in syncs}
    rows = [r for r in ops if r["op"] != "all"] + [r for r in syncs if r["call"] != "all"]
    if not rows:
        return m
    m.span_s = max((max(r["last_ns"] for r in rows) - min(r["first_ns"] for r in rows)) / 1e9, 1e-6)
    data = sum(m.ops[o].count for o in DATA_OPS if o in m.ops)
    m.achieved_iops = data / m.span_s
    m.achieved_mbps = sum(m.ops[o].bytes for o in ("read", "write") if o in m.ops) / m.span_s / 1e6
    if "all" in m.syncs:
        m.commit_from, commits = "sync calls", m.syncs["all"].count
    elif "flush" in m.ops:
        m.commit_from, commits = "block flushes", m.ops["flush"].count
    else:
        commits = 0
    m.commits_per_s = commits / m.span_s if commits else None
    return m


def _latency(r: dict[str, Any]) -> Latency:
    return Latency(
        count=int(r["count"]), bytes=int(r.get("bytes") or 0), p50=r["p50"], p99=r["p99"], p999=r["p999"]
    )
