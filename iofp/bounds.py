"""How much of a trace iofp reads at most, checked from its files' footers before any work.

A trace's rows and its span decide what every stage spends: the fingerprint's sorts (DuckDB spills
what does not fit), its per-window series (one row per window from the first I/O to the last), a
replay's schedule (fio waits out the gaps). A trace from elsewhere can declare anything: a 44 MB
Parquet file of 1e9 identical rows spilled 10 GB in 4 minutes, and six lines of a fio iolog 80 years
apart made the fingerprint, the report and the replay grow until the OOM killer ended them (and
would have had fio wait 80 years). So a trace is refused, in one line naming it, when it holds more
than MAX_ROWS rows or spans more than MAX_SPAN (its first I/O to its last, and its capture window);
both are far above what a capture or an import of a real workload makes, and both can be raised for
a trace that truly is larger: $IOFP_MAX_ROWS (a number) and $IOFP_MAX_SPAN (a duration: 90d, 2000h).

Imports no stage.
"""

from __future__ import annotations

import os

from iofp.errors import BadInput
from iofp.values import parse_duration_ns

MAX_ROWS = 500_000_000  # a day of 5,800 IOPS; ~10 GB of zstd Parquet
MAX_SPAN_NS = 31 * 24 * 3600 * 10**9  # a month: the longest recording a review compares


def max_rows() -> int:
    text = os.environ.get("IOFP_MAX_ROWS")
    if text is None:
        return MAX_ROWS
    try:
        n = int(text.replace("_", "").replace(",", ""))
    except ValueError:
        raise BadInput(f"$IOFP_MAX_ROWS {text!r} is not a number of rows, e.g. 2000000000") from None
    if n < 1:
        raise BadInput(f"$IOFP_MAX_ROWS {text!r}: give at least 1")
    return n


def max_span_ns() -> int:
    text = os.environ.get("IOFP_MAX_SPAN")
    return MAX_SPAN_NS if text is None else parse_duration_ns(_days(text), "$IOFP_MAX_SPAN")


def _days(text: str) -> str:
    """`90d` as hours (the duration grammar stops at hours)."""
    if text.endswith("d") and text[:-1].replace(".", "", 1).isdigit():
        return f"{float(text[:-1]) * 24:g}h"
    return text


def check_rows(where: str, rows: int) -> None:
    most = max_rows()
    if rows > most:
        raise BadInput(f"{where}: {rows:,} rows, more than iofp reads of a trace ({most:,}); select a part "
                       "of it when you capture or import it, or raise $IOFP_MAX_ROWS")  # fmt: skip


def check_span(where: str, span_ns: int, what: str = "its first I/O to its last") -> None:
    most = max_span_ns()
    if span_ns > most:
        raise BadInput(f"{where}: {_human(span_ns)} from {what}, longer than iofp reads of a trace "
                       f"({_human(most)}); its timestamps are wrong, or raise $IOFP_MAX_SPAN")  # fmt: skip


def _human(ns: int) -> str:
    s = ns / 1e9
    if s >= 2 * 365 * 86400:
        return f"{s / (365.25 * 86400):,.0f} years"
    if s >= 2 * 86400:
        return f"{s / 86400:,.1f} days"
    return f"{s / 3600:,.1f} h"
