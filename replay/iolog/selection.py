"""Which part of a trace a replay uses: one device or all, a time window or a regime, reads only.

A selection is always one contiguous span of the trace's clock, so replaying it keeps every time gap
between the I/Os it contains. `--regime` picks that span from the windows the fingerprint calls
steady, baseline or spike: both stages classify the same per-window series with the one rule of
iofp/regimes.py (windows of --window, or of the same default rule, from the first I/O of the
selected device, or of all), so with the same --window and --device

- spike:    the fingerprint's rank-1 spike (the most I/Os over the baseline), kept verbatim;
- steady:   the longest run of steady windows (earliest on a tie);
- baseline: the longest run of windows in no spike (earliest on a tie): a sparse production trace
  with no steady state still has one.

Without --device, the I/Os of every device in the trace go to the one replay target, in time order
(offsets of different devices may then overlap on the target).
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

import duckdb
import numpy as np
import pyarrow as pa

from iofp import duck, regimes
from iofp.contract import IO_SCHEMA, IO_TABLE, OPS, SYNC_TABLE, Trace
from iofp.errors import BadInput
from iofp.sqlfiles import load_sql
from iofp.values import duration_text
from iofp.windows import Between, check_between_s, check_window_ns

SQL = "replay.iolog.sql"
REGIMES = regimes.REGIME_NAMES
_ALL = (-(2**63), 2**63 - 1)


@dataclass(frozen=True)
class Selection:
    device: str | None = None
    between: Between | None = None  # --between as given (seconds or times of day), half-open
    regime: str | None = None  # "steady" | "spike" | "baseline"
    reads_only: bool = False
    # The width of --regime's windows; None: the fingerprint's default rule, so both name the same windows.
    window_ns: int | None = None

    def check(self) -> None:
        if self.between is not None and self.regime is not None:
            raise BadInput("--between and --regime both choose the time span; pass only one of them")
        if self.between is not None and self.between.seconds is not None:
            check_between_s(*self.between.seconds)
        if self.regime is not None and self.regime not in REGIMES:
            raise BadInput(f"--regime {self.regime}: choose one of {', '.join(REGIMES)}")
        if self.window_ns is not None:
            check_window_ns(self.window_ns)  # the fingerprint's limits; the count once the span is known

    def to_dict(self) -> dict[str, Any]:
        """As a result records it: --between as seconds, or as the times of day it was given."""
        d = asdict(self)
        if self.between is not None:
            d["between"] = list(self.between.seconds or (self.between.t1, self.between.t2))
        return d


@dataclass
class SelectionStats:
    """The resolved span and what is in it (after --reads-only)."""

    t_lo_ns: int
    t_hi_ns: int
    rows: int
    first_ns: int | None
    last_ns: int | None
    max_end: int
    max_size: int
    peak_inflight: int | None
    reads: int
    writes: int
    discards: int
    flushes: int
    bytes: int
    devices: list[str] = field(default_factory=list)
    how: str = "whole trace"

    @property
    def writes_anything(self) -> bool:
        return self.writes + self.discards + self.flushes > 0

    @property
    def duration_ns(self) -> int:
        return 0 if self.first_ns is None or self.last_ns is None else self.last_ns - self.first_ns

    def to_dict(self) -> dict[str, Any]:
        d = asdict(self)
        for k in ("t_lo_ns", "t_hi_ns"):  # "unbounded" reads better than int64 limits
            if d[k] in _ALL:
                d[k] = None
        return d


def connect(trace: Trace) -> duckdb.DuckDBPyConnection:
    """A DuckDB connection with the trace's io table as view `io` (plus file order, for stable ties)
    and its sync table as view `sync` (empty when the trace has none)."""
    con = duck.connect()
    if trace.has(IO_TABLE):
        rel = con.read_parquet(duck.literal(trace.files[IO_TABLE]), filename=True, file_row_number=True)
    else:
        empty = con.from_arrow(IO_SCHEMA.empty_table())
        rel = empty.project("*, '' AS filename, 0::BIGINT AS file_row_number")
    rel.create_view("io")
    trace.relation(con, SYNC_TABLE).create_view("sync")
    return con


def trace_devices(con: duckdb.DuckDBPyConnection) -> list[str]:
    return [r["device"] for r in duck.query(con, SQL, "trace_devices")]


def span_params(sel: Selection, stats: SelectionStats) -> dict[str, Any]:
    """The resolved selection as the bound parameters of every replay query over it."""
    return {
        "device": sel.device,
        "t_lo_ns": stats.t_lo_ns,
        "t_hi_ns": stats.t_hi_ns,
        "reads_only": sel.reads_only,
    }


def resolve(con: duckdb.DuckDBPyConnection, trace: Trace, sel: Selection) -> SelectionStats:
    """Turn the user's selection into a span of the trace clock and describe what it holds."""
    sel.check()
    if sel.device is not None:
        devices = trace_devices(con)
        if sel.device not in devices:
            raise BadInput(
                f"{trace.root}: no device {sel.device!r} in the trace "
                f"(it has: {', '.join(devices) or 'none'})"
            )
    how = "whole trace"
    t_lo, t_hi = _ALL
    if sel.between is not None:
        t_lo, t_hi = sel.between.span_ns(trace.meta.capture_start_ns, trace.meta.source)
        a, b = sel.between.seconds or (t_lo / 1e9, t_hi / 1e9)
        how = f"between {a:g} s and {b:g} s"
        if sel.between.seconds is None:  # a wall-clock span: the times as given, then where they fall
            how = f"between {sel.between.t1} and {sel.between.t2} ({a:,.3f} s to {b:,.3f} s)"
    elif sel.regime is not None:
        t_lo, t_hi, how = _regime_span(con, trace, sel)
    params = {"device": sel.device, "t_lo_ns": t_lo, "t_hi_ns": t_hi, "reads_only": sel.reads_only}
    [row] = duck.query(con, SQL, "selection_stats", params)
    stats = SelectionStats(t_lo_ns=t_lo, t_hi_ns=t_hi, how=how, **row)
    if stats.rows == 0:
        whole = params | {"t_lo_ns": _ALL[0], "t_hi_ns": _ALL[1]}
        if sel.reads_only and not duck.query(con, SQL, "selection_stats", whole)[0]["rows"]:
            # widening cannot help: the trace (or its --device) has no reads at all
            on = f" on {sel.device}" if sel.device else ""
            raise BadInput(f"{trace.root}: the trace holds no reads{on}; drop --reads-only")
        what = "reads " if sel.reads_only else "I/Os "
        raise BadInput(f"{trace.root}: the selection ({how}) holds no {what}to replay; widen it")
    return stats


def _regime_span(con: duckdb.DuckDBPyConnection, trace: Trace, sel: Selection) -> tuple[int, int, str]:
    """The span --regime selects, from the fingerprint's own rule (iofp/regimes.py) on the same series."""
    series = regimes.series(con, sel.window_ns, sel.device)
    reg = regimes.classify(series)
    window = duration_text(series.window_ns)
    run = reg.run(sel.regime or "")
    if run is None:
        other = "--regime baseline (the longest stretch with no spike), " if sel.regime == "steady" else ""
        raise BadInput(
            f"{trace.root}: no {sel.regime} windows among its {series.windows} windows of {window}; "
            f"pass {other}another --window, or --between T1 T2"
        )
    first, last = run
    t_lo = series.t0_ns + first * series.window_ns
    t_hi = series.t0_ns + (last + 1) * series.window_ns
    # The window numbers are the fingerprint's at the same width, so the width goes with them.
    what = "spike #1 (the biggest):" if sel.regime == "spike" else f"{sel.regime}"
    how = f"{what} windows {first}-{last} of {window} ({t_lo / 1e9:.3f} s to {t_hi / 1e9:.3f} s)"
    return t_lo, t_hi, how


class NotInIssueOrder(Exception):
    """The trace's files are not sorted by ts_ns (a capture writes rows as requests complete)."""


def file_order_batches(trace: Trace, sel: Selection, stats: SelectionStats):
    """Stream the selection straight from the files, raising NotInIssueOrder at the first row out of order.

    Imported traces are already in issue order; reading them this way needs no sort and constant memory.
    """
    last = -(2**63)
    cols = ["ts_ns", "device", "offset", "size", "op", "inflight", "lat_ns", "pid"]
    for b in trace.batches(IO_TABLE, columns=cols):
        ts = b.column("ts_ns").to_numpy(zero_copy_only=False)
        keep = (ts >= stats.t_lo_ns) & (ts < stats.t_hi_ns)
        if sel.device is not None:
            keep &= _dict_codes(b.column("device"), [sel.device]) == 0
        if not keep.any():
            continue
        idx = np.flatnonzero(keep)
        kts = ts[idx]
        if kts[0] < last or (len(kts) > 1 and (np.diff(kts) < 0).any()):
            raise NotInIssueOrder
        last = int(kts[-1])
        yield pa.record_batch(
            {
                "ts_ns": pa.array(kts),
                "offset": b.column("offset").take(idx),
                "size": b.column("size").take(idx),
                "opc": pa.array(_dict_codes(b.column("op"), list(OPS))[idx].astype(np.int8)),
                "inflight": b.column("inflight").take(idx),
                "lat_ns": b.column("lat_ns").take(idx),
                "pid": b.column("pid").take(idx),
                "commit": pa.array(np.zeros(len(idx), dtype=bool)),
            }
        )


def _dict_codes(col: pa.Array, names: list[str]) -> np.ndarray:
    """Index of each value in `names` (-1 if absent), for a dictionary or plain string column."""
    if not pa.types.is_dictionary(col.type):
        col = col.dictionary_encode()
    lut = np.array([names.index(v) if v in names else -1 for v in col.dictionary.to_pylist()] or [-1])
    return lut[col.indices.to_numpy(zero_copy_only=False)]


def ordered_batches(con: duckdb.DuckDBPyConnection, params: dict[str, Any], rows: int = 1 << 18):
    """Stream the selection's rows (sql/selected_io.sql) in replay order as Arrow record batches."""
    yield from con.sql(load_sql(SQL, "selected_io"), params=params).to_arrow_reader(rows)
