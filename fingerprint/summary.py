"""The terminal summary of a fingerprint: its scopes side by side, the window and how it was chosen,
the steady-state verdict (and by how much it missed), the baseline, the spikes biggest first, and the
bound. Every number carries its unit (in the row label or beside it); a ratio names both terms."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

from fingerprint import headline
from iofp import regimes, terminal
from iofp.fingerprint_doc import Burst, Fingerprint, Scope
from iofp.values import device_list, duration_text

SHOWN_SPIKES = 5


def _num(v: float | None, fmt: str = "{:,.0f}") -> str:
    return "-" if v is None else fmt.format(v)


def _pct(v: float | None) -> str:
    return "-" if v is None else f"{v:.1%}"


def _lats(s: Scope, op: str = "all", n: int = 3) -> str:
    lat = (s.latency or {}).get(op)
    if lat is None:
        return "-"
    return " / ".join(f"{v:,.0f}" for v in (lat.p50_us, lat.p99_us, lat.p99_9_us)[:n])


def _waits(s: Scope, which: str, n: int = 3) -> str:
    """The application's wait (its data calls) or the time before issue, p50/p99[/p99.9] µs."""
    lat = (getattr(s, which) or {}).get("all")
    if lat is None:
        return "-"
    return " / ".join(f"{v:,.0f}" for v in (lat.p50_us, lat.p99_us, lat.p99_9_us)[:n])


def _kib(v: float | None) -> str:
    return _num(None if v is None else v / 1024, "{:,.1f}")


def _inflight(s: Scope) -> str:
    return (
        "-" if s.inflight is None or s.inflight.mean is None else f"{s.inflight.mean:.1f} / {s.inflight.p99}"
    )


def _seconds(s: Scope) -> Burst | None:
    """The scope's per-second counts, or None for a scope within one second's bin (a 0.14 s trace's
    one bin is its every I/O, not a rate)."""
    b = s.burstiness["1s"]
    return b if b.bins >= 2 else None


def _dispersion(s: Scope) -> str:
    b = _seconds(s)
    return "-" if b is None else _num(b.index_of_dispersion, "{:,.1f}")


def _sync_calls(s: Scope) -> str:
    return _num(s.durability.commits_per_s, "{:,.1f}")


Getter = Callable[[Scope], str]

ROWS: list[tuple[str, Getter]] = [
    ("I/Os (r+w+discard)", lambda s: _num(s.ios)),
    ("IOPS (mean)", lambda s: _num(s.intensity.iops, "{:,.1f}")),
    ("MB/s (mean)", lambda s: _num(s.intensity.mbps, "{:,.2f}")),
    ("reads: I/Os / bytes", lambda s: f"{_pct(s.mix.read_share)} / {_pct(s.mix.read_share_bytes)}"),
    ("mean size (KiB)", lambda s: _kib(s.size.mean_bytes)),
    # per device: on a multi-device trace the shared traces' any-device share (JSON
    # sequential.share_any_device) counts a stream as broken whenever another device's request comes between
    ("sequential per dev", lambda s: _pct(s.sequential.share)),
    # per submitting process on its device: a WAL writer is a sequential stream whatever interleaves it
    ("sequential per pid", lambda s: _pct(s.sequential.share_per_process)),
    ("in-flight mean/p99", _inflight),
    ("flushes /s", lambda s: _num(s.intensity.flushes_per_s, "{:,.1f}")),
    ("flush+FUA /s", lambda s: _num(s.durability.flush_fua_per_s, "{:,.1f}")),
    ("sync calls /s", _sync_calls),
    # reads and writes apart, as iostat's r_await and w_await and fio's read and write sections
    ("read µs p50/99/99.9", lambda s: _lats(s, "read")),
    ("write µs p50/99/99.9", lambda s: _lats(s, "write")),
    ("flush µs p50/p99", lambda s: _lats(s, "flush", 2)),
    ("IOPS var/mean 1 s", _dispersion),
    ("footprint (MiB)", lambda s: _num(s.footprint and s.footprint.bytes / 2**20, "{:,.1f}")),
    ("hot 1% blocks' I/Os", lambda s: _pct(s.footprint and s.footprint.hot_1pct_io_share)),
    # spaced, "point-write/commit" (18 characters) wraps in a column of 11
    ("shape", lambda s: s.shape.name.replace("/", " / ")),
    # "bound by: fsync latency": the resource as words, which wrap in a narrow column where
    # "fsync-latency-bound" was cut to "fsync-latency-…"
    ("bound by", lambda s: headline.bound_by(s.bound)),
]  # fmt: skip
# Rows that repeat the row before them on every trace seen so far (a loop device has no FUA, and each
# fsync is one flush): shown only where they differ from it, else folded into its label.
SAME_AS_ABOVE = {"flush+FUA /s": None, "sync calls /s": "flushes = syncs /s"}
# What a row's figure means, said under the table when the row is shown.
DEFINED = {
    "IOPS var/mean 1 s": "IOPS var/mean 1 s: the variance of the I/Os per second over their mean (the "
    "index of dispersion): 1 for random arrivals at a steady rate, more the burstier",
    "sequential per pid": "sequential: requests starting where the previous one ended, on the device "
    "(per dev) or of the same process on it (per pid: a stream interleaved with others stays one)",
}
# Figures an import cannot hold: named once under the table rather than as rows of "-".
ABSENT = {
    "in-flight mean/p99": "in-flight", "flushes /s": "flushes", "sync calls /s": "sync calls",
    "read µs p50/99/99.9": "latency", "sequential per pid": "processes",
}  # fmt: skip


# The latency an application waited (its data calls: throttles and queues above the device
# included), and the time before issue (btt's Q2D), above the device's own: shown when the trace has
# them (a capture with syscalls; the queue time of any capture).
WAIT_ROWS: list[tuple[str, str, Callable[[Scope], str]]] = [
    ("app_latency", "app µs p50/99/99.9", lambda s: _waits(s, "app_latency")),
    ("queue_latency", "queue µs p50/p99", lambda s: _waits(s, "queue_latency", 2)),
]


def rows(fp: Fingerprint, scopes: list[Scope] | None = None) -> list[tuple[str, Getter]]:
    """ROWS as this trace shows them, over `scopes` (default every scope it has): with the busiest
    second and its time; the application's wait and the time before issue above the device's
    latency when the trace has them; rows no scope has a figure for left out (absent_rows names them); a row
    equal to the one above it in every scope folded into it; without latency the bound is the
    demand's alone (whether the device set the pace is unknown), the same for every column, so the
    row's label says so."""
    scopes = scopes or fp.scopes()
    out: list[tuple[str, Getter]] = []
    for label, get in ROWS:
        values = [get(s) for s in scopes]
        if all(v == "-" for v in values):
            continue
        if label in SAME_AS_ABOVE and out and values == [out[-1][1](s) for s in scopes]:
            if (merged := SAME_AS_ABOVE[label]) is not None:
                out[-1] = (merged, out[-1][1])
            continue
        if label == "read µs p50/99/99.9":  # the application's wait and the queue's, above the device's
            out += [(name, get) for field, name, get in WAIT_ROWS if getattr(fp.whole, field)]
        if label == "IOPS var/mean 1 s":
            out.append(("busiest 1 s (I/Os)", lambda s: headline.busiest(fp, s)))
        demand_only = label == "bound by" and fp.whole.bound.side == "demand-only"
        out.append(("bound by (demand)" if demand_only else label, get))
    return out


def absent_rows(fp: Fingerprint, scopes: list[Scope] | None = None) -> list[str]:
    """What the trace cannot say (an import has no latency, in-flight, flushes or processes)."""
    scopes = scopes or fp.scopes()
    gone = [label for label, get in ROWS if all(get(s) == "-" for s in scopes)]
    return [ABSENT[label] for label in gone if label in ABSENT]


def shown_scopes(fp: Fingerprint) -> list[Scope]:
    """The columns: the whole trace; its typical scope (Fingerprint.typical_scope); the spikes; and a
    --between span."""
    name = fp.typical_scope()
    if name == "baseline" and not fp.spike:
        name = "steady"  # without spikes the baseline is the whole trace again: show what steady there is
    middle = None if name == "whole" else getattr(fp, name)
    return [s for s in (fp.whole, middle, fp.spike, fp.between) if s is not None]


def span_text(seconds: float) -> str:
    """A trace's length: tenths of a second, and three digits below 10 s (TPC-C's 0.136 s read 0.1 s)."""
    if round(seconds, 1) >= 10:
        return f"{seconds:,.1f} s"
    if seconds >= 0.001:
        return f"{float(f'{seconds:.3g}'):g} s"
    return f"{seconds * 1e6:.3g} µs"


def window_line(fp: Fingerprint) -> str:
    reg, w = fp.regimes, fp.params.window_ns
    how = "--window" if fp.params.window_rule == "--window" else "the default rule"
    line = (
        f"window {duration_text(w)} ({how}): {reg.windows:,} windows, median "
        f"{reg.window_ios_median:,.0f} I/Os per window"
    )
    return line + (f"; {reg.sparse_hint}" if reg.sparse_hint else "")


def steady_line(fp: Fingerprint) -> str:
    st, reg = fp.regimes.steady, fp.regimes
    if st.met:
        return f"steady (SNIA PTS rule over 5-window blocks): {st.windows:,} of {reg.windows:,} windows"
    if st.closest_range_pct is None:
        return f"steady: none of {reg.windows:,} windows (too few, or no I/O, for a 5-window block)"
    at = headline.clock(fp).at(st.closest_start_s or 0.0)
    line = (
        f"steady: no 5-window block meets the SNIA rule (range <= 20%, slope <= 10% of the mean); the "
        f"closest, at {at}, has range {st.closest_range_pct:,.0f}% and slope {st.closest_slope_pct:,.0f}% "
        f"of its {st.closest_mean_iops:,.1f} IOPS"
    )
    if reg.window_ios_median < regimes.SNIA_NOISE_IOS:
        line += (
            f"; counting noise alone fails it below ~{regimes.SNIA_NOISE_IOS} I/Os per window "
            f"(median here {reg.window_ios_median:,.0f})"
        )
    return line


def baseline_line(fp: Fingerprint) -> str:
    b = fp.regimes.baseline
    return (
        f"baseline (the windows in no spike): {b.windows:,} of {fp.regimes.windows:,}, median "
        f"{b.median_iops:,.1f} IOPS and {b.median_mbps:,.2f} MB/s"
    )


def hot_line(fp: Fingerprint) -> str:
    """Where the hot threshold is, the rule that turns hot windows into spikes, and what became of
    the hot windows: so that a window above the threshold in no spike is explained, not a puzzle."""
    reg, t = fp.regimes, fp.regimes.thresholds
    line = (
        f"a window is hot above {t.hot_iops:,.1f} IOPS or {t.hot_mbps:,.2f} MB/s and past its counting "
        f"noise; a spike is hot windows at most {regimes.GAP_WINDOWS} apart, widened while neighbours are "
        f"above {t.edge_iops:,.1f} IOPS or {t.edge_mbps:,.2f} MB/s, kept when {regimes.SUSTAINED_WINDOWS}+ "
        f"windows are hot or its significance is {regimes.OUTSIZED_SIGNIFICANCE:g}+ (Li-Ma: standard "
        "deviations above the baseline)"
    )
    if reg.hot_windows is None or reg.hot_outside_spikes is None:
        return line
    if not reg.hot_windows:
        return line + "; no window is hot"
    hot = f"{reg.hot_windows:,} window{'s are' if reg.hot_windows > 1 else ' is'} hot"
    if not reg.hot_outside_spikes:
        return line + f"; {hot}, all in spikes"
    return line + (
        f"; {hot}, {reg.hot_outside_spikes:,} of them in no spike: lone hot windows (bursts too brief to "
        "name), neither sustained nor outsized"
    )


TRIPPED = {"iops": "IOPS", "mbps": "MB/s", "both": "both"}


def spike_table(fp: Fingerprint) -> Table:
    reg, c = fp.regimes, headline.clock(fp)
    t = Table(
        title=f"spikes: {reg.spikes_total:,}, biggest (most I/Os over the baseline) first",
        title_justify="left",
        box=None,
    )
    when = "from-to (s)" if c.first_ns is None else "from-to"
    for col in ("#", when, "peak IOPS", "base IOPS", "peak MB/s", "+I/Os", "of all", "hot by"):
        t.add_column(col, justify="left" if col in (when, "hot by") else "right")
    for sp in reg.spikes[:SHOWN_SPIKES]:
        t.add_row(
            str(sp.rank), c.short_span(sp.start_s, sp.end_s),
            f"{sp.peak_iops:,.1f}", f"{sp.baseline_iops:,.1f}", f"{sp.peak_mbps:,.2f}",
            f"{sp.excess_ios:+,.0f}", _pct(sp.io_share), TRIPPED[sp.tripped],
        )  # fmt: skip
    if reg.spikes_total > SHOWN_SPIKES:
        t.caption = f"... and {reg.spikes_total - SHOWN_SPIKES:,} smaller (all ranked in --json)"
        t.caption_justify = "left"
    return t


def title(fp: Fingerprint) -> str:
    prov = fp.provenance
    when = headline.started(fp)
    return f"{prov.source} · {device_list(prov.devices)} · {span_text(prov.duration_s)}" + (
        f" from {when}" if when else ""
    )


def table(fp: Fingerprint, scopes: list[Scope]) -> Table:
    t = Table(title=escape(title(fp)), title_justify="left")
    t.add_column("", no_wrap=True)
    for s in scopes:
        # 11: a shape's longest word ("point-write") whole; four scopes then fit 80 columns
        name = headline.scope_title(s, fp.regimes.spikes_total)
        t.add_column(f"{name}\n{s.windows:,} win", justify="right", min_width=11)
    for label, get in rows(fp, scopes):
        t.add_row(label, *(escape(get(s)) for s in scopes))
    return t


def notes(fp: Fingerprint, scopes: list[Scope]) -> list[str]:
    """Under the table: what the trace cannot say, and what its less common rows mean."""
    out = []
    if gone := absent_rows(fp, scopes):
        out.append(f"not in this trace ({fp.provenance.source}): {', '.join(gone)}")
    shown = {label for label, _ in rows(fp, scopes)}
    return out + [text for label, text in DEFINED.items() if label in shown]


def render(fp: Fingerprint, console: Console | None = None) -> None:
    """The summary: the biggest spike's answer first, then the table, each scope's verdict with its
    reason, the regimes and their rules, and the spikes."""
    console = console or terminal.console()
    scopes = shown_scopes(fp)
    if (first := headline.lead(fp)) is not None:
        console.print(f"[bold]{escape(first)}[/bold]")
    console.print(table(fp, scopes))
    for line in headline.verdict_lines(fp, scopes):
        console.print(escape(line))
    for line in (*notes(fp, scopes), window_line(fp), steady_line(fp), baseline_line(fp), hot_line(fp)):
        console.print(escape(line))
    if fp.regimes.spikes_total:
        console.print(spike_table(fp))
    else:
        console.print("spikes: none")
    prov = fp.provenance
    if prov.lost_events:
        console.print(f"[red]the capture lost {prov.lost_events:,} events[/red]: {escape(str(prov.loss))}")
