"""A replay's latency curves, from the relations of its capture: per kind of request (reads, writes,
flushes and the sync calls, i.e. the commits), the p50 and p99 per window and the tail (the latency at
each exceedance level a trace's tail is read at: fingerprint/timeline.py), nearest-rank (DuckDB's
quantile_disc, as fio's percentiles are), with the SQL in report/sql."""

from __future__ import annotations

from dataclasses import dataclass, field

import duckdb

from fingerprint import timeline
from iofp import duck
from iofp.sqlfiles import load_sql

SQL = "report.sql"
PROBS = timeline.PROBS  # the tails of a trace and of a run are read at the same levels
MAX_WINDOWS = 120


@dataclass
class Curves:
    """A run's latency curves from its capture: per kind, p50/p99 per window (µs) and its tail."""

    window_s: float
    over_time: dict[str, tuple[list[float], list[float], list[float]]] = field(default_factory=dict)
    cdf: dict[str, tuple[list[float], int]] = field(default_factory=dict)  # kind -> (µs at PROBS, n)


def curves(
    con: duckdb.DuckDBPyConnection, io: duckdb.DuckDBPyRelation, sync: duckdb.DuckDBPyRelation
) -> Curves | None:
    """The latency curves of a run's capture, given its io and sync relations on `con` (the trace
    contract's reader: an empty relation for a table the capture has not); None when it timed no
    request."""
    io.create_view("run_io")
    sync.create_view("run_sync")
    con.execute(load_sql(SQL, "run_lat")).fetchall()
    [span] = duck.query(con, SQL, "run_span")
    t0, t1 = span["t0"], span["t1"]
    if t0 is None:
        return None
    window_ns = 1_000_000
    while (t1 - t0) / window_ns > MAX_WINDOWS:
        window_ns *= 10
    out = Curves(window_ns / 1e9)
    for r in duck.query(con, SQL, "run_latency_windows", {"t0": t0, "window_ns": window_ns}):
        xs, p50, p99 = out.over_time.setdefault(r["kind"], ([], [], []))
        xs.append((r["w"] + 0.5) * window_ns / 1e9)
        p50.append(r["p50_ns"] / 1e3)
        p99.append(r["p99_ns"] / 1e3)
    for r in duck.query(con, SQL, "run_latency_cdf", {"probs": PROBS}):
        out.cdf[r["kind"]] = ([q / 1e3 for q in r["q_ns"]], r["n"])
    return out
