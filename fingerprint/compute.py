"""Compute a workload fingerprint from a trace's relations with DuckDB.

`compute(con, io, sync, meta, options)` returns the fingerprint as a JSON-ready dict (the format
is documented in docs/fingerprint-schema.md). Every query is a .sql file in fingerprint/sql, run
with bound parameters. The I/O rows are prepared once (`prepare_events`: window index, gaps,
sequentiality, seek distance); the series and regimes come next; then every *scope* (the whole
trace, the steady windows, the spike windows, a user-named window) is summarised by the same
queries over a view (`cur`) that selects the scope's rows.

Nothing is invented: a column the trace lacks (latency, in-flight, flags of an imported trace)
gives null features, and the bound verdict says when it rests on demand alone.
"""

from __future__ import annotations

import math
import statistics
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from typing import Any

import pyarrow as pa

from fingerprint.classify import classify_bound, classify_shape
from iofp import __version__, duck, regimes
from iofp.contract import TraceMeta
from iofp.errors import BadInput
from iofp.sqlfiles import load_sql
from iofp.windows import DEFAULT_WINDOW_NS, check_between_s, check_window_ns

FINGERPRINT_VERSION = 1
SQL = "fingerprint.sql"

# vscsiStats bucket limits (vscsiStats, as ESX documents its histograms): a bucket
# counts values <= its limit; one more bucket counts everything above the last limit.
BINS: dict[str, list[float]] = {
    "io_length_bytes": [512, 1024, 2048, 4095, 4096, 8191, 8192, 16383, 16384, 32768, 49152, 65535, 65536,
                        81920, 131072, 262144, 524288],
    "seek_lbn": [-500000, -100000, -50000, -10000, -5000, -1000, -500, -128, -64, -32, -16, -8, -6, -4, -2,
                 -1, 0, 1, 2, 4, 6, 8, 16, 32, 64, 128, 500, 1000, 5000, 10000, 50000, 100000, 500000],
    "latency_us": [1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000],
    "outstanding_ios": [1, 2, 4, 6, 8, 12, 16, 20, 24, 28, 32, 64],
    "interarrival_us": [1, 10, 100, 500, 1000, 5000, 15000, 30000, 50000, 100000],
}  # fmt: skip
BURST_WIDTHS_NS = {"10ms": 10_000_000, "100ms": 100_000_000, "1s": 1_000_000_000}
FINE_WINDOW_NS = 100_000_000
MAX_SERIES_POINTS = 200_000  # beyond this a series is left out of the JSON (and says so)
TOP_PROCESSES = 10
# Below this many I/Os in the median window, per-window IOPS are mostly counting noise: the steady
# rule rarely passes and single windows read as spikes. The summary then suggests a wider window.
SPARSE_WINDOW_IOS = 20
# The suggested window aims higher: with Poisson arrivals of N per window, 5 windows span about
# 2.3 sqrt(N), within the SNIA rule's 20% of N only from N ~ 135, so noise alone can pass as steady.
SUGGEST_WINDOW_IOS = 150
SPARSE_WINDOW_STEPS = (2, 5, 10, 15, 30, 60, 120, 300, 600, 1200, 3600)
# The headline latency (`latency.all`, the summary's p50/p99/p99.9, the bound's and diff's p99) is
# over reads and writes: the requests that carry data and that an application waits on. A flush is
# a zero-byte cache drain that completes in a few µs on a write-back cache (or ms on a disk); with
# fsync=1 it is half the requests and would halve the apparent tail. Discards are deallocation hints
# whose completion time is the device's unmap housekeeping. Both keep their own `latency.flush` /
# `latency.discard` entry (and fsync latency as the application saw it is under `durability`).
# The SQL (scope_quantiles, scope_hists, scope_stats, window_series) applies the same rule.
DATA_LATENCY_OPS = ("read", "write")


@dataclass
class Options:
    window_ns: int = DEFAULT_WINDOW_NS
    device: str | None = None
    between: tuple[str, str] | None = None
    labels: dict[str, str] = field(default_factory=dict)


def _q(con: Any, name: str, params: dict[str, Any] | None = None) -> Any:
    return con.execute(load_sql(SQL, name), params or {})


def _do(con: Any, name: str, params: dict[str, Any] | None = None) -> None:
    """Run a statement for its effect (and drain its result, as DuckDB requires)."""
    con.execute(load_sql(SQL, name), params or {}).fetchall()


def _arrow(con: Any, name: str, params: dict[str, Any] | None = None) -> pa.Table:
    return con.sql(load_sql(SQL, name), params=params or {}).to_arrow_table()


def _one(con: Any, name: str, params: dict[str, Any] | None = None) -> dict[str, Any]:
    rows = duck.query(con, SQL, name, params)
    return rows[0] if rows else {}


def _all(con: Any, name: str, params: dict[str, Any] | None = None) -> list[dict[str, Any]]:
    return duck.query(con, SQL, name, params)


def _hist(raw: dict | None, limits: list[float]) -> dict[str, Any] | None:
    """DuckDB's histogram map -> {"limits": [...], "counts": [... one more for '> last']}."""
    if raw is None:
        return None
    counts = [0] * (len(limits) + 1)
    index = {float(v): i for i, v in enumerate(limits)}
    for k, n in raw.items():
        counts[index.get(float(k), len(limits))] += int(n)
    return {"limits": limits, "counts": counts}


def _ratio(a: float | None, b: float | None) -> float | None:
    if a is None or b is None or b == 0:
        return None
    return a / b


# --------------------------------------------------------------------------------------------


def parse_between(t1: str, t2: str, meta: TraceMeta) -> tuple[int, int]:
    """--between T1 T2 -> (lo, hi) in ts_ns. Seconds from capture start, or HH:MM:SS[.fff] wall
    clock (local time zone; set TZ to read another's) on the capture's date."""
    a, b = _seconds(t1), _seconds(t2)
    if a is not None and b is not None:
        check_between_s(a, b)  # the rule replay's --between follows too
        return round(a * 1e9), round(b * 1e9)
    if a is not None or b is not None:
        raise BadInput(f"--between {t1} {t2}: give both as seconds from the start or both as HH:MM:SS")

    def one(text: str) -> int:
        if meta.capture_start_ns is None:
            raise BadInput(
                f"--between {text}: this trace has no wall clock (source {meta.source}); "
                "give seconds from its start instead, e.g. --between 30 90"
            )
        try:
            tod = datetime.strptime(text, "%H:%M:%S.%f" if "." in text else "%H:%M:%S").time()
        except ValueError:
            raise BadInput(f"--between {text}: use HH:MM:SS[.fff] or seconds from the start") from None
        start = datetime.fromtimestamp(meta.capture_start_ns / 1e9)
        at = datetime.combine(start.date(), tod)
        if at < start - timedelta(hours=12):  # a time of day before the start means the next day
            at += timedelta(days=1)
        return round((at.timestamp() - start.timestamp()) * 1e9)

    lo, hi = one(t1), one(t2)
    if hi <= lo:
        raise BadInput(f"--between {t1} {t2}: the end must come after the start")
    return lo, hi


def _seconds(text: str) -> float | None:
    try:
        return float(text)
    except ValueError:
        return None


def compute(con: Any, io: Any, sync: Any, meta: TraceMeta, options: Options | None = None) -> dict[str, Any]:
    """Fingerprint the I/O relation `io` (and the sync-call relation `sync`) of a trace."""
    opt = options or Options()
    W = opt.window_ns
    check_window_ns(W)  # the rule of every stage's --window (iofp/windows.py)
    io.create_view("io_src", replace=True)
    # fsync-family calls are few next to the I/O rows; as an Arrow table the relation can come
    # from anywhere (an empty in-memory table when the trace has none).
    con.register("sync_src", sync.to_arrow_table())
    b = _one(con, "trace_bounds", {"device": opt.device})
    if not b["n"]:
        where = f" on device {opt.device}" if opt.device else ""
        known = ", ".join(sorted(meta.devices)) or "none recorded"
        raise BadInput(f"the trace has no I/O{where}; its devices: {known}")
    t0, t1, n = int(b["t0"]), int(b["t1"]), int(b["n"])
    check_window_ns(W, t1 - t0)
    nwin = (t1 - t0) // W + 1
    lo = hi = None
    if opt.between:
        lo, hi = parse_between(*opt.between, meta)
    params = {"t0": t0, "window_ns": W, "device": opt.device, "devices": b["devices"], "regime": None,
              "lo": lo, "hi": hi}  # fmt: skip
    _do(con, "set_params", params)
    _do(con, "io_view")
    _do(con, "prepare_sync", {"t0": t0, "window_ns": W})
    con.execute("CREATE OR REPLACE TEMP TABLE scope_w (w BIGINT)").fetchall()
    con.execute("CREATE OR REPLACE TEMP TABLE scope_range (lo BIGINT, hi BIGINT)").fetchall()
    _do(con, "scope_sync_view")

    series = _arrow(con, "window_series", {"t0": t0, "width_ns": W, "nwin": nwin})
    con.register("series", series)
    # The rule replay's --regime uses too (iofp/regimes.py): one source for both stages.
    reg = regimes.classify(con, series)
    steady_k, spike_k = reg.steady, reg.spike
    con.register("spike_windows", pa.table({"k": pa.array(spike_k, pa.int64())}))
    spikes_raw = _all(con, "spikes")
    codes = [0] * nwin
    for k in steady_k:
        codes[k] = 1
    for k in spike_k:
        codes[k] = 2
    _do(con, "set_params", {**params, "regime": codes})

    rate_ns, basis = _rate_span(meta, t0, t1)
    ctx = {"t0": t0, "t1": t1, "W": W, "nwin": nwin, "devices": b["devices"], "rate_ns": rate_ns}
    scopes: dict[str, tuple[list[int], tuple[int, int]]] = {"whole": (list(range(nwin)), (t0, t1))}
    if steady_k:
        scopes["steady"] = (steady_k, (t0, t1))
    if spike_k:
        scopes["spike"] = (spike_k, (t0, t1))
    if lo is not None and hi is not None and opt.between:
        ks = list(range(max(0, (lo - t0) // W), min(nwin - 1, (hi - t0) // W) + 1))
        if not ks or hi < t0 or lo > t1:
            raise BadInput(f"--between {opt.between[0]} {opt.between[1]}: no I/O in that window")
        scopes["between"] = (ks, (lo, hi))
    parts = _summaries(con, ctx, scopes)
    if opt.between and "between" not in parts["stats"]:
        raise BadInput(f"--between {opt.between[0]} {opt.between[1]}: no I/O in that window")
    out = {name: _scope(con, ctx, name, ks, rng, parts) for name, (ks, rng) in scopes.items()}
    whole, steady, spike, between = (out.get(k) for k in ("whole", "steady", "spike", "between"))
    if between is not None and opt.between:
        between["between"] = {"from": opt.between[0], "to": opt.between[1], "lo_ns": lo, "hi_ns": hi}

    mean_iops = whole["intensity"]["iops_mean_per_window"]
    spike_list = [
        {
            "start_s": s["first_k"] * W / 1e9,
            "end_s": (s["last_k"] + 1) * W / 1e9,
            "duration_s": (s["last_k"] - s["first_k"] + 1) * W / 1e9,
            "peak_iops": s["peak_iops"],
            "mean_iops": s["mean_iops"],
            "peak_mbps": s["peak_mbps"],
            "peak_to_mean": _ratio(s["peak_iops"], mean_iops),
            "peak_to_steady_median": _ratio(s["peak_iops"], reg.median_iops),
        }
        for s in spikes_raw
    ]
    fine_n = (t1 - t0) // FINE_WINDOW_NS + 1
    fine = (
        _arrow(con, "window_series", {"t0": t0, "width_ns": FINE_WINDOW_NS, "nwin": fine_n})
        if fine_n <= MAX_SERIES_POINTS
        else None
    )
    fp: dict[str, Any] = {
        "fingerprint_version": FINGERPRINT_VERSION,
        "provenance": _provenance(meta, opt, t0, t1, rate_ns, basis),
        "params": {
            "window_s": W / 1e9,
            "device": opt.device,
            "between": list(opt.between) if opt.between else None,
            "bins": BINS,
            "steady_rule": "SNIA PTS over 5 windows: max-min <= 20% of mean and |slope*4| <= 10% of mean",
            "spike_rule": "IOPS or MB/s > median(steady) + max(3*1.4826*MAD(steady), 0.5*median(steady))",
        },
        "whole": whole,
        "steady": steady,
        "spike": spike,
        "between": between,
        "regimes": {
            "windows": nwin,
            "steady_windows": len(steady_k),
            "spike_windows": len(spike_k),
            "steady_ranges_s": _ranges(steady_k, W),
            "spike_threshold_iops": reg.threshold_iops,
            "spike_threshold_mbps": reg.threshold_mbps,
            "steady_median_mbps": reg.median_mbps,
            "steady_median_iops": reg.median_iops,
            "steady_sigma_iops": reg.sigma_iops,
            "spikes": spike_list,
            **_sparseness(series["iops"].to_pylist(), W),
        },
        "series": {
            "window": _series(series, W),
            "100ms": _series(fine, FINE_WINDOW_NS)
            if fine is not None
            else {"omitted": f"more than {MAX_SERIES_POINTS} windows of 100 ms"},
        },
        "rows": n,
    }
    fp["shape"] = whole["shape"]
    fp["bound"] = whole["bound"]
    return fp


def _sparseness(iops: list[float], W: int) -> dict[str, Any]:
    """The median I/Os per window and, when it is below SPARSE_WINDOW_IOS, a hint naming the
    smallest wider window (a listed multiple of this one) whose median reaches SUGGEST_WINDOW_IOS,
    found exactly from this window's counts."""
    counts = [round(v * W / 1e9) for v in iops]
    median = statistics.median_low(counts) if counts else 0
    if median >= SPARSE_WINDOW_IOS:
        return {"window_ios_median": median, "sparse": None}
    suggest = None
    for m in SPARSE_WINDOW_STEPS:
        if m > len(counts):
            break
        wider = [sum(counts[i : i + m]) for i in range(0, len(counts) - m + 1, m)]
        if statistics.median_low(wider) >= SUGGEST_WINDOW_IOS:
            suggest = m * W
            break
    width = f"{W / 1e9:g} s"
    hint = f"windows are sparse (median {median} I/Os per {width} window): regimes are noisy"
    hint += f"; try --window {_duration(suggest)}" if suggest else "; too short or idle a trace for regimes"
    return {
        "window_ios_median": median,
        "sparse": {"hint": hint, "suggested_window_s": None if suggest is None else suggest / 1e9},
    }


def _duration(ns: int) -> str:
    for unit, size in (("s", 1_000_000_000), ("ms", 1_000_000), ("us", 1_000)):
        if ns % size == 0:
            return f"{ns // size}{unit}"
    return f"{ns}ns"


def _ranges(ks: list[int], W: int) -> list[list[float]]:
    out: list[list[float]] = []
    for k in ks:
        if out and abs(out[-1][1] - k * W / 1e9) < 1e-12:
            out[-1][1] = (k + 1) * W / 1e9
        else:
            out.append([k * W / 1e9, (k + 1) * W / 1e9])
    return out


def _series(tbl: pa.Table | None, width_ns: int) -> dict[str, Any]:
    if tbl is None:
        return {}
    d = tbl.to_pydict()
    d.pop("k", None)
    return {"width_s": width_ns / 1e9, **d}


def _rate_span(meta: TraceMeta, t0: int, t1: int) -> tuple[int, str]:
    """The span the whole trace's rates (IOPS, MB/s, flushes and commits per second) are over, and
    which it is. A capture ran for its capture window whether or not I/O filled it: `--comm dd` over
    5 s with a 50 ms burst of I/O is 5 s of load at 1/100 the burst's rate, not the burst's rate for
    5 s. An import has no capture window (its duration_ns is its I/O span), so it keeps first to last
    arrival; so does a capture whose recorded window is shorter than its I/O (not a window to trust)."""
    if meta.source == "capture" and meta.duration_ns is not None and meta.duration_ns >= t1 - t0:
        return int(meta.duration_ns), "capture window"
    return t1 - t0, "first to last I/O"


def _provenance(meta: TraceMeta, opt: Options, t0: int, t1: int, rate_ns: int, basis: str) -> dict[str, Any]:
    return {
        "host": meta.host,
        "kernel": meta.kernel,
        "devices": meta.devices,
        "trace_tool_version": meta.tool_version,
        "fingerprint_tool_version": __version__,
        "trace_schema_version": meta.schema_version,
        "source": meta.source,
        "capture_start_ns": meta.capture_start_ns,
        "capture_window_ns": [t0, t1],
        "duration_s": rate_ns / 1e9,  # the whole trace's rates are per second of this
        "duration_basis": basis,
        "io_span_s": (t1 - t0) / 1e9,
        "labels": {**meta.labels, **opt.labels},
        "loss": meta.loss,
        "lost_events": meta.lost_events,
        "filters": meta.filters,
        "extra": meta.extra,
    }


def _bins_spanned(ctx: dict[str, Any], ks: list[int], rng: tuple[int, int], width: int, name: str) -> int:
    """How many `width` bins (from the first arrival) the scope covers, empty ones included."""
    t0, t1, W = ctx["t0"], ctx["t1"], ctx["W"]
    if name == "whole":
        return (t1 - t0) // width + 1  # the traces README's definition
    lo, hi = max(rng[0], t0), min(rng[1], t1)
    covered: set[int] = set()
    for k in ks:
        a = max(k * W, lo - t0)
        z = min((k + 1) * W - 1, hi - t0)
        if z >= a:
            covered.update(range(a // width, z // width + 1))
    return max(1, len(covered))


def _by_scope(rows: list[dict[str, Any]]) -> dict[str, dict[str, Any]]:
    return {r["scope"]: r for r in rows if r["scope"] is not None}


def _summaries(
    con: Any, ctx: dict[str, Any], scopes: dict[str, tuple[list[int], tuple[int, int]]]
) -> dict[str, Any]:
    """Every per-scope query, each run once for all scopes (GROUPING SETS over the regime code and
    the --between flag), keyed by scope."""
    limits = {"size_limits": BINS["io_length_bytes"], "inflight_limits": BINS["outstanding_ios"],
              "lat_limits": BINS["latency_us"]}  # fmt: skip
    _do(con, "scope_partials", limits)
    # Each device's issue order, kept as a few integer columns: device_order reads it twice
    # (per-window partials, then the seeks near the median); freed right after. One pass per
    # device (ranks 1..n, as the io view numbers them): a device's rows sort fast by time.
    _do(con, "device_seeks_table")
    for dev in range(1, len(ctx["devices"]) + 1):
        _do(con, "device_seeks", {"dev": dev})
    device = _by_scope(_all(con, "device_order", {"limits": BINS["seek_lbn"]}))
    con.execute("DROP TABLE dev_seeks").fetchall()
    parts: dict[str, Any] = {
        "stats": _by_scope(_all(con, "scope_stats")),
        "arrival": _by_scope(_all(con, "arrival_order", {"limits": BINS["interarrival_us"]})),
        "device": device,
        "gaps": _by_scope(_all(con, "flush_gaps")),
        "quantiles": {},
        "procs": {},
        "burst": {},
        "footprint": {},
    }  # fmt: skip
    hists: dict[tuple[str, str, str], dict[float, int]] = {}
    for scope, hist, op, key, n in _q(con, "scope_hists").fetchall():
        if scope is not None:
            hists.setdefault((scope, hist, op), {})[key] = n
    for scope, row in parts["stats"].items():
        for hist in ("size", "inflight", "lat"):
            for op in ("all", "read", "write", "discard", "flush"):
                row[f"{hist}_{op}"] = hists.get((scope, hist, op))
        row["mean_size"] = _ratio(row["data_bytes"], row["data_ios"])
    for r in _all(con, "scope_quantiles"):
        parts["quantiles"][(r["scope"], r["measure"], r["op"])] = r
    for r in _all(con, "top_processes", {"limit": TOP_PROCESSES}):
        parts["procs"].setdefault(r.pop("scope"), []).append(r)
    finest = min(BURST_WIDTHS_NS.values())
    _do(con, "burst_bins", {"width_ns": finest})
    for label, width in BURST_WIDTHS_NS.items():
        assert width % finest == 0, "burstiness widths must be multiples of the finest"
        parts["burst"][label] = _by_scope(_all(con, "burst_counts", {"per": width // finest}))
    # Footprint and the hot-block share need every start block (a hash aggregate, then block masks
    # per 64-block chunk and a top-N of its counts): computed for the whole trace and a --between
    # window, not for each regime.
    for name in ("whole", "between"):
        if name in scopes:
            _do(con, "start_blocks", {"between": name == "between"})
            foot = int(_one(con, "footprint")["blocks"])
            hot_k = max(1, math.ceil(0.01 * foot)) if foot else 0
            hot = _one(con, "hot_blocks", {"top_blocks": hot_k})["top_ios"] if foot else 0
            parts["footprint"][name] = (foot, hot_k, hot)
    con.execute("DROP TABLE IF EXISTS start_blocks").fetchall()
    return parts


def _scope(
    con: Any, ctx: dict[str, Any], name: str, ks: list[int], rng: tuple[int, int], parts: dict[str, Any]
) -> dict[str, Any]:
    mix = parts["stats"][name]
    sizes = mix
    seq = {"seq_ios": 0, "seq_reads": 0, "seq_writes": 0, **parts["device"].get(name, {})}
    seq["seq_any_ios"] = parts["arrival"].get(name, {}).get("seq_any_ios", 0)
    seq.update(data_ios=mix["data_ios"], data_bytes=mix["data_bytes"], runs=mix["data_ios"] - seq["seq_ios"])
    seek = parts["device"].get(name, {})
    iat = parts["arrival"].get(name, {})
    gaps = parts["gaps"].get(name, {})
    dur = mix
    quant = parts["quantiles"]
    mix["median_size"] = (quant.get((name, "size", "all")) or {}).get("p50")
    ios = int(mix["ios"])
    if name == "whole":
        seconds = ctx["rate_ns"] / 1e9  # capture window or I/O span: see _rate_span
    elif name == "between":
        seconds = (min(rng[1], ctx["t1"]) - max(rng[0], ctx["t0"])) / 1e9
    else:
        seconds = len(ks) * ctx["W"] / 1e9
    bins_1w = _bins_spanned(ctx, ks, rng, ctx["W"], name)

    # fsync-family calls are few: summarised per scope over the windows' rows.
    con.execute("DELETE FROM scope_w").fetchall()
    con.execute("DELETE FROM scope_range").fetchall()
    con.register("scope_ks", pa.table({"w": pa.array(ks, pa.int64())}))
    con.execute("INSERT INTO scope_w SELECT w FROM scope_ks").fetchall()
    con.execute("INSERT INTO scope_range VALUES (?, ?)", [rng[0], rng[1]]).fetchall()
    syncs = _all(con, "sync_calls")

    infl_q = quant.get((name, "inflight", "all")) or {}
    infl = {
        "known": mix["inflight_known"],
        "mean": mix["inflight_mean"],
        "p99": infl_q.get("p99"),
        "max": mix["inflight_max"],
        "all_ops": mix["inflight_all"],
        "reads": mix["inflight_read"],
        "writes": mix["inflight_write"],
    }
    lat = []
    for op, count in (("all", mix["reads"] + mix["writes"]), ("read", mix["reads"]), ("write", mix["writes"]),
                      ("discard", mix["discards"]), ("flush", mix["flushes"])):  # fmt: skip
        q = quant.get((name, "lat", op))
        if count and q and q["n"]:
            lat.append({"op": op, "ios": q["n"], "mean_ns": mix[f"lat_mean_{op}"],
                        "q_ns": [q["p50"], q["p99"], q["p99_9"]], "max_ns": mix[f"lat_max_{op}"],
                        "hist_us": mix[f"lat_{op}"]})  # fmt: skip
    foot, hot_k, hot = parts["footprint"].get(name, (None, None, None))
    procs = parts["procs"].get(name, [])

    burst = {}
    for label, width in BURST_WIDTHS_NS.items():
        c = parts["burst"][label].get(name, {"total": 0, "sumsq": 0, "peak": 0})
        nb = _bins_spanned(ctx, ks, rng, width, name)
        mean = c["total"] / nb
        var = c["sumsq"] / nb - mean * mean
        burst[label] = {
            "bins": nb,
            "peak": c["peak"],
            "mean": mean,
            "peak_to_mean": _ratio(c["peak"], mean),
            "index_of_dispersion": _ratio(max(var, 0.0), mean),
        }

    data_ios = int(seq["data_ios"])
    flags_known = int(dur["flags_known"]) > 0 or int(dur["flushes"]) > 0
    points = int(dur["durability_points"]) if flags_known else None
    sync_total = sum(int(s["calls"]) for s in syncs)
    lat_by_op = {
        r["op"]: {
            "ios": r["ios"],
            "mean_us": r["mean_ns"] / 1e3,
            "p50_us": r["q_ns"][0] / 1e3,
            "p99_us": r["q_ns"][1] / 1e3,
            "p99_9_us": r["q_ns"][2] / 1e3,
            "max_us": r["max_ns"] / 1e3,
            "hist_us": _hist(r["hist_us"], BINS["latency_us"]),
        }
        for r in lat
    }
    out: dict[str, Any] = {
        "scope": name,
        "windows": len(ks),
        "seconds": seconds,
        "ios": ios,
        "bytes": int(mix["bytes"]),
        "devices": mix["devices"],
        "intensity": {
            "iops_mean": _ratio(ios, seconds),
            "mbps_mean": _ratio(int(mix["bytes"]) / 1e6, seconds),
            "iops_mean_per_window": ios / bins_1w / (ctx["W"] / 1e9),
        },
        "mix": {
            "reads": mix["reads"],
            "writes": mix["writes"],
            "discards": mix["discards"],
            "flushes": mix["flushes"],
            "read_share_count": _ratio(mix["reads"], ios),
            "read_share_bytes": _ratio(mix["read_bytes"], mix["bytes"]),
            "read_bytes": mix["read_bytes"],
            "write_bytes": mix["write_bytes"],
        },
        "size": {
            "mean_bytes": mix["mean_size"],
            "median_bytes": mix["median_size"],
            "not_4k_multiple_share": _ratio(sizes["not_4k_sized"], data_ios),
            "not_4k_aligned_share": _ratio(sizes["not_4k_aligned"], data_ios),
            "hist": {
                "all": _hist(sizes["size_all"], BINS["io_length_bytes"]),
                "read": _hist(sizes["size_read"], BINS["io_length_bytes"]),
                "write": _hist(sizes["size_write"], BINS["io_length_bytes"]),
            },
        },
        "sequential": {
            "share": _ratio(seq["seq_ios"], data_ios),
            "share_any_device": _ratio(seq["seq_any_ios"], data_ios),
            "read_share": _ratio(seq["seq_reads"], mix["reads"]),
            "write_share": _ratio(seq["seq_writes"], mix["writes"]),
            "runs": seq["runs"],
            "mean_run_ios": _ratio(data_ios, seq["runs"]),
            "mean_run_bytes": _ratio(seq["data_bytes"], seq["runs"]),
        },
        "seek": {
            "median_abs_lbn": seek.get("median_abs_lbn"),
            "hist": {
                "all": _hist(seek.get("seek_all"), BINS["seek_lbn"]),
                "read": _hist(seek.get("seek_read"), BINS["seek_lbn"]),
                "write": _hist(seek.get("seek_write"), BINS["seek_lbn"]),
            },
        },
        "inflight": None
        if not infl["known"]
        else {
            "known": infl["known"],
            "mean": infl["mean"],
            "p99": infl["p99"],
            "max": infl["max"],
            "hist": {
                "all": _hist(infl["all_ops"], BINS["outstanding_ios"]),
                "read": _hist(infl["reads"], BINS["outstanding_ios"]),
                "write": _hist(infl["writes"], BINS["outstanding_ios"]),
            },
        },
        "interarrival": {
            "mean_us": None if iat.get("iat_mean_ns") is None else iat["iat_mean_ns"] / 1e3,
            "cv": _ratio(iat.get("iat_std_ns"), iat.get("iat_mean_ns")),
            "hist": _hist(iat.get("iat_hist"), BINS["interarrival_us"]),
        },
        "burstiness": burst,
        "durability": {
            "flags_known": flags_known,
            "flush_ops": dur["flushes"] if flags_known else None,
            "preflush": dur["preflush"] if flags_known else None,
            "fua": dur["fua"] if flags_known else None,
            "sync_writes": dur["sync_writes"] if flags_known else None,
            "flush_fua_share": _ratio(points, ios),
            "sync_write_share": _ratio(dur["sync_writes"], dur["writes_flags_known"]),
            "flush_rate_per_s": _ratio(points, seconds),
            "flush_gap_p50_us": None if gaps.get("p50_ns") is None else gaps["p50_ns"] / 1e3,
            "flush_gap_p99_us": None if gaps.get("p99_ns") is None else gaps["p99_ns"] / 1e3,
            "sync_calls": {
                s["call"]: {
                    "calls": s["calls"],
                    "rate_per_s": _ratio(s["calls"], seconds),
                    "p50_us": None if s["p50_ns"] is None else s["p50_ns"] / 1e3,
                    "p99_us": None if s["p99_ns"] is None else s["p99_ns"] / 1e3,
                    "mean_us": None if s["mean_ns"] is None else s["mean_ns"] / 1e3,
                }
                for s in syncs
            },
            "commit_rate_per_s": _ratio(sync_total, seconds) if syncs else None,
        },
        "latency": lat_by_op or None,
        "footprint": {
            "blocks_4k": foot,
            "bytes": None if foot is None else foot * 4096,
            "hot_1pct_blocks": hot_k,
            "hot_1pct_io_share": _ratio(hot, data_ios),
        },
        "top_processes": procs,
    }
    out["shape"] = classify_shape(out)
    out["bound"] = classify_bound(out)
    return out
