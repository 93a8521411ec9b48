"""Each scope's latency beyond the device's own percentiles: what `iofp diff` tests, and where a
request waited before the device had it.

- `buckets`: the device latency of reads, of writes and of both, and each fsync-family call's, in
  buckets 10% wide (`fingerprint_doc.LogHistogram`): distributions a diff can test, small enough to
  travel in the document (fingerprint/sql/lat_buckets.sql, sync_lat_buckets.sql).
- `queue`: the time before issue (btt's Q2D, issue - queue_ns): requests a scheduler or a plug held
  (queue_buckets.sql).
- `app`: the application's data calls (the trace's calls table): what it waited for each read and
  write, from its entry (a libaio iocb: its io_submit) to its return (its reaping). This includes
  what no block tracepoint sees: blk-throttle (cgroup io.max, blkio.throttle.*) holds a bio before
  the block layer's first tracepoint and its request is made only when the bio is let through, so
  a capped request's issue-to-completion (and its queue_ns) hides the wait (call_buckets.sql).

The queue and call times come from buckets 2% wide (round(50 ln ns)) holding each bucket's count,
sum and maximum: a hash aggregate, percentiles within 1% and exact means and maxima.
"""

from __future__ import annotations

import math
from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from iofp import duck
from iofp import fingerprint_doc as doc

SQL = "fingerprint.sql"
OPS = ("read", "write")


@dataclass
class Latencies:
    """The results of every query below, keyed by scope."""

    buckets: dict[tuple[str, str], doc.LogHistogram] = field(default_factory=dict)  # (scope, op)
    sync_buckets: dict[tuple[str, str], doc.LogHistogram] = field(default_factory=dict)  # (scope, call)
    queue: dict[str, dict[str, doc.OpLatency]] = field(default_factory=dict)  # scope -> op
    app: dict[str, dict[str, doc.OpLatency]] = field(default_factory=dict)


def measure(con: Any) -> Latencies:
    """Every scope's latency buckets, time before issue and application wait; needs compute's
    prepared tables (scoped_io, scope_map, regime_w, fp_params), the latency value counts (fp_values,
    value_counts.sql) and the sync_src and calls_src relations."""
    out = Latencies()
    out.buckets = _log_hists(duck.query(con, SQL, "lat_buckets"), "op")
    out.sync_buckets = _log_hists(duck.query(con, SQL, "sync_lat_buckets"), "call")
    out.queue = _summaries(duck.query(con, SQL, "queue_buckets"))
    out.app = _summaries(duck.query(con, SQL, "call_buckets"))
    return out


def _log_hists(rows: list[dict[str, Any]], key: str) -> dict[tuple[str, str], doc.LogHistogram]:
    counts: dict[tuple[str, str], dict[int, int]] = defaultdict(dict)
    for r in rows:
        counts[(r["scope"], r[key])][int(r["lb"])] = int(r["n"])
    out = {}
    for k, by_lb in counts.items():
        first, last = min(by_lb), max(by_lb)
        out[k] = doc.LogHistogram(first, [by_lb.get(b, 0) for b in range(first, last + 1)])
    return out


@dataclass
class _Buckets:
    """One scope's and op's 2%-wide buckets: lb -> count, and the totals."""

    n: dict[int, int] = field(default_factory=dict)
    total: int = 0
    sum_ns: float = 0.0
    max_ns: int = 0

    def __bool__(self) -> bool:
        return self.total > 0

    def add(self, r: dict[str, Any]) -> None:
        self.n[int(r["lb"])] = self.n.get(int(r["lb"]), 0) + int(r["n"])
        self.total += int(r["n"])
        self.sum_ns += float(r["sum_ns"])
        self.max_ns = max(self.max_ns, int(r["max_ns"]))

    def pct_us(self, q: float) -> float:
        """Nearest-rank percentile q: the middle of the bucket that holds it (never above the
        maximum), in µs."""
        need, seen = math.ceil(q * self.total), 0
        if need >= self.total:  # the last value: known exactly
            return self.max_ns / 1e3
        for lb in sorted(self.n):
            seen += self.n[lb]
            if seen >= need:
                return min(math.exp(lb / 50), self.max_ns) / 1e3
        return self.max_ns / 1e3

    def latency(self) -> doc.OpLatency:
        return doc.OpLatency(
            ios=self.total, mean_us=self.sum_ns / self.total / 1e3, p50_us=self.pct_us(0.5),
            p99_us=self.pct_us(0.99), p99_9_us=self.pct_us(0.999), max_us=self.max_ns / 1e3, hist_us=None,
        )  # fmt: skip


def _summaries(rows: list[dict[str, Any]]) -> dict[str, dict[str, doc.OpLatency]]:
    """scope -> op -> its latency (read, write, and 'all': both), from the buckets' rows."""
    parts: dict[str, dict[str, _Buckets]] = defaultdict(lambda: defaultdict(_Buckets))
    for r in rows:
        parts[r["scope"]][r["op"]].add(r)
        parts[r["scope"]]["all"].add(r)
    order = ("all", *OPS)  # a fixed order: the document is the same whatever order the rows came in
    return {s: {op: ops[op].latency() for op in order if ops.get(op)} for s, ops in parts.items()}


@dataclass(frozen=True)
class Wait:
    """Requests waiting before the device had them, on average (Little's law), where, and their
    share of the time the requests were in progress (waiting or at the device)."""

    requests: float
    share: float
    where: str


def waiting(s: doc.Scope) -> Wait | None:
    """How many of the scope's requests waited on average before the device had them. With the
    application's data calls: their total time less their requests' total device time, for the ops
    the calls cover, over the scope's seconds ('above the device'); else the requests' total time
    before issue over the seconds ('in the block layer's queue'). None: neither is known."""
    if s.seconds <= 0 or not s.latency:
        return None
    if s.app_latency:
        ops = [op for op in OPS if op in s.app_latency and op in s.latency]
        if ops:
            app = sum(s.app_latency[op].mean_us * s.app_latency[op].ios for op in ops)
            dev = sum(s.latency[op].mean_us * s.latency[op].ios for op in ops)
            wait = max(0.0, app - dev)
            return Wait(wait / 1e6 / s.seconds, wait / app if app > 0 else 0.0, "above the device")
    q, dev_all = (s.queue_latency or {}).get("all"), s.latency.get("all")
    if q is None or dev_all is None:
        return None
    wait, total = q.mean_us * q.ios, q.mean_us * q.ios + dev_all.mean_us * dev_all.ios
    return Wait(wait / 1e6 / s.seconds, wait / total if total > 0 else 0.0, "in the block layer's queue")
