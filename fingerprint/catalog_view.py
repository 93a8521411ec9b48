"""Terminal rendering of the catalog: a service's fingerprints and the drift between them."""

from __future__ import annotations

from rich.console import Console
from rich.markup import escape
from rich.padding import Padding
from rich.table import Table
from rich.text import Text

from fingerprint.catalog import Entry, TrendStep
from fingerprint.diff import RULE
from fingerprint.diff_view import change_text, human, limit_text, slo_line
from fingerprint.headline import bound_words
from iofp import terminal


def _num(v: float | None, fmt: str = ",.1f") -> str:
    return "-" if v is None else format(v, fmt)


def entries_table(entries: list[Entry], title: str) -> Table:
    """One line per fingerprint of one service (the title names it), fitting 80 columns (the bound as
    words, wrapped where narrow: "fsync latency"). A service column left 3 characters at 80 for the
    name."""
    t = Table(title=title, title_justify="left", box=None, pad_edge=False, header_style="bold underline")
    cols = ("#", "taken (UTC)", "scope", "IOPS", "MB/s", "reads", "p99 µs", "flush/s", "bound by")
    for col in cols:
        left = col in ("taken (UTC)", "scope", "bound by")
        # the bound's words wrap ("fsync latency" was cut to "fsync-latenc"); numbers never do
        t.add_column(col, justify="left" if left else "right", no_wrap=col != "bound by", overflow="fold")
    for e in entries:
        taken = e.taken_at.strftime("%Y-%m-%d %H:%M") + ("*" if e.taken_is_added_time else "")
        reads = "-" if e.read_share is None else f"{e.read_share:.0%}"
        t.add_row(
            str(e.id), taken, e.scope, _num(e.iops, ",.0f"), _num(e.mbps, ",.2f"), reads,
            _num(e.p99_us), _num(e.flush_per_s, ",.0f"), _bound(e.bound),
        )  # fmt: skip
    if any(e.taken_is_added_time for e in entries):
        t.caption = "* the trace had no wall clock: the time it was added"
    return t


def _bound(verdict: str | None) -> str:
    """A bound as words that may wrap (anything but one hyphenated word, from a hand-edited or
    hostile document, is named unrecognised: never words that start a line)."""
    return "-" if verdict is None else bound_words(verdict)


def _service_title(service: str, entries: list[Entry]) -> str:
    return escape(f"{service}: {len(entries)} fingerprint(s)")


def render_list(console: Console, path: str, entries: list[Entry]) -> None:
    """The catalog's fingerprints, a table per service (in the order of each service's first)."""
    console.print(escape(f"fingerprints in {path}"), overflow="fold")
    by_service: dict[str, list[Entry]] = {}
    for e in entries:
        by_service.setdefault(e.service, []).append(e)
    if not by_service:
        console.print("none yet: iofp catalog add FP.json --service NAME")
    for service, group in by_service.items():
        console.print()
        console.print(entries_table(group, _service_title(service, group)))


def _indented(console: Console, text: str) -> None:
    """A line of a step's details, its continuation lines indented under it."""
    console.print(Padding(Text(terminal.inert(text)), (0, 0, 0, 4)))


def render_trend(console: Console, service: str, entries: list[Entry], steps: list[TrendStep]) -> None:
    console.print(entries_table(entries, _service_title(service, entries)))
    if not steps:
        console.print("one fingerprint only: add the next quarter's to see drift")
    for s in steps:
        d = s.diff
        head = f"#{s.before.id} -> #{s.after.id} ({d.scope}): {d.verdict}"
        console.print(("[bold red]" if d.flagged else "[green]") + escape(head))
        for other in d.scopes:  # the spikes, the --between spans
            if other is not d.like and other.flagged:
                _indented(console, f"{other.scope}: {other.verdict}")
        for change in d.device_changes:
            _indented(console, f"device changed: {change}")
        for w in d.warnings:  # what makes the step less than like for like, as `iofp diff` says it
            _indented(console, f"warning: {w}")
        for n in d.notes:
            _indented(console, f"note: {n}")
        if line := slo_line(d):
            _indented(console, line)
        for scope in d.scopes:
            for c in scope.flagged:
                _indented(
                    console,
                    f"{scope.scope} {c.metric}: {human(c.a)} -> {human(c.b)} "
                    f"({change_text(c)}, beyond {limit_text(c)}; {c.direction})",
                )
    if steps:
        console.print(f"limit: {RULE}")
