"""Replay fidelity: did the target see the I/Os the selection demands, when it demands them?

The comparison takes the *expected* I/Os (the converter's, in memory: the selection's data I/Os as the
iolog demands them, with target offsets and scaled times, and one call per sync line) and the
*replayed* trace (iofp's own capture of the target while fio ran). Both are block-layer issue times,
so the comparison is like for like. SQL lives in sql/fidelity_*.sql. Figures (the replay-fidelity
metrics of the trace-replay literature: Thesios, hfplayer, Buttress):

- content: expected / replayed / matched counts per op, where matched means same (op, offset, size)
  as a multiset; a sync call is replayed when fio made it (the capture's sync table, per kind:
  fsync, fdatasync), not counted by block flushes, which the kernel merges when calls overlap (a
  capture without a sync table falls back to them, and the record says so); the block flushes the
  target saw are reported (`flushes`); the demanded I/Os left unmatched are then matched by their bytes
  (`reshaped`, sql/fidelity_reshaped.sql): the kernel may split or merge requests, and under memory
  pressure its flusher writes some of a buffered commit's dirty pages before the replayed fdatasync
  does (measured beside a buffered writer: in 4 of 8 pgbench replays one 16-48 KiB WAL write arrived as
  a kworker's piece and fio's remainder, read as "1 missing, 1-2 extra"); they count when on every
  byte fio wrote no more times than demanded and fio with the kernel's writeback at least as many, so
  bytes nobody wrote are still missing and bytes fio wrote beyond the demand still extra;
  `missing` = expected - matched - reshaped, `extra` = replayed - matched - fio's pieces of the reshaped;
- rate: per-window IOPS of both sides aligned at the timing's anchors (below); over the windows with
  demand, WAPE (sum |e - r| / sum e: I/O-weighted, what the verdict uses), MAPE (the mean of the
  windows' percentages, reported) and the largest single-window error.
  Windows are 1 s; a selection shorter than 10 s gets windows shrunk by tens while it has fewer than
  10 and a window still averages >= 100 I/Os (0.01 s for TPC-C's 7,000 I/Os in 0.14 s), so a short
  burst is not judged on one window, nor a slow one on windows of a few I/Os where one late I/O is a
  10% error;
- timing: per-I/O lateness (n-th I/O of a key paired with the n-th replayed one, both clocks aligned at
  the start: the first demanded I/O, and on the replay side the lower of the median offsets of the
  I/Os demanded in the first ANCHOR_NS = 10 ms and of the first tenth of the I/Os, so every I/O's
  lateness hinges neither on one I/O's wake-up nor on a stall at fio's start): median,
  p99, max, the final drift, the share later than 1 ms; the median and p99 of |lateness| (early
  counts as much as late); the lateness growth (median lateness of the last tenth of the I/Os minus
  that of the first: how far the replay fell behind over the run, robust to any one I/O's wake-up);
  and the inter-arrival error |ΔIAT| (median, p99);
- concurrency: in-flight at issue, mean and p99, expected (the original device) vs replayed;
- duration stretch: replayed span / expected span - 1; judged only where the spans differ by more
  than STRETCH_FLOOR_NS (2 ms: fio 3.33 paces with a 1 ms wait clock, so a 10 ms selection of 40
  I/Os that ended 0.6 ms early, -6%, said nothing about the device; a CI run beside a CPU hog read
  it as "the device's saturation").

Verdict. A replay is **faithful** when a user can say "the device saw my workload":
  every demanded I/O was replayed with the same op, offset and size and nothing else was issued
  (missing == extra == 0), the rate held I/O for I/O: the IOPS WAPE (sum over the windows of
  |replayed - demanded| / sum of demanded) is <= 5% (per-window request counts within 95%, the low
  end of Thesios's 95-99.5% count accuracy), and the run lasted within 5% of the selection (fio 3.33
  measured +2-8%; more than 5% means the device or the replayer could not keep up and the rates it
  saw were lower than demanded). The rate is judged on I/Os, not on windows: a mean of per-window
  percentages (MAPE, still reported) lets one near-empty window decide (a PostgreSQL spike matched 79
  of 80 windows exactly, and one 100 ms window of 10 demanded I/Os read 70-138%).
Timing is graded separately. It **accumulated** when the run stretched beyond 1% or its lateness grew
beyond max(2 ms, 1% of the span) (the median lateness of the last tenth of the I/Os minus the first):
then it is **drifting**, and only then. Otherwise it is **precise** when median |lateness| <= 50 µs,
p99 |lateness| <= 1 ms (absolute values: a replay whose I/Os scatter ±1 ms around their times is not
precise because its signed median happens to be 0) and IOPS WAPE <= 2% (the Buttress-class bar and
this project's benchmark targets); **on schedule** when p99 |lateness| <= 2 ms and WAPE <= 2% (what
`--pace absolute` gets from fio 3.33's 1 ms `wait` clock); else **jittery** (bursts the replayer
issued late and caught up on). fio's v3 pacing accumulates lateness (it waits relative to the
previous issue), so a long v3 replay is typically faithful but drifting: that is measured here, never
assumed.
In-flight figures are reported, not judged: on a faster or slower candidate device they differ by
design.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb

from iofp import duck
from iofp.contract import IO_TABLE, SYNC_TABLE, Trace
from iofp.sqlfiles import load_sql
from replay.iolog import Expected

SQL = "replay.run.sql"

FAITHFUL_WAPE = 0.05
FAITHFUL_STRETCH = 0.05
PRECISE_LATE_P50_NS = 50_000
PRECISE_LATE_P99_NS = 1_000_000
PRECISE_STRETCH = 0.01
STRETCH_FLOOR_NS = 2_000_000  # a span off by less than this is within fio's pacing clock: no stretch
PRECISE_WAPE = 0.02
DRIFT_GROWTH_FLOOR_NS = 2_000_000  # lateness grown beyond max(this, DRIFT_GROWTH_SHARE of the span): drifting
DRIFT_GROWTH_SHARE = 0.01
ON_SCHEDULE_LATE_P99_NS = 2_000_000
ANCHOR_NS = 10_000_000  # the replay clock's zero: the I/Os of the first 10 ms (or the first tenth)


@dataclass
class Fidelity:
    expected: int = 0
    replayed: int = 0
    matched: int = 0
    missing: int = 0
    extra: int = 0
    reshaped: int = 0  # demanded I/Os whose bytes the target saw written in other requests
    pieces: int = 0  # fio's requests that wrote them
    writeback: int = 0  # writes by other tasks (the kernel's flusher) of their bytes
    per_op: dict[str, dict[str, int]] = field(default_factory=dict)
    syncs_by: str = "calls"  # "calls" (the capture's sync table) | "block flushes" (it had none)
    flushes: int = 0  # block flushes fio's syncs made on the target (reported, not judged)
    window_s: float = 1.0
    iops_mape: float | None = None
    iops_max_error: float | None = None
    iops_wape: float | None = None
    iops_series: list[tuple[float, float]] = field(default_factory=list)  # (expected, replayed) per window
    late_p50_us: float | None = None
    late_p99_us: float | None = None
    late_max_us: float | None = None
    late_min_us: float | None = None
    abs_late_p50_us: float | None = None
    abs_late_p99_us: float | None = None
    final_drift_us: float | None = None
    late_over_1ms: int = 0
    late_growth_us: float | None = None  # median lateness, last tenth of the I/Os - first tenth
    iat_err_p50_us: float | None = None
    iat_err_p99_us: float | None = None
    inflight: dict[str, dict[str, float | None]] = field(default_factory=dict)
    expected_span_s: float = 0.0
    replayed_span_s: float = 0.0
    stretch: float | None = None
    faithful: bool = False
    timing: str = "drifting"
    reasons: list[str] = field(default_factory=list)

    @property
    def verdict(self) -> str:
        return "faithful" if self.faithful else "not faithful"

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        d["verdict"] = self.verdict
        d["thresholds"] = thresholds()
        return d

    def summary(self) -> str:
        from replay.run.render import fidelity_line

        return fidelity_line(self.to_dict())


def pct(x: float | None) -> float | None:
    return None if x is None else 100 * x


def thresholds() -> dict[str, float]:
    return {
        "faithful_iops_wape": FAITHFUL_WAPE,
        "faithful_abs_stretch": FAITHFUL_STRETCH,
        "precise_late_p50_us": PRECISE_LATE_P50_NS / 1e3,
        "precise_late_p99_us": PRECISE_LATE_P99_NS / 1e3,
        "precise_abs_stretch": PRECISE_STRETCH,
        "stretch_floor_us": STRETCH_FLOOR_NS / 1e3,
        "precise_iops_wape": PRECISE_WAPE,
        "drift_growth_floor_us": DRIFT_GROWTH_FLOOR_NS / 1e3,
        "drift_growth_share": DRIFT_GROWTH_SHARE,
        "on_schedule_late_p99_us": ON_SCHEDULE_LATE_P99_NS / 1e3,
    }


def compare(
    expected: Expected, replayed: Trace, *, comm: str | None = "fio", window_s: float | None = None
) -> Fidelity:
    """Compare the demanded I/Os with a capture of their replay (see the module docstring)."""
    con = duck.connect()
    try:
        con.from_arrow(expected.io).create_view("exp_all")
        con.from_arrow(expected.calls).create_view("exp_calls")
        replayed.relation(con, IO_TABLE).create_view("rep_all")
        replayed.relation(con, SYNC_TABLE).create_view("rep_sync")
        con.execute(load_sql(SQL, "fidelity_sides"), {"comm": comm})
        by_flushes = not replayed.has(SYNC_TABLE) and expected.calls.num_rows > 0
        fid = Fidelity(syncs_by="block flushes" if by_flushes else "calls")
        for r in _rows(con, "fidelity_calls", {"comm": comm, "by_flushes": by_flushes}):
            fid.per_op[r["op"]] = {k: int(r[k]) for k in ("expected", "replayed", "matched")}
        fid.flushes = int(_rows(con, "fidelity_flushes", {"comm": comm})[0]["flushes"])
        return _measure(con, fid, window_s, comm)
    finally:
        con.close()


def _rows(con: duckdb.DuckDBPyConnection, name: str, params: dict[str, Any] | None = None) -> list[dict]:
    return duck.query(con, SQL, name, params)


def rate_window(span_s: float, ios: int) -> float:
    """1 s, shrunk by tens for a span shorter than 10 windows while a window still averages >= 100 I/Os."""
    w = 1.0
    while span_s > 0 and span_s / w < 10 and ios * (w / 10) / span_s >= 100:
        w /= 10
    return w


def _measure(
    con: duckdb.DuckDBPyConnection, fid: Fidelity, window_s: float | None, comm: str | None
) -> Fidelity:
    for r in _rows(con, "fidelity_content"):
        fid.per_op[r["op"]] = {k: int(r[k]) for k in ("expected", "replayed", "matched")}
        fid.per_op[r["op"]] |= {"reshaped": 0, "pieces": 0, "writeback": 0}
    for r in _rows(con, "fidelity_reshaped", {"comm": comm}):
        if r["op"] in fid.per_op:  # writeback alone, of bytes no demanded I/O left unmatched, is not counted
            fid.per_op[r["op"]] |= {k: int(r[k]) for k in ("reshaped", "pieces", "writeback")}

    def total(k: str) -> int:
        return sum(v.get(k, 0) for v in fid.per_op.values())

    fid.expected, fid.replayed, fid.matched = total("expected"), total("replayed"), total("matched")
    fid.reshaped, fid.pieces, fid.writeback = total("reshaped"), total("pieces"), total("writeback")
    fid.missing = fid.expected - fid.matched - fid.reshaped
    fid.extra = fid.replayed - fid.matched - fid.pieces
    late = _rows(con, "fidelity_lateness", {"anchor_ns": ANCHOR_NS})[0]
    if not late["matched"]:
        fid.reasons.append("no replayed I/O matches a demanded one")
        _judge(fid)
        return fid
    us = lambda ns: None if ns is None else ns / 1e3  # noqa: E731
    fid.late_p50_us, fid.late_p99_us = us(late["late_p50_ns"]), us(late["late_p99_ns"])
    fid.late_max_us, fid.late_min_us = us(late["late_max_ns"]), us(late["late_min_ns"])
    fid.abs_late_p50_us, fid.abs_late_p99_us = us(late["abs_late_p50_ns"]), us(late["abs_late_p99_ns"])
    fid.final_drift_us, fid.late_over_1ms = us(late["final_drift_ns"]), int(late["late_over_1ms"])
    fid.iat_err_p50_us, fid.iat_err_p99_us = us(late["iat_err_p50_ns"]), us(late["iat_err_p99_ns"])
    fid.late_growth_us = us(late["late_growth_ns"])

    for r in _rows(con, "fidelity_shape", {"tr0": late["tr0"]}):
        side = "expected" if r["side"] == "exp" else "replayed"
        fid.inflight[side] = {k: r[k] for k in ("inflight_mean", "inflight_p99", "inflight_max")}
        if side == "expected":
            fid.expected_span_s = r["span_ns"] / 1e9
        else:
            fid.replayed_span_s = r["span_ns"] / 1e9
    if fid.expected_span_s > 0:
        fid.stretch = fid.replayed_span_s / fid.expected_span_s - 1
    fid.window_s = window_s or rate_window(fid.expected_span_s, fid.expected)
    series = _rows(
        con, "fidelity_iops", {"te0": late["te0"], "tr0": late["tr0"], "window_ns": round(fid.window_s * 1e9)}
    )
    fid.iops_series = [(r["expected_iops"], r["replayed_iops"]) for r in series]
    errs = [abs(r - e) / e for e, r in fid.iops_series if e > 0]
    if errs:
        fid.iops_mape, fid.iops_max_error = sum(errs) / len(errs), max(errs)
        # over the windows with demand, as the MAPE: I/Os spilled past the demanded span are the
        # stretch's to judge, not counted twice here
        total = sum(e for e, _ in fid.iops_series if e > 0)
        fid.iops_wape = sum(abs(r - e) for e, r in fid.iops_series if e > 0) / total

    _judge(fid)
    return fid


def stretched(fid: Fidelity, share: float) -> bool:
    """The replay's span differs from the demanded one by more than `share` of it and the floor."""
    if fid.stretch is None:
        return False
    off_ns = abs(fid.stretch) * fid.expected_span_s * 1e9
    return off_ns > max(share * fid.expected_span_s * 1e9, STRETCH_FLOOR_NS)


def _judge(fid: Fidelity) -> None:
    if fid.missing or fid.extra:
        fid.reasons.append(f"{fid.missing} demanded I/Os missing, {fid.extra} extra")
    if fid.iops_wape is not None and fid.iops_wape > FAITHFUL_WAPE:
        fid.reasons.append(f"IOPS WAPE {100 * fid.iops_wape:.1f}% > {100 * FAITHFUL_WAPE:.0f}%")
    if stretched(fid, FAITHFUL_STRETCH):
        bound = f"±{100 * FAITHFUL_STRETCH:.0f}%"
        if FAITHFUL_STRETCH * fid.expected_span_s * 1e9 < STRETCH_FLOOR_NS:
            bound = f"±{STRETCH_FLOOR_NS / 1e6:g} ms"
        fid.reasons.append(f"duration stretch {100 * fid.stretch:+.1f}% beyond {bound}")
    fid.faithful = not fid.reasons
    if fid.abs_late_p50_us is None or fid.abs_late_p99_us is None:
        fid.timing = "drifting"
        return
    grown_ns = max(DRIFT_GROWTH_FLOOR_NS, DRIFT_GROWTH_SHARE * fid.expected_span_s * 1e9)
    accumulated = stretched(fid, PRECISE_STRETCH) or (
        (fid.late_growth_us or 0) * 1e3 > grown_ns
    )
    rate_held = fid.iops_wape is None or fid.iops_wape <= PRECISE_WAPE
    if accumulated:
        fid.timing = "drifting"
    elif (
        rate_held
        and fid.abs_late_p50_us <= PRECISE_LATE_P50_NS / 1e3
        and fid.abs_late_p99_us <= PRECISE_LATE_P99_NS / 1e3
    ):
        fid.timing = "precise"
    elif rate_held and fid.abs_late_p99_us <= ON_SCHEDULE_LATE_P99_NS / 1e3:
        fid.timing = "on schedule"
    else:
        fid.timing = "jittery"  # late now and then, but it caught up: calling it drifting would mislead
