"""The report of headroom results: the curve an `iofp headroom` sweep measured, one section each.

Per sweep: the verdict in plain words from `headroom.bound`; the latency p50 and p99 of each op
(reads, writes, commits) against the load scale, on a log2 axis, with the SLO's limits; the demanded
against the achieved rates per step; and every step's figures in a table. Every figure is the
record's (iofp's capture of each step, iofp/headroom_result.py). A step that was not run (above the
replayer's ceiling) or was stopped is marked as such and never drawn as the device's result.
"""

from __future__ import annotations

import html
import math
from dataclasses import dataclass
from pathlib import Path

from iofp import headroom_result as hr
from iofp import slo as slomod
from iofp.errors import BadInput
from iofp.slo import Slo, format_ns
from report.slo import slo_lines
from report.svg import Chart, Series, legend

OP_COLORS = {"read": "#3a6ea5", "write": "#c0392b", "commit": "#8e44ad"}
RATE_COLORS = {"IOPS": "#16a085", "commits/s": "#8e44ad"}  # commits: the commit latency's colour
SLO_KIND = {"read": "read", "write": "write", "commit": "sync calls"}  # report/results.py's names
# MARK_FILL: the shade of what is not the device's (a step not run or stopped), as page.html's tr.marked
PASS_COLOR, FAIL_COLOR, MARK_COLOR, MARK_FILL = "#27ae60", "#c0392b", "#7f8c8d", "#e6e2d8"
CHART_W, CHART_H = 600, 280
NOT_RUN = "not run: above the replayer's ceiling"


@dataclass
class Sweep:
    """One headroom result as the report reads it: where it was read from (shown, not opened), the
    record and the SLO its steps were judged by."""

    path: Path | str  # or the s3:// URL it was read from
    result: hr.HeadroomResult
    slo: Slo | None  # the record's own SLO, parsed

    @property
    def name(self) -> str:
        r = self.result
        return r.labels.get("device") or r.target.get("name") or Path(str(r.target.get("path"))).name


def sweep(root: Path, res: hr.HeadroomResult) -> Sweep:
    """The sweep of a headroom record read (by `hr.load`) from `root`, its SLO parsed (BadInput, one
    line, if the record's is damaged)."""
    try:
        slo = slomod.parse(res.slo, flag=f"{root / hr.RECORD}: slo") if res.slo else None
    except BadInput as e:
        raise BadInput(f"{e}; the record is damaged: run `iofp headroom` again") from None
    return Sweep(root, res, slo)


def drawn(res: hr.HeadroomResult) -> list[hr.Step]:
    """The steps the device ran and was judged on, one per scale (the confirming run where a scale
    ran twice: its verdict stands), in scale order. Not run and stopped steps are not the device's."""
    by_scale = {s.scale: s for s in res.steps if s.dir and (s.verdict in (hr.PASS, hr.FAIL) or _at_limit(s))}
    return [by_scale[x] for x in sorted(by_scale)]


def _at_limit(s: hr.Step) -> bool:
    """A step at the device's limit: its figures are the device's (the host did not limit it), so it
    is drawn, where the knee of the curve is."""
    return s.verdict == hr.INCONCLUSIVE and s.saturation == "limit"


def scale_text(x: float) -> str:
    """A step's scale, as it was asked (1.5x, 8.75x, 5000x)."""
    return f"{x:g}x"


def measured_scale(x: float) -> str:
    """A measured scale (the ceiling's): three figures, never an exponent (2,041x, 90.9x)."""
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def verdict_line(res: hr.HeadroomResult) -> str:
    """'headroom 3x (failed at 4x: the SLO: ...)', in plain words from `headroom.bound`."""
    h = res.headroom
    if h is None or h.bound == "none":
        return "no headroom measured: no step ran"
    f = scale_text(h.factor) if h.factor is not None else None
    if h.bound == "limit":  # it kept nearly all the rate above the factor: neither held nor failed
        held = f"headroom {f}" if f else "no headroom shown"
        kept = h.finding[max(h.finding.find("it kept "), 0) :]  # the finding says it whole below
        return f"{held}, at its limit at {scale_text(h.failed_at or 0)}: {kept}"
    if h.bound in hr.UNJUDGED_BOUNDS:  # the host limited it, or its runs disagreed: not the device's
        held = f"headroom at least {f}" if f else "no headroom shown"
        return f"{held}, inconclusive above: {h.finding}"
    if h.bound == "max-scale":
        top = scale_text(res.settings.get("max_scale") or h.factor)
        return f"headroom at least {f}: every scale asked passed, up to --max-scale {top}"
    if h.bound == "budget" and res.status != "complete":  # the search stopped, but by a signal
        return f"headroom at least {f}: the sweep was stopped ({res.interrupted}) before a step failed"
    if h.bound == "budget":
        return f"headroom at least {f}: the step budget ran out before a step failed"
    why = _why(res, h.failed_at)
    at = f"failed at {scale_text(h.failed_at)}" if h.failed_at is not None else "failed"
    if h.bound == "first step":
        return f"no headroom: {at}, today's load ({why})"
    return f"headroom {f} ({at}: {why})"


def _why(res: hr.HeadroomResult, scale: float | None) -> str:
    """Why the step at `scale` failed, naming whose limit it was: rate first (a saturated device
    misses latency too: the rate is the cause)."""
    steps = [s for s in res.steps if s.scale == scale and s.verdict != hr.PASS]
    if not steps:
        return "see the steps below"
    s = steps[-1]  # the confirming run, whose verdict stands
    if s.verdict == hr.ABOVE_CEILING or s.saturation == "replayer":
        return (
            "the replayer's ceiling: fio could not issue that load on this machine, so it is not the "
            f"device's limit ({'; '.join(s.rate_failures)})"
        )
    if s.rate_failures:
        return f"the device's rate: it did not keep the demanded rate ({'; '.join(s.rate_failures)})"
    return f"the SLO: {'; '.join(s.slo_failures)}"


def headroom_section(sw: Sweep, slo: Slo | None) -> str:
    res = sw.result
    lines, lines_note = _slo_for_lines(sw, slo)
    finding = res.headroom.finding if res.headroom else "-"
    return "\n".join([
        f'<section class="headroom" data-name="{html.escape(sw.name)}">',
        f"<h2>headroom: {html.escape(sw.name)} ({html.escape(str(res.target.get('path', '-')))})</h2>",
        _provenance(sw),
        f'<p class="verdict headroom-verdict">{html.escape(verdict_line(res))}</p>',
        f'<p class="note">the sweep\'s finding: {html.escape(finding)}</p>',
        _charts(res, lines), f'<p class="note">{html.escape(lines_note)}</p>',
        steps_table(res), "</section>",
    ])  # fmt: skip


def _provenance(sw: Sweep) -> str:
    r, d = sw.result, sw.result.demand
    today = f"today (1x): {d['iops']:,.0f} IOPS" if d.get("iops") else "today's load: not measured"
    if d.get("commits_per_s"):
        today += f", {d['commits_per_s']:,.0f} commits/s"
    status = "complete" if r.status == "complete" else f"PARTIAL: stopped by {r.interrupted}"
    parts = [str(sw.path), f"target {r.target.get('path')} ({r.target.get('kind', '?')})",
             f"selection {r.selection}", today, _ceiling(r.ceiling), f"iofp {r.tool_version}, {r.started}",
             status]  # fmt: skip
    return f'<p class="prov">{" · ".join(html.escape(str(p)) for p in parts)}</p>'


def _ceiling(c: hr.Ceiling) -> str:
    if c.status != "measured" or not c.total_iops:
        return f"replayer's ceiling not measured ({c.reason})"
    limit = c.scale_limit()
    return f"replayer's ceiling {c.total_iops:,.0f} I/Os and sync calls/s" + (
        f" ({measured_scale(limit)} today's)" if limit else ""
    )


def _slo_for_lines(sw: Sweep, given: Slo | None) -> tuple[Slo | None, str]:
    """The SLO whose limits the latency chart draws, and a note saying which one it is."""
    judged = sw.result.slo or "none"
    if given is None:
        return sw.slo, f"SLO lines: {judged}, the sweep's own (from {hr.RECORD}; --slo draws others)"
    note = f"SLO lines: --slo {given.text}"
    if given.text != judged:
        note += f"; the sweep judged its steps against {judged}"
    return given, note


def _charts(res: hr.HeadroomResult, slo: Slo | None) -> str:
    """The latency and the rate charts side by side, over one load axis (every step's scale, so
    that the marked ones show too)."""
    steps = drawn(res)
    scales = [s.scale for s in res.steps]
    if not scales:
        return "<p>No step ran: nothing to draw.</p>"
    x_range = (min(scales), max(max(scales), 2 * min(scales)))  # one step: still an axis to read
    ops = [op for op in hr.OPS if any(_lat(s, op, "p99") is not None for s in steps)]
    lat = legend([(f"{op} latency", OP_COLORS[op]) for op in ops]) + latency_chart(res, steps, slo, x_range)
    rates = [("IOPS", RATE_COLORS["IOPS"])] + [("commits/s", RATE_COLORS["commits/s"])] * any(
        s.commits_per_s is not None for s in steps
    )
    rate = legend(rates) + rate_chart(res, steps, x_range)
    return f'<div class="row"><div>{lat}</div><div>{rate}</div></div>'


def _lat(s: hr.Step, op: str, pct: str) -> float | None:
    """A step's latency in µs (the record keeps ns)."""
    v = (s.latency_ns.get(op) or {}).get(pct)
    return None if v is None else v / 1e3


def _axis(title: str, y_label: str, x_range: tuple[float, float]) -> Chart:
    """A chart over the load scale: log2 x axis (the sweep doubles), its ticks the powers of two."""
    c = Chart(title, "load (x today's rate, log2 scale)", y_label, width=CHART_W, height=CHART_H)
    c.log_x, c.x_range = True, x_range
    lo, hi = math.floor(math.log2(x_range[0])), math.ceil(math.log2(max(x_range[1], x_range[0] * 2)))
    every = max(1, math.ceil((hi - lo + 1) / 10))  # at most ~10 ticks on a long axis
    c.x_ticks = [(2.0**k, scale_text(2.0**k)) for k in range(lo, hi + 1, every)
                 if x_range[0] <= 2.0**k <= x_range[1]]  # fmt: skip
    return c


def latency_chart(
    res: hr.HeadroomResult, steps: list[hr.Step], slo: Slo | None, x_range: tuple[float, float]
) -> str:
    c = _axis(
        "latency per op vs load: p50 (thin) and p99, iofp's capture", "latency (µs, log scale)", x_range
    )
    c.log_y = True
    xs = [s.scale for s in steps]
    ys = [v for s in steps for op in hr.OPS for p in ("p50", "p99") if (v := _lat(s, op, p))]
    ys += [y for op in hr.OPS for y, _, _ in slo_lines(slo, SLO_KIND[op])]
    if ys:  # margins: the lowest p50 off the frame, an SLO line on top below the vertical lines' labels
        c.y_range = (min(ys) / 1.5, max(ys) * 3)
    for op in hr.OPS:
        p99 = [_lat(s, op, "p99") for s in steps]
        if any(v is not None for v in p99):
            c.series.append(
                Series(
                    f"{op} p50", xs, [_lat(s, op, "p50") for s in steps], OP_COLORS[op], width=0.9, dots=True
                )
            )
            c.series.append(Series(f"{op} p99", xs, p99, OP_COLORS[op], width=2.0, dots=True))
            c.hlines += [ln for ln in slo_lines(slo, SLO_KIND[op]) if ln not in c.hlines]
    _mark(c, res)
    return c.svg()


def rate_chart(res: hr.HeadroomResult, steps: list[hr.Step], x_range: tuple[float, float]) -> str:
    c = _axis("demanded (dashed) vs achieved per step, iofp's capture", "per second", x_range)
    xs = [s.scale for s in steps]
    pairs = (
        ("IOPS", "demanded_iops", "achieved_iops"),
        ("commits/s", "demanded_commits_per_s", "commits_per_s"),
    )
    for name, dem, ach in pairs:
        color = RATE_COLORS[name]
        if any(getattr(s, ach) is not None for s in steps):
            c.series.append(
                Series(f"demanded {name}", xs, [getattr(s, dem) for s in steps], color, dash="5 3")
            )
            c.series.append(
                Series(f"achieved {name}", xs, [getattr(s, ach) for s in steps], color, dots=True)
            )
    _mark(c, res)
    return c.svg()


def _mark(c: Chart, res: hr.HeadroomResult) -> None:
    """The factor and the first failure as reference lines; the scales above the replayer's
    ceiling shaded (not run); a stopped step a grey line (its figures are not the device's)."""
    h = res.headroom
    if h is not None and h.factor is not None:
        c.vlines.append((h.factor, f"headroom {scale_text(h.factor)}", PASS_COLOR))
    if h is not None and h.failed_at is not None and any(s.scale == h.failed_at for s in drawn(res)):
        said = "at its limit" if h.bound == "limit" else "failed at"
        c.vlines.append((h.failed_at, f"{said} {scale_text(h.failed_at)}", FAIL_COLOR))
    above = [s.scale for s in res.steps if s.verdict == hr.ABOVE_CEILING]
    limit = res.ceiling.scale_limit()
    if above and limit is not None:
        lo = min(limit, *above)
        c.spans.append((lo, c.x_range[1] if c.x_range else max(above), MARK_FILL, 'class="marked ceiling"'))
        c.vlines.append((lo, f"replayer's ceiling {measured_scale(limit)}: steps above not run", MARK_COLOR))
    for s in res.steps:
        if s.verdict == hr.STOPPED:
            c.vlines.append(
                (s.scale, f"{scale_text(s.scale)} stopped ({res.interrupted}): not drawn", MARK_COLOR)
            )


def steps_table(res: hr.HeadroomResult) -> str:
    """Every step in scale order (a confirming run after the first), with the record's figures."""
    ops = [op for op in hr.OPS if any(s.latency_ns.get(op, {}).get("p99") is not None for s in res.steps)]
    head = ["scale", "demanded IOPS", "achieved IOPS", "demanded commits/s", "achieved commits/s"]
    head += [f"{op} {p}" for op in ops for p in ("p50", "p99", "p99.9")] + ["verdict"]
    rows = [_step_row(s, ops) for s in sorted(res.steps, key=lambda s: s.scale)]
    return (
        f'<table class="steps"><tr>{"".join(f"<th>{h}</th>" for h in head)}</tr>{"".join(rows)}</table>'
        '<p class="note">latency p50/p99/p99.9 and achieved rates: iofp\'s capture of each step; grey rows '
        "are steps that were not run or were stopped: their figures are not the device's</p>"
    )


def _step_row(s: hr.Step, ops: list[str]) -> str:
    def num(v: float | None) -> str:
        return "-" if v is None else f"{v:,.0f}"

    cells = [scale_text(s.scale) + (" (again)" if s.phase == "confirm" else ""), num(s.demanded_iops),
             num(s.achieved_iops), num(s.demanded_commits_per_s), num(s.commits_per_s)]  # fmt: skip
    cells += [format_ns((s.latency_ns.get(op) or {}).get(p)) for op in ops for p in ("p50", "p99", "p99.9")]
    kind = {hr.PASS: "pass", hr.FAIL: "fail"}.get(s.verdict, "marked")
    tds = "".join(f"<td>{html.escape(c)}</td>" for c in cells)
    return (
        f'<tr class="step {kind}" data-scale="{s.scale:g}" data-phase="{html.escape(s.phase)}">{tds}'
        f'<td class="why">{html.escape(step_verdict(s))}</td></tr>'
    )


def step_verdict(s: hr.Step) -> str:
    if s.verdict == hr.ABOVE_CEILING:
        return f"{NOT_RUN} ({'; '.join(s.rate_failures)})"
    if s.verdict == hr.STOPPED:
        return "stopped by a signal: partial figures, not the device's"
    if s.verdict == hr.PASS:
        return "pass"
    if _at_limit(s):  # as the terminal says it
        return f"inconclusive: {s.limit}: another identical run could keep it all"
    if s.verdict == hr.INCONCLUSIVE:
        return f"inconclusive: {s.limit}; rerun on a quiet host"
    why = [hr.whose_rate(s) + "; ".join(s.rate_failures)] * bool(s.rate_failures) + s.slo_failures
    return "FAIL: " + "; ".join(why)
