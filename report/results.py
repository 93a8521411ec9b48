"""The report of results: replay results (one, or a comparison of several candidates), probe and
headroom results, as one self-contained HTML page (inline SVG, no script, no network).

Per replay candidate: the SLO verdict, the demanded and achieved rates, iofp's measured latency
percentiles (from its capture of the run, as `iofp compare` shows them), the achieved against the
demanded IOPS per window (the fidelity measurement's series), the latency p50 and p99 over time (log
axis) and the tail of each kind of request (reads, writes, flushes and the sync calls, i.e. the
commits: exceedance curves, p99 and p99.9 marked), drawn from the run's capture with the SLO's limits
marked; with several candidates, each one's commit tail in a panel of its own on shared axes. Per
probe: the four-cell table beside the queue-depth sweep (IOPS and p99 against depth, the knee
marked). Per headroom sweep: its curve (report/headroom.py). The results come in read through their
contracts (iofp/replay_result.py, probe_result.py, headroom_result.py), the curves from the run's
capture (report/curves.py).
"""

from __future__ import annotations

import html
from dataclasses import dataclass, field
from pathlib import Path

from iofp import probe_result as pr
from iofp import replay_result as rr
from iofp.slo import Slo, format_ns
from report import headroom as rh
from report.curves import Curves
from report.page import page
from report.slo import slo_lines
from report.svg import PALETTE, Chart, Series, legend
from report.trace import tail_chart

KINDS = ("read", "write", "flush", "sync calls")
COLORS = dict(zip(KINDS, PALETTE, strict=False))


@dataclass
class Candidate:
    """A replay result as the report reads it: its name, where it was read from (shown, not opened),
    the record and its capture's latency curves (None without a capture)."""

    name: str
    path: Path | str  # or the s3:// URL it was read from
    result: rr.ReplayResult
    curves: Curves | None


class _Figures:
    """A result's measured figures as the SLO grammar reads them."""

    def __init__(self, res: rr.ReplayResult) -> None:
        m = res.measured
        self.m = m
        self.demanded_iops = res.demanded.iops
        self.achieved_iops = m.achieved_iops if m else None
        self.commits_per_s = m.commits_per_s if m else None

    def latency(self, op: str, pct: str) -> float | None:
        return self.m.latency(op, pct) if self.m else None


def _slo_verdict(c: Candidate, slo: Slo | None) -> str:
    if not slo:
        return "<p>No SLO given (pass --slo to judge).</p>"
    fails = slo.failures(_Figures(c.result))
    if not fails:
        return f'<p class="slo pass">SLO <code>{html.escape(slo.text)}</code>: <b>meets it</b></p>'
    why = html.escape("; ".join(fails))
    return f'<p class="slo fail">SLO <code>{html.escape(slo.text)}</code>: <b>misses it</b>: {why}</p>'


def _rates_table(c: Candidate) -> str:
    res, m = c.result, c.result.measured
    dem = res.demanded

    def f(v: float | None, spec: str) -> str:
        return "-" if v is None else format(v, spec)

    rows = [
        ("IOPS (reads, writes, discards)", f(dem.iops, ",.0f"), f(m.achieved_iops if m else None, ",.0f")),
        ("MB/s", f(dem.mbps, ",.1f"), f(m.achieved_mbps if m else None, ",.1f")),
        ("commits/s (sync calls)", f(dem.commits_per_s, ",.0f"), f(m.commits_per_s if m else None, ",.0f")),
    ]
    body = "".join(f"<tr><td>{a}</td><td>{b}</td><td>{x}</td></tr>" for a, b, x in rows)
    head = "<tr><th>per second</th><th>demanded</th><th>achieved (iofp's capture)</th></tr>"
    lat = ["<tr><th>latency</th><th>p50</th><th>p99</th><th>p99.9</th><th>requests</th></tr>"]
    if m is not None:
        named = [(op, m.ops[op]) for op in ("read", "write", "flush") if op in m.ops]
        if m.commit_from == "sync calls" and "all" in m.syncs:
            named.append(("commit (sync call, entry to return)", m.syncs["all"]))
        for name, x in named:
            lat.append(
                f"<tr><td>{html.escape(name)}</td><td>{format_ns(x.p50)}</td><td>{format_ns(x.p99)}</td>"
                f"<td>{format_ns(x.p999)}</td><td>{x.count:,}</td></tr>"
            )
    src = f"latency from: {m.source}" if m else "not measured (no capture of the run)"
    return (
        f'<div class="tables"><table class="rates">{head}{body}</table>'
        f'<table class="lat">{"".join(lat)}</table></div><p class="note">{html.escape(src)}</p>'
    )


def _rate_chart(c: Candidate) -> str:
    fid = c.result.fidelity or {}
    series = fid.get("iops_series") or []
    if not series:
        return ""
    w = float(fid.get("window_s") or 1.0)
    xs = [(i + 0.5) * w for i in range(len(series))]
    chart = Chart("achieved vs demanded IOPS, per window", f"seconds ({w:g} s windows)", "IOPS")
    chart.series += [
        Series("demanded", xs, [e for e, _ in series], "#7f8c8d", dash="4 3"),
        Series("achieved", xs, [r for _, r in series], "#3a6ea5"),
    ]
    return chart.svg()


def _latency_charts(c: Candidate, slo: Slo | None) -> str:
    cv = c.curves
    if cv is None:
        return "<p>No capture of the run: no latency curves.</p>"
    time_chart = Chart("latency p50 (thin) and p99 over time", f"seconds ({cv.window_s:g} s windows)",
                       "µs (log scale)", attrs='data-chart="latency"')  # fmt: skip
    time_chart.log_y = True
    shown = []
    for kind in KINDS:
        if kind in cv.over_time:
            xs, p50, p99 = cv.over_time[kind]
            color = COLORS[kind]
            time_chart.series += [Series(f"{kind} p50", xs, list(p50), color, width=0.8),
                                  Series(f"{kind} p99", xs, list(p99), color, width=1.8)]  # fmt: skip
            shown.append((kind, color))
        for line in slo_lines(slo, kind):
            if line not in time_chart.hlines:
                time_chart.hlines.append(line)
    tails = {k: cv.cdf[k] for k in KINDS if k in cv.cdf}
    tail = tail_chart("latency tails: share of requests slower", tails, slo, colors=COLORS,
                      attrs='data-chart="tails"')  # fmt: skip
    return legend(shown) + f'<div class="row">{time_chart.svg()}{tail}</div>'


def candidate_section(c: Candidate, slo: Slo | None) -> str:
    res = c.result
    sel = res.selection.get("how", "")
    target = res.target.get("path", "-")
    status = "" if res.status == "complete" else f" · <b>partial</b>: {html.escape(str(res.interrupted))}"
    fid = res.fidelity or {}
    verdict = f"{fid.get('verdict', fid.get('status', '-'))}, timing {fid.get('timing', '-')}"
    return "\n".join([
        f'<section class="candidate" data-name="{html.escape(c.name)}"><h2>{html.escape(c.name)}</h2>',
        f'<p class="prov">{html.escape(str(c.path))} · target {html.escape(str(target))} · '
        f"selection {html.escape(sel)} · fidelity {html.escape(verdict)}{status}</p>",
        _slo_verdict(c, slo), _rates_table(c), _rate_chart(c), _latency_charts(c, slo), "</section>",
    ])  # fmt: skip


def _commit_multiples(cands: list[Candidate], slo: Slo | None) -> str:
    """Each candidate's commit (sync call) latency tail in a panel of its own, all on the same axes:
    the fsync ladder, read across the panels without eight curves over each other."""
    have = [c for c in cands if c.curves and "sync calls" in c.curves.cdf]
    if not have:
        return ""
    every = [q for c in have if c.curves for q in c.curves.cdf["sync calls"][0] if q > 0]
    limits = [x for x, _, _ in slo_lines(slo, "sync calls")]
    span = (min(every + limits) / 1.5, max(every + limits) * 1.5)  # one x axis for every panel
    panels = []
    for c in have:
        assert c.curves is not None
        tails = {"sync calls": c.curves.cdf["sync calls"]}
        panels.append(tail_chart(f"{c.name}: commit latency tail", tails, slo, width=340, height=240,
                                 attrs=f'data-candidate="{html.escape(c.name)}"', x_range=span))  # fmt: skip
    return (
        "<h2>Commit latency, one panel per candidate (sync calls, entry to return)</h2>"
        f'<div class="row" id="commit-multiples">{"".join(panels)}</div>'
        '<p class="note">The share of commits slower than each latency, on the same axes in every panel; '
        "p99 and p99.9 marked, the SLO's commit limit drawn.</p>"
    )


def probe_section(path: Path | str, res: pr.ProbeResult) -> str:
    name = res.labels.get("device") or Path(res.target.path).name
    rows = ['<tr><th>cell</th><th>what</th><th>IOPS</th><th>MB/s</th><th>p50 µs</th><th>p99 µs</th>'
            "<th>p99.9 µs</th><th>from</th></tr>"]  # fmt: skip
    for cell in res.cells:
        run = res.run(cell.run)
        f, cap = run.fio, run.capture
        if cap is not None and cap.commits_per_s is not None:  # a commit cell: iofp's capture
            vals = [cap.commits_per_s, f.mb_per_s if f else None, cap.fsync_p50_us, cap.fsync_p99_us,
                    cap.fsync_p99_9_us]  # fmt: skip
            src = "iofp*"
        else:
            vals = [f.iops, f.mb_per_s, f.p50_us, f.p99_us, f.p99_9_us] if f else [None] * 5
            src = "fio"
        cells = "".join(f"<td>{'-' if v is None else format(v, ',.1f')}</td>" for v in vals)
        rows.append(
            f"<tr><td>{cell.cell}</td><td>{html.escape(cell.label)}</td>{cells}<td>{html.escape(src)}</td></tr>"
        )
    table = (
        f'<div><table class="cells">{"".join(rows)}</table><p class="note">* a commit cell: IOPS is '
        "commits/s and the latency the fsync's, from iofp's capture of the run</p></div>"
    )
    charts = ""
    if res.sweep and res.sweep.points:
        pts = res.sweep.points
        qd = [float(p.iodepth) for p in pts]
        iops = Chart(
            "queue-depth sweep: IOPS (fio's)", "queue depth (log scale)", "IOPS", width=400, height=200
        )
        p99 = Chart("queue-depth sweep: p99 (fio's)", "queue depth (log scale)", "µs", width=400, height=200)
        iops.log_x = p99.log_x = p99.log_y = True
        iops.series.append(Series("IOPS", qd, [p.iops for p in pts], "#3a6ea5"))
        p99.series.append(Series("p99", qd, [p.p99_us for p in pts], "#c0392b"))
        if (k := res.sweep.knee) is not None:
            at = next(p for p in pts if p.iodepth == k.iodepth)
            iops.points.append((float(k.iodepth), at.iops, f"knee QD{k.iodepth}", "#e67e22"))
            iops.vlines.append((float(k.iodepth), "", "#e67e22"))
            p99.vlines.append((float(k.iodepth), f"knee QD{k.iodepth}", "#e67e22"))
        charts = iops.svg() + p99.svg()
        charts += f'<p class="note">{html.escape(res.sweep.finding)}</p>'
    warn = "".join(f"<li>{html.escape(w)}</li>" for w in res.warnings)
    return "\n".join([
        f'<section class="probe" data-name="{html.escape(name)}"><h2>probe: {html.escape(name)}</h2>',
        f'<p class="prov">{html.escape(str(path))} · target {html.escape(res.target.path)} · '
        f"{html.escape(res.fio_version)} · {'complete' if res.complete else 'partial'}</p>",
        f'<div class="row">{table}<div class="sweep">{charts}</div></div>',
        f"<ul>{warn}</ul></section>" if warn else "</section>",
    ])  # fmt: skip


@dataclass
class Results:
    """The results a report draws, by what wrote them, each read through its contract."""

    cands: list[Candidate] = field(default_factory=list)  # iofp replay
    probes: list[tuple[Path | str, pr.ProbeResult]] = field(default_factory=list)  # iofp probe
    sweeps: list[rh.Sweep] = field(default_factory=list)  # iofp headroom

    def what(self) -> str:
        kinds = f"{len(self.cands)} replay result(s), {len(self.probes)} probe result(s)"
        return kinds + (f", {len(self.sweeps)} headroom result(s)" if self.sweeps else "")


def results_page(g: Results, slo: Slo | None) -> str:
    """The page of replay, probe and headroom results (a comparison when there are several)."""
    cands, probes = g.cands, g.probes
    names = [c.name for c in cands] + [p.labels.get("device") or Path(p.target.path).name for _, p in probes]
    names += [f"headroom of {sw.name}" for sw in g.sweeps]
    head = ("comparison: " if len(names) > 1 else "") + ", ".join(names)
    parts = [f"<h1>{html.escape(head)}</h1>"]
    if slo:
        parts.append(
            f'<p id="slo">SLO <code>{html.escape(slo.text)}</code>: every term must hold '
            "(<code>p99&lt;=2ms</code> on reads and writes each; <code>fsync.</code>, "
            "<code>commit.</code>: the sync calls; <code>iops&gt;=demanded</code>: the trace's rate "
            "kept).</p>"
        )
    if len(cands) > 1:
        parts.append(_commit_multiples(cands, slo))
    parts += [rh.headroom_section(sw, slo) for sw in g.sweeps]
    parts += [candidate_section(c, slo) for c in cands]
    parts += [probe_section(p, r) for p, r in probes]
    return page(head, "\n".join(parts))
