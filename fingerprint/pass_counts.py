"""Each process's requests and the request latencies' 2%-wide buckets per (window, --between flag),
and the latencies' exact value counts per (regime class, --between flag, op), counted in numpy beside
fingerprint/arrival.py's one pass over the rows: the tables process_counts.sql, latency_buckets.sql
and value_counts.sql make (fp_procs, read by top_processes.sql; fp_lat_buckets, by
noise_latency.sql; fp_values, by the percentiles and histograms), without three more hash aggregates
over every row (1.7, 1.5 and 2.9 s of a 50 M-row fingerprint); and the gaps between successive flush
points in each scope, whose percentiles flush_gaps.sql took from a window over them (0.7 s). Where
the pass cannot run (rows out of time order), those queries make the tables instead.

The value counts of latencies in [0, VALUE_LIMIT) are kept in an array indexed by (part, op, value),
a count per ns (pages only where a part's latencies fall); value_counts.sql counts the rest, whose
row groups alone the scan reads (a 4.2 ms limit: none of the 50 M-row bench's). The flush points (a
flush, preflush or FUA) are kept, time and part, as the pass meets them, in time order: a scope's
gaps are the differences of its points' times, and their percentiles the nearest ranks
quantile_disc takes, max(1, n - floor(n - q n)) (its arithmetic, in doubles).

The same rows by construction: a batch's rows are cut into runs of one (window, --between flag)
(as the arrival counts are), each run's rows counted per process or per (op, bucket) with bincount,
the batches' partial counts summed by DuckDB at the end. A bucket is lb = round(50 ln(lat_ns)) as
DuckDB computes it: numpy's log (its own SIMD code here) may differ from DuckDB's (libm's) in the
last bit, which moves the rounding only where 50 ln(lat_ns) lies that close to a half; the rows
within NEAR of one are set aside and bucketed by DuckDB itself. The command names are DuckDB's
any_value over each process's rows, as process_counts.sql takes them (a trace without them: the
Parquet statistics answer without reading a row).
"""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pyarrow as pa

from fingerprint import device_order
from fingerprint.frame import Frame
from iofp import duck
from iofp.contract import OPS

SQL = "fingerprint.sql"
NEAR = 1e-9  # 50 ln(lat) this close to a half is bucketed by DuckDB (numpy's log: within ~1e-12)
VALUE_LIMIT = 1 << 22  # latencies (ns) counted by value here; the others by value_counts.sql
SUM_ROWS = 1 << 21  # sizes (|size| < 2^31) summed by bincount's float64 exactly: under 2^52 a call
NO = len(OPS) + 1  # op codes: the op's place in OPS (1-based, as list_position), 0 none
CODE = {op: OPS.index(op) + 1 for op in OPS}
DATA = np.zeros(NO, bool)
DATA[[CODE["read"], CODE["write"], CODE["discard"]]] = True  # what process_counts.sql counts as ios
GROUPS = device_order.CODES * NO  # value-count groups: (regime class, --between flag, op)
# the devices' op code (device_order.OPS: 1 read, 2 write, 0 other) of each op code
DEVICE_OP = np.zeros(NO, np.uint8)
DEVICE_OP[[CODE["read"], CODE["write"]]] = [1, 2]


def runs(f: Frame, ts: np.ndarray) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """Rows in time order cut into runs of one (window, --between flag): each run's first row, window
    and flag."""
    n = len(ts)
    w0, w1 = (int(ts[0]) - f.t0) // f.window_ns, (int(ts[-1]) - f.t0) // f.window_ns
    cuts = [np.zeros(1, np.int64), np.searchsorted(ts, f.t0 + np.arange(w0 + 1, w1 + 1) * f.window_ns)]
    if f.lo is not None and f.hi is not None:
        cuts.append(np.array([np.searchsorted(ts, f.lo), np.searchsorted(ts, f.hi, side="right")]))
    starts = np.unique(np.concatenate(cuts))
    starts = starts[starts < n]
    first = ts[starts]
    btw = np.zeros(len(starts), np.intp)
    if f.lo is not None and f.hi is not None:
        btw[(first >= f.lo) & (first <= f.hi)] = 1
    return starts, (first - f.t0) // f.window_ns, btw


def grouped(key: np.ndarray, space: int) -> tuple[np.ndarray, np.ndarray, int]:
    """The keys present, each row's group index, and the number of groups counted (bincount's
    minlength): the keys themselves where their space is small, else their ranks among the present."""
    if space <= 4 * len(key) + 4096:
        return np.flatnonzero(np.bincount(key, minlength=space)), key, space
    keys, inverse = np.unique(key, return_inverse=True)
    return keys, inverse, len(keys)


class Counts:
    """The partial counts of each batch (a few rows: runs x processes, runs x ops x buckets)."""

    def __init__(self, f: Frame) -> None:
        self.f = f
        self.procs: list[dict[str, np.ndarray]] = []
        self.lat: list[dict[str, np.ndarray]] = []
        self.near: list[dict[str, np.ndarray]] = []  # rows whose bucket DuckDB computes
        self.limit, self.rows = VALUE_LIMIT, 0
        self.values = np.zeros(0, np.uint32)  # per (part, op) group, a count per latency below limit
        self.seen = np.zeros(GROUPS, bool)  # the groups counted in
        self.points: list[tuple[np.ndarray, np.ndarray]] = []  # flush points' times and parts
        self.gaps: dict[str, dict[str, Any]] = {}  # flush_gaps.sql's rows by scope, once measured

    def add(self, ts: np.ndarray, pid: np.ndarray, known: np.ndarray, size: np.ndarray, op: np.ndarray,
            lat: np.ndarray, lat_known: np.ndarray, point: np.ndarray) -> None:  # fmt: skip
        """Count one batch of rows in time order: op codes (NO), latencies (0 where unknown), flush
        points."""
        starts, w, btw = runs(self.f, ts)
        run = np.repeat(np.arange(len(starts), dtype=np.int64), np.diff(starts, append=len(ts)))
        self.processes(run, w, btw, pid, known, size, op)
        self.latencies(run, w, btw, op, lat)
        self.value_counts(run, w, btw, op, lat, lat_known)
        if len(rows := np.flatnonzero(point)):
            part = (self.f.classes[w].astype(np.int64) * 2 + btw).astype(np.uint8)
            self.points.append((ts[rows], part[run[rows]]))

    def flush_gaps(self, scope_map: pa.Table) -> dict[str, dict[str, Any]]:
        """flush_gaps.sql's figures by scope: the gaps between a scope's successive flush points, their
        count and nearest-rank p50 and p99."""
        ts = np.concatenate([t for t, _ in self.points]) if self.points else np.zeros(0, np.int64)
        part = np.concatenate([p for _, p in self.points]) if self.points else np.zeros(0, np.uint8)
        self.points = []
        parts: dict[str, list[int]] = {}
        for r in scope_map.to_pylist():
            parts.setdefault(r["scope"], []).append(int(r["rg"]) * 2 + int(r["btw"]))
        out = {}
        for scope, codes in parts.items():
            gaps = np.diff(ts[np.isin(part, codes)])
            if n := len(gaps):
                out[scope] = {"gaps": n, "p50_ns": _nearest(gaps, 0.5), "p99_ns": _nearest(gaps, 0.99)}
        return out

    def value_counts(self, run: np.ndarray, w: np.ndarray, btw: np.ndarray, op: np.ndarray, lat: np.ndarray,
                     known: np.ndarray) -> None:  # fmt: skip
        """Count the latencies in [0, limit) by value, per (regime class, --between flag, op)."""
        self.rows += len(lat)
        if self.rows >= 1 << 32:  # a count could overflow: value_counts.sql counts every latency
            self.limit, self.values = 0, np.zeros(0, np.uint32)
        if not self.limit:
            return
        if not len(self.values):
            self.values = np.zeros(GROUPS * self.limit, np.uint32)  # pages made where counted in
        part = (self.f.classes[w].astype(np.int64) * 2 + btw) * NO  # each run's (class, flag)
        group = part[run]
        group += op
        inside = (lat >= 0) & (lat < self.limit)
        if not known.all():
            inside &= known
        key = group * self.limit
        key += lat
        if not inside.all():
            key, group = key[inside], group[inside]
        np.add.at(self.values, key, np.uint32(1))
        self.seen |= np.bincount(group, minlength=GROUPS).astype(bool)

    def value_table(self) -> pa.Table:
        """The value counts below the limit, as fp_values' latency rows (op as its code)."""
        parts: list[dict[str, np.ndarray]] = []
        for g in np.flatnonzero(self.seen).tolist():
            counts = self.values[g * self.limit : (g + 1) * self.limit]
            v = np.flatnonzero(counts)
            part, o = divmod(g, NO)
            rg, btw = divmod(part, 2)
            parts.append({"rg": np.full(len(v), rg, np.uint8), "btw": np.full(len(v), bool(btw)),
                          "o": np.full(len(v), o, np.uint8), "v": v,
                          "n": counts[v].astype(np.int64)})  # fmt: skip
        return _table(parts, VALUE_COLUMNS)

    def processes(self, run: np.ndarray, w: np.ndarray, btw: np.ndarray, pid: np.ndarray, known: np.ndarray,
                  size: np.ndarray, op: np.ndarray) -> None:  # fmt: skip
        every = bool(known.all())
        groups = device_order.pid_groups(pa.array(pid, mask=None if every else ~known), 4 * len(pid) + 4096)
        if groups is None:
            return
        idx, uniq = groups
        if not every:
            rows = np.flatnonzero(idx >= 0)
            idx, run, size, op = idx[rows], run[rows], size[rows], op[rows]
        k = len(uniq)
        keys, at, m = grouped(run * k + idx, (int(run[-1]) + 1) * k)
        data = DATA[op]
        sel = keys if m > len(keys) else slice(None)
        nbytes = np.zeros(m, np.int64)
        for i in range(0, len(at), SUM_ROWS):  # exact in float64 a call
            s = slice(i, i + SUM_ROWS)
            nbytes += np.bincount(at[s][data[s]], weights=size[s][data[s]], minlength=m).astype(np.int64)
        self.procs.append({
            "w": w[keys // k], "btw": btw[keys // k].astype(bool), "pid": uniq[keys % k],
            "ios": np.bincount(at[data], minlength=m)[sel],
            "bytes": nbytes[sel],
            "reads": np.bincount(at[op == CODE["read"]], minlength=m)[sel],
            "writes": np.bincount(at[op == CODE["write"]], minlength=m)[sel],
            "flushes": np.bincount(at[op == CODE["flush"]], minlength=m)[sel],
        })  # fmt: skip

    def latencies(self, run: np.ndarray, w: np.ndarray, btw: np.ndarray, op: np.ndarray,
                  lat: np.ndarray) -> None:  # fmt: skip
        rows = np.flatnonzero(lat > 0)
        if not len(rows):
            return
        if len(rows) < len(lat):
            run, op, lat = run[rows], op[rows], lat[rows]
        y = np.log(lat.astype(np.float64))
        y *= 50
        half = y - np.floor(y)
        half -= 0.5
        if (near := np.abs(half) < NEAR).any():
            r = run[near]
            self.near.append({"w": w[r], "btw": btw[r].astype(bool), "o": op[near], "lat": lat[near]})
            keep = ~near
            run, op, y = run[keep], op[keep], y[keep]
            if not len(y):
                return
        lb = np.rint(y).astype(np.int64)  # no half among them: rint's ties never arise
        lo = int(lb.min())
        span = int(lb.max()) - lo + 1
        lb -= lo
        key = run * NO
        key += op
        key *= span
        key += lb
        keys, at, m = grouped(key, (int(run[-1]) + 1) * NO * span)
        n = np.bincount(at, minlength=m)
        r, rest = np.divmod(keys, NO * span)
        o, b = np.divmod(rest, span)
        self.lat.append({"w": w[r], "btw": btw[r].astype(bool), "o": o.astype(np.uint8), "lb": b + lo,
                         "n": n[keys] if m > len(keys) else n})  # fmt: skip

    def tables(self, con: Any) -> None:
        """Make fp_procs, fp_lat_buckets and fp_values' latency rows from the counts, as
        process_counts.sql, latency_buckets.sql and value_counts.sql would from the rows."""
        con.register("fp_proc_parts", _table(self.procs, PROC_COLUMNS))
        con.register("fp_lat_parts", _table(self.lat, LAT_COLUMNS))
        con.register("fp_lat_near", _table(self.near, NEAR_COLUMNS))
        con.register("fp_value_parts", self.value_table())
        self.values = np.zeros(0, np.uint32)  # let go before the queries after
        try:
            duck.run(con, SQL, "pass_procs", {"device": self.f.options.device})
            duck.run(con, SQL, "pass_lat_buckets", {"ops": list(OPS)})
            value_counts(con, self.f, self.limit)
            duck.run(con, SQL, "pass_values", {"ops": list(OPS)})
        finally:
            for name in ("fp_proc_parts", "fp_lat_parts", "fp_lat_near", "fp_value_parts"):
                con.unregister(name)


PROC_COLUMNS = {"w": pa.int64(), "btw": pa.bool_(), "pid": pa.int64(), "ios": pa.int64(), "bytes": pa.int64(),
                "reads": pa.int64(), "writes": pa.int64(), "flushes": pa.int64()}  # fmt: skip
LAT_COLUMNS = {"w": pa.int64(), "btw": pa.bool_(), "o": pa.uint8(), "lb": pa.int64(), "n": pa.int64()}
NEAR_COLUMNS = {"w": pa.int64(), "btw": pa.bool_(), "o": pa.uint8(), "lat": pa.int64()}
VALUE_COLUMNS = {"rg": pa.uint8(), "btw": pa.bool_(), "o": pa.uint8(), "v": pa.int64(), "n": pa.int64()}


def _table(parts: list[dict[str, np.ndarray]], columns: dict[str, pa.DataType]) -> pa.Table:
    return pa.table({c: pa.array(np.concatenate([p[c] for p in parts]) if parts else [], t)
                     for c, t in columns.items()})  # fmt: skip


def _nearest(v: np.ndarray, q: float) -> int:
    """quantile_disc(v, q): the value of rank max(1, n - floor(n - q n)), as DuckDB computes it."""
    n = len(v)
    k = max(1, n - math.floor(n - q * n)) - 1
    return int(np.partition(v, k)[k])


def _span(f: Frame) -> dict[str, Any]:
    """The parameters every query over the rows takes: the windows and the rows' span and device."""
    return {"t0": f.t0, "window_ns": f.window_ns, "lo": f.lo, "hi": f.hi, "device": f.options.device}


def value_counts(con: Any, f: Frame, limit: int) -> None:
    """fp_values' latency rows outside [0, limit) from the rows (value_counts.sql)."""
    params = _span(f) | {"classes": f.classes.tolist(), "ops": list(OPS), "limit": limit}
    duck.run(con, SQL, "value_counts", params)


def fallback(con: Any, f: Frame) -> None:
    """The same tables from the rows by DuckDB (where the rows are out of time order)."""
    params = _span(f)
    duck.run(con, SQL, "process_counts", params)
    duck.run(con, SQL, "latency_buckets", params)
    value_counts(con, f, 0)
