"""Each device's issue order, per scope: sequential requests, vscsiStats seekDistance histograms, the
median |seek|, and each submitting process's own order on the device.

A request is sequential when it starts where the previous sized request on the same device ended
(zero-size requests such as flushes neither start nor break a run); its seek distance in 512 B LBNs
is this start - the last LBN of that previous request (+1 = sequential), divided as DuckDB's `//`
divides integers (toward zero). Per submitting process: whether it starts where the same process's
previous sized request on the device ended (a WAL writer appending alone is sequential whatever other
processes interleave with it). Rows without a pid (an import) give no per-process figure.

The requests come in issue order a batch at a time, from fingerprint/arrival.py's one pass over the
rows as the trace's files hold them, or, when those are out of time order, from DuckDB's sort of one
device's sized requests (device_stream.sql) streamed in Arrow batches; the figures that depend on
the order are computed here in numpy, the last request of a batch (and of each process) carried
into the next. Window functions over the sorted rows wrote
every request into a table read three times (a lag `OVER ()` on one thread, a second sort for the
lag partitioned by pid): at 50 M rows ~19 s of ~90. Everything is counted per (regime class,
--between flag, op) and rolled up into scopes (Frame.scope_map) on a few rows; the exact
nearest-rank median |seek| from counts per coarse bucket (monotone in |seek|), only the median
bucket's seeks sorted. Each step is a few passes of cheap array operations: a row's window class
from the runs its time order makes (no division per row), the division by 512 by shifts, the seek
histogram's bin by lookup, the buckets in uint32, the pids as offsets where their range is narrow.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from fingerprint.frame import ALL_CLASSES, Frame
from fingerprint.scope import BINS
from iofp.sqlfiles import load_sql

SQL = "fingerprint.sql"
BATCH = 1 << 20
OPS = 3  # op codes: 0 other, 1 read, 2 write (device_stream.sql)
CODES = 2 * (max(ALL_CLASSES) + 1)  # a row's code: regime class * 2 + --between flag
LIMITS = np.asarray(BINS["seek_lbn"], np.int64)
OVER = 2**63 - 1  # DuckDB's histogram key for the values above the last limit
BUCKETS = 4096
# the histogram's bin of every seek from the first limit to just past the last (histogram(): the
# first limit >= the seek), for a lookup where a binary search per seek took 8x as long
HIST_BIN = np.searchsorted(LIMITS, np.arange(LIMITS[0], LIMITS[-1] + 2)).astype(np.uint8)


def bucket(v: np.ndarray) -> np.ndarray:
    """|seek| -> a coarse bucket, monotone in |seek|: exact below 2^10 LBNs, then 1023 buckets per
    2^10 range, all from 1023 * 2^30 on in the last. In the dtype of `v` (uint32 where the seeks fit:
    a sixth of the time of int64 here)."""
    level = (v >= 1 << 10).astype(v.dtype)
    level += v >= 1 << 20
    level += v >= 1 << 30
    b = np.right_shift(v, level * 10)
    b += level << 10
    return np.minimum(b, BUCKETS - 1, out=b)


def pid_groups(pid: pa.Array, most: int) -> tuple[np.ndarray, np.ndarray] | None:
    """Each row's process as a group index (-1: no pid) and the pids the groups are, or None when no
    row has one. Pids without nulls within a range of at most `most` // CODES values are their offset
    from the lowest (no hashing); others are dictionary-encoded."""
    if pid.null_count == len(pid):
        return None
    if pid.null_count == 0:
        p = pid.to_numpy()
        lo = int(p.min())
        span = int(p.max()) - lo + 1
        if CODES * span <= most:
            return (p - lo).astype(np.intp), np.arange(lo, lo + span, dtype=np.int64)
    enc = pc.dictionary_encode(pid)
    return enc.indices.fill_null(-1).to_numpy(), enc.dictionary.to_numpy().astype(np.int64)


def bucket_span(b: int) -> tuple[int, int]:
    """The |seek| values bucket `b` holds (the inverse of bucket())."""
    if b < 1024:
        return b, b
    level, m = divmod(b, 1024)
    shift = 10 * level
    return m << shift, OVER if level == 3 and m == 1023 else ((m + 1) << shift) - 1


class Order:
    """The counts of the device and process orders, added to batch by batch."""

    def __init__(self, f: Frame) -> None:
        self.f = f
        self.sized = np.zeros(CODES * OPS, np.int64)
        self.seq = np.zeros(CODES * OPS, np.int64)
        self.hist = np.zeros((CODES * OPS, len(LIMITS) + 1), np.int64)
        self.buckets = np.zeros((CODES, BUCKETS), np.int64)
        self.seeks: list[tuple[np.ndarray, np.ndarray]] = []  # (code, |seek|) of every batch
        self.procs: dict[tuple[int, int], list[int]] = {}  # (code, pid) -> [sized, sequential]

    def device(self, con: Any, dev: int) -> None:
        """Add device `dev`'s rows (its rank among the trace's device names), in issue order."""
        reader = con.sql(load_sql(SQL, "device_stream"), params={"dev": dev}).to_arrow_reader(BATCH)
        end: int | None = None  # the previous sized request's end on the device
        pids: dict[int, int] = {}  # each process's previous sized request's end on the device
        for b in reader:
            if b.num_rows:
                cols = [b.column(c).to_numpy() for c in ("ts_ns", "offset", "size", "opc")]
                end = self.add(*cols, b.column("pid"), end, pids)

    def add(self, ts: np.ndarray, off: np.ndarray, size: np.ndarray, opc: np.ndarray, pid: pa.Array,
            last: int | None, pids: dict[int, int]) -> int:  # fmt: skip
        """Count one batch of a device's sized requests in issue order; the end of its last request."""
        n = len(ts)
        end = off + size.astype(np.int64)
        code = self.codes(ts)
        key = code.astype(np.intp) * OPS
        key += opc
        self.sized += np.bincount(key, minlength=CODES * OPS)
        if last is None:  # the device's first request: no previous one to start from
            o, k, c, prev = off[1:], key[1:], code[1:], end[:-1]
        else:
            o, k, c = off, key, code
            prev = np.empty(n, np.int64)
            prev[0], prev[1:] = last, end[:-1]
        d = o - prev
        self.seq += np.bincount(k[d == 0], minlength=CODES * OPS)
        seek = (d + ((d >> 63) & 511)) >> 9  # d // 512 toward zero, as DuckDB's //
        seek += 1
        nb = len(LIMITS) + 1
        bins = k * nb
        bins += HIST_BIN[np.clip(seek, LIMITS[0], LIMITS[-1] + 1) - LIMITS[0]]
        self.hist += np.bincount(bins, minlength=CODES * OPS * nb).reshape(-1, nb)
        v = np.abs(seek)
        if v.size and v.max() < 1 << 32:
            v = v.astype(np.uint32)
        bins = c.astype(np.intp) * BUCKETS
        bins += bucket(v)
        self.buckets += np.bincount(bins, minlength=CODES * BUCKETS).reshape(CODES, BUCKETS)
        self.seeks.append((c, v))
        self.processes(pid, code, off, end, pids)
        return int(end[-1])

    def codes(self, ts: np.ndarray) -> np.ndarray:
        """Each row's code (its window's class * 2 + its --between flag) from its time: the rows come
        in time order, so each window's and the span's rows are one run, cut where a window starts."""
        f, n = self.f, len(ts)
        w0, w1 = (int(ts[0]) - f.t0) // f.window_ns, (int(ts[-1]) - f.t0) // f.window_ns
        cls = f.classes[w0 : w1 + 1].astype(np.uint8) * 2
        starts = f.t0 + np.arange(w0 + 1, w1 + 1, dtype=np.int64) * f.window_ns
        runs = np.diff(np.searchsorted(ts, starts), prepend=0, append=n)
        code = np.repeat(cls, runs)
        if f.lo is not None and f.hi is not None:
            code[np.searchsorted(ts, f.lo) : np.searchsorted(ts, f.hi, side="right")] |= 1
        return code

    def processes(self, pid: pa.Array, code: np.ndarray, off: np.ndarray, end: np.ndarray,
                  last: dict[int, int]) -> None:  # fmt: skip
        """Each process's own order within the batch: its rows grouped by pid (a stable sort keeps
        their issue order), each group's first row against that process's carried end."""
        groups = pid_groups(pid, 4 * len(pid) + 4096)
        if groups is None:
            return
        idx, uniq = groups
        k = len(uniq)
        rows = np.flatnonzero(idx >= 0) if pid.null_count else None
        g = idx if rows is None else idx[rows]
        o = np.argsort(g.astype(np.uint16) if k <= 1 << 16 else g, kind="stable")
        o = o if rows is None else rows[o]
        gs = idx[o]
        first = np.ones(len(o), bool)
        first[1:] = gs[1:] != gs[:-1]
        lastrow = np.ones(len(o), bool)
        lastrow[:-1] = first[1:]
        prev = np.empty(len(o), np.int64)
        prev[1:] = end[o][:-1]
        carried = [last.get(p) for p in uniq[gs[first]].tolist()]
        has = np.ones(len(o), bool)
        has[np.flatnonzero(first)] = [c is not None for c in carried]
        prev[np.flatnonzero(first)] = [c or 0 for c in carried]
        pseq = has & (off[o] == prev)
        last.update(zip(uniq[gs[lastrow]].tolist(), end[o][lastrow].tolist(), strict=True))
        ck = code[o].astype(np.int64) * k + gs
        if CODES * k <= 4 * len(o) + 4096:  # few processes: a count per (code, process)
            sized = np.bincount(ck, minlength=CODES * k)
            keys = np.flatnonzero(sized)
            sized, seqs = sized[keys], np.bincount(ck[pseq], minlength=CODES * k)[keys]
        else:
            keys, sized = np.unique(ck, return_counts=True)
            seqs = np.bincount(np.searchsorted(keys, ck[pseq]), minlength=len(keys))
        for key, s, q in zip(keys.tolist(), sized.tolist(), seqs.tolist(), strict=True):
            c, gi = divmod(key, k)
            tally = self.procs.setdefault((c, int(uniq[gi])), [0, 0])
            tally[0] += s
            tally[1] += q

    def median(self, codes: list[int]) -> int | None:
        """The exact nearest-rank median |seek| of the rows of `codes`: the bucket holding rank
        ceil(n/2) from the bucket counts, then only that bucket's seeks sorted."""
        counts = self.buckets[codes].sum(axis=0)
        cum = np.cumsum(counts)
        if not cum[-1]:
            return None
        target = (int(cum[-1]) + 1) // 2
        b = int(np.searchsorted(cum, target))
        rank = target - (int(cum[b]) - int(counts[b]))  # 1-based, within bucket b
        lo, hi = bucket_span(b)
        sel = np.zeros(CODES, bool)
        sel[codes] = True
        vals = np.concatenate([v[sel[c] & (v >= lo) & (v <= hi)].astype(np.int64) for c, v in self.seeks])
        return int(np.partition(vals, rank - 1)[rank - 1])

    def scopes(self, scope_map: pa.Table) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, int], Any]]:
        """The device order's figures by scope, and the process order's by (scope, pid), rolled up
        from the counts per code as scope_map says."""
        codes: dict[str, list[int]] = {}
        for r in scope_map.to_pylist():
            codes.setdefault(r["scope"], []).append(int(r["rg"]) * 2 + int(r["btw"]))
        device = {scope: self.device_scope(c) for scope, c in codes.items()}
        process: dict[tuple[str, int], Any] = {}
        for (code, pid), (sized, seq) in self.procs.items():
            for scope, c in codes.items():
                if code in c:
                    new = {"scope": scope, "pid": pid, "sized": 0, "seq_ios": 0}
                    r = process.setdefault((scope, pid), new)
                    r["sized"] += sized
                    r["seq_ios"] += seq
        return {s: d for s, d in device.items() if d is not None}, process

    def device_scope(self, codes: list[int]) -> dict[str, Any] | None:
        """One scope's device-order figures (None when it holds no sized request)."""
        rows = [c * OPS + op for c in codes for op in range(OPS)]
        if not self.sized[rows].sum():
            return None
        seq = self.seq.reshape(CODES, OPS)[codes].sum(axis=0)
        hist = self.hist.reshape(CODES, OPS, -1)[codes].sum(axis=0)
        keys = [*LIMITS.tolist(), OVER]
        every = hist.sum(axis=0)
        shown = np.flatnonzero(every)

        def as_map(h: np.ndarray) -> dict[int, int] | None:
            return {keys[i]: int(h[i]) for i in shown} if h.any() else None

        return {
            "seq_ios": int(seq.sum()),
            "seq_reads": int(seq[1]),
            "seq_writes": int(seq[2]),
            "seek_all": as_map(every),
            "seek_read": as_map(hist[1]),
            "seek_write": as_map(hist[2]),
            "median_abs_lbn": self.median(codes),
        }


def measure(con: Any, f: Frame) -> tuple[dict[str, dict[str, Any]], dict[tuple[str, int], Any]]:
    """Each device's issue order by scope, and each process's own order by (scope, pid)."""
    order = Order(f)
    for dev in range(1, len(f.devices) + 1):
        order.device(con, dev)
    return order.scopes(f.scope_map())
