"""Inline SVG charts with real axes (ticks, gridlines, units) for the HTML reports: no script, no
network, so a report opens anywhere.

`Chart` draws lines (and step CDFs), horizontal and vertical reference lines (an SLO, a knee),
shaded spans (regimes) and labelled points, on linear or log axes whose ticks are round numbers.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass, field

PALETTE = ("#3a6ea5", "#c0392b", "#27ae60", "#8e44ad", "#d35400", "#16a085", "#7f8c8d", "#2c3e50")


def fmt(v: float) -> str:
    """A tick or value label: 0, 0.5, 12, 1,500, 2.5k is not used (units say the scale)."""
    if v == 0:
        return "0"
    if abs(v) >= 1000:
        return f"{v:,.0f}"
    return f"{v:.3g}"


def nice_ticks(lo: float, hi: float, n: int = 5) -> list[float]:
    """Round tick values covering [lo, hi]: steps of 1, 2 or 5 x 10^k."""
    if hi <= lo:
        hi = lo + 1
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 5, 10) if m * mag >= raw)
    first = math.floor(lo / step) * step
    ticks = []
    t = first
    while t <= hi + step * 1e-9:
        if t >= lo - step * 1e-9:
            ticks.append(round(t, 12))
        t += step
    return ticks


def log_ticks(lo: float, hi: float) -> list[float]:
    """Powers of ten (and 2x, 5x when there are few decades) covering [lo, hi]."""
    lo, hi = max(lo, 1e-12), max(hi, lo * 10)
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    mults = (1, 2, 5) if b - a <= 3 else (1,)
    ticks = [m * 10**k for k in range(a, b + 1) for m in mults if lo <= m * 10**k <= hi]
    return ticks if len(ticks) >= 3 else nice_ticks(lo, hi, 4)


@dataclass
class Series:
    name: str
    xs: list[float]
    ys: list[float | None]
    color: str | None = None
    step: bool = False  # a CDF: horizontal then vertical
    width: float = 1.4
    dash: str | None = None


@dataclass
class Chart:
    title: str
    x_label: str
    y_label: str
    width: int = 560
    height: int = 240
    log_x: bool = False
    log_y: bool = False
    x_range: tuple[float, float] | None = None
    y_range: tuple[float, float] | None = None
    series: list[Series] = field(default_factory=list)
    hlines: list[tuple[float, str, str]] = field(default_factory=list)  # (y, label, color)
    vlines: list[tuple[float, str, str]] = field(default_factory=list)  # (x, label, color)
    spans: list[tuple[float, float, str, str]] = field(default_factory=list)  # (x0, x1, color, attrs)
    points: list[tuple[float, float, str, str]] = field(default_factory=list)  # (x, y, label, color)
    css: str = "chart"
    attrs: str = ""

    L, R, T, B = 64, 14, 26, 40

    def _bounds(self) -> tuple[float, float, float, float]:
        xs = [x for s in self.series for x, y in zip(s.xs, s.ys, strict=True) if y is not None]
        ys = [y for s in self.series for y in s.ys if y is not None]
        ys += [y for y, _, _ in self.hlines]
        xs += [x for x, _, _ in self.vlines]
        x0, x1 = self.x_range or ((min(xs), max(xs)) if xs else (0.0, 1.0))
        y0, y1 = self.y_range or ((0.0 if not self.log_y else min(ys or [1.0]), max(ys or [1.0])))
        if self.log_x:
            x0 = max(x0, min((x for x in xs if x > 0), default=1.0))
        if self.log_y:
            y0 = max(y0, min((y for y in ys if y > 0), default=1.0))
        if x1 <= x0:
            x1 = x0 + (abs(x0) or 1.0)
        if y1 <= y0:
            y1 = y0 + (abs(y0) or 1.0)
        return x0, x1, y0, y1 * (1.0 if self.log_y or self.y_range else 1.05)

    def svg(self) -> str:
        x0, x1, y0, y1 = self._bounds()
        pw, ph = self.width - self.L - self.R, self.height - self.T - self.B

        def fx(x: float) -> float:
            if self.log_x:
                x = max(x, x0)
                return self.L + pw * (math.log10(x) - math.log10(x0)) / (math.log10(x1) - math.log10(x0))
            return self.L + pw * (x - x0) / (x1 - x0)

        def fy(y: float) -> float:
            if self.log_y:
                y = max(y, y0)
                return self.T + ph * (
                    1 - (math.log10(y) - math.log10(y0)) / (math.log10(y1) - math.log10(y0))
                )
            return self.T + ph * (1 - (y - y0) / (y1 - y0))

        out = [
            f'<svg class="{self.css}" {self.attrs} width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" aria-label="{html.escape(self.title)}">',
            f'<text x="{self.L}" y="16" font-size="12" font-weight="bold">{html.escape(self.title)}</text>',
        ]
        for a, z, color, attrs in self.spans:
            a, z = max(a, x0), min(z, x1)
            if z > a:
                out.append(
                    f'<rect {attrs} x="{fx(a):.1f}" y="{self.T}" width="{max(fx(z) - fx(a), 0.8):.1f}" '
                    f'height="{ph}" fill="{color}"/>'
                )
        xt = log_ticks(x0, x1) if self.log_x else nice_ticks(x0, x1)
        yt = log_ticks(y0, y1) if self.log_y else nice_ticks(y0, y1)
        for t in xt:
            X = fx(t)
            out.append(f'<line x1="{X:.1f}" y1="{self.T}" x2="{X:.1f}" y2="{self.T + ph}" stroke="#eee"/>')
            out.append(
                f'<text class="tick x" x="{X:.1f}" y="{self.T + ph + 14}" font-size="10" '
                f'text-anchor="middle">{fmt(t)}</text>'
            )
        for t in yt:
            Y = fy(t)
            out.append(f'<line x1="{self.L}" y1="{Y:.1f}" x2="{self.L + pw}" y2="{Y:.1f}" stroke="#eee"/>')
            out.append(
                f'<text class="tick y" x="{self.L - 4}" y="{Y + 3:.1f}" font-size="10" '
                f'text-anchor="end">{fmt(t)}</text>'
            )
        out.append(f'<rect x="{self.L}" y="{self.T}" width="{pw}" height="{ph}" fill="none" stroke="#888"/>')
        out.append(
            f'<text x="{self.L + pw / 2:.0f}" y="{self.height - 6}" font-size="11" '
            f'text-anchor="middle">{html.escape(self.x_label)}</text>'
        )
        out.append(
            f'<text font-size="11" text-anchor="middle" transform="translate(12,{self.T + ph / 2:.0f}) '
            f'rotate(-90)">{html.escape(self.y_label)}</text>'
        )
        for i, s in enumerate(self.series):
            color = s.color or PALETTE[i % len(PALETTE)]
            pts = []
            prev = None
            for x, y in zip(s.xs, s.ys, strict=True):
                if y is None or (self.log_x and x <= 0) or (self.log_y and y <= 0):
                    continue
                if s.step and prev is not None:
                    pts.append(f"{fx(x):.1f},{fy(prev):.1f}")
                pts.append(f"{fx(x):.1f},{fy(y):.1f}")
                prev = y
            dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
            out.append(
                f'<polyline data-line="{html.escape(s.name)}" fill="none" stroke="{color}" '
                f'stroke-width="{s.width}"{dash} points="{" ".join(pts)}"/>'
            )
        for y, label, color in self.hlines:
            if y0 <= y <= y1:
                Y = fy(y)
                out.append(
                    f'<line class="ref h" x1="{self.L}" y1="{Y:.1f}" x2="{self.L + pw}" y2="{Y:.1f}" '
                    f'stroke="{color}" stroke-dasharray="5 3" stroke-width="1.5"/>'
                )
                out.append(
                    f'<text x="{self.L + pw - 4}" y="{Y - 4:.1f}" font-size="10" text-anchor="end" '
                    f'fill="{color}">{html.escape(label)}</text>'
                )
        for x, label, color in self.vlines:
            if x0 <= x <= x1:
                X = fx(x)
                out.append(
                    f'<line class="ref v" x1="{X:.1f}" y1="{self.T}" x2="{X:.1f}" y2="{self.T + ph}" '
                    f'stroke="{color}" stroke-dasharray="5 3" stroke-width="1.5"/>'
                )
                out.append(
                    f'<text x="{X + 4:.1f}" y="{self.T + 12}" font-size="10" fill="{color}">'
                    f"{html.escape(label)}</text>"
                )
        for x, y, label, color in self.points:
            out.append(f'<circle class="mark" cx="{fx(x):.1f}" cy="{fy(y):.1f}" r="5" fill="{color}"/>')
            out.append(
                f'<text x="{fx(x) + 7:.1f}" y="{fy(y) - 7:.1f}" font-size="11" fill="{color}">'
                f"{html.escape(label)}</text>"
            )
        out.append("</svg>")
        return "\n".join(out)


def legend(names: list[tuple[str, str]]) -> str:
    """A row of colour swatches naming the series."""
    spans = "".join(
        f'<span><i class="sw" style="background:{c}"></i>{html.escape(n)}</span>' for n, c in names
    )
    return f'<div class="legend">{spans}</div>'
