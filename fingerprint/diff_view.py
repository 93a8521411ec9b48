"""The terminal view of a fingerprint diff."""

from __future__ import annotations

from rich.console import Console
from rich.table import Table

from fingerprint.diff import DiffResult


def human(x: float | None, unit: str = "") -> str:
    """A metric's value as the diff and the catalog trend print it, with its unit: 4 significant
    digits below 1,000, whole numbers with thousands separators above (never 1e+03)."""
    if x is None:
        return "-"
    text = f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"
    return f"{text} {unit}" if unit else text


def render(r: DiffResult, console: Console | None = None) -> None:
    """The comparison as a table that fits 80 columns: each metric's unit in its name, the values bare."""
    console = console or Console()
    t = Table(
        title=f"fingerprint diff ({r.scope} scope): A -> B",
        title_justify="left",
        box=None,
        pad_edge=False,
        header_style="bold underline",
    )
    for col in ("metric", "kind", "A", "B", "change", "limit", "flag"):
        t.add_column(
            col, justify="left" if col in ("metric", "kind", "flag") else "right", no_wrap=col == "metric"
        )
    for c in r.changes:
        if c.a is None and c.b is None:
            continue
        change = "-" if c.rel_change is None else f"{c.rel_change:+.1%}"
        if c.threshold_is_absolute and c.abs_change is not None:
            change = f"{c.abs_change:+.3f}"
        thr = f"±{c.threshold:.2f}" if c.threshold_is_absolute else f"±{c.threshold:.0%}"
        flag = f"[bold red]{c.direction}[/bold red]" if c.flagged else ""
        name = f"{c.metric} ({c.unit})" if c.unit else c.metric
        t.add_row(name, c.kind, human(c.a), human(c.b), change, thr, flag)
    console.print(t)
    for n in r.notes:
        console.print(f"note: {n}")
    console.print(f"[bold]{r.verdict}[/bold]")
