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
    return f"{text} {unit}" if unit and not unit.startswith("/") else text + unit


def render(r: DiffResult, console: Console | None = None) -> None:
    console = console or Console()
    t = Table(title=f"fingerprint diff ({r.scope} scope): A -> B", title_justify="left")
    for col in ("metric", "kind", "A", "B", "change", "threshold", "flag"):
        t.add_column(col, justify="left" if col in ("metric", "kind", "flag") else "right")
    for c in r.changes:
        if c.a is None and c.b is None:
            continue
        change = "-" if c.rel_change is None else f"{c.rel_change:+.1%}"
        if c.threshold_is_absolute and c.abs_change is not None:
            change = f"{c.abs_change:+.3f}"
        thr = f"±{c.threshold:.2f}" if c.threshold_is_absolute else f"±{c.threshold:.0%}"
        flag = f"[bold red]{c.direction}[/bold red]" if c.flagged else ""
        t.add_row(c.metric, c.kind, human(c.a, c.unit), human(c.b, c.unit), change, thr, flag)
    console.print(t)
    for n in r.notes:
        console.print(f"note: {n}")
    console.print(f"[bold]{r.verdict}[/bold]")
