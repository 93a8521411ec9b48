"""Text for the terminal: a headroom sweep's curve, one line per step, and what it found."""

from __future__ import annotations

import os
import textwrap

from iofp import headroom_result as hr
from iofp.slo import format_ns

# (heading, width, op whose p99 it shows): 64 columns and the verdict fit 80
COLUMNS = (("scale", 6, None), ("IOPS dem", 9, None), ("achieved", 9, None), ("commits/s", 10, None),
           ("read p99", 9, "read"), ("write p99", 10, "write"), ("commit p99", 11, "commit"))  # fmt: skip


def _num(v: float | None) -> str:
    return "-" if v is None else f"{v:,.0f}"


def _verdict(s: hr.Step) -> str:
    if s.verdict == hr.FAIL and s.saturation:
        return f"FAIL:{s.saturation}"
    if s.verdict == hr.INCONCLUSIVE:
        return f"?:{s.saturation or 'host'}"
    return {hr.PASS: "pass", hr.FAIL: "FAIL", hr.ABOVE_CEILING: "ceiling"}.get(s.verdict, s.verdict)


def curve(res: hr.HeadroomResult) -> list[str]:
    """The steps in scale order: demanded vs achieved, p99 per op (iofp's capture), the verdict. A
    column no step has a figure for (reads of a write-only selection) is left out."""
    steps = sorted(res.steps, key=lambda s: s.scale)  # stable: a confirming run after the first
    p99 = lambda s, op: (s.latency_ns.get(op) or {}).get("p99")  # noqa: E731
    cols = [c for c in COLUMNS if c[2] is None or any(p99(s, c[2]) is not None for s in steps)]
    lines = ["".join(name.rjust(w) for name, w, _ in cols) + "  verdict"]
    for s in steps:
        fixed = [f"{s.scale:g}x", _num(s.demanded_iops), _num(s.achieved_iops), _num(s.commits_per_s)]
        cells = fixed + [format_ns(p99(s, op)) for _, _, op in cols[len(fixed) :]]
        row = "".join(c.rjust(w) for c, (_, w, _) in zip(cells, cols, strict=True))
        lines.append(f"{row}  {_verdict(s)}" + (" (again)" if s.phase == "confirm" else ""))
    return lines


def summary(res: hr.HeadroomResult, width: int | None = None) -> str:
    width = width or _width()
    d = res.demand
    lines = []
    if d:
        commits = f", {d['commits_per_s']:,.0f} commits/s" if d.get("commits_per_s") else ""
        lines.append(
            f"selection: {res.selection}; today (1x): {d['iops']:,.0f} IOPS{commits} over {d['span_s']:.2f} s"
        )
    lines.append(f"SLO: {res.slo}; a step passes when it holds and the replay kept the demanded rate")
    lines.append(ceiling_line(res.ceiling))
    lines += curve(res)
    if res.headroom:
        lines.append(f"headroom: {res.headroom.finding}")
    if res.status != "complete":
        lines.append(f"PARTIAL: {stopped_line(res)}")
    return "\n".join(textwrap.fill(x, width, subsequent_indent="  ") if len(x) > width else x for x in lines)


def ceiling_line(c: hr.Ceiling) -> str:
    if c.status != "measured" or not c.total_iops:
        return f"replayer's ceiling: not measured ({c.reason})"
    limit = c.scale_limit()
    at = f": {scale_text(limit)} today's rate" if limit else ""
    return f"replayer's ceiling (fio unpaced onto a RAM file): {c.total_iops:,.0f} I/Os/s in all{at}"


def scale_text(x: float) -> str:
    return f"{x:,.0f}x" if x >= 100 else f"{x:.3g}x"


def stopped_line(res: hr.HeadroomResult) -> str:
    ran = sum(1 for s in res.steps if s.dir is not None and s.verdict != hr.STOPPED)
    return (
        f"interrupted ({res.interrupted}) after {ran} step{'s' * (ran != 1)}; fio was stopped, and the "
        "steps done so far are kept as a partial result"
    )


def _width() -> int:
    try:
        return int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
    except (ValueError, OSError):
        return 80
