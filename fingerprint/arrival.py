"""The orders of the I/O, per scope, from one pass over the rows in the order the trace's files hold
them: the arrival order of every request (the gap since the previous arrival: vscsiStats
interarrival, its mean and CV; whether a sized request starts where the previous record ended), and
each device's and each process's issue order (fingerprint/device_order.py).

A capture writes its rows in time order, so DuckDB streams them as they lie (io_stream.sql) and no
sort is needed: each batch is checked to come in time order, and rows of equal time are put in the
order (device, offset, size) here, those at a batch's last time held back until the next batch shows
whether it holds more of them. The figures are then those of arrival_order.sql and device_stream.sql,
which sort every row (the whole order, then each device's): a third of the fingerprint's time at 50 M
rows. Rows out of time order (files written out of order, an import of completion-ordered records)
stop the pass, and those sorting queries compute the same figures instead.

The arrival figures are counted per (window, --between flag) in exact integers: the count of gaps,
their sum, and their sum of squares in 16-bit halves of each gap (a gap of 2^31 ns or more, a rare
one, is squared in Python's integers), and rolled up into scopes (Frame.scope_map) as
arrival_order.sql does: the standard deviation by the parallel-variance formula over the windows in
order (w, btw).
"""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from typing import Any

import numpy as np
import pyarrow as pa

from fingerprint import device_order, footprint, pass_counts
from fingerprint.frame import Frame
from fingerprint.scope import BINS
from iofp import duck
from iofp.contract import OPS
from iofp.sqlfiles import load_sql

SQL = "fingerprint.sql"
LIMITS = [int(v) for v in BINS["interarrival_us"]]  # µs
LIMITS_NS = np.asarray(LIMITS, np.int64) * 1000  # a gap is in bin i when gap / 1000.0 <= LIMITS[i]
OVER = 2**63 - 1  # the histogram's key for the gaps above the last limit
BIG = 1 << 31  # gaps from here on are squared in Python's integers
SHORT = 1 << 21  # a batch of fewer rows, every gap shorter: its squares summed per run in int64 at once
HOLD = 1 << 18  # rows held back for rows of an earlier time in the next batch (a file's overlap)


class Unsorted(Exception):
    """The rows do not come in time order."""


class Arrival:
    """The arrival order's exact partials per (window, --between flag), added to batch by batch."""

    def __init__(self, f: Frame) -> None:
        self.f = f
        shape = (len(f.classes), 2)
        self.rows = np.zeros(shape, np.int64)  # rows, gaps or not: which (w, btw) parts exist
        self.n = np.zeros(shape, np.int64)
        self.total = np.zeros(shape, np.int64)
        self.sq = np.zeros((3, *shape), np.int64)  # sums of hi^2, hi*lo, lo^2 (gap = hi * 2^16 + lo)
        self.big: dict[tuple[int, int], int] = {}  # squares summed in Python's integers: gaps >= BIG, and
        # whole runs of a batch of short gaps (SHORT)
        self.seq = np.zeros(shape, np.int64)
        self.hist = np.zeros((*shape, len(LIMITS) + 2), np.int64)  # the last column: no gap
        self.last: tuple[int, int] | None = None  # the previous record's time and end

    def add(self, ts: np.ndarray, off: np.ndarray, size: np.ndarray) -> None:
        """Count one batch of every selected row in arrival order."""
        n = len(ts)
        end = off + size.astype(np.int64)
        prev_ts, prev_end = np.empty(n, np.int64), np.empty(n, np.int64)
        prev_ts[1:], prev_end[1:] = ts[:-1], end[:-1]
        has = np.ones(n, bool)
        if self.last is None:  # the first record: no gap, no previous end
            prev_ts[0], prev_end[0], has[0] = ts[0], -1, False
        else:
            prev_ts[0], prev_end[0] = self.last
        self.last = int(ts[-1]), int(end[-1])
        gap = ts - prev_ts
        seq = has & (size > 0) & (off == prev_end)
        starts, w, btw = pass_counts.runs(self.f, ts)
        at = (w, btw)
        np.add.at(self.rows, at, np.diff(starts, append=n))
        np.add.at(self.n, at, np.add.reduceat(has.astype(np.int64), starts))
        np.add.at(self.total, at, np.add.reduceat(gap, starts))
        np.add.at(self.seq, at, np.add.reduceat(seq.astype(np.int64), starts))
        if n < SHORT and int(gap.max()) < SHORT:  # each square < 2^42 and their sum < 2^63: one pass
            sums = np.add.reduceat(gap * gap, starts).tolist()
            for key, v in zip(zip(w.tolist(), btw.tolist(), strict=True), sums, strict=True):
                self.big[key] = self.big.get(key, 0) + v
            big = np.zeros(0, bool)
        else:
            big = gap >= BIG
            small = np.where(big, 0, gap) if big.any() else gap
            hi, lo = small >> 16, small & 0xFFFF
            for i, v in enumerate((hi * hi, hi * lo, lo * lo)):
                np.add.at(self.sq[i], at, np.add.reduceat(v, starts))
        if big.any():
            run = np.searchsorted(starts, np.flatnonzero(big), side="right") - 1
            for r, g in zip(run.tolist(), gap[big].tolist(), strict=True):
                key = (int(w[r]), int(btw[r]))
                self.big[key] = self.big.get(key, 0) + g * g
        nb = len(LIMITS) + 2
        b = np.searchsorted(LIMITS_NS, gap)
        b[~has] = nb - 1
        b += np.repeat(np.arange(len(starts)) * nb, np.diff(starts, append=n))
        h = np.bincount(b, minlength=len(starts) * nb).reshape(-1, nb)
        np.add.at(self.hist, at, h)

    def scopes(self, scope_map: pa.Table) -> dict[str, dict[str, Any]]:
        """The figures of arrival_order.sql by scope, rolled up as scope_map says."""
        parts: dict[str, list[tuple[int, int]]] = {}
        for r in scope_map.to_pylist():
            parts.setdefault(r["scope"], []).append((int(r["rg"]), int(r["btw"])))
        out = {}
        for scope, rgb in parts.items():
            sel = np.zeros(self.rows.shape, bool)
            for rg, btw in rgb:
                sel[:, btw] |= self.f.classes == rg
            sel &= self.rows > 0
            if sel.any():
                out[scope] = self.scope(sel)
        return out

    def scope(self, sel: np.ndarray) -> dict[str, Any]:
        gaps = int(self.n[sel].sum())
        total = int(self.total[sel].sum())
        hist = self.hist[sel].sum(axis=0)[:-1]
        keys = [*LIMITS, OVER]
        out: dict[str, Any] = {
            "gaps": gaps,
            "iat_mean_ns": total / gaps if gaps else None,
            "iat_std_ns": None,
            "iat_hist": {keys[i]: int(hist[i]) for i in np.flatnonzero(hist)} if gaps else None,
            "seq_any_ios": int(self.seq[sel].sum()),
        }
        if gaps:
            mean, m2 = out["iat_mean_ns"], 0.0
            for w, btw in zip(*np.nonzero(sel & (self.n > 0)), strict=True):  # in order (w, btw)
                n, t = int(self.n[w, btw]), int(self.total[w, btw])
                hh, hl, ll = (int(v) for v in self.sq[:, w, btw])
                sumsq = (hh << 32) + (hl << 17) + ll + self.big.get((int(w), int(btw)), 0)
                # a window's M2 from its exact sums, as arrival_order.sql: sumsq - total^2 / n
                q, r = divmod(t * t, n)
                m2 += float(sumsq - q) - float(r) / n + n * (t / n - mean) ** 2
            out["iat_std_ns"] = float(np.sqrt(max(m2, 0.0) / gaps))
        return out


def ordered(cols: list[np.ndarray]) -> list[np.ndarray]:
    """Rows in time order with those of equal time put in the order (device, offset, size)."""
    ts = cols[0]
    if (ts[1:] < ts[:-1]).any():  # a file's rows begin before the previous file's end: merge them
        o = np.argsort(ts, kind="stable")  # a merge of the sorted runs
        cols = [c[o] for c in cols]
        ts = cols[0]
    eq = ts[1:] == ts[:-1]
    if not eq.any():
        return cols
    tie = np.zeros(len(ts), bool)
    tie[:-1] |= eq
    tie[1:] |= eq
    rows = np.flatnonzero(tie)
    o = np.lexsort((cols[3][rows], cols[2][rows], cols[1][rows], ts[rows]))
    moved = rows[o] != rows
    if not moved.any():
        return cols
    to, fro = rows[moved], rows[o][moved]  # only the tied rows move, within their runs
    out = []
    for c in cols:
        c = c if c.flags.writeable else c.copy()
        c[to] = c[fro]
        out.append(c)
    return out


def batches(reader: Any) -> Iterator[list[np.ndarray]]:
    """The stream's rows in the order (time, device, offset, size), a batch at a time, as columns
    (ts, dev, offset, size, the devices' op code, pid, pid known, the op's code in OPS, latency or 0,
    latency known, flush point). The last HOLD rows read are held back and merged with the next batch,
    or given out as they are where the next batch begins after them (no copy of every column: rows in
    time order); Unsorted when a row comes at or before the time of a row already given out."""
    held: list[np.ndarray] | None = None
    floor: int | None = None  # the last time given out
    for b in reader:
        if not b.num_rows:
            continue
        pid, o = b.column("pid"), b.column("o").to_numpy()
        cols = [b.column(c).to_numpy() for c in ("ts_ns", "dev", "offset", "size")]
        known = pid.is_valid().to_numpy(zero_copy_only=False)
        cols += [pass_counts.DEVICE_OP[o], pid.fill_null(0).to_numpy(), known]
        lat = b.column("lat_ns")
        cols += [o, lat.fill_null(0).to_numpy(), lat.is_valid().to_numpy(zero_copy_only=False)]
        cols += [b.column("point").to_numpy(zero_copy_only=False)]
        first = int(cols[0].min())
        if floor is not None and first <= floor:
            raise Unsorted
        if held is not None and first > int(held[0][-1]):  # none of the batch goes among the held rows
            floor = int(held[0][-1])
            yield held
            held = None
        if held is not None:
            cols = [np.concatenate([h, c]) for h, c in zip(held, cols, strict=True)]
        cols = ordered(cols)
        ts, n = cols[0], len(cols[0])
        cut = int(np.searchsorted(ts, ts[n - HOLD])) if n > HOLD else 0  # equal times stay together
        held = [c[cut:] for c in cols]
        if cut:
            floor = int(ts[cut - 1])
            yield [c[:cut] for c in cols]
    if held is not None:
        yield held


def rows_of(cols: list[np.ndarray], sel: np.ndarray) -> list[np.ndarray]:
    """The rows `sel` of each column (the columns themselves when that is every row)."""
    return cols if len(sel) == len(cols[0]) else [c[sel] for c in cols]


class Beside:
    """Work on each batch done in a thread of its own, a batch behind the arrival order: numpy lets go
    of the GIL in its array operations, so they run side by side on two cores. What the thread
    raises is raised again by close()."""

    def __init__(self, name: str) -> None:
        self.todo: queue.Queue[list[np.ndarray] | None] = queue.Queue(maxsize=2)
        self.error: BaseException | None = None
        self.thread = threading.Thread(target=self.run, name=name, daemon=True)
        self.thread.start()

    def run(self) -> None:
        while (cols := self.todo.get()) is not None:
            if self.error is None:
                try:
                    self.add(*cols)
                except BaseException as e:  # raised again in the caller's thread by close()
                    self.error = e

    def add(self, *cols: np.ndarray) -> None:
        raise NotImplementedError

    def close(self) -> None:
        self.todo.put(None)
        self.thread.join()
        if self.error is not None:
            raise self.error


class Devices(Beside):
    """Each device's order (device_order.Order), counted beside the arrival order."""

    def __init__(self, f: Frame) -> None:
        self.f, self.order = f, device_order.Order(f)
        self.ends: dict[int, int | None] = {}  # each device's previous sized request's end
        self.pids: dict[int, dict[int, int]] = {}  # each process's on each device
        super().__init__("device-order")

    def add(self, ts: np.ndarray, dev: np.ndarray, off: np.ndarray, size: np.ndarray, opc: np.ndarray,
            pid: np.ndarray, known: np.ndarray, *_: np.ndarray) -> None:  # fmt: skip
        every = bool(known.all())
        for d in range(1, len(self.f.devices) + 1):
            sel = np.flatnonzero((dev == d) & (size > 0))
            if sel.size:
                t, o, s, c, p, k = rows_of([ts, off, size, opc, pid, known], sel)
                pa_pid = pa.array(p, mask=None if every else ~k)
                self.ends[d] = self.order.add(
                    t, o, s, c, pa_pid, self.ends.get(d), self.pids.setdefault(d, {})
                )


class Footprint(Beside):
    """The whole trace's blocks touched and starts per block (footprint.Blocks), counted beside the
    arrival order (they need no order)."""

    def __init__(self, blocks: footprint.Blocks) -> None:
        self.blocks = blocks
        super().__init__("footprint")

    def add(self, ts: np.ndarray, dev: np.ndarray, off: np.ndarray, size: np.ndarray, *_: np.ndarray) -> None:
        self.blocks.add(off, size)


class Counts(Beside):
    """Each process's requests and the latency buckets per window, and the latency value counts
    (pass_counts.Counts), counted beside the arrival order."""

    def __init__(self, counts: pass_counts.Counts) -> None:
        self.counts = counts
        super().__init__("counts")

    def add(self, ts: np.ndarray, dev: np.ndarray, off: np.ndarray, size: np.ndarray, opc: np.ndarray,
            pid: np.ndarray, known: np.ndarray, o: np.ndarray, lat: np.ndarray, lat_known: np.ndarray,
            point: np.ndarray) -> None:  # fmt: skip
        self.counts.add(ts, pid, known, size, o, lat, lat_known, point)


def one_pass(
    con: Any, f: Frame, blocks: footprint.Blocks | None = None, counts: pass_counts.Counts | None = None
) -> tuple[Arrival, device_order.Order]:
    """The arrival order's and the devices' counts from the rows as the files hold them (and the
    footprint's into `blocks`, the processes' and latency buckets' into `counts`)."""
    arrival, devices = Arrival(f), Devices(f)
    beside: list[Beside] = [devices] + ([Footprint(blocks)] if blocks is not None else [])
    beside += [Counts(counts)] if counts is not None else []
    params = {"devices": f.devices, "device": f.options.device, "ops": list(OPS)}
    reader = con.sql(load_sql(SQL, "io_stream"), params=params).to_arrow_reader(device_order.BATCH)
    try:
        for cols in batches(reader):
            for b in beside:
                b.todo.put(cols)
            ts, _, off, size, *_ = cols
            arrival.add(ts, off, size)
    finally:
        reader.close()
        close(beside)
    return arrival, devices.order


def close(beside: list[Beside]) -> None:
    """Close every thread, then raise the first error any of them raised: a close that raises in a
    loop of closes would leave the threads after it running, unjoined."""
    errors = []
    for b in beside:
        try:
            b.close()
        except BaseException as e:
            errors.append(e)
    if errors:
        raise errors[0]


def measure(
    con: Any, f: Frame, blocks: footprint.Blocks | None = None
) -> tuple[dict[str, Any], dict[str, Any], dict[tuple[str, int], Any], dict[str, Any]]:
    """The arrival order by scope, each device's issue order by scope, each process's own order by
    (scope, pid), and the flush gaps by scope: from one pass when the rows come in time order, else
    from the queries that sort. The pass counts the footprint into `blocks` too (let go where the rows
    are out of order), and makes the tables of the processes' counts, the latency buckets and the
    latency value counts (pass_counts.py)."""
    counts = pass_counts.Counts(f)
    try:
        arrival, order = one_pass(con, f, blocks, counts)
    except Unsorted:
        if blocks is not None:
            blocks.drop()
        pass_counts.fallback(con, f)
        rows = duck.query(con, SQL, "arrival_order", {"limits": BINS["interarrival_us"]})
        device, process = device_order.measure(con, f)
        gaps = duck.query(con, SQL, "flush_gaps")
        return {r.pop("scope"): r for r in rows}, device, process, {r.pop("scope"): r for r in gaps}
    if blocks is not None:
        blocks.sweep_beside()  # the footprint's sweep on the other core while the queries go on
    counts.tables(con)
    scope_map = f.scope_map()
    device, process = order.scopes(scope_map)
    return arrival.scopes(scope_map), device, process, counts.flush_gaps(scope_map)
