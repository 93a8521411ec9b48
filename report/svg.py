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


def log_ticks(lo: float, hi: float, most: int = 99) -> list[float]:
    """Powers of ten (and 2x, 5x when there are few decades; every whole multiple within less than
    one) covering [lo, hi]: a log axis keeps log-spaced ticks, however narrow its range; no more than
    `most` where a narrower set has two or more (a small panel's "500 1,0002,000" ran together)."""
    lo, hi = max(lo, 1e-12), max(hi, lo * 1.01)
    a, b = math.floor(math.log10(lo)), math.ceil(math.log10(hi))
    found = []
    for mults in ((1,), (1, 2, 5), (1, 2, 3, 4, 5, 6, 7, 8, 9)):
        ticks = [m * 10**k for k in range(a, b + 1) for m in mults if lo <= m * 10**k <= hi]
        found.append(ticks)
        if (len(mults) > 1 or b - a > 3) and 3 <= len(ticks) <= most:
            return ticks
    fits = [t for t in found if 2 <= len(t) <= most]
    return fits[0] if fits else min((t for t in found if len(t) >= 2), key=len, default=found[-1])


@dataclass
class Series:
    name: str
    xs: list[float]
    ys: list[float | None]
    color: str | None = None
    step: bool = False  # a CDF: horizontal then vertical
    width: float = 1.4
    dash: str | None = None
    dots: bool = False  # a dot at each point: a curve of a few measured steps, each one a run


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
    # (x, y, label, color, class): a marked point of a curve (a percentile), its label beside it
    marks: list[tuple[float, float, str, str, str]] = field(default_factory=list)
    # (x, label, color, attrs): a label at the top of the plot (a spike's number over its span)
    tags: list[tuple[float, str, str, str]] = field(default_factory=list)
    # (x0, x1, color, attrs): a span marked by a strip along the bottom of the plot, not shaded across it
    strips: list[tuple[float, float, str, str]] = field(default_factory=list)
    x_ticks: list[tuple[float, str]] | None = None  # (x, label): ticks the data calls for (2x steps)
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
        a = _Area(self)
        xs, ys = ("log" if log else "linear" for log in (self.log_x, self.log_y))
        scale = f'data-x-scale="{xs}" data-y-scale="{ys}"'
        out = [
            f'<svg class="{self.css}" {self.attrs} {scale} width="{self.width}" height="{self.height}" '
            f'viewBox="0 0 {self.width} {self.height}" role="img" aria-label="{html.escape(self.title)}">',
            f'<text x="{self.L}" y="16" font-size="12" font-weight="bold">{html.escape(self.title)}</text>',
        ]
        for lo, hi, color, attrs in self.spans:
            lo, hi = max(lo, a.x0), min(hi, a.x1)
            if hi > lo:
                out.append(
                    f'<rect {attrs} x="{a.fx(lo):.1f}" y="{a.T}" width="{max(a.fx(hi) - a.fx(lo), 0.8):.1f}" '
                    f'height="{a.ph}" fill="{color}"/>'
                )
        for lo, hi, color, attrs in self.strips:
            lo, hi = max(lo, a.x0), min(hi, a.x1)
            if hi > lo:
                w = max(a.fx(hi) - a.fx(lo), 2)
                out.append(f'<rect {attrs} x="{a.fx(lo):.1f}" y="{a.T + a.ph - 7}" width="{w:.1f}" '
                           f'height="7" fill="{color}"/>')  # fmt: skip
        out += self._axes(a) + self._lines(a) + self._marks(a)
        out.append("</svg>")
        return "\n".join(out)

    def _axes(self, a: _Area) -> list[str]:
        """Gridlines with their round-number ticks, the frame and the axis labels."""
        out = []
        # a tick label is ~5 digits wide: one every 45 px at most
        ticks = log_ticks(a.x0, a.x1, max(3, int(a.pw // 45))) if self.log_x else nice_ticks(a.x0, a.x1)
        for t, label in self.x_ticks or [(t, fmt(t)) for t in ticks]:
            X = a.fx(t)
            out.append(f'<line x1="{X:.1f}" y1="{a.T}" x2="{X:.1f}" y2="{a.T + a.ph}" stroke="#eee"/>')
            out.append(
                f'<text class="tick x" x="{X:.1f}" y="{a.T + a.ph + 14}" font-size="10" '
                f'text-anchor="middle">{html.escape(label)}</text>'
            )
        for t in log_ticks(a.y0, a.y1) if self.log_y else nice_ticks(a.y0, a.y1):
            Y = a.fy(t)
            out.append(f'<line x1="{a.L}" y1="{Y:.1f}" x2="{a.L + a.pw}" y2="{Y:.1f}" stroke="#eee"/>')
            out.append(
                f'<text class="tick y" x="{a.L - 4}" y="{Y + 3:.1f}" font-size="10" '
                f'text-anchor="end">{fmt(t)}</text>'
            )
        out.append(f'<rect x="{a.L}" y="{a.T}" width="{a.pw}" height="{a.ph}" fill="none" stroke="#888"/>')
        out.append(
            f'<text x="{a.L + a.pw / 2:.0f}" y="{self.height - 6}" font-size="11" '
            f'text-anchor="middle">{html.escape(self.x_label)}</text>'
        )
        out.append(
            f'<text font-size="11" text-anchor="middle" transform="translate(12,{a.T + a.ph / 2:.0f}) '
            f'rotate(-90)">{html.escape(self.y_label)}</text>'
        )
        return out

    def _lines(self, a: _Area) -> list[str]:
        """Each series as polylines (a step CDF goes across, then up), broken where a value is
        missing (None, or not positive on a log axis: an idle window), never drawn across the gap."""
        out = []
        for i, s in enumerate(self.series):
            color = s.color or PALETTE[i % len(PALETTE)]
            runs: list[list[str]] = [[]]
            prev = None
            for x, y in zip(s.xs, s.ys, strict=True):
                if y is None or (self.log_x and x <= 0) or (self.log_y and y <= 0):
                    runs.append([])
                    prev = None
                    continue
                if s.step and prev is not None:
                    runs[-1].append(f"{a.fx(x):.1f},{a.fy(prev):.1f}")
                runs[-1].append(f"{a.fx(x):.1f},{a.fy(y):.1f}")
                prev = y
            dash = f' stroke-dasharray="{s.dash}"' if s.dash else ""
            pts = [p for run in runs for p in run]
            for run in [r for r in runs if r] or [[]]:
                out.append(
                    f'<polyline data-line="{html.escape(s.name)}" fill="none" stroke="{color}" '
                    f'stroke-width="{s.width}"{dash} points="{" ".join(run)}"/>'
                )
                if len(run) == 1:  # a lone point between two gaps: a polyline of one point draws nothing
                    x, y = run[0].split(",")
                    out.append(f'<circle cx="{x}" cy="{y}" r="1.2" fill="{color}"/>')
            if s.dots:
                cxy = [xy.split(",") for xy in pts]
                out += [f'<circle cx="{x}" cy="{y}" r="{1.5 + s.width:.1f}" fill="{color}"/>' for x, y in cxy]
        return out

    def _marks(self, a: _Area) -> list[str]:
        """Reference lines (an SLO, a knee) and labelled points."""
        out = []
        for y, label, color in self.hlines:
            if a.y0 <= y <= a.y1:
                Y = a.fy(y)
                out.append(
                    f'<line class="ref h" x1="{a.L}" y1="{Y:.1f}" x2="{a.L + a.pw}" y2="{Y:.1f}" '
                    f'stroke="{color}" stroke-dasharray="5 3" stroke-width="1.5"/>'
                )
                # At the left, under the line: the top of the plot holds the vertical lines' labels
                # (a knee, the headroom and its first failure), and a limit is often the top value.
                below = a.T + a.ph > Y + 14
                out.append(
                    f'<text x="{a.L + 4}" y="{Y + 12 if below else Y - 4:.1f}" font-size="10" '
                    f'fill="{color}">{html.escape(label)}</text>'
                )
        labelled = 0
        for x, label, color in self.vlines:
            if a.x0 <= x <= a.x1:
                X = a.fx(x)
                out.append(
                    f'<line class="ref v" x1="{X:.1f}" y1="{a.T}" x2="{X:.1f}" y2="{a.T + a.ph}" '
                    f'stroke="{color}" stroke-dasharray="5 3" stroke-width="1.5"/>'
                )
                if not label:
                    continue
                # Labels of nearby lines would print over each other: each one a line lower; one
                # in the right third of the plot reads leftwards, so it stays inside the chart.
                right = a.L + 0.66 * a.pw < X
                tx, anchor = (X - 4, "end") if right else (X + 4, "start")
                out.append(
                    f'<text x="{tx:.1f}" y="{a.T + 12 + 12 * labelled}" font-size="10" '
                    f'text-anchor="{anchor}" fill="{color}">{html.escape(label)}</text>'
                )
                labelled += 1
        taken: list[tuple[float, float, float]] = []  # each mark label's (left, right, baseline)
        for x, y, label, color, cls in sorted(self.marks, key=lambda m: (-m[1], m[0])):
            if a.x0 <= x <= a.x1 and a.y0 <= y <= a.y1:
                X, Y = a.fx(x), a.fy(y)
                out.append(f'<circle class="mark {cls}" cx="{X:.1f}" cy="{Y:.1f}" r="4" fill="{color}"/>')
                right = a.L + 0.75 * a.pw < X
                tx, anchor = (X - 7, "end") if right else (X + 7, "start")
                left, wide = (tx - 5.6 * len(label), tx) if right else (tx, tx + 5.6 * len(label))
                # Two kinds' p99 a few µs apart printed over each other: the later one a line higher
                ty = Y - 6
                while any(lo < wide and left < hi and abs(ty - b) < 11 for lo, hi, b in taken):
                    ty -= 11
                taken.append((left, wide, ty))
                out.append(
                    f'<text class="mark-label {cls}" x="{tx:.1f}" y="{ty:.1f}" font-size="10" '
                    f'text-anchor="{anchor}" fill="{color}">{html.escape(label)}</text>'
                )
        ends: list[float] = []  # each row's right end: a label that would overlap goes a row lower
        for x, label, color, attrs in sorted(self.tags):
            if a.x0 <= x <= a.x1:
                X, half = a.fx(x), 3.5 * len(label)
                row = next((i for i, end in enumerate(ends) if end < X - half - 2), len(ends))
                ends[row : row + 1] = [X + half]
                out.append(
                    f'<text {attrs} x="{X:.1f}" y="{a.T + 11 + 11 * (row % 3)}" font-size="10" '
                    f'font-weight="bold" text-anchor="middle" fill="{color}">{html.escape(label)}</text>'
                )
        for x, y, label, color in self.points:
            out.append(f'<circle class="mark" cx="{a.fx(x):.1f}" cy="{a.fy(y):.1f}" r="5" fill="{color}"/>')
            out.append(
                f'<text x="{a.fx(x) + 7:.1f}" y="{a.fy(y) - 7:.1f}" font-size="11" fill="{color}">'
                f"{html.escape(label)}</text>"
            )
        return out


class _Area:
    """A chart's plot area: its data bounds and the data -> pixel maps (linear or log)."""

    def __init__(self, c: Chart) -> None:
        self.x0, self.x1, self.y0, self.y1 = c._bounds()
        self.log_x, self.log_y, self.L, self.T = c.log_x, c.log_y, c.L, c.T
        self.pw, self.ph = c.width - c.L - c.R, c.height - c.T - c.B

    def fx(self, x: float) -> float:
        if self.log_x:
            x = max(x, self.x0)
            return self.L + self.pw * (math.log10(x) - math.log10(self.x0)) / (
                math.log10(self.x1) - math.log10(self.x0)
            )
        return self.L + self.pw * (x - self.x0) / (self.x1 - self.x0)

    def fy(self, y: float) -> float:
        if self.log_y:
            y = max(y, self.y0)
            return self.T + self.ph * (
                1 - (math.log10(y) - math.log10(self.y0)) / (math.log10(self.y1) - math.log10(self.y0))
            )
        return self.T + self.ph * (1 - (y - self.y0) / (self.y1 - self.y0))


def legend(names: list[tuple[str, str]]) -> str:
    """A row of colour swatches naming the series."""
    spans = "".join(
        f'<span><i class="sw" style="background:{c}"></i>{html.escape(n)}</span>' for n, c in names
    )
    return f'<div class="legend">{spans}</div>'
