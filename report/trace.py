"""The report of a trace: one self-contained HTML page for its fingerprint (inline SVG and CSS, no network).

`trace_page(fp, timeline, slo)` takes a fingerprint and the timeline drawn from its trace in its windows
(fingerprint/timeline.py; a fingerprint holds no per-window series) and returns the page. It opens with
the biggest spike's answer (fingerprint/headline.py, as the terminal does), then each scope's verdict
with its reason and the rule that turns hot windows into spikes; then the charts a reviewer reads tails
and bursts in:

- the rates per window (IOPS, MB/s) with every spike shaded and numbered as in the table, every hot
  window that is in no spike marked, the hot threshold drawn; on a log axis when one spike dwarfs the
  rest, and the biggest spikes again each in a panel of its own;
- the latency of reads and of writes (p50, p99) and of the commits (the fsync-family calls, entry to
  return) per window, on log axes, with the SLO's limits;
- each kind of request's tail as an exceedance curve (the share of requests slower than each latency,
  log-log), p99 and p99.9 marked, the SLO's limit drawn;
- wall-clock time on every time axis where the trace has a wall clock;

then the per-scope table, the spikes and the histograms.
"""

from __future__ import annotations

import html
import math
from datetime import datetime

from fingerprint import headline
from fingerprint.summary import (
    absent_rows,
    baseline_line,
    hot_line,
    rows,
    span_text,
    steady_line,
    window_line,
)
from fingerprint.timeline import EXCEEDANCE, Timeline
from iofp import regimes
from iofp.fingerprint_doc import Fingerprint, Histogram, Provenance
from iofp.slo import Slo, format_ns
from iofp.values import device_list
from report.page import page
from report.slo import SLO_COLOR, slo_lines
from report.svg import PALETTE, Chart, Series, fmt, legend, nice_ticks

W, H = 1100, 200
MAX_POINTS = 2000  # per chart; longer series are reduced to per-bucket maxima (peaks survive)
STEADY, SPIKE, HOT = "#cfe8cf", "#f6c9c9", "#f5b041"
DWARFED = 10  # a rate chart goes to a log axis when its peak is this many times its busy windows' p90
PANELS = 6  # the biggest spikes drawn again, each in a panel of its own
KINDS = {"read": "reads", "write": "writes", "flush": "flushes", "sync calls": "commits (sync calls)"}
KIND_COLORS = dict(zip(KINDS, PALETTE, strict=False))


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


def _runs(values: list[bool]) -> list[tuple[int, int]]:
    out: list[list[int]] = []
    for k, v in enumerate(values):
        if v and out and out[-1][1] == k - 1:
            out[-1][1] = k
        elif v:
            out.append([k, k])
    return [(a, b) for a, b in out]


# ------------------------------------------------------------------------------------------------
# time axes


STEPS_S = (0.001, 0.002, 0.005, 0.01, 0.02, 0.05, 0.1, 0.2, 0.5, 1, 2, 5, 10, 15, 30, 60, 120, 300, 600, 900,
           1800, 3600, 7200, 10800, 21600)  # fmt: skip


def time_axis(
    fp: Fingerprint, lo: float, hi: float, most: int = 8
) -> tuple[str, list[tuple[float, str]] | None]:
    """The x label and ticks (at most `most`) of a time axis over [lo, hi] seconds from the first
    arrival: round times of day (local, as --between reads them) where the trace has a wall clock,
    else round seconds."""
    c = headline.clock(fp)
    if c.first_ns is None:
        return "seconds from the first I/O", None
    step = next((s for s in STEPS_S if (hi - lo) / s <= most), STEPS_S[-1])
    first = c.first_ns / 1e9
    utc_offset = datetime.fromtimestamp(first).astimezone().utcoffset()
    shift = utc_offset.total_seconds() if utc_offset else 0.0  # ticks on round local times
    t = math.ceil((first + lo + shift) / step) * step - shift
    ticks = []
    while t <= first + hi - 0.04 * (hi - lo):  # a tick at the right edge would print half its label
        when = datetime.fromtimestamp(t)
        label = when.strftime("%H:%M" if step >= 60 else "%H:%M:%S")
        if step < 1:
            label += f".{when.microsecond // 1000:03d}"
        ticks.append((t - first, label))
        t += step
    zone = datetime.fromtimestamp(first).astimezone().strftime("%Z")
    return f"time of day ({zone}), from {headline.started(fp)}", ticks


# ------------------------------------------------------------------------------------------------
# charts over the windows


def _dwarfed(values: list[float]) -> bool:
    """Whether one window's value dwarfs the busy windows' (a log axis then shows the rest)."""
    busy = sorted(v for v in values if v and v > 0)
    if len(busy) < 10:
        return False
    p90 = busy[int(0.9 * (len(busy) - 1))]
    return busy[-1] > DWARFED * p90


def _shade(fp: Fingerprint, tl: Timeline, chart: Chart, *, numbered: bool = True) -> None:
    """Steady windows green, spikes red (each numbered as in the table), and every hot window that is
    in no spike marked in orange: the text says why it is not one."""
    w = tl.window_s
    for a, z in _runs([r == regimes.STEADY for r in tl.columns["regime"]]):
        attrs = f'class="regime steady" data-start="{a * w:g}" data-end="{(z + 1) * w:g}"'
        chart.spans.append((a * w, (z + 1) * w, STEADY, attrs))
    lone = [h and r != regimes.SPIKE for h, r in zip(tl.columns["hot"], tl.columns["regime"], strict=True)]
    for a, z in _runs(lone):  # a strip along the bottom: ninety of them must not hide the series
        attrs = f'class="regime hot" data-start="{a * w:g}" data-end="{(z + 1) * w:g}"'
        chart.strips.append((a * w, (z + 1) * w, HOT, attrs))
    for sp in sorted(fp.regimes.spikes, key=lambda sp: sp.start_s):
        attrs = (
            f'class="regime spike" data-start="{sp.start_s:g}" data-end="{sp.end_s:g}" data-rank="{sp.rank}" '
            f'data-peak-iops="{sp.peak_iops:.0f}"'
        )
        chart.spans.append((sp.start_s, sp.end_s, SPIKE, attrs))
        if numbered:
            tag = f'class="spike-label" data-rank="{sp.rank}"'
            chart.tags.append(((sp.start_s + sp.end_s) / 2, f"#{sp.rank}", "#a93226", tag))


def _rate_chart(fp: Fingerprint, tl: Timeline, key: str, title: str, unit: str, hot: float) -> str:
    """A rate per window, shaded; on a log axis when one window dwarfs the rest."""
    xs, w = tl.columns["start_s"], tl.window_s
    end = (xs[-1] + w) if xs else 1.0
    label, ticks = time_axis(fp, 0.0, end)
    values = tl.columns[key]
    log = _dwarfed(values)
    title += " (log scale: one spike dwarfs the rest)" if log else ""
    chart = Chart(title, label, unit, width=W, height=H, x_range=(0.0, end), log_y=log, x_ticks=ticks,
                  attrs=f'data-chart="{key}"')  # fmt: skip
    if log:
        chart.y_range = (max(min((v for v in values if v > 0), default=1.0) / 2, 1e-3), max(values) * 1.5)
    rx, ry = _reduce(xs, list(values))
    chart.series.append(Series(key, [x + w / 2 for x in rx], ry, "#3a6ea5"))
    chart.hlines.append((hot, f"hot above {hot:,.1f} {unit}", "#b9770e"))
    _shade(fp, tl, chart)
    return chart.svg()


def _spike_panels(fp: Fingerprint, tl: Timeline) -> str:
    """The biggest spikes, each in a panel of its own on its own scale: its shape, and the windows
    around it."""
    w, iops = tl.window_s, tl.columns["iops"]
    c = headline.clock(fp)
    out = []
    for sp in fp.regimes.spikes[:PANELS]:
        pad = max(sp.end_s - sp.start_s, 3 * w)
        lo, hi = max(0.0, sp.start_s - pad), min(len(iops) * w, sp.end_s + pad)
        label, ticks = time_axis(fp, lo, hi, most=4)
        ks = [k for k in range(len(iops)) if lo <= k * w < hi]
        # the span as its axis reads it (a wall clock, or seconds): the title fits the panel
        peak = headline.rate_text(sp.peak_iops)
        name = f"#{sp.rank} {c.short_span(sp.start_s, sp.end_s)}: peak {peak} IOPS"
        chart = Chart(name, label, "IOPS", width=390, height=170, x_range=(lo, hi), x_ticks=ticks,
                      attrs=f'data-panel="{sp.rank}"')  # fmt: skip
        chart.series.append(Series("iops", [k * w + w / 2 for k in ks], [iops[k] for k in ks], "#3a6ea5"))
        chart.hlines.append((fp.regimes.thresholds.hot_iops, "hot", "#b9770e"))
        _shade(fp, tl, chart)
        out.append(chart.svg())
    if not out:
        return ""
    return (
        "<h3>The biggest spikes, each on its own scale</h3>"
        f'<div class="row" id="spike-panels">{"".join(out)}</div>'
    )


def _latency_chart(fp: Fingerprint, tl: Timeline, slo: Slo | None) -> str:
    """Reads' and writes' p50 (thin) and p99 per window, apart (iostat's r_await and w_await), log y."""
    xs, w = tl.columns["start_s"], tl.window_s
    end = (xs[-1] + w) if xs else 1.0
    label, ticks = time_axis(fp, 0.0, end)
    chart = Chart("read and write latency per window: p50 (thin) and p99", label, "µs (log scale)",
                  width=W, height=H, x_range=(0.0, end), log_y=True, x_ticks=ticks,
                  attrs='data-chart="latency"')  # fmt: skip
    names = []
    for op in ("read", "write"):
        if not any(v is not None for v in tl.columns[f"{op}_p99_us"]):
            continue
        color = KIND_COLORS[op]
        for pct, width in (("p50", 0.8), ("p99", 1.6)):
            rx, ry = _reduce(xs, tl.columns[f"{op}_{pct}_us"])
            chart.series.append(Series(f"{op} {pct}", [x + w / 2 for x in rx], ry, color, width=width))
        names.append((KINDS[op], color))
        for line in slo_lines(slo, op):
            if line not in chart.hlines:
                chart.hlines.append(line)
    _shade(fp, tl, chart)
    return legend(names) + chart.svg() if names else ""


def _commit_charts(fp: Fingerprint, tl: Timeline, slo: Slo | None) -> str:
    """The commits per second and their latency per window (p50 thin, p99): the order router's own
    metric, with the SLO's commit limit."""
    if not any(tl.columns["commits_per_s"]):
        return ""
    xs, w = tl.columns["start_s"], tl.window_s
    end = (xs[-1] + w) if xs else 1.0
    label, ticks = time_axis(fp, 0.0, end)
    color = KIND_COLORS["sync calls"]
    rate = Chart("commits per second (fsync-family calls)", label, "commits/s", width=W, height=150,
                 x_range=(0.0, end), x_ticks=ticks, attrs='data-chart="commits"')  # fmt: skip
    rx, ry = _reduce(xs, tl.columns["commits_per_s"])
    rate.series.append(Series("commits/s", [x + w / 2 for x in rx], ry, color))
    _shade(fp, tl, rate)
    lat = Chart("commit latency per window (entry to return): p50 (thin) and p99", label, "µs (log scale)",
                width=W, height=H, x_range=(0.0, end), log_y=True, x_ticks=ticks,
                attrs='data-chart="commit-latency"')  # fmt: skip
    for pct, width in (("p50", 0.8), ("p99", 1.6)):
        rx, ry = _reduce(xs, tl.columns[f"commit_{pct}_us"])
        lat.series.append(Series(f"commit {pct}", [x + w / 2 for x in rx], ry, color, width=width))
    lat.hlines += slo_lines(slo, "sync calls")
    _shade(fp, tl, lat)
    return rate.svg() + lat.svg()


def _inflight_chart(fp: Fingerprint, tl: Timeline) -> str:
    xs, w = tl.columns["start_s"], tl.window_s
    end = (xs[-1] + w) if xs else 1.0
    label, ticks = time_axis(fp, 0.0, end)
    chart = Chart("mean in-flight at issue", label, "requests in flight", width=W, height=150,
                  x_range=(0.0, end), x_ticks=ticks, attrs='data-chart="inflight"')  # fmt: skip
    rx, ry = _reduce(xs, tl.columns["mean_inflight"])
    chart.series.append(Series("mean in-flight", [x + w / 2 for x in rx], ry, "#3a6ea5"))
    _shade(fp, tl, chart)
    return chart.svg()


# ------------------------------------------------------------------------------------------------
# tails


def tail_chart(
    title: str, tails: dict[str, tuple[list[float], int]], slo: Slo | None, *, width: int = 560,
    height: int = 300, attrs: str = "", colors: dict[str, str] | None = None,
    x_range: tuple[float, float] | None = None,
) -> str:  # fmt: skip
    """Each kind's latency tail as an exceedance curve (the share of its requests slower than each
    latency, log-log): p99 and p99.9 marked on the curve with their values, the 1-in-100 and
    1-in-1,000 levels drawn across, and the SLO's limit for each kind as a vertical line."""
    colors = colors or KIND_COLORS
    chart = Chart(title, "latency (µs, log scale)", "share of requests slower (log scale)", width=width,
                  height=height, log_x=True, log_y=True, css="chart tail", attrs=attrs,
                  x_range=x_range)  # fmt: skip
    floor = 1.0
    for kind, (qs, n) in tails.items():
        if not n:
            continue
        lowest = 1 / n  # the slowest request's own share: the curve's end
        floor = min(floor, lowest)
        keep = [(q, e) for q, e in zip(qs, EXCEEDANCE, strict=True) if e >= lowest and q > 0]
        chart.series.append(Series(KINDS.get(kind, kind), [q for q, _ in keep], [e for _, e in keep],
                                   colors.get(kind, "#3a6ea5"), width=1.6))  # fmt: skip
        for pct, level in (("p99", 0.01), ("p99.9", 0.001)):
            if level >= lowest:
                q = qs[EXCEEDANCE.index(min(EXCEEDANCE, key=lambda e: abs(e - level)))]
                label = f"{KINDS.get(kind, kind).split(' ')[0]} {pct} {format_ns(q * 1e3)}"
                chart.marks.append((q, level, label, colors.get(kind, "#3a6ea5"), pct.replace(".", "_")))
        for x, label, _ in slo_lines(slo, kind):
            if (x, label, SLO_COLOR) not in chart.vlines:
                chart.vlines.append((x, label, SLO_COLOR))
    chart.y_range = (min(floor, 1e-3) / 2, 1.0)
    chart.hlines += [(0.01, "1 in 100 (p99)", "#999"), (0.001, "1 in 1,000 (p99.9)", "#999")]
    return chart.svg()


def _tails(fp: Fingerprint, tl: Timeline, slo: Slo | None) -> str:
    if not tl.tails:
        return "<p>No latency in this trace: no tails to draw.</p>"
    names = [(KINDS.get(k, k), KIND_COLORS.get(k, "#3a6ea5")) for k in tl.tails]
    counts = ", ".join(f"{KINDS.get(k, k)} {n:,}" for k, (_, n) in tl.tails.items())
    chart = tail_chart("latency tails: the share of requests slower than each latency", tl.tails, slo,
                       width=W, height=340, attrs='data-chart="tails"')  # fmt: skip
    return (
        legend(names)
        + chart
        + f'<p class="note">Each curve ends at its slowest request (one in {counts} requests). '
        "Read it across: where a curve crosses 1 in 100 is that kind's p99; the orange line is the "
        "SLO's limit, and a curve to its right at that height misses it.</p>"
    )


# ------------------------------------------------------------------------------------------------
# tables and histograms


def title(fp: Fingerprint) -> str:
    """What a reader names the trace by: its service, when it was captured, where, for how long."""
    prov = fp.provenance
    who = prov.labels.get("service") or prov.labels.get("workload") or prov.source or "trace"
    when = headline.started(fp) or "no wall clock"
    devices = device_list(prov.devices)
    return f"{who} · {when} · {devices} · {span_text(prov.duration_s)}"


def _bars(hist: Histogram | None, title: str, unit: str) -> str:
    """A histogram as bars over a y axis in % of the I/Os counted (each bar's count in its tooltip)."""
    if not hist:
        return f'<div class="hist"><b>{html.escape(title)}</b><p>not in this trace</p></div>'
    counts, limits = hist.counts, hist.limits
    labels = [f"≤{fmt(v)}" for v in limits] + [f">{fmt(limits[-1])}"]
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
    if fp.regimes.spikes_total <= 1:  # one spike's own summary is the spike column again
        scopes = [s for s in scopes if s.name != "spike1"]
    n = fp.regimes.spikes_total
    head = "".join(
        f'<th data-scope="{s.name}">{html.escape(headline.scope_title(s, n))} ({s.windows:,} windows)</th>'
        for s in scopes
    )
    out = [f"<tr><th></th>{head}</tr>"]
    for label, get in rows(fp, scopes):
        cells = "".join(f"<td>{html.escape(get(s))}</td>" for s in scopes)
        out.append(f"<tr><td>{html.escape(label)}</td>{cells}</tr>")
    gone = absent_rows(fp, scopes)
    note = f'<p class="note">Not in this trace: {html.escape(", ".join(gone))}.</p>' if gone else ""
    defs = (
        '<p class="note" id="definitions"><b>IOPS var/mean 1 s</b> (the index of dispersion): the variance '
        "of the I/Os per second over their mean: 1 for random arrivals at a steady rate, more the burstier. "
        "<b>sequential per dev</b>: requests that start where the device's previous one ended; <b>per "
        "pid</b>: where the same process's previous one on that device ended (a stream interleaved with "
        "others stays one).</p>"
    )
    return '<table id="scopes">' + "\n".join(out) + "</table>" + note + defs


def _spike_table(fp: Fingerprint) -> str:
    reg, c = fp.regimes, headline.clock(fp)
    if not reg.spikes:
        return "<p>No spikes.</p>"
    wall = c.first_ns is not None
    out = [
        "<tr><th>#</th>" + ("<th>time of day</th>" if wall else "") + "<th>seconds from the first I/O</th>"
        "<th>duration (s)</th><th>peak IOPS</th><th>baseline IOPS</th><th>peak MB/s</th><th>excess I/Os</th>"
        "<th>share of I/Os</th><th>hot by</th><th>significance (Li-Ma)</th></tr>"
    ]
    for s in reg.spikes:
        share = "-" if s.io_share is None else f"{s.io_share:.1%}"
        when = f"<td>{html.escape(c.short_span(s.start_s, s.end_s))}</td>" if wall else ""
        out.append(
            f'<tr data-rank="{s.rank}"><td>{s.rank}</td>{when}'
            f'<td class="nowrap">{c.seconds(s.start_s)}-{c.seconds(s.end_s)}</td><td>{s.duration_s:,g}</td>'
            f"<td>{s.peak_iops:,.1f}</td><td>{s.baseline_iops:,.1f}</td><td>{s.peak_mbps:,.2f}</td>"
            f"<td>{s.excess_ios:+,.0f}</td><td>{share}</td><td>{s.tripped}</td>"
            f"<td>{s.significance:,.1f}</td></tr>"
        )
    more = (
        f"<p>{reg.spikes_total - len(reg.spikes):,} smaller spikes are counted, not listed.</p>"
        if reg.spikes_total > len(reg.spikes)
        else ""
    )
    defs = (
        '<p class="note" id="significance"><b>significance (Li-Ma)</b>: how many standard deviations the '
        "spike's I/Os stand above what the baseline would give over the same windows (Li &amp; Ma 1983, "
        "eq. 17, with the baseline known), deflated by the baseline's overdispersion; a lone hot window "
        f"is kept as a spike from {regimes.OUTSIZED_SIGNIFICANCE:g}. <b>hot by</b>: whether its windows were "
        "hot by IOPS, by MB/s or both. <b>excess I/Os</b>: its I/Os less the baseline's over its windows "
        "(the rank).</p>"
    )
    return '<table id="spikes">' + "\n".join(out) + "</table>" + more + defs


def _incomplete(prov: Provenance) -> list[str]:
    """The contract's note on a trace whose writer did not finish (no trace.json), shown first."""
    why = (prov.extra or {}).get("incomplete")
    return [f'<div class="verdict" id="incomplete"><b>Warning:</b> {html.escape(why)}</div>'] if why else []


def _opening(fp: Fingerprint) -> list[str]:
    """The biggest spike's answer first (else the whole trace's verdict), then each scope's."""
    lead = headline.lead(fp)
    whole = fp.whole
    if lead is None:
        lead = f"whole trace: {headline.shape_name(whole.shape.name)}, {headline.verdict_text(whole)}"
    scopes = [s for s in fp.scopes() if s.name not in ("spike1",)]
    lines = headline.verdict_lines(fp, scopes)
    return [
        f'<div class="verdict" id="lead"><b>{html.escape(lead)}</b></div>',
        '<ul id="verdicts">' + "".join(f"<li>{html.escape(x)}</li>" for x in lines) + "</ul>",
    ]


def _legend() -> str:
    return (
        f'<div class="legend"><span><i class="sw" style="background:{STEADY}"></i>steady</span>'
        f'<span><i class="sw" style="background:{SPIKE}"></i>spike (#rank, as in the table)</span>'
        f'<span><i class="sw" style="background:{HOT}"></i>hot window in no spike (a lone burst)</span>'
        '<span style="color:#b9770e">- - hot threshold</span></div>'
    )


def trace_page(fp: Fingerprint, tl: Timeline, slo: Slo | None = None) -> str:
    prov, reg, whole = fp.provenance, fp.regimes, fp.whole
    head = title(fp)
    labels = ", ".join(f"{k}={v}" for k, v in prov.labels.items()) or "-"
    t = reg.thresholds
    rules = (window_line(fp), steady_line(fp), baseline_line(fp), hot_line(fp))
    parts = [
        f"<h1>{html.escape(head)}</h1>",
        f'<div class="prov">host {html.escape(str(prov.host))} · kernel {html.escape(str(prov.kernel))} · '
        f"{prov.duration_s:,.3f} s · trace by iofp {html.escape(str(prov.trace_tool_version))}, "
        f"fingerprint v{fp.fingerprint_version} · lost events {prov.lost_events:,} · labels "
        f"{html.escape(labels)}</div>",
        *_incomplete(prov),
        *_opening(fp),
        f'<p id="regimes">Steady state: <b>{reg.steady.windows:,}</b> of {reg.windows:,} windows (SNIA PTS '
        f"rule). Spikes: <b>{reg.spikes_total:,}</b> ({reg.spike_windows:,} windows), biggest first "
        "below.</p>",
        '<ul id="rules">' + "".join(f"<li>{html.escape(x)}</li>" for x in rules) + "</ul>",
        "<h2>Timeline</h2>",
        _legend(),
        _rate_chart(fp, tl, "iops", f"IOPS (reads, writes, discards) per {tl.window_s:g} s window",
                    "IOPS", t.hot_iops),
        _rate_chart(fp, tl, "mbps", "MB/s", "MB/s", t.hot_mbps),
        _spike_panels(fp, tl),
    ]
    if whole.latency:
        parts.append(_latency_chart(fp, tl, slo))
    parts.append(_commit_charts(fp, tl, slo))
    if whole.inflight:
        parts.append(_inflight_chart(fp, tl))
    if slo is not None:
        drawn = f'<p id="slo">SLO <code>{html.escape(slo.text)}</code>: its latency limits are drawn.</p>'
        parts.insert(parts.index("<h2>Timeline</h2>"), drawn)
    lat = whole.latency or {}
    parts += [
        "<h2>Tails</h2>",
        _tails(fp, tl, slo),
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
    return page(head, "\n".join(p for p in parts if p))
