"""`iofp compare`: candidates side by side, from their replay results, for a procurement review.

Every figure is iofp's own, read from each result (iofp/replay_result.py; no capture is reopened):
demanded vs achieved IOPS and MB/s; p50/p99/p99.9 latency per op of the block requests; the commit
latency (each sync call fio made, entry to return: the writeback it forced and the flush, from the
replay capture's sync table; block flushes where a capture had none, and the table says so); commits
per second; the fidelity verdict; the SLO verdict (iofp/slo.py). A result without a capture (a file
target, --no-fidelity) falls back to fio's own report, labelled as fio's.

Headroom and probe results (`iofp headroom`, `iofp probe` directories, given among the replay results)
join the candidate of the same name (`--label device=...`, else the target's name): with headroom
results the candidates are ranked by their headroom factor (the most first), and a candidate given
only by its headroom result is shown with the figures of its 1x step (a whole replay); each probe cell
(fio's figures; commits and fsync from iofp's capture) is a row beside the replay and headroom figures.

`--baseline TRACE` adds the original trace as the first column: its own captured figures over the
replays' selection (the same span and device), measured by the same code (replay/run/figures.py), so a
candidate is compared with production as it ran, not with a replay onto it.

The table has one row per figure and one column per device, and is split into as many tables as it
takes to fit the terminal's width (80 columns: four devices per table).
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iofp import headroom_result as hr
from iofp import probe_result as pr
from iofp import replay_result as rr
from iofp.contract import inside, open_trace
from iofp.errors import BadInput
from iofp.host_evidence import HostEvidence
from iofp.repeats import FAIL, INCONCLUSIVE, spread
from iofp.results_dir import shown
from iofp.slo import Slo, format_ns
from iofp.terminal import one_line
from replay.compare.verdicts import contradictions, group, interference, judge, order_by_today, ranking
from replay.headroom import scale_verdicts
from replay.run import measure

PCTS_FIO = {"p50": "50.000000", "p99": "99.000000", "p99.9": "99.900000"}
LABEL_W = 18
COL_W = 14


@dataclass
class Row:
    """One device (a candidate's replay result, or the baseline trace) and its figures."""

    name: str
    source: str  # the results directory, or the baseline trace
    role: str  # "candidate" | "baseline"
    demanded_iops: float | None
    demanded_mbps: float | None
    measured: rr.Measured | None
    latency_from: str  # "replay capture" | "trace" | "fio (its own report)"
    fidelity: str = "not measured"
    timing: str = ""
    status: str = "complete"
    selection: str = ""
    slo_failures: list[str] = field(default_factory=list)
    slo: str = "n/a"  # the verdict: "pass", "FAIL" or "inconclusive" (with an SLO), else "n/a"
    headroom: dict[str, Any] | None = None  # factor, failed_at, bound, finding, source
    probe: list[dict[str, Any]] = field(default_factory=list)  # one per cell: what, figures, source
    demanded_commits_per_s: float | None = None
    host: HostEvidence | None = None  # what the host was doing while the run's fio ran
    rate_failures: list[str] = field(default_factory=list)  # the demanded rate not kept: by how much
    why: str = ""  # an inconclusive verdict's reason (the host, or runs that disagree)
    runs: list[Row] = field(default_factory=list)  # the repeats of a group (same label): one Row each

    def _median(self, get: Callable[[Row], float | None]) -> float | None:
        s = spread([get(r) for r in self.runs])
        return None if s is None else s.median

    @property
    def achieved_iops(self) -> float | None:
        if self.runs:
            return self._median(lambda r: r.achieved_iops)
        return self.measured.achieved_iops if self.measured else None

    @property
    def achieved_mbps(self) -> float | None:
        if self.runs:
            return self._median(lambda r: r.achieved_mbps)
        return self.measured.achieved_mbps if self.measured else None

    @property
    def commits_per_s(self) -> float | None:
        if self.runs:
            return self._median(lambda r: r.commits_per_s)
        return self.measured.commits_per_s if self.measured else None

    def latency(self, op: str, pct: str) -> float | None:
        if self.runs:
            return self._median(lambda r: r.latency(op, pct))
        return self.measured.latency(op, pct) if self.measured else None


@dataclass
class Comparison:
    rows: list[Row]
    slo: Slo
    notes: list[str] = field(default_factory=list)

    ranking: str = ""  # with headroom results: the order the evidence supports, or "inconclusive: ..."

    @property
    def failed(self) -> list[Row]:
        """The candidates that miss the SLO (the baseline is shown, not judged)."""
        return [r for r in self.rows if r.role == "candidate" and r.slo == FAIL]

    @property
    def inconclusive(self) -> list[Row]:
        """The candidates whose verdict the runs do not support (the host, or runs that disagree)."""
        return [r for r in self.rows if r.role == "candidate" and r.slo == INCONCLUSIVE]


def compare(paths: list[Path], slo: Slo, baseline: Path | None = None) -> Comparison:
    replays, headrooms, probes = _kinds(paths)
    loaded = [run for p in replays for run in rr.runs(p)]  # a result and its repeats (--repeat)
    named = {_name(res.labels, res.target) for _, res in loaded}
    for root, h in headrooms:  # a candidate given by its headroom alone: its 1x step is its replay
        if _name(h.labels, h.target) not in named:
            loaded += [rr.load(inside(root, root / d, "its step's directory")) for d in _today(h)]
    if not loaded:
        raise BadInput("no replay to compare: pass `iofp replay` or `iofp headroom` results directories")
    rows = group([_candidate(root, res) for root, res in loaded])
    cmp = Comparison(rows, slo)
    spans = {(r.selection["t_lo_ns"], r.selection["t_hi_ns"], r.trace["path"]) for _, r in loaded}
    if len(spans) > 1:
        cmp.notes.append("the results replay different selections or traces: compare with care")
    _join(cmp, headrooms, probes)
    if baseline is not None:
        cmp.rows.insert(0, _baseline(baseline, loaded[0][1], cmp.notes))
    if slo:
        judge(cmp.rows, slo)
    if headrooms:
        order_by_today(cmp.rows)
        cmp.ranking = ranking(cmp.rows)
    cmp.notes += contradictions(cmp.rows)
    return cmp


Headrooms = list[tuple[Path, hr.HeadroomResult]]


def _kinds(paths: list[Path]) -> tuple[list[Path], Headrooms, list[pr.ProbeResult]]:
    """Split the inputs by what wrote them: replay, headroom or probe results."""
    replays: list[Path] = []
    headrooms: Headrooms = []
    probes: list[pr.ProbeResult] = []
    for p in paths:
        if hr.is_result(p):
            headrooms.append(hr.load(p))
        elif (Path(p) / pr.RECORD).is_file() or Path(p).name == pr.RECORD:
            probes.append(pr.load(p)[1])
        else:
            replays.append(p)
    return replays, headrooms, probes


def _name(labels: dict[str, str], target: dict[str, Any]) -> str:
    return labels.get("device") or target.get("name") or Path(target["path"]).name


def _today(h: hr.HeadroomResult) -> list[str]:
    """The runs at 1x (else at the scale nearest it): today's load on this candidate, every repeat."""
    ran = [s for s in h.steps if s.dir and s.verdict != hr.STOPPED]
    if not ran:
        return []
    near = min(abs(s.scale - 1) for s in ran)
    return [s.dir for s in ran if s.dir and abs(s.scale - 1) == near]


def _join(cmp: Comparison, headrooms: Headrooms, probes: list[pr.ProbeResult]) -> None:
    """Each headroom and probe result beside its candidate; with headroom, rank by it (most first)."""
    by_name = {r.name: r for r in cmp.rows}
    for root, h in headrooms:
        row = by_name.get(_name(h.labels, h.target))
        if row is None:
            cmp.notes.append(f"{shown(root)}: its device {_name(h.labels, h.target)!r} matches no candidate")
        elif h.headroom is not None:
            at = h.headroom.failed_at
            fail = next((s for s in h.steps if s.scale == at and s.verdict == hr.FAIL), None)
            failed_step = fail and {"achieved_iops": fail.achieved_iops, "commits_per_s": fail.commits_per_s}
            row.headroom = asdict(h.headroom) | {"source": shown(root), "slo": h.slo, "status": h.status,
                                                 "failed_step": failed_step,
                                                 "fails_at": _fails_at(h)}  # fmt: skip
    for p in probes:
        row = by_name.get(_name(p.labels, asdict(p.target)))
        if row is None:
            cmp.notes.append(f"probe of {p.target.path}: its device {_name(p.labels, asdict(p.target))!r} "
                             "matches no candidate")  # fmt: skip
        else:
            row.probe = probe_cells(p)
    if headrooms:
        cmp.rows.sort(key=rank)


def _fails_at(h: hr.HeadroomResult) -> float | None:
    """The lowest scale the device failed by its own limit (its conclusive runs all failed, none at the
    replayer's limit), above the factor: a sweep whose first scale above the factor was inconclusive
    (its runs disagreed) may still have failed conclusively higher up, and that bounds it too."""
    factor = h.headroom.factor if h.headroom else None
    for v in scale_verdicts(h):
        own = v.verdict == hr.FAIL and not any(s.saturation == "replayer" for s in v.runs)
        if own and (factor is None or v.scale > factor):
            return v.scale
    return None


def rank(row: Row) -> tuple[bool, float]:
    """Most headroom first; a candidate that missed at 1x (no factor: below 1x) after every factor,
    and one without a headroom result last."""
    if row.headroom is None:
        return True, 0.0
    return False, -(row.headroom.get("factor") or 0.0)


def probe_cells(p: pr.ProbeResult) -> list[dict[str, Any]]:
    """The probe's cells as compare shows them: a short name, the figures, and whose they are."""
    out = []
    for cell in sorted(p.cells, key=lambda c: c.cell):
        run = p.run(cell.run)
        f, c = run.fio, run.capture
        short = {"randread": f"QD{run.iodepth}", "seq-read": "seq rd", "seq-write": "seq wr",
                 "commit": f"x{run.jobs}", "tail": "80%"}.get(run.kind, run.kind)  # fmt: skip
        d: dict[str, Any] = {"cell": cell.cell, "what": cell.label, "short": f"c{cell.cell} {short}"}
        if run.kind == "commit":
            d |= {"commits_per_s": c.commits_per_s if c else None,
                  "fsync_p99_us": c.fsync_p99_us if c else None, "source": "iofp capture"}  # fmt: skip
        elif f is not None:
            d |= {"iops": f.iops, "mb_per_s": f.mb_per_s, "p99_us": f.p99_us, "source": "fio"}
        out.append(d)
    return out


def _candidate(root: Path, res: rr.ReplayResult) -> Row:
    t = res.target
    fid = res.fidelity
    row = Row(
        name=_name(res.labels, t),
        source=shown(root),
        role="candidate",
        demanded_iops=res.demanded.iops,
        demanded_mbps=res.demanded.mbps,
        measured=res.measured,
        latency_from="replay capture",
        status=res.status,
        selection=res.selection.get("how", ""),
        demanded_commits_per_s=res.demanded.commits_per_s,
        host=res.host_evidence,
    )
    if fid.get("status") == "measured":
        row.fidelity, row.timing = fid["verdict"], fid["timing"]
    else:
        row.fidelity = fid.get("status", "not measured")
    if res.measured is None:
        row.measured, row.latency_from = _from_fio(res.fio.get("summary") or {}), "fio"
    return row


def _baseline(trace_path: Path, first: rr.ReplayResult, notes: list[str]) -> Row:
    """The original trace over the replays' selection: the same span, device and reads-only choice."""
    trace = open_trace(trace_path)
    sel = first.selection
    device = (first.settings.get("selection") or {}).get("device")
    m = measure(trace, "trace", device=device, span_ns=(sel.get("t_lo_ns"), sel.get("t_hi_ns")))
    replayed = first.trace["path"]
    if replayed != trace.where and Path(replayed).resolve() != trace.root.resolve():
        notes.append(f"the baseline {trace.where} is not the trace the results replayed ({replayed})")
    return Row(
        name="baseline",
        source=trace.where,
        role="baseline",
        demanded_iops=m.achieved_iops,
        demanded_mbps=m.achieved_mbps,
        measured=m,
        latency_from="trace",
        fidelity="(the original)",
        selection=sel.get("how", ""),
    )


def _from_fio(fio: dict[str, Any]) -> rr.Measured:
    """fio's own report, for a result without a capture: labelled as fio's wherever it shows."""
    m = rr.Measured(source="fio (its own report)")
    m.span_s = (fio.get("span_ms") or 0) / 1e3
    for d in ("read", "write"):
        s = fio.get(d) or {}
        if s.get("total_ios"):
            pct = s.get("clat_percentile_ns") or {}
            vals = {k: pct.get(v) for k, v in PCTS_FIO.items()}
            m.ops[d] = rr.Latency(
                s["total_ios"], s.get("io_bytes", 0), vals["p50"], vals["p99"], vals["p99.9"]
            )
    sync = fio.get("sync") or {}
    if sync.get("total_ios"):
        pct = sync.get("lat_percentile_ns") or {}
        m.syncs["all"] = rr.Latency(sync["total_ios"], 0, *(pct.get(v) for v in PCTS_FIO.values()))
        m.commit_from = "sync calls"
    if m.span_s > 0:
        data = sum((fio.get(d) or {}).get("total_ios", 0) for d in ("read", "write", "trim"))
        m.achieved_iops = data / m.span_s
        m.achieved_mbps = (
            sum((fio.get(d) or {}).get("io_bytes", 0) for d in ("read", "write")) / m.span_s / 1e6
        )
        m.commits_per_s = sync.get("total_ios", 0) / m.span_s or None
    return m


# ------------------------------------------------------------------------------------------------
# Rendering
# ------------------------------------------------------------------------------------------------


def _num(v: float | None, spec: str = ",.0f") -> str:
    return "-" if v is None else format(v, spec)


def _commit_label(rows: list[Row]) -> str:
    froms = {r.measured.commit_from for r in rows if r.measured and r.measured.commit_from != "none"}
    return "commit" if froms <= {"sync calls"} else "commit*"


Fmt = Callable[[float | None], str]


def _cells(rows: list[Row], get: Callable[[Row], float | None], fmt: Fmt) -> list[str]:
    """One cell per row: the figure, or for a row of several runs their median and range."""
    out = []
    for r in rows:
        s = spread([get(x) for x in r.runs]) if r.runs else None
        if s is None or s.lo == s.hi:
            out.append(fmt(get(r)))
        else:
            out.append(_ranged(fmt(s.median), fmt(s.lo), fmt(s.hi)))
    return out


def _ranged(med: str, lo: str, hi: str) -> str:
    """'32.0 ms (23.8-36.4)': the range without the unit where it is the median's."""
    unit = med.rsplit(" ", 1)[1] if " " in med else ""
    if unit and lo.endswith(" " + unit) and hi.endswith(" " + unit):
        lo, hi = lo[: -len(unit) - 1], hi[: -len(unit) - 1]
    return med if lo == hi else f"{med} ({lo}-{hi})"


def figures(rows: list[Row], slo: Slo) -> list[tuple[str, list[str]]]:
    """(label, one cell per row) for every figure of the table, in order; a candidate of several runs
    shows each figure as their median (range)."""
    c = _commit_label(rows)
    num = lambda v: _num(v)  # noqa: E731
    out: list[tuple[str, list[str]]] = [
        ("IOPS demanded", [_num(r.demanded_iops) for r in rows]),
        ("IOPS achieved", _cells(rows, lambda r: r.achieved_iops, num)),
        ("MB/s achieved", _cells(rows, lambda r: r.achieved_mbps, lambda v: _num(v, ",.1f"))),
    ]
    for op, pcts in (
        ("read", ("p50", "p99", "p99.9")),
        ("write", ("p50", "p99", "p99.9")),
        ("flush", ("p50", "p99")),
    ):
        if any(r.latency(op, "p50") is not None for r in rows):
            out += [
                (f"{op} {p}", _cells(rows, lambda r, op=op, p=p: r.latency(op, p), format_ns)) for p in pcts
            ]
    if any(r.latency("commit", "p50") is not None for r in rows):
        out += [
            (f"{c} {p}", _cells(rows, lambda r, p=p: r.latency("commit", p), format_ns))
            for p in ("p50", "p99", "p99.9")
        ]
        out.append(("commits/s", _cells(rows, lambda r: r.commits_per_s, num)))
    if any(r.runs for r in rows):
        out.append(("runs", [str(len(r.runs) or 1) for r in rows]))
    if any(r.headroom for r in rows):
        out.append(("headroom", [_headroom(r.headroom) for r in rows]))
        out.append(("  bounded by", [(r.headroom or {}).get("bound", "-") for r in rows]))
    out.append(("fidelity", [r.fidelity for r in rows]))
    out.append(("timing", [r.timing or "-" for r in rows]))
    if any(r.status != "complete" for r in rows):
        out.append(("run", [r.status for r in rows]))
    if slo:
        out.append(("SLO", [r.slo for r in rows]))
    return out + _probe_figures(rows)


def _headroom(h: dict[str, Any] | None) -> str:
    if not h:
        return "-"
    if h.get("factor") is None and h.get("bound") in hr.NO_FAILURE_BOUNDS:
        return "?"  # inconclusive at the first scale: nothing shown either way
    if h.get("factor") is None:
        return f"<{h['failed_at']:g}x" if h.get("failed_at") else "-"
    at_least = ">=" if h.get("bound") in hr.OPEN_BOUNDS else ""
    return f"{at_least}{h['factor']:g}x"


PROBE_FIGURES = (  # (key, row suffix, format): the figures shown per probe cell
    ("iops", "IOPS", lambda v: f"{v:,.0f}"),
    ("mb_per_s", "MB/s", lambda v: f"{v:,.0f}"),
    ("p99_us", "p99", lambda v: format_ns(v * 1e3)),
    ("commits_per_s", "commits/s", lambda v: f"{v:,.0f}"),
    ("fsync_p99_us", "fsync p99", lambda v: format_ns(v * 1e3)),
)
PROBE_SHOWN = {"c1": ("iops", "p99_us"), "c2": ("mb_per_s",), "c3": ("commits_per_s", "fsync_p99_us"),
               "c4": ("p99_us",)}  # fmt: skip


def _probe_figures(rows: list[Row]) -> list[tuple[str, list[str]]]:
    """One row per probe cell figure, in cell order, across the candidates that have it."""
    shorts = list(dict.fromkeys(c["short"] for r in rows for c in r.probe))
    out = []
    for short in shorts:
        for key, suffix, fmt in PROBE_FIGURES:
            if key not in PROBE_SHOWN.get(short.split()[0], ()):
                continue
            cells = []
            for r in rows:
                v = next((c.get(key) for c in r.probe if c["short"] == short), None)
                cells.append("-" if v is None else fmt(v))
            out.append((f"{short} {suffix}", cells))
    return out


def footnotes(cmp: Comparison) -> list[str]:
    rows = cmp.rows
    lines = []
    sel = next((r.selection for r in rows if r.role == "candidate"), "")
    if sel:
        lines.append(f"selection: {sel}")
    froms = sorted({r.latency_from for r in rows})
    lines.append(
        "latency from: " + ", ".join(froms) + "; commit = a sync call from entry to return (its writeback "
        "and flush)"
    )
    if _commit_label(rows) == "commit*":
        flush = [r.name for r in rows if r.measured and r.measured.commit_from == "block flushes"]
        lines.append(f"commit*: from block flushes for {', '.join(flush)} (no sync table in its capture)")
    lines += [f"note: {n}" for n in cmp.notes]
    for r in rows:
        if r.headroom:
            partial = " (a partial sweep)" if r.headroom.get("status") != "complete" else ""
            lines.append(f"headroom{partial}: {r.headroom['finding']}")
    cells = {c["short"]: c for r in rows for c in r.probe}
    if cells:
        legend = "; ".join(f"{k}: {c['what']} ({c['source']}'s)" for k, c in cells.items())
        lines.append(f"probe cells (iofp probe): {legend}")
    if cmp.ranking:
        lines.append(f"ranking by headroom: {cmp.ranking}")
    lines += [x for r in rows if (x := interference(r))]
    for r in rows:
        runs = f" ({r.why})" if r.why and r.slo != INCONCLUSIVE else ""
        if r.slo == INCONCLUSIVE:
            lines.append(f"{r.name}: inconclusive against {cmp.slo.text!r}: {r.why}")
        elif r.slo_failures and (r.slo == FAIL or r.role == "baseline"):
            who = "baseline (not judged)" if r.role == "baseline" else r.name
            lower = ": its latencies were measured at a lower load than asked" if r.rate_failures else ""
            lines.append(f"{who} misses {cmp.slo.text!r}: {'; '.join(r.slo_failures)}{runs}{lower}")
    if any(r.role == "candidate" and not r.runs for r in rows) and cmp.slo:
        lines.append("one run per candidate: a short run's figures move by 10% and more between identical "
                     "runs; `iofp replay --repeat 3` for a decision")  # fmt: skip
    return lines


def render(cmp: Comparison, fmt: str, width: int | None = None) -> str:
    if fmt == "json":
        doc = {
            "slo": cmp.slo.text or None,
            "failed": [r.name for r in cmp.failed],
            "inconclusive": [r.name for r in cmp.inconclusive],
            "ranking": cmp.ranking or None,
            "notes": cmp.notes,
            "rows": [_json_row(r) for r in cmp.rows],
        }
        return json.dumps(doc, indent=2, default=str)
    figs = figures(cmp.rows, cmp.slo)
    names = [r.name for r in cmp.rows]
    if fmt == "markdown":
        lines = ["| | " + " | ".join(map(_md, names)) + " |", "|---|" + "---|" * len(names)]
        lines += [f"| {_md(label)} | " + " | ".join(map(_md, cells)) + " |" for label, cells in figs]
        return "\n".join([*lines, "", *map(_md, footnotes(cmp))])
    return _text(names, figs, footnotes(cmp), width or _terminal_width())


def _md(text: str) -> str:
    """Text as one markdown table cell (or a line of the notes under it): a `|` from a label or a
    device's name neither ends the cell nor starts a row of its own, and no HTML comes through."""
    flat = one_line(text).replace("\\", "\\\\").replace("|", "\\|")
    return flat.replace("<", "&lt;").replace(">", "&gt;")


def _json_row(r: Row) -> dict[str, Any]:
    """A row as JSON: its figures (a group's medians) and, for a group, each run's source and verdict."""
    d = asdict(r) | {"achieved_iops": r.achieved_iops, "commits_per_s": r.commits_per_s}
    d["runs"] = [{"source": x.source, "verdict": x.slo, "why": x.why, "achieved_iops": x.achieved_iops,
                  "commits_per_s": x.commits_per_s} for x in r.runs]  # fmt: skip
    return d


def _terminal_width() -> int:
    try:
        return int(os.environ.get("COLUMNS", "")) or os.get_terminal_size().columns
    except (ValueError, OSError):
        return 80


def _text(names: list[str], figs: list[tuple[str, list[str]]], notes: list[str], width: int) -> str:
    """Plain columns, split into as many tables as the width needs; notes wrapped to the width."""
    import textwrap

    colw = max(COL_W, *(len(n) + 2 for n in names), *(len(c) + 2 for _, cells in figs for c in cells))
    per = max(1, (width - LABEL_W) // colw)
    blocks = []
    for start in range(0, len(names), per):
        idx = range(start, min(start + per, len(names)))
        head = " " * LABEL_W + "".join(names[i].rjust(colw) for i in idx)
        body = [
            label.ljust(LABEL_W)[:LABEL_W] + "".join(cells[i].rjust(colw) for i in idx)
            for label, cells in figs
        ]
        blocks.append("\n".join([head.rstrip(), *body]))
    wrapped = [textwrap.fill(n, width, subsequent_indent="  ") for n in notes]
    return "\n\n".join(blocks) + "\n" + "\n".join(wrapped)
