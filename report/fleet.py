"""The fleet's quarterly page: per service, the spread of the headline figures across hosts and days,
a chart of each host's commit p99 day by day (the outlier stands apart), and the outliers.

`fleet_page(view)` takes the view `iofp fleet` computes (fleet.quarterly: a document, never paths).
"""

from __future__ import annotations

import html
from typing import Any

from report.page import page
from report.svg import Chart, Series, fmt, legend

COLORS = ["#1f77b4", "#ff7f0e", "#2ca02c", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f", "#bcbd22"]
OUTLIER = "#d62728"
FIGURES = {"iops": "IOPS", "commit_p99_us": "commit p99 (µs)", "flush_p99_us": "flush p99 (µs)",
           "peak_to_mean": "peak/mean, 1 s bins"}  # fmt: skip


def _spread_table(figures: dict[str, Any]) -> str:
    head = "<tr><th>figure</th>" + "".join(f"<th>{c}</th>" for c in ("min", "p25", "median", "p75", "max"))
    rows = [head + "</tr>"]
    for key, label in FIGURES.items():
        s = figures.get(key)
        cells = [fmt(s[c]) for c in ("min", "p25", "median", "p75", "max")] if s else ["-"] * 5
        rows.append(f"<tr><td>{html.escape(label)}</td>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    return '<table class="fleet">' + "".join(rows) + "</table>"


def _host_chart(service: str, days: list[dict[str, Any]], flagged: set[str]) -> str:
    dates = sorted({d["date"] for d in days})
    hosts = sorted({d["host"] for d in days})
    chart = Chart(f"{service}: commit p99 per host and day", "day", "µs", width=720, height=260,
                  x_ticks=[(i, d[5:]) for i, d in enumerate(dates)])  # fmt: skip
    names = []
    for i, host in enumerate(hosts):
        by_date = {d["date"]: d["figures"]["commit_p99_us"] for d in days if d["host"] == host}
        color = OUTLIER if host in flagged else COLORS[i % len(COLORS)]
        xs, ys = [float(i) for i in range(len(dates))], [by_date.get(d) for d in dates]
        width = 2.4 if host in flagged else 1.4
        chart.series.append(Series(host, xs, ys, color=color, dots=True, width=width))
        names.append((host + (" (outlier)" if host in flagged else ""), color))
    return chart.svg() + legend(names)


def fleet_page(view: dict[str, Any]) -> str:
    out = [f"<h1>Fleet review: {view['traces']} traces</h1>",
           f'<div class="prov">{view["made"]} fingerprinted, {view["current"]} current, '
           f'{len(view["unreadable"])} unreadable · {html.escape(view["rule"])}</div>']  # fmt: skip
    for o in view["outliers"]:
        who = html.escape(f'{o["service"]} {o["host"]}')
        what = html.escape(FIGURES[o["figure"]])
        out.append(f'<div class="verdict outlier"><b>{who}</b>: {what} {fmt(o["host_median"])}, '
                   f'{o["ratio"]:.1f}x its peers\' {fmt(o["peers_median"])}: {html.escape(o["why"])}</div>')
    for service, s in view["services"].items():
        days = [d for d in view["host_days"] if d["service"] == service]
        flagged = {o["host"] for o in view["outliers"] if o["service"] == service}
        out.append(f"<h2>{html.escape(service)}</h2><p>{s['hosts']} hosts, {s['host_days']} host-days, "
                   f"{s['dates'][0]} to {s['dates'][1]}</p>")  # fmt: skip
        out.append(_spread_table(s["figures"]) + _host_chart(service, days, flagged))
    for u in view["unreadable"]:
        out.append(f'<div class="verdict"><b>unreadable:</b> {html.escape(u["error"])}</div>')
    return page("fleet review", "\n".join(out))
