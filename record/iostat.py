"""`iofp iostat DIR`: the recorder's per-second summary as `iostat -x` shows a device, for any span.

Per step (1 s up to an hour, chosen so that a span fits a screen, or `--every`) and device: r/s, w/s,
f/s (flush requests), rMB/s, wMB/s, r_await, w_await, f_await (mean latencies, ms, exact), aqu-sz
(the requests' time in flight per second of the step: iostat's average queue size), c/s and the
commits' latency (the sync calls), and p99 / p99.9 per op from the histograms merged over the step,
within histogram.ERROR (0.78%) of the exact nearest-rank percentile. Rates are per second the
recorder was running in the step; a step it was not running at all is not shown.
"""

from __future__ import annotations

import time
from dataclasses import dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from iofp.duck import connect, query
from iofp.errors import BadInput
from record import histogram
from record.summary import SUMMARY, read_summary

STEPS_S = (1, 5, 10, 30, 60, 300, 900, 3600)
MAX_ROWS = 60
OPS_SHOWN = {"read": "r", "write": "w", "flush": "f", "discard": "d", "commit": "c"}
LATENCY_COLUMNS = (
    *("r_await_ns", "r_p99_ns", "r_p99.9_ns"),
    *("w_await_ns", "w_p99_ns", "w_p99.9_ns"),
    *("f_await_ns", "c_p99_ns"),
)


@dataclass
class Iostat:
    root: Path
    lo_s: int
    hi_s: int
    step_s: int
    rows: list[dict[str, Any]] = field(default_factory=list)  # one per step and device
    error: float = histogram.ERROR

    def to_dict(self) -> dict[str, Any]:
        return {"root": str(self.root), "lo_s": self.lo_s, "hi_s": self.hi_s, "step_s": self.step_s,
                "percentile_error": self.error, "rows": self.rows}  # fmt: skip


def parse_time(text: str, now: datetime, flag: str = "--between") -> int:
    """HH:MM[:SS] (the latest such time not after now: 14:30 at 09:00 is yesterday's) or
    YYYY-MM-DDTHH:MM[:SS], local time -> Unix seconds."""
    for fmt in ("%Y-%m-%dT%H:%M:%S", "%Y-%m-%dT%H:%M", "%Y-%m-%d %H:%M:%S", "%Y-%m-%d %H:%M"):
        try:
            return int(datetime.strptime(text, fmt).timestamp())
        except ValueError:
            pass
    for fmt in ("%H:%M:%S", "%H:%M"):
        try:
            tod = datetime.strptime(text, fmt).time()
        except ValueError:
            continue
        at = datetime.combine(now.date(), tod)
        return int((at if at <= now else at - timedelta(days=1)).timestamp())
    raise BadInput(f"{flag} {text!r}: use HH:MM[:SS] or YYYY-MM-DDTHH:MM[:SS] (local time), e.g. 14:30")


def iostat(root: Path, between: tuple[str, str] | None = None, every_s: int | None = None,
           device: str | None = None, *, whole: bool = False, rows: int = MAX_ROWS) -> Iostat:  # fmt: skip
    """The summary of the recorder at `root` over `between` (default: the last 10 minutes recorded,
    or with `whole` all of it), in steps that make about `rows` rows."""
    root = Path(root)
    if not (root / SUMMARY).is_dir():
        raise BadInput(f"{root}: no recorder summary here (no {SUMMARY}/); pass the -o of iofp record")
    tbl = read_summary(root)
    if tbl.num_rows == 0:
        raise BadInput(f"{root}: the recorder has not finished a second yet; try again in a second")
    first, last = tbl["t"][0].as_py(), tbl["t"][-1].as_py() + 1
    if between is None:
        lo, hi = (first if whole else max(first, last - 600)), last
    else:
        now = datetime.now()
        lo, hi = parse_time(between[0], now), parse_time(between[1], now)
        if hi <= lo:
            hi += 86400 if between[1].count("-") == 0 else 0  # 23:50 00:10: across midnight
        if hi <= lo:
            raise BadInput(f"--between {between[0]} {between[1]}: the end must come after the start")
    step = every_s or next((s for s in STEPS_S if (hi - lo) / s <= rows), STEPS_S[-1])
    con = connect()
    try:
        con.register("summary", tbl)
        raw = query(con, "record.sql", "iostat", {"lo": lo, "hi": hi, "step": step})
    finally:
        con.close()
    rows = _pivot(raw, device)
    if between is not None and not raw:  # a span the recorder did not see: say what it did see
        raise BadInput(f"--between {between[0]} {between[1]}: nothing recorded from {_when(lo)} to "
                       f"{_when(hi)}; {root} holds {_when(first)} to {_when(last)} (local time)")  # fmt: skip
    if device is not None and not rows:
        seen = sorted(set(tbl["device"].to_pylist()) - {"", "*"})
        raise BadInput(f"--device {device}: not recorded in {root}; recorded: {', '.join(seen) or 'none'}")
    return Iostat(root, lo, hi, step, rows)


def _when(s: int) -> str:
    return time.strftime("%Y-%m-%d %H:%M:%S", time.localtime(s))


def _pivot(raw: list[dict[str, Any]], device: str | None) -> list[dict[str, Any]]:
    """One row per step and device: rates, mean latencies, percentiles (ns). A step the recorder
    covered without I/O on a device is a row of zeros."""
    covered = {r["k"]: r["seconds"] for r in raw}
    devices = {r["device"] for r in raw if r["device"] is not None and r["op"] in OPS_SHOWN}
    if device is not None:
        devices &= {device, "*"}
    zero = {f"{x}_{rate}": 0.0 for x in OPS_SHOWN.values() for rate in ("per_s", "mb_per_s")}
    out = {(k, d): {"t": k, "device": d, "seconds": n, "in_flight_ns": 0, "inflight_max": 0, **zero}
           for k, n in covered.items() for d in devices}  # fmt: skip
    for r in raw:
        row = out.get((r["k"], r["device"]))
        if row is None:
            continue
        if r["op"] == "lost":
            row["lost"] = int(r["n"])
        elif r["op"] in OPS_SHOWN:
            _add_op(row, r)
    for row in out.values():
        row["aqu_sz"] = row.pop("in_flight_ns") / (row["seconds"] * 1e9)
    return [out[k] for k in sorted(out)]


def _add_op(row: dict[str, Any], r: dict[str, Any]) -> None:
    x, secs = OPS_SHOWN[r["op"]], r["seconds"]
    row[f"{x}_per_s"] = r["n"] / secs
    row[f"{x}_mb_per_s"] = r["bytes"] / secs / 1e6
    row[f"{x}_await_ns"] = r["lat_sum_ns"] / r["timed"] if r["timed"] else None
    for p, col in (("p50", "p50_bin"), ("p99", "p99_bin"), ("p99.9", "p999_bin")):
        row[f"{x}_{p}_ns"] = float(histogram.midpoint(r[col])) if r[col] is not None else None
    if r["op"] != "commit":
        row["in_flight_ns"] += r["lat_sum_ns"]
        row["inflight_max"] = max(row["inflight_max"], r["inflight_max"] or 0)


def _ms(ns: float | None) -> str:
    return "-" if ns is None else f"{ns / 1e6:.3f}" if ns < 1e8 else f"{ns / 1e6:,.0f}"


def _n(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}" if v >= 100 else f"{v:.1f}"


def render_iostat(s: Iostat) -> list[str]:
    """The two tables at 80 columns: rates, then latencies (ms)."""
    clock = "%H:%M:%S" if s.hi_s - s.lo_s <= 86400 else "%m-%d %H:%M"
    lo, hi = time.localtime(s.lo_s), time.localtime(s.hi_s)
    span = f"{time.strftime('%Y-%m-%d %H:%M:%S', lo)} to {time.strftime('%H:%M:%S', hi)}"
    lines = [f"{span}, per {s.step_s}s; percentiles within {s.error:.2%} (histogram)"]
    for dev in sorted({r["device"] for r in s.rows}):
        rows = [r for r in s.rows if r["device"] == dev]
        lines += ["", f"device {dev}" if dev != "*" else "all devices (sync calls, losses)"]
        lines.append(f"{'time':<9}{'r/s':>8}{'w/s':>8}{'f/s':>7}{'rMB/s':>8}{'wMB/s':>8}{'aqu-sz':>7}"
                     f"{'c/s':>7}{'lost':>6}")  # fmt: skip
        for r in rows:
            lines.append(f"{time.strftime(clock, time.localtime(r['t'])):<9}{_n(r.get('r_per_s')):>8}"
                         f"{_n(r.get('w_per_s')):>8}{_n(r.get('f_per_s')):>7}{_n(r.get('r_mb_per_s')):>8}"
                         f"{_n(r.get('w_mb_per_s')):>8}{r['aqu_sz']:>7.2f}{_n(r.get('c_per_s')):>7}"
                         f"{r.get('lost', 0):>6}")  # fmt: skip
        lines.append(f"{'ms':<9}{'r_await':>8}{'r_p99':>8}{'r_p99.9':>8}{'w_await':>8}{'w_p99':>8}"
                     f"{'w_p99.9':>8}{'f_await':>8}{'c_p99':>8}")  # fmt: skip
        for r in rows:
            when = time.strftime(clock, time.localtime(r["t"]))
            lines.append(f"{when:<9}" + "".join(f"{_ms(r.get(k)):>8}" for k in LATENCY_COLUMNS))
    return lines
