"""The terminal view of a fingerprint diff: who A and B are, what changed under them, and each
regime's table, in 80 columns."""

from __future__ import annotations

import textwrap

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fingerprint.diff import Change, DiffResult, ScopeDiff, Side
from iofp import terminal


def human(x: float | None, unit: str = "") -> str:
    """A metric's value as the diff and the catalog trend print it, with its unit: 4 significant
    digits below 1,000, whole numbers with thousands separators above (never 1e+03)."""
    if x is None:
        return "-"
    text = f"{x:,.4g}" if abs(x) < 1000 else f"{x:,.0f}"
    return f"{text} {unit}" if unit else text


def change_text(c: Change) -> str:
    """B against A: a share's difference in points, anything else relative (B / A - 1)."""
    if c.absolute and c.abs_change is not None:
        return f"{c.abs_change * 100:+.1f} pt"
    return "-" if c.rel_change is None else f"{c.rel_change:+.1%}"


def limit_text(c: Change) -> str:
    """The move a figure must exceed: a share's in points, a latency's as a ratio either way (x2: a
    doubling or a halving), anything else in its unit."""
    if c.limit is None:
        return "-"
    if c.limit_ratio is not None:
        return f"x{c.limit_ratio:,.3g}" if c.limit_ratio < 1000 else "x>999"
    return f"±{c.limit * 100:.1f} pt" if c.absolute else "±" + human(c.limit)


SPIKES = "    "  # the indent of a side's spike line, the biggest spike's answer (fingerprint/headline.py)


def side_lines(label: str, s: Side) -> list[str]:
    when = f"captured {s.captured_utc}" if s.captured_utc else f"{s.source or 'unknown'}, no wall clock"
    span = [f"   --between {s.between}"] if s.between else []
    return [f"{label}  {s.name}", f"   {s.service or 'no service label'}, {when}",
            *(f"   {d}" for d in s.devices), f"{SPIKES}{s.spikes}", *span]  # fmt: skip


def scope_table(d: ScopeDiff) -> Table:
    wa, wb = d.window_s
    win = f"{wa:g} s" if wa == wb else f"{wa:g} s / {wb:g} s"
    t = Table(
        title=f"{d.scope}: A {d.windows_a} windows, B {d.windows_b} windows of {win}",
        title_justify="left",
        box=None,
        pad_edge=False,
        header_style="bold underline",
    )
    for col in ("metric", "A", "B", "B vs A", "limit", "flag"):
        t.add_column(col, justify="left" if col in ("metric", "flag") else "right", no_wrap=True)
    for c in d.changes:
        if c.a is None and c.b is None:
            continue
        fa = f"{c.a:.1%}" if c.absolute and c.a is not None else human(c.a)
        fb = f"{c.b:.1%}" if c.absolute and c.b is not None else human(c.b)
        flag = f"[bold red]{c.direction}[/bold red]" if c.flagged else ""
        t.add_row(escape(c.metric), fa, fb, change_text(c), limit_text(c), flag)
    return t


def render(r: DiffResult, console: Console | None = None) -> None:
    """The comparison, fitting 80 columns: both sides named, device changes, warnings, each regime's
    table (values in the unit the metric names), the SLO and the verdict."""
    console = console or terminal.console()
    for side in (side_lines("A", r.a), side_lines("B", r.b)):
        for line in side:
            if line.startswith(SPIKES):  # iofp's own words: wrapped under their indent, not under "A"
                text = textwrap.fill(line.lstrip(" "), console.width, initial_indent=SPIKES,
                                     subsequent_indent=SPIKES, break_on_hyphens=False)  # fmt: skip
                console.print(escape(text), soft_wrap=True)
            else:
                console.print(escape(line), overflow="fold")
    for d in r.device_changes:
        console.print(f"[bold]device changed[/bold]: {escape(d)}")
    for w in r.warnings:
        console.print(f"[yellow]warning[/yellow]: {escape(w)}")
    for d in r.scopes:
        console.print()
        console.print(scope_table(d))
    console.print()
    console.print(f"limit: {r.rule}; '-': shown, not judged")
    for n in r.notes:
        console.print(f"note: {escape(n)}")
    if line := slo_line(r):
        console.print(escape(line))
    for d in r.scopes:
        console.print(f"[bold]{d.scope}: {escape(d.verdict)}[/bold]{escape(_resolution(d))}")
    if r.device_changes:
        console.print("[bold]and the device itself changed[/bold] (its provenance, above)")
    console.print(_exit_line(r))


def _resolution(d: ScopeDiff) -> str:
    """What a scope's "no change" rests on: the typical latency change its windows resolve."""
    if d.flagged or d.inconclusive or d.resolves is None:
        return ""
    return f" (typical latency resolved within ±{d.resolves:.0%})"


def slo_line(r: DiffResult) -> str | None:
    """Whether A and B meet the --slo, and why each that misses it does (None without --slo)."""
    if r.slo is None:
        return None
    parts = [f"{who} " + ("meets it" if not f else "misses it: " + "; ".join(f))
             for who, f in (("A", r.slo_a), ("B", r.slo_b))]  # fmt: skip
    return f"SLO '{r.slo}': " + "; ".join(parts)


def _exit_line(r: DiffResult) -> str:
    n = len(r.flagged)
    if not n:
        return "no drift flagged (exit 0)"
    if r.host_busy is not None:
        return f"{n} change(s) beyond the noise, but a host was busy: inconclusive (exit 0)"
    if r.slo is not None and not r.matters:
        return f"{n} change(s) flagged, but B meets the SLO (exit 0)"
    return f"{n} change(s) flagged (exit 1)"
