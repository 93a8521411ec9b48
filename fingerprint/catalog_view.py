"""Terminal rendering of the catalog: a service's fingerprints and the drift between them."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fingerprint.catalog import Entry, TrendStep
from fingerprint.diff_view import human


def _num(v: float | None, fmt: str = ",.1f") -> str:
    return "-" if v is None else format(v, fmt)


def entries_table(entries: list[Entry], title: str) -> Table:
    t = Table(title=title)
    for col in (
        "#",
        "service",
        "taken (UTC)",
        "scope",
        "IOPS",
        "MB/s",
        "reads",
        "p99 µs",
        "flushes/s",
        "bound",
    ):
        t.add_column(col, justify="left" if col in ("service", "taken (UTC)", "scope", "bound") else "right")
    for e in entries:
        taken = e.taken_at.strftime("%Y-%m-%d %H:%M") + ("*" if e.taken_is_added_time else "")
        reads = "-" if e.read_share is None else f"{e.read_share:.0%}"
        t.add_row(
            str(e.id), e.service, taken, e.scope, _num(e.iops), _num(e.mbps, ",.2f"), reads,
            _num(e.p99_us), _num(e.flush_per_s), e.bound or "-",
        )  # fmt: skip
    if any(e.taken_is_added_time for e in entries):
        t.caption = "* the trace had no wall clock: the time it was added"
    return t


def render_trend(console: Console, service: str, entries: list[Entry], steps: list[TrendStep]) -> None:
    console.print(entries_table(entries, f"{service}: {len(entries)} fingerprint(s)"))
    if not steps:
        console.print("one fingerprint only: add the next quarter's to see drift")
    for s in steps:
        flagged = s.diff.flagged
        head = f"#{s.before.id} -> #{s.after.id} ({s.diff.scope}): {s.diff.verdict}"
        console.print(("[bold red]" if flagged else "[green]") + head)
        for c in flagged:
            change = (
                f"{c.rel_change:+.0%}"
                if c.rel_change is not None and not c.threshold_is_absolute
                else (f"{c.abs_change:+.3f}" if c.abs_change is not None else "new")
            )
            a, b = human(c.a, c.unit), human(c.b, c.unit)  # as `iofp diff` prints them
            console.print(f"    {c.kind:7} {c.metric}: {a} -> {b} ({change}, {c.direction})")
