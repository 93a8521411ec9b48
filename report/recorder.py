"""The report of a flight recorder (`iofp report DIR` on `iofp record -o DIR`): its per-second summary
over the whole run as charts per device (rates, and the p99 of each op with its mean), the incidents
it saved shaded where they lie and the window that fired each marked, and the incidents' table.

`recorder_page(view, incidents)` takes the summary as `iofp iostat` computes it (record.iostat's
document) and the incidents (record.incidents): documents, never paths.
"""

from __future__ import annotations

import html
import math
import time
from typing import Any

from iofp.slo import format_ns
from report.page import page
from report.svg import Chart, Series, legend

W, H = 1100, 220
INCIDENT = "#f6c9c9"
FIRED = "#d62728"
RATES = (("r_per_s", "reads/s", "#1f77b4"), ("w_per_s", "writes/s", "#ff7f0e"),
         ("f_per_s", "flushes/s", "#2ca02c"), ("c_per_s", "commits/s", "#9467bd"))  # fmt: skip
LATENCY = (("r_p99_ns", "read p99", "#1f77b4"), ("w_p99_ns", "write p99", "#ff7f0e"),
           ("f_p99_ns", "flush p99", "#2ca02c"), ("c_p99_ns", "commit p99", "#9467bd"))  # fmt: skip


def _clock(t: float, span: float) -> str:
    return time.strftime("%H:%M:%S" if span <= 86400 else "%m-%d %H:%M", time.localtime(t))


def _chart(view: dict[str, Any], rows: list[dict[str, Any]], incidents: list[dict[str, Any]],
           title: str, unit: str, series: tuple, scale: float, log_y: bool) -> str:  # fmt: skip
    lo, hi = view["lo_s"], view["hi_s"]
    ticks = [(lo + (hi - lo) * k / 6, _clock(lo + (hi - lo) * k / 6, hi - lo)) for k in range(6)]
    c = Chart(title, "local time", unit, width=W, height=H, log_y=log_y, x_range=(lo, hi), x_ticks=ticks)
    for inc in incidents:
        c.spans.append((inc["start_ns"] / 1e9, inc["end_ns"] / 1e9, INCIDENT, ""))
        c.vlines.append((inc["window_end_ns"] / 1e9, inc["name"], FIRED))
    names = []
    peak: tuple[float, float, str, str] | None = None  # (x, y, series, color)
    for key, name, color in series:
        ys = [r[key] * scale if r.get(key) is not None else None for r in rows]
        if any(y for y in ys):
            xs = [r["t"] + view["step_s"] / 2 for r in rows]
            c.series.append(Series(name, xs, ys, color=color))
            names.append((name, color))
            top = max(range(len(ys)), key=lambda i: ys[i] or 0)
            if peak is None or (ys[top] or 0) > peak[1]:
                peak = (xs[top], ys[top] or 0, name, color)
    if log_y and peak is not None and peak[1] > 0:
        # the spike is what the page is read for: the axis ends on a labelled decade at least 3x above
        # it (room for its label), and the highest point says its value (a top at the data's max drew
        # it along the frame, unread)
        lows = [y for s in c.series for y in s.ys if y]
        c.y_range = (min(lows), 10 ** math.ceil(math.log10(peak[1] * 3)))
        c.points.append((peak[0], peak[1], f"peak: {peak[2]} {format_ns(peak[1] / scale)}", peak[3]))
    return c.svg() + legend(names)


def _incidents_table(incidents: list[dict[str, Any]]) -> str:
    if not incidents:
        return "<p>No incident saved in this span.</p>"
    left = 'style="text-align:left"'  # the why is a sentence, read from its start
    head = f"<tr><th>incident</th><th {left}>why</th><th>window ended</th><th>span</th><th>state</th></tr>"
    rows = [head]
    for i in incidents:
        why = "; ".join(i["failures"][:3]) or i["reason"]
        span = f'{(i["end_ns"] - i["start_ns"]) / 1e9:.0f} s'
        state = "written" if i["complete"] else "being written"
        if i.get("cut"):
            state += f" (cut: {i['cut']})"
        rows.append(f"<tr><td>{html.escape(i['name'])}</td><td {left}>{html.escape(why)}</td>"
                    f"<td>{_clock(i['window_end_ns'] / 1e9, 0)}</td><td>{span}</td>"
                    f"<td>{html.escape(state)}</td></tr>")  # fmt: skip
    return '<table class="fleet">' + "".join(rows) + "</table>"


def recorder_page(view: dict[str, Any], incidents: list[dict[str, Any]]) -> str:
    lo, hi = view["lo_s"], view["hi_s"]
    shown = [i for i in incidents if i["end_ns"] / 1e9 > lo and i["start_ns"] / 1e9 < hi]
    span = f"{time.strftime('%Y-%m-%d %H:%M:%S', time.localtime(lo))} to {_clock(hi, hi - lo)}"
    out = [f"<h1>Flight recorder: {html.escape(view['root'])}</h1>",
           f'<div class="prov">{span}, one point per {view["step_s"]} s; percentiles from the '
           f'per-second histograms, within {view["percentile_error"]:.2%} · incidents shaded, the '
           f"window that fired each marked</div>"]  # fmt: skip
    for dev in sorted({r["device"] for r in view["rows"]} - {"*"}) or ["*"]:
        rows = [r for r in view["rows"] if r["device"] == dev]
        out.append(f"<h2>{html.escape(dev)}</h2>")
        out.append(_chart(view, rows, shown, f"{dev}: requests per second", "/s", RATES, 1.0, False))
        out.append(_chart(view, rows, shown, f"{dev}: p99 latency per op", "ms", LATENCY, 1e-6, True))
    out.append("<h2>Incidents</h2>" + _incidents_table(shown))
    return page(f"flight recorder {view['root']}", "\n".join(out))
