"""The report of a trace: one self-contained HTML page for its fingerprint (inline SVG and CSS, no network).

`trace_page(fp, timeline)` takes a fingerprint and the timeline drawn from its trace in its windows
(fingerprint/timeline.py; a fingerprint holds no per-window series) and returns the page: the
timeline (IOPS, MB/s, latency p50/p99, mean in-flight) with steady windows shaded green and spikes
red, the spikes biggest first, the size and latency histograms, and the per-scope tables the
terminal summary shows.
"""

from __future__ import annotations

import html
import math
from datetime import UTC, datetime

from fingerprint.summary import baseline_line, rows, span_text, steady_line, window_line
from fingerprint.timeline import Timeline
from iofp import regimes
from iofp.fingerprint_doc import Fingerprint, Histogram, Provenance
from iofp.values import device_list
from report.page import page
from report.svg import Chart, Series, fmt, nice_ticks

W, H = 1100, 190
MAX_POINTS = 2000  # per chart; longer series are reduced to per-bucket maxima (peaks survive)
STEADY, SPIKE = "#cfe8cf", "#f6c9c9"


_fmt = fmt


def _reduce(xs: list[float], ys: list[float | None]) -> tuple[list[float], list[float | None]]:
    if len(xs) <= MAX_POINTS:
        return xs, ys
    step = math.ceil(len(xs) / MAX_POINTS)
    rx, ry = [], []
    for i in range(0, len(xs), step):
        chunk = [y for y in ys[i : i + step] if y is not None]
        rx.append(xs[i])
        ry.append(max(chunk) if chunk else None)
    return rx, ry


def _runs(classes: list[int], cls: int) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for k, c in enumerate(classes):
        if c == cls and out and out[-1][1] == k - 1:
            out[-1][1] = k
        elif c == cls:
            out.append([k, k])
    return [(a, b) for a, b in out]


def _timeline(
    fp: Fingerprint,
    tl: Timeline,
    key: str,
    label: str,
    unit: str,
    scale: float = 1.0,
    extra: str | None = None,
) -> str:
    """One timeline chart: the series per window (at each window's middle), steady windows and
    spikes shaded, time on x in seconds from the first I/O, the value in `unit` on y."""
    s = tl.columns
    xs: list[float] = s["start_s"]
    width = tl.window_s
    t_end = (xs[-1] + width) if xs else 1.0
    chart = Chart(label, "seconds from the first I/O", unit, width=W, height=H, x_range=(0.0, t_end))
    for k, color in [(key, "#3a6ea5")] + ([(extra, "#c0392b")] if extra else []):
        rx, ry = _reduce(xs, [None if v is None else v * scale for v in s[k]])
        chart.series.append(Series(k, [x + width / 2 for x in rx], ry, color))
    for a, z in _runs(s["regime"], regimes.STEADY):
        attrs = f'class="regime steady" data-start="{a * width:g}" data-end="{(z + 1) * width:g}"'
        chart.spans.append((a * width, (z + 1) * width, STEADY, attrs))
    for sp in sorted(fp.regimes.spikes, key=lambda sp: sp.start_s):
        attrs = (
            f'class="regime spike" data-start="{sp.start_s:g}" data-end="{sp.end_s:g}" data-rank="{sp.rank}" '
            f'data-peak-iops="{sp.peak_iops:.0f}"'
        )
        chart.spans.append((sp.start_s, sp.end_s, SPIKE, attrs))
    return chart.svg()


def title(fp: Fingerprint) -> str:
    """What a reader names the trace by: its service, when it was captured, where, for how long."""
    prov = fp.provenance
    who = prov.labels.get("service") or prov.labels.get("workload") or prov.source or "trace"
    if prov.capture_start_ns is not None:
        when = datetime.fromtimestamp(prov.capture_start_ns / 1e9, UTC).strftime("%Y-%m-%d %H:%M:%S UTC")
    else:
        when = "no wall clock"
    devices = device_list(prov.devices)
    return f"{who} · {when} · {devices} · {span_text(prov.duration_s)}"


LINE_LEGEND = '<span style="color:#3a6ea5">p50 / value</span><span style="color:#c0392b">p99</span>'


def _bars(hist: Histogram | None, title: str, unit: str) -> str:
    """A histogram as bars over a y axis in % of the I/Os counted (each bar's count in its tooltip)."""
    if not hist:
        return f'<div class="hist"><b>{html.escape(title)}</b><p>not in this trace</p></div>'
    counts, limits = hist.counts, hist.limits
    labels = [f"≤{_fmt(v)}" for v in limits] + [f">{_fmt(limits[-1])}"]
    n = len(counts)
    bw, h, left = 26, 160, 44
    total = sum(counts) or 1
    ticks = nice_ticks(0, max(counts) / total, 4)
    if len(ticks) > 1 and ticks[-1] < max(counts) / total:
        ticks.append(ticks[-1] + ticks[1] - ticks[0])  # the axis ends on a tick above the tallest bar
    ymax = ticks[-1] or 1
    out = [
        f'<div class="hist"><b>{html.escape(title)}</b> ({unit})<br>',
        f'<svg width="{left + n * bw + 10}" height="{h + 70}" data-hist="{html.escape(title)}">',
        f'<text font-size="9" transform="translate(9,{10 + h / 2}) rotate(-90)" text-anchor="middle">'
        "% of I/Os</text>",
    ]
    for t in ticks:
        y = 10 + h - h * t / ymax
        out.append(
            f'<line x1="{left - 3}" x2="{left + n * bw}" y1="{y:.1f}" y2="{y:.1f}" stroke="#ddd"/>'
            f'<text font-size="9" x="{left - 5}" y="{y + 3:.1f}" text-anchor="end">{fmt(100 * t)}</text>'
        )
    for i, (c, lab) in enumerate(zip(counts, labels, strict=True)):
        bh = h * c / total / ymax
        x = left + i * bw
        out.append(
            f'<rect x="{x}" y="{10 + h - bh:.1f}" width="{bw - 4}" height="{bh:.1f}" fill="#3a6ea5">'
            f"<title>{lab}: {c:,} ({c / total:.1%})</title></rect>"
        )
        out.append(
            f'<text font-size="9" transform="translate({x + 8},{h + 16}) rotate(60)">'
            f"{html.escape(lab)}</text>"
        )
    out.append("</svg></div>")
    return "\n".join(out)


def _scope_table(fp: Fingerprint) -> str:
    scopes = fp.scopes()
    head = "".join(f'<th data-scope="{s.name}">{s.name} ({s.windows} windows)</th>' for s in scopes)
    out = [f"<tr><th></th>{head}</tr>"]
    for label, get in rows(fp):
        cells = "".join(f"<td>{html.escape(get(s))}</td>" for s in scopes)
        out.append(f"<tr><td>{html.escape(label)}</td>{cells}</tr>")
    return '<table id="scopes">' + "\n".join(out) + "</table>"


def _spike_table(fp: Fingerprint) -> str:
    reg = fp.regimes
    if not reg.spikes:
        return "<p>No spikes.</p>"
    rows = [
        "<tr><th>rank</th><th>start (s)</th><th>end (s)</th><th>duration (s)</th><th>peak IOPS</th>"
        "<th>baseline IOPS</th><th>peak MB/s</th><th>excess I/Os</th><th>share of I/Os</th>"
        "<th>tripped by</th><th>significance (Li-Ma)</th></tr>"
    ]
    for s in reg.spikes:
        share = "-" if s.io_share is None else f"{s.io_share:.1%}"
        rows.append(
            f"<tr><td>{s.rank}</td><td>{s.start_s:g}</td><td>{s.end_s:g}</td><td>{s.duration_s:g}</td>"
            f"<td>{s.peak_iops:,.1f}</td><td>{s.baseline_iops:,.1f}</td><td>{s.peak_mbps:,.2f}</td>"
            f"<td>{s.excess_ios:+,.0f}</td><td>{share}</td><td>{s.tripped}</td><td>{s.significance:.1f}</td></tr>"
        )
    more = (
        f"<p>{reg.spikes_total - len(reg.spikes)} smaller spikes are counted, not listed.</p>"
        if reg.spikes_total > len(reg.spikes)
        else ""
    )
    return '<table id="spikes">' + "\n".join(rows) + "</table>" + more


def _incomplete(prov: Provenance) -> list[str]:
    """The contract's note on a trace whose writer did not finish (no trace.json), shown first."""
    why = (prov.extra or {}).get("incomplete")
    return [f'<div class="verdict" id="incomplete"><b>Warning:</b> {html.escape(why)}</div>'] if why else []


def trace_page(fp: Fingerprint, tl: Timeline) -> str:
    prov, reg, b = fp.provenance, fp.regimes, fp.whole.bound
    head = title(fp)
    whole = fp.whole
    lat = whole.latency or {}
    labels = ", ".join(f"{k}={v}" for k, v in prov.labels.items()) or "-"
    parts = [
        f"<h1>{html.escape(head)}</h1>",
        f'<div class="prov">host {html.escape(str(prov.host))} · kernel {html.escape(str(prov.kernel))} · '
        f"{prov.duration_s:,.3f} s · trace by iofp {html.escape(str(prov.trace_tool_version))}, "
        f"fingerprint v{fp.fingerprint_version} · lost events {prov.lost_events} · labels "
        f"{html.escape(labels)}</div>",
        *_incomplete(prov),
        f'<div class="verdict" id="verdict"><b>{html.escape(whole.shape.name)}, '
        f"{html.escape(b.verdict)}</b> ({b.side}): {html.escape(b.why)}</div>",
        f'<p id="regimes">Steady state: <b>{reg.steady.windows}</b> of {reg.windows} windows (SNIA PTS '
        f"rule). Spikes: <b>{reg.spikes_total}</b> ({reg.spike_windows} windows), biggest first below.</p>",
        "<ul>" + "".join(f"<li>{html.escape(x)}</li>" for x in (window_line(fp), steady_line(fp),
                                                                 baseline_line(fp))) + "</ul>",
        "<h2>Timeline</h2>",
        f'<div class="legend"><span><i class="sw" style="background:{STEADY}"></i>steady</span>'
        f'<span><i class="sw" style="background:{SPIKE}"></i>spike</span>'
        # the two line colours, named only where a chart has two lines (latency p50 and p99)
        + (LINE_LEGEND if lat else "")
        + "</div>",
        _timeline(fp, tl, "iops", f"IOPS (reads, writes, discards) per {tl.window_s:g} s window", "IOPS"),
        _timeline(fp, tl, "mbps", "MB/s", "MB/s"),
    ]  # fmt: skip
    if lat:
        parts.append(
            _timeline(
                fp, tl, "lat_p50_us", "read+write latency p50 / p99", "latency (µs)", extra="lat_p99_us"
            )
        )
    if whole.inflight:
        parts.append(_timeline(fp, tl, "mean_inflight", "mean in-flight at issue", "requests in flight"))
    parts += [
        "<h2>Fingerprint</h2>",
        _scope_table(fp),
        "<h2>Spikes, biggest (most I/Os over the baseline) first</h2>",
        _spike_table(fp),
        "<h2>Histograms (vscsiStats bins, whole trace)</h2>",
        '<div class="hists">',
        _bars(whole.size.hist.all, "I/O size", "bytes"),
        _bars(lat["all"].hist_us if "all" in lat else None, "latency", "µs"),
        _bars(whole.seek.hist.all, "seek distance", "512 B LBNs"),
        _bars(whole.interarrival.hist, "inter-arrival", "µs"),
        _bars(whole.inflight.hist.all if whole.inflight else None, "in-flight at issue", "I/Os"),
        "</div>",
    ]
    return page(head, "\n".join(parts))
