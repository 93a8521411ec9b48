"""A replay plan: a selection resolved once, and everything derived from it, passed down.

`resolve(trace, selection, ...)` runs, in order and once each: the selection's span and what it
holds (selection.py: the regime rule runs here and nowhere else), the commit groups (commits.py) and
the streams (streams.py). `iofp iolog` and `iofp replay` both start from it; the converter (converter.py)
reads the plan's rows through the plan's own DuckDB connection, where the commit tables live.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

import duckdb
import pyarrow as pa

from iofp.contract import SYNC_TABLE, Trace
from replay.iolog import commits as commitmod
from replay.iolog import selection as selmod
from replay.iolog import streams as streammod


@dataclass
class Plan:
    trace: Trace
    selection: selmod.Selection
    stats: selmod.SelectionStats
    commits: commitmod.CommitPlan
    streams: streammod.StreamPlan
    con: duckdb.DuckDBPyConnection  # holds views io/sync and temp tables calls/marks; close() when done

    @property
    def params(self) -> dict[str, Any]:
        return selmod.span_params(self.selection, self.stats) | {
            "commit_pids": [c["pid"] for c in self.commits.commit_callers]
        }

    def batches(self, *, ordered: bool) -> Iterator[pa.RecordBatch]:
        """The selection's rows in replay order (selected_io.sql's columns).

        Not `ordered`: straight from the files in constant memory, for a trace in issue order with
        nothing to regroup (an import: no sync table); raises selection.NotInIssueOrder at the first
        row out of order (a capture writes rows as requests complete), and the caller starts over
        `ordered`: sorted by DuckDB, which spills past its memory limit."""
        if ordered or self.trace.has(SYNC_TABLE):
            keys = ("device", "t_lo_ns", "t_hi_ns", "commit_pids")
            return selmod.ordered_batches(self.con, {k: self.params[k] for k in keys})
        return selmod.file_order_batches(self.trace, self.selection, self.stats)

    def close(self) -> None:
        self.con.close()

    def to_dict(self) -> dict[str, Any]:
        return {"commits": self.commits.to_dict(), **self.streams.to_dict()}


def resolve(
    trace: Trace,
    sel: selmod.Selection,
    *,
    streams: str | None = None,
    engine: str = "auto",
    iodepth: int | None = None,
) -> Plan:
    """Resolve `sel` on `trace` once: span and stats, commit groups, streams (see the module docstring)."""
    con = selmod.connect(trace)
    try:
        stats = selmod.resolve(con, trace, sel)
        params = selmod.span_params(sel, stats)
        multi = len(selmod.trace_devices(con)) > 1
        commit_plan = commitmod.resolve(con, params, trace.has(SYNC_TABLE), multi)
        stream_plan = streammod.plan(
            con, params, commit_plan.commit_callers, commit_groups=commit_plan.groups, mode=streams,
            engine=engine, iodepth=iodepth,
        )  # fmt: skip
    except BaseException:
        con.close()
        raise
    return Plan(trace, sel, stats, commit_plan, stream_plan, con)
