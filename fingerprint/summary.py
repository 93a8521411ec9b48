"""The terminal summary of a fingerprint: its scopes side by side, the window and how it was chosen,
the steady-state verdict (and by how much it missed), the baseline, the spikes biggest first, and the
bound. Every number carries its unit (in the row label or beside it); a ratio names both terms."""

from __future__ import annotations

from collections.abc import Callable

from rich.console import Console
from rich.markup import escape
from rich.table import Table

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


def _burst(s: Scope) -> str:
    """The busiest second's I/Os over the mean second's: both terms of the peak-to-mean ratio."""
    b = _seconds(s)
    return "-" if b is None else f"{_num(b.peak_ios)} / {_num(b.mean_ios)}"


def _dispersion(s: Scope) -> str:
    b = _seconds(s)
    return "-" if b is None else _num(b.index_of_dispersion, "{:.1f}")


ROWS: list[tuple[str, Callable[[Scope], str]]] = [
    ("I/Os (r+w+discard)", lambda s: _num(s.ios)),
    ("IOPS (mean)", lambda s: _num(s.intensity.iops, "{:,.1f}")),
    ("MB/s (mean)", lambda s: _num(s.intensity.mbps, "{:,.2f}")),
    ("reads: I/Os / bytes", lambda s: f"{_pct(s.mix.read_share)} / {_pct(s.mix.read_share_bytes)}"),
    ("mean size (KiB)", lambda s: _kib(s.size.mean_bytes)),
    # per device: on a multi-device trace the shared traces' any-device share (JSON
    # sequential.share_any_device) counts a stream as broken whenever another device's request comes between
    ("sequential (per dev)", lambda s: _pct(s.sequential.share)),
    ("in-flight mean/p99", _inflight),
    ("flushes /s", lambda s: _num(s.intensity.flushes_per_s, "{:,.1f}")),
    ("flush+FUA /s", lambda s: _num(s.durability.flush_fua_per_s, "{:,.1f}")),
    ("fsync-family /s", lambda s: _num(s.durability.commits_per_s, "{:,.1f}")),
    # `all` is reads and writes (scope.DATA_LATENCY_OPS); flushes have their own row
    ("r+w µs p50/99/99.9", _lats),
    ("flush µs p50/p99", lambda s: _lats(s, "flush", 2)),
    ("IOPS 1 s: peak/mean", _burst),
    ("IOPS dispersion 1 s", _dispersion),
    ("footprint (MiB)", lambda s: _num(s.footprint and s.footprint.bytes / 2**20, "{:,.1f}")),
    ("hot 1% blocks' I/Os", lambda s: _pct(s.footprint and s.footprint.hot_1pct_io_share)),
    # spaced, "point-write/commit" (18 characters) wraps in a column of 11
    ("shape", lambda s: s.shape.name.replace("/", " / ")),
    ("bound", lambda s: s.bound.verdict),
]  # fmt: skip


# The latency an application waited (its data calls: throttles and queues above the device
# included), and the time before issue (btt's Q2D), above the device's own: shown when the trace has
# them (a capture with syscalls; the queue time of any capture).
WAIT_ROWS: list[tuple[str, str, Callable[[Scope], str]]] = [
    ("app_latency", "app µs p50/99/99.9", lambda s: _waits(s, "app_latency")),
    ("queue_latency", "queue µs p50/p99", lambda s: _waits(s, "queue_latency", 2)),
]


def rows(fp: Fingerprint) -> list[tuple[str, Callable[[Scope], str]]]:
    """ROWS as this trace shows them: the application's wait and the time before issue above the
    device's latency when the trace has them; without latency the bound is the demand's alone
    (whether the device set the pace is unknown), the same for every column, so the row's label
    says so."""
    out = list(ROWS)
    at = next(i for i, (label, _) in enumerate(out) if label == "r+w µs p50/99/99.9")
    out[at:at] = [(label, get) for field, label, get in WAIT_ROWS if getattr(fp.whole, field)]
    if fp.whole.bound.side != "demand-only":
        return out
    return [("bound (demand only)" if label == "bound" else label, get) for label, get in out]


def shown_scopes(fp: Fingerprint) -> list[Scope]:
    """The columns: the whole trace; its typical scope (Fingerprint.typical_scope); the spikes; and a
    --between span."""
    name = fp.typical_scope()
    if name == "baseline" and not fp.spike:
        name = "steady"  # without spikes the baseline is the whole trace again: show what steady there is
    middle = None if name == "whole" else getattr(fp, name)
    return [s for s in (fp.whole, middle, fp.spike, fp.between) if s is not None]


def seconds_text(t: float, window_s: float) -> str:
    """A time on the trace's clock, with the decimals its windows need (5 s: none; 250 ms: two)."""
    d = next((d for d in range(10) if abs(window_s * 10**d - round(window_s * 10**d)) < 1e-9), 9)
    return f"{t:,.{d}f}"


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
    at = seconds_text(st.closest_start_s or 0.0, fp.params.window_ns / 1e9)
    line = (
        f"steady: no 5-window block meets the SNIA rule (range <= 20%, slope <= 10% of the mean); the "
        f"closest, at {at} s, has range {st.closest_range_pct:.0f}% and slope {st.closest_slope_pct:.0f}% of "
        f"its {st.closest_mean_iops:,.1f} IOPS"
    )
    if reg.window_ios_median < regimes.SNIA_NOISE_IOS:
        line += (
            f"; counting noise alone fails it below ~{regimes.SNIA_NOISE_IOS} I/Os per window "
            f"(median here {reg.window_ios_median:,.0f})"
        )
    return line


def baseline_line(fp: Fingerprint) -> str:
    b, t = fp.regimes.baseline, fp.regimes.thresholds
    return (
        f"baseline (the windows in no spike): {b.windows:,} of {fp.regimes.windows:,}, median "
        f"{b.median_iops:,.1f} IOPS and {b.median_mbps:,.2f} MB/s; a window is hot above "
        f"{t.hot_iops:,.1f} IOPS or {t.hot_mbps:,.2f} MB/s"
    )


TRIPPED = {"iops": "IOPS", "mbps": "MB/s", "both": "both"}


def spike_table(fp: Fingerprint) -> Table:
    reg, w_s = fp.regimes, fp.params.window_ns / 1e9
    t = Table(
        title=f"spikes: {reg.spikes_total:,}, biggest (most I/Os over the baseline) first",
        title_justify="left",
        box=None,
    )
    for col in ("#", "from-to (s)", "peak IOPS", "base IOPS", "peak MB/s", "+I/Os", "of all", "by"):
        t.add_column(col, justify="left" if col in ("from-to (s)", "by") else "right")
    for sp in reg.spikes[:SHOWN_SPIKES]:
        t.add_row(
            str(sp.rank), f"{seconds_text(sp.start_s, w_s)}-{seconds_text(sp.end_s, w_s)}",
            f"{sp.peak_iops:,.1f}", f"{sp.baseline_iops:,.1f}", f"{sp.peak_mbps:,.2f}",
            f"{sp.excess_ios:+,.0f}", _pct(sp.io_share), TRIPPED[sp.tripped],
        )  # fmt: skip
    if reg.spikes_total > SHOWN_SPIKES:
        t.caption = f"... and {reg.spikes_total - SHOWN_SPIKES:,} smaller (all ranked in --json)"
        t.caption_justify = "left"
    return t


def render(fp: Fingerprint, console: Console | None = None) -> None:
    console = console or terminal.console()
    prov = fp.provenance
    title = f"{prov.source} · {device_list(prov.devices)} · {span_text(prov.duration_s)}"
    t = Table(title=escape(title), title_justify="left")
    t.add_column("", no_wrap=True)
    scopes = shown_scopes(fp)
    for s in scopes:
        # 11: a shape's longest word ("point-write") whole; four scopes then fit 80 columns
        t.add_column(f"{s.name}\n{s.windows:,} win", justify="right", min_width=11)
    for label, get in rows(fp):
        t.add_row(label, *(escape(get(s)) for s in scopes))
    console.print(t)
    for line in (window_line(fp), steady_line(fp), baseline_line(fp)):
        console.print(escape(line))
    if fp.regimes.spikes_total:
        console.print(spike_table(fp))
    else:
        console.print("spikes: none")
    if prov.lost_events:
        console.print(f"[red]the capture lost {prov.lost_events:,} events[/red]: {escape(str(prov.loss))}")
    b = fp.whole.bound
    console.print(
        f"[bold]{escape(fp.whole.shape.name)}, {escape(b.verdict)}[/bold] ({escape(b.side)}): {escape(b.why)}"
    )
