"""`iofp report`: one self-contained HTML page for a fingerprint (inline SVG and CSS, no network).

`render_html(fp)` takes a fingerprint dict (from `compute`) and returns the page: the timeline
(IOPS, MB/s, latency p50/p99, mean in-flight) with steady windows shaded green and spikes red,
the size and latency histograms, and the per-scope tables the terminal summary shows.
"""

from __future__ import annotations

import html
import math
from importlib import resources
from string import Template
from typing import Any

from fingerprint.summary import ROWS

W, H, PAD_L, PAD_B, PAD_T = 1100, 150, 64, 22, 10
MAX_POINTS = 2000  # per chart; longer series are reduced to per-bucket maxima (peaks survive)
STEADY, SPIKE = "#cfe8cf", "#f6c9c9"


def _fmt(v: float) -> str:
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


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


def _timeline(fp: dict[str, Any], key: str, label: str, scale: float = 1.0, extra: str | None = None) -> str:
    s = fp["series"]["window"]
    xs: list[float] = s["start_s"]
    width = s["width_s"]
    t_end = (xs[-1] + width) if xs else 1.0
    lines = [(key, "#3a6ea5")] + ([(extra, "#c0392b")] if extra else [])
    data = []
    for k, color in lines:
        ys = [None if v is None else v * scale for v in s[k]]
        data.append((k, color, *_reduce(xs, ys)))
    ymax = max([y for _, _, _, ys in data for y in ys if y is not None] or [0]) or 1.0

    def X(t: float) -> float:
        return PAD_L + (W - PAD_L - 10) * t / t_end

    def Y(v: float) -> float:
        return PAD_T + (H - PAD_T - PAD_B) * (1 - v / ymax)

    out = [f'<svg class="chart" data-series="{key}" width="{W}" height="{H}" viewBox="0 0 {W} {H}">']
    reg = fp["regimes"]
    for a, z in reg["steady_ranges_s"]:
        out.append(
            f'<rect class="regime steady" data-start="{a:g}" data-end="{z:g}" x="{X(a):.1f}" y="{PAD_T}" '
            f'width="{max(X(z) - X(a), 0.5):.1f}" height="{H - PAD_T - PAD_B}" fill="{STEADY}"/>'
        )
    for sp in reg["spikes"]:
        a, z = sp["start_s"], sp["end_s"]
        out.append(
            f'<rect class="regime spike" data-start="{a:g}" data-end="{z:g}" '
            f'data-peak="{sp["peak_iops"]:.0f}" '
            f'x="{X(a):.1f}" y="{PAD_T}" width="{max(X(z) - X(a), 0.5):.1f}" height="{H - PAD_T - PAD_B}" '
            f'fill="{SPIKE}"/>'
        )
    for k, color, rx, ry in data:
        pts = " ".join(
            f"{X(x + width / 2):.1f},{Y(y):.1f}" for x, y in zip(rx, ry, strict=True) if y is not None
        )
        out.append(
            f'<polyline data-line="{k}" fill="none" stroke="{color}" stroke-width="1.2" points="{pts}"/>'
        )
    out.append(f'<line x1="{PAD_L}" y1="{H - PAD_B}" x2="{W - 10}" y2="{H - PAD_B}" stroke="#888"/>')
    out.append(f'<line x1="{PAD_L}" y1="{PAD_T}" x2="{PAD_L}" y2="{H - PAD_B}" stroke="#888"/>')
    out.append(f'<text x="4" y="{PAD_T + 10}" font-size="11">{_fmt(ymax)}</text>')
    out.append(f'<text x="4" y="{H - PAD_B}" font-size="11">0</text>')
    out.append(f'<text x="{PAD_L}" y="{H - 4}" font-size="11">0 s</text>')
    out.append(f'<text x="{W - 80}" y="{H - 4}" font-size="11">{_fmt(t_end)} s</text>')
    out.append(
        f'<text x="{PAD_L + 6}" y="{PAD_T + 12}" font-size="12" font-weight="bold">'
        f"{html.escape(label)}</text>"
    )
    out.append("</svg>")
    return "\n".join(out)


def _bars(hist: dict[str, Any] | None, title: str, unit: str) -> str:
    if not hist:
        return f'<div class="hist"><b>{html.escape(title)}</b><p>not in this trace</p></div>'
    counts, limits = hist["counts"], hist["limits"]
    labels = [f"≤{_fmt(v)}" for v in limits] + [f">{_fmt(limits[-1])}"]
    n = len(counts)
    bw, h = 26, 160
    top = max(counts) or 1
    total = sum(counts) or 1
    out = [
        f'<div class="hist"><b>{html.escape(title)}</b> ({unit})<br>',
        f'<svg width="{n * bw + 20}" height="{h + 70}" data-hist="{html.escape(title)}">',
    ]
    for i, (c, lab) in enumerate(zip(counts, labels, strict=True)):
        bh = h * c / top
        x = 10 + i * bw
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


def _scope_table(fp: dict[str, Any]) -> str:
    scopes = [(n, fp[n]) for n in ("whole", "steady", "spike", "between") if fp.get(n)]
    head = "".join(f'<th data-scope="{n}">{n} ({s["windows"]} windows)</th>' for n, s in scopes)
    rows = [f"<tr><th></th>{head}</tr>"]
    for label, get in ROWS:
        cells = "".join(f"<td>{html.escape(get(s))}</td>" for _, s in scopes)
        rows.append(f"<tr><td>{html.escape(label)}</td>{cells}</tr>")
    return '<table id="scopes">' + "\n".join(rows) + "</table>"


def _spike_table(fp: dict[str, Any]) -> str:
    sp = fp["regimes"]["spikes"]
    if not sp:
        return "<p>No spike windows.</p>"
    rows = [
        "<tr><th>start (s)</th><th>end (s)</th><th>duration (s)</th><th>peak IOPS</th>"
        "<th>mean IOPS</th><th>peak MB/s</th><th>peak / trace mean</th></tr>"
    ]
    for s in sp[:200]:
        p2m = "-" if s["peak_to_mean"] is None else f"{s['peak_to_mean']:.2f}"
        rows.append(
            f"<tr><td>{s['start_s']:g}</td><td>{s['end_s']:g}</td><td>{s['duration_s']:g}</td>"
            f"<td>{s['peak_iops']:,.0f}</td><td>{s['mean_iops']:,.0f}</td><td>{s['peak_mbps']:,.2f}</td>"
            f"<td>{p2m}</td></tr>"
        )
    more = f"<p>{len(sp) - 200} more spikes in the JSON.</p>" if len(sp) > 200 else ""
    return '<table id="spikes">' + "\n".join(rows) + "</table>" + more


def _incomplete(prov: dict[str, Any]) -> list[str]:
    """The contract's note on a trace whose writer did not finish (no trace.json), shown first."""
    why = (prov.get("extra") or {}).get("incomplete")
    return [f'<div class="verdict" id="incomplete"><b>Warning:</b> {html.escape(why)}</div>'] if why else []


def render_html(fp: dict[str, Any]) -> str:
    prov, reg, b = fp["provenance"], fp["regimes"], fp["bound"]
    devices = ", ".join(prov["devices"]) or "-"
    title = f"iofp report: {prov['source']} ({devices})"
    whole = fp["whole"]
    lat = whole.get("latency") or {}
    parts = [
        f"<h1>{html.escape(title)}</h1>",
        f'<div class="prov">host {html.escape(str(prov["host"]))} · '
        f"kernel {html.escape(str(prov['kernel']))} · "
        f"{prov['duration_s']:,.3f} s · trace by iofp {html.escape(str(prov['trace_tool_version']))}, "
        f"fingerprint v{fp['fingerprint_version']} · lost events {prov['lost_events']} · labels "
        f"{html.escape(', '.join(f'{k}={v}' for k, v in prov['labels'].items()) or '-')}</div>",
        *_incomplete(prov),
        f'<div class="verdict" id="verdict"><b>{html.escape(fp["shape"]["class"])}, '
        f"{html.escape(b['verdict'])}</b> ({b['side']}): {html.escape(b['why'])}</div>",
        f'<p id="regimes">Steady state: <b>{reg["steady_windows"]}</b> of {reg["windows"]} windows '
        f"(SNIA PTS rule). Spikes: <b>{len(reg['spikes'])}</b> ({reg['spike_windows']} windows above "
        f"{reg['spike_threshold_iops']:,.1f} IOPS or {reg.get('spike_threshold_mbps', 0):,.2f} MB/s; steady "
        f"median {reg['steady_median_iops']:,.1f} IOPS, {reg.get('steady_median_mbps', 0):,.2f} MB/s).</p>",
        "<h2>Timeline</h2>",
        f'<div class="legend"><span><i class="sw" style="background:{STEADY}"></i>steady</span>'
        f'<span><i class="sw" style="background:{SPIKE}"></i>spike</span>'
        '<span style="color:#3a6ea5">p50 / value</span><span style="color:#c0392b">p99</span></div>',
        _timeline(fp, "iops", f"IOPS per {fp['params']['window_s']:g} s window"),
        _timeline(fp, "mbps", "MB/s"),
    ]
    if lat:
        label = "read+write latency p50 / p99 (µs)"
        parts.append(_timeline(fp, "lat_p50_ns", label, 1e-3, extra="lat_p99_ns"))
    if whole.get("inflight"):
        parts.append(_timeline(fp, "mean_inflight", "mean in-flight at issue"))
    parts += [
        "<h2>Fingerprint</h2>",
        _scope_table(fp),
        "<h2>Spikes</h2>",
        _spike_table(fp),
        "<h2>Histograms (vscsiStats bins, whole trace)</h2>",
        '<div class="hists">',
        _bars(whole["size"]["hist"]["all"], "I/O size", "bytes"),
        _bars((lat.get("all") or {}).get("hist_us"), "latency", "µs"),
        _bars(whole["seek"]["hist"]["all"], "seek distance", "512 B LBNs"),
        _bars(whole["interarrival"]["hist"], "inter-arrival", "µs"),
        _bars((whole.get("inflight") or {}).get("hist", {}).get("all"), "in-flight at issue", "I/Os"),
        "</div>",
    ]
    tpl = Template(resources.files("fingerprint").joinpath("report.html").read_text())
    return tpl.substitute(title=html.escape(title), body="\n".join(parts))
