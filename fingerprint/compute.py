"""Compute a workload fingerprint from a trace's relations with DuckDB.

`compute(con, io, sync, meta, options)` returns a `Fingerprint` (iofp/fingerprint_doc.py, documented
in docs/fingerprint-schema.md). Data flows one way: the per-window series comes from SQL and is
classified once in Python (iofp/regimes.py); its per-window classes go back to DuckDB as a table
(`regime_w`) that the `scoped_io` view joins, and every scope (the whole trace, the steady, baseline
and spike windows, a --between span: fingerprint/frame.py says which rows each holds) is
summarised by the same queries, each run once for all scopes. Every query is a .sql file in
fingerprint/sql with bound parameters; the constants views need are a one-row table made from bound
parameters (scope_params.sql).

Nothing is invented: a column the trace lacks (latency, in-flight, flags of an imported trace)
gives null features, and the bound verdict says when it rests on demand alone.
"""

from __future__ import annotations

import dataclasses
from typing import Any

from fingerprint import arrival, footprint, latency, noise, quantiles
from fingerprint.frame import Frame, Options
from fingerprint.scope import BINS, BURST_WIDTHS_NS, summarise
from iofp import __version__, duck, regimes
from iofp import fingerprint_doc as doc
from iofp.contract import CALLS_SCHEMA, TraceMeta
from iofp.errors import BadInput
from iofp.sqlfiles import load_sql
from iofp.windows import check_window_ns, default_steps_ns, parse_between

SQL = "fingerprint.sql"

TOP_PROCESSES = 10
BURST_BIN_NS = min(BURST_WIDTHS_NS.values())  # the per-window table's bins: every width is a run of them
assert all(w % BURST_BIN_NS == 0 for w in BURST_WIDTHS_NS.values())


def compute(
    con: Any, io: Any, sync: Any, meta: TraceMeta, options: Options | None = None, calls: Any = None
) -> doc.Fingerprint:
    """Fingerprint the I/O relation `io` (and the sync-call and data-call relations) of a trace."""
    return fingerprint(con, frame(con, io, sync, meta, options, calls))


def frame(
    con: Any, io: Any, sync: Any, meta: TraceMeta, options: Options | None = None, calls: Any = None,
    extent: tuple[int, int | None, int | None] | None = None,
) -> Frame:
    """Resolve once what every scope is summarised against: the bounds, the windows and their
    regimes (iofp/regimes.py), the --between span; and prepare the tables the queries read. `extent`:
    the io relation's rows, first and last ts_ns where its files' footers gave them
    (iofp/filecheck.py's extent), which spare a read of every time (without --device)."""
    opt = options or Options()
    if opt.window_ns is not None:
        check_window_ns(opt.window_ns)  # the rule of every stage's --window (iofp/windows.py)
    io.create_view("io", replace=True)
    # fsync-family calls are few next to the I/O rows; as an Arrow table the relation can come
    # from anywhere (an empty in-memory table when the trace has none).
    con.register("sync_src", sync.to_arrow_table())
    # data calls are one per O_DIRECT I/O: a view over the trace's files, like io (None: none)
    if calls is None:
        con.register("calls_src", CALLS_SCHEMA.empty_table())
    else:
        calls.create_view("calls_src", replace=True)
    f = _frame(con, meta, opt, extent)
    _prepare(con, f)
    return f


def fingerprint(con: Any, f: Frame) -> doc.Fingerprint:
    """The fingerprint document of a prepared frame: every scope the trace has, and the regimes."""
    opt = f.options
    parts = _summaries(con, f)
    scopes = {name: summarise(f, name, parts) for name in doc.SCOPES if name in parts["stats"]}
    if f.baseline_is_steady:  # the same rows (fingerprint/frame.py): summarised once
        scopes["baseline"] = dataclasses.replace(scopes["steady"], name="baseline")
    if f.spike1_is_spike:  # the same rows again
        scopes["spike1"] = dataclasses.replace(scopes["spike"], name="spike1")
    scopes = {name: scopes[name] for name in doc.SCOPES if name in scopes}
    for name, spread in noise.measure(con, f).items():  # what a diff judges a change against
        scopes[name].noise = spread
    if opt.between and "between" not in scopes:
        raise BadInput(f"--between {opt.between[0]} {opt.between[1]}: no I/O in that window")
    if opt.between and f.lo is not None and f.hi is not None:
        scopes["between"].span = doc.Span(opt.between[0], opt.between[1], f.lo, f.hi)
    params = doc.Params(
        window_ns=f.window_ns,
        window_rule=f.reg.series.window_rule,
        device=opt.device,
        between=list(opt.between) if opt.between else None,
        bins=BINS,
        steady_rule=regimes.STEADY_RULE,
        spike_rule=regimes.SPIKE_RULE,
    )
    return doc.Fingerprint(
        fingerprint_version=doc.FINGERPRINT_VERSION,
        provenance=_provenance(f.meta, opt, f),
        params=params,
        regimes=f.reg.summary(scopes["whole"].ios),
        **scopes,
    )


def _frame(con: Any, meta: TraceMeta, opt: Options, extent: tuple[int, int | None, int | None] | None
           ) -> Frame:  # fmt: skip
    if opt.device is None and extent is not None and extent[1] is not None:
        n, first, last = extent  # trace_bounds.sql's figures but the devices, from the footers
        [d] = duck.query(con, SQL, "trace_devices")
        b = {"t0": first, "t1": last, "n": n, "devices": d["devices"]}
    else:
        [b] = duck.query(con, SQL, "trace_bounds", {"device": opt.device})
    if not b["n"]:
        where = f" on device {opt.device}" if opt.device else ""
        known = ", ".join(sorted(meta.devices)) or "none recorded"
        raise BadInput(f"the trace has no I/O{where}; its devices: {known}")
    t0, t1 = int(b["t0"]), int(b["t1"])
    lo = hi = None
    if opt.between:
        lo, hi = parse_between(*opt.between).span_ns(meta.capture_start_ns, meta.source)
        if hi < t0 or lo > t1:
            raise BadInput(f"--between {opt.between[0]} {opt.between[1]}: no I/O in that window")
    step = _window_table(con, opt, t0, t1, lo, hi)
    _check_bounds(con, t0, t1)
    rows = con.execute(load_sql(SQL, "window_series")).fetchnumpy()
    [m] = duck.query(con, SQL, "size_moments")
    moments = (m["sq"] or 0.0, m["cube"] or 0.0)
    reg = regimes.classify(regimes.series_of(rows, moments, t0, t1, step, opt.window_ns))
    rate_ns, basis = _rate_span(meta, t0, t1)
    return Frame(meta, opt, t0, t1, list(b["devices"]), reg, rate_ns, basis, step, lo, hi)


def _window_table(con: Any, opt: Options, t0: int, t1: int, lo: int | None, hi: int | None) -> int:
    """The per-window table (window_table.sql) and the size counts (size_counts.sql), in steps of
    --window, or of the default rule's first candidate (every candidate is a run of whole steps); its
    step."""
    if opt.window_ns is not None:
        check_window_ns(opt.window_ns, t1 - t0)  # before a table of that many windows
    step = opt.window_ns if opt.window_ns is not None else default_steps_ns(t1 - t0)[0]
    params = {"t0": t0, "step_ns": step, "lo": lo, "hi": hi, "device": opt.device}
    _do(con, "window_table", {**params, "bin_ns": BURST_BIN_NS})
    _do(con, "size_counts", params)
    return step


def _check_bounds(con: Any, t0: int, t1: int) -> None:
    """The rows' first and last times are the bounds the frame was given: without --device those come
    from the io files' footers (ts_ns's statistics), which a file changed after it was written can
    contradict; windows, rates and the pass's arrays are sized and placed by them (rows beyond them
    went uncounted or out of the windows' range)."""
    [b] = duck.query(con, SQL, "window_bounds")
    first, last = b["first"], b["last"]
    if (first, last) != (t0, t1):
        raise BadInput(
            f"the trace's io files say (their ts_ns statistics) that its requests run from {t0} to {t1} ns"
            f", but its rows run from {first} to {last}: a file was changed after it was written; "
            "import the rows again (iofp import) or capture again"
        )


def _prepare(con: Any, f: Frame) -> None:
    """The tables and the view every per-scope query reads: the constants (fp_params), each window's
    regime class (regime_w), the scopes (scope_map) and the selected rows with them (scoped_io)."""
    params = {"t0": f.t0, "t1": f.t1, "window_ns": f.window_ns, "device": f.options.device,
              "devices": f.devices, "lo": f.lo, "hi": f.hi}  # fmt: skip
    _do(con, "scope_params", params)
    con.register("regime_w", f.regime_table())
    con.register("scope_map", f.scope_map())
    _do(con, "scoped_io")


def _do(con: Any, name: str, params: dict[str, Any] | None = None) -> None:
    """Run a statement for its effect (and drain its result, as DuckDB requires)."""
    con.execute(load_sql(SQL, name), params or {}).fetchall()


def _by_scope(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r.pop("scope"): r for r in rows}


def _summaries(con: Any, f: Frame) -> dict[str, Any]:
    """Every per-scope query, each run once for all scopes, keyed by scope."""
    limits = {"size_limits": BINS["io_length_bytes"], "inflight_limits": BINS["outstanding_ios"],
              "lat_limits": BINS["latency_us"]}  # fmt: skip
    stats = _by_scope(duck.query(con, SQL, "scope_stats", {"steps": f.steps}))
    for r in duck.query(con, SQL, "scope_devices", {"steps": f.steps}):
        stats[r["scope"]]["devices"] = r["devices"]
    blocks = footprint.Blocks()  # the whole trace's footprint, counted in the one pass
    arrivals, device, process, gaps = arrival.measure(con, f, blocks)  # and fp_values' latencies
    _do(con, "size_values", {"steps": f.steps})
    parts: dict[str, Any] = {
        "stats": stats,
        "arrival": arrivals,
        "device": device,
        "gaps": gaps,
        "hists": {},
        "quantiles": quantiles.measure(con, f),
        "procs": {},
        "syncs": {},
        "burst": _burst(con, f),
        "latency": latency.measure(con),
    }
    for r in duck.query(con, SQL, "scope_hists", limits):
        parts["hists"].setdefault((r["scope"], r["hist"], r["op"]), {})[r["key"]] = r["n"]
    for r in duck.query(con, SQL, "top_processes", {"limit": TOP_PROCESSES}):
        parts["procs"].setdefault(r.pop("scope"), []).append(r)
    for r in duck.query(con, SQL, "sync_calls"):
        parts["syncs"].setdefault(r.pop("scope"), []).append(r)
    # per submitting process: its own issue order (from the devices' pass), and its commits
    parts["process_order"] = process
    syncs = duck.query(con, SQL, "process_syncs")
    parts["process_syncs"] = {(r["scope"], r["pid"]): r["calls"] for r in syncs}
    parts["footprint"] = footprint.measure(con, f, blocks)  # last: its sweep ran beside the queries above
    return parts


def _burst(con: Any, f: Frame) -> dict[str, dict[str, dict[str, Any]]]:
    """Each burstiness width's counts, rolled up from the per-window table's finest bins."""
    params = {"steps": f.steps}
    return {label: _by_scope(duck.query(con, SQL, "burst_counts", {**params, "bins": width // BURST_BIN_NS}))
            for label, width in BURST_WIDTHS_NS.items()}  # fmt: skip


def _rate_span(meta: TraceMeta, t0: int, t1: int) -> tuple[int, str]:
    """The span the whole trace's rates (IOPS, MB/s, flushes and commits per second) are over, and
    which it is. A capture ran for its capture window whether or not I/O filled it: `--comm dd` over
    5 s with a 50 ms burst of I/O is 5 s of load at 1/100 the burst's rate, not the burst's rate for
    5 s. An import has no capture window (its duration_ns is its I/O span), so it keeps first to last
    arrival; so does a capture whose recorded window is shorter than its I/O (not a window to trust)."""
    if meta.source == "capture" and meta.duration_ns is not None and meta.duration_ns >= t1 - t0:
        return int(meta.duration_ns), "capture window"
    return t1 - t0, "first to last I/O"


def _provenance(meta: TraceMeta, opt: Options, f: Frame) -> doc.Provenance:
    return doc.Provenance(
        host=meta.host,
        kernel=meta.kernel,
        devices=meta.devices,
        trace_tool_version=meta.tool_version,
        fingerprint_tool_version=__version__,
        trace_schema_version=meta.schema_version,
        source=meta.source,
        capture_start_ns=meta.capture_start_ns,
        capture_window_ns=[f.t0, f.t1],
        duration_s=f.rate_ns / 1e9,  # the whole trace's rates are per second of this
        duration_basis=f.basis,
        io_span_s=(f.t1 - f.t0) / 1e9,
        labels={**meta.labels, **opt.labels},
        loss=meta.loss,
        lost_events=meta.lost_events,
        filters=meta.filters,
        extra=meta.extra,
    )
