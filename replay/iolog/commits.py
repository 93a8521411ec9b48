"""Commit groups: the sync calls a replay replays, and the block writes each one forced.

A commit as the application saw it is its sync call **with the writeback the call forced**:
PostgreSQL writes its WAL with buffered write() and makes it durable with fdatasync(), which writes
the dirty pages and then flushes, all inside the timed call. Replaying those writes as direct writes of
their own followed by a bare flush times the flush alone (measured: 144 µs per replayed call where
PostgreSQL's fdatasync took 388 µs on the same kind of device).

From the capture (sql/commit_calls.sql, sql/commit_marks.sql):
- every fsync-family call in the span that makes data durable (fsync, fdatasync, O_DSYNC writes,
  msync, sync, syncfs; not sync_file_range, which waits for nothing) is replayed as a call: fio's
  `datasync` for fdatasync and O_DSYNC writes, `sync` for the others;
- the writes it forced are the caller's writes that entered the block layer inside the call's window
  (the kernel submits them from the caller's task, so block_io_start gives them the caller's pid:
  checked on a live capture, tests/test_commits.py);
- the flushes issued inside a replayed call are left out: the replayed call makes them again.
A process whose calls forced writes gets a commit job (streams.py): its forced writes as buffered
writes at the call's start, then the call. A process whose calls forced none (an O_DIRECT writer that
wrote, waited, then called fdatasync) replays its calls inline in its own stream, in order with its
writes, as it made them.

Callers whose calls never overlapped in the capture share one commit job (sql/commit_overlaps.sql,
`groups`): the application serialized them. PostgreSQL's backends each write and fdatasync the WAL
under its write lock, so no two of their calls ever overlap; replayed in a job each, on a slower
candidate they did (2,417 of 5,465 pgbench calls on the disk loop), each call's writeback and flush
then ran against another's, and the replay's commits took 801 µs p50 where PostgreSQL's own took
518 µs on that device (BENCHMARKS.md). In one job, a call that the candidate delays delays the next
as the lock would, and that wait is not part of the next call's latency, as in the application.

A trace without a sync table (an import, a capture with --no-syscalls) keeps the block flushes, each
replayed as fio's `sync` (an fsync of the target: a flush on a block device), and says so.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from iofp import duck
from iofp.sqlfiles import load_sql

SQL = "replay.iolog.sql"


@dataclass
class CommitPlan:
    """What a replay does with the trace's sync calls and block flushes in the selected span."""

    source: str  # "sync table" | "block flushes"
    in_span: int = 0  # sync-table rows in the span
    replayed: int = 0  # calls replayed
    by_call: dict[str, int] = field(default_factory=dict)  # replayed calls by kind
    sync_file_range: int = 0  # not replayed as calls
    failed: int = 0  # returned an error: not replayed
    other: int = 0  # on another device, or left out by --reads-only
    forced_writes: int = 0
    covered_flushes: int = 0
    callers: list[dict[str, Any]] = field(default_factory=list)  # per pid: calls, forced writes
    groups: list[list[int]] = field(default_factory=list)  # commit callers by job: never overlapped
    inline: list[int] = field(default_factory=list)  # callers whose calls replay in their own stream

    @property
    def commit_callers(self) -> list[dict[str, Any]]:
        """The callers that get a commit job: those whose calls forced writes."""
        return [c for c in self.callers if c["forced_writes"] > 0]

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)


def resolve(
    con: duckdb.DuckDBPyConnection, params: dict[str, Any], has_sync: bool, multi_device: bool
) -> CommitPlan:
    """Find the replayed calls and the rows they force or cover (temp tables `calls` and `marks`, which
    the stream plan and the converter read); `params` is the selection's span (selection.span_params)."""
    con.execute(load_sql(SQL, "commit_calls"), params | {"multi_device": multi_device})
    con.execute(load_sql(SQL, "commit_marks"), {k: params[k] for k in ("device", "t_lo_ns", "t_hi_ns")})
    if not has_sync:
        return CommitPlan(source="block flushes")
    span = {k: params[k] for k in ("t_lo_ns", "t_hi_ns")}
    [t] = duck.query(con, SQL, "commit_totals", span)
    plan = CommitPlan(
        source="sync table",
        in_span=t["in_span"],
        replayed=t["replayed"],
        by_call={d["call"]: d["n"] for d in t["by_call"] or []},
        sync_file_range=t["sync_file_range"],
        failed=t["failed"],
        forced_writes=t["forced_writes"],
        covered_flushes=t["covered_flushes"],
        callers=duck.query(con, SQL, "commit_stats"),
    )
    plan.other = plan.in_span - plan.replayed - plan.sync_file_range - plan.failed
    plan.inline = [c["pid"] for c in plan.callers if c["forced_writes"] == 0]
    pids = [c["pid"] for c in plan.commit_callers]
    overlaps = duck.query(con, SQL, "commit_overlaps", {"pids": pids})
    plan.groups = serialized_groups(pids, {(r["pid_a"], r["pid_b"]) for r in overlaps})
    return plan


def serialized_groups(pids: list[int], overlaps: set[tuple[int, int]]) -> list[list[int]]:
    """`pids` (busiest first) in groups whose members' calls never overlapped (`overlaps`: pairs, the
    smaller pid first): each pid joins the first group it overlapped with no member of (greedy)."""
    groups: list[list[int]] = []
    for p in pids:
        for g in groups:
            if not any((min(p, q), max(p, q)) in overlaps for q in g):
                g.append(p)
                break
        else:
            groups.append([p])
    return groups
