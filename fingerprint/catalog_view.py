"""Terminal rendering of the catalog: a service's fingerprints and the drift between them."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fingerprint.catalog import Entry, TrendStep
from fingerprint.diff import RULE
from fingerprint.diff_view import change_text, human


def _num(v: float | None, fmt: str = ",.1f") -> str:
    return "-" if v is None else format(v, fmt)


def entries_table(entries: list[Entry], title: str) -> Table:
    """One line per fingerprint, fitting 80 columns (the bound's first word: IOPS-, MB/s-, fsync-)."""
    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold underline")
    cols = ("#", "service", "taken (UTC)", "scope", "IOPS", "MB/s", "reads", "p99 µs", "flush/s", "bound")
    for col in cols:
        left = col in ("service", "taken (UTC)", "scope", "bound")
        t.add_column(col, justify="left" if left else "right", no_wrap=col != "service", overflow="fold")
    for e in entries:
        taken = e.taken_at.strftime("%Y-%m-%d %H:%M") + ("*" if e.taken_is_added_time else "")
        reads = "-" if e.read_share is None else f"{e.read_share:.0%}"
        t.add_row(
            str(e.id), e.service, taken, e.scope, _num(e.iops, ",.0f"), _num(e.mbps, ",.2f"), reads,
            _num(e.p99_us), _num(e.flush_per_s, ",.0f"), (e.bound or "-").removesuffix("-bound"),
        )  # fmt: skip
    if any(e.taken_is_added_time for e in entries):
        t.caption = "* the trace had no wall clock: the time it was added"
    return t


def render_trend(console: Console, service: str, entries: list[Entry], steps: list[TrendStep]) -> None:
    console.print(entries_table(entries, f"{service}: {len(entries)} fingerprint(s)"))
    if not steps:
        console.print("one fingerprint only: add the next quarter's to see drift")
    for s in steps:
        d = s.diff
        head = f"#{s.before.id} -> #{s.after.id} ({d.scope}): {d.verdict}"
        console.print(("[bold red]" if d.flagged else "[green]") + escape(head))
        if d.spike is not None and d.spike.flagged:
            console.print(f"    spike: {escape(d.spike.verdict)}")
        for change in d.device_changes:
            console.print(f"    device changed: {escape(change)}")
        for scope in (d.like, d.spike):
            for c in scope.flagged if scope else []:
                limit = human(c.limit) if not c.absolute else f"{(c.limit or 0) * 100:.1f} pt"
                console.print(
                    f"    {scope.scope} {escape(c.metric)}: {human(c.a)} -> {human(c.b)} "
                    f"({change_text(c)}, beyond ±{limit}; {c.direction})"
                )
    if steps:
        console.print(f"limit: {RULE}")
