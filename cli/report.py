"""`iofp report`: the one place that turns the paths it is given into documents: a trace into its
fingerprint and timeline (fingerprint.api), results directories into their records (read through
iofp's contracts) and each replay's capture into relations; the report stage (report/) draws them.
"""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING

import typer

from fingerprint.commands import WINDOW_HELP
from iofp import headroom_result as hr
from iofp import objstore, results_dir
from iofp import probe_result as pr
from iofp import replay_result as rr
from iofp import slo as slomod
from iofp.contract import MANIFEST, inside
from iofp.errors import BadInput
from iofp.output import force_option
from iofp.slo import Slo

if TYPE_CHECKING:  # the stage itself is imported when a report is drawn
    from report import Curves, Results


def report_cmd(
    paths: list[Path] = typer.Argument(
        ...,
        metavar="PATH...",
        help="A trace directory; or replay, probe and headroom results directories (several, or a "
        "directory holding them, make a comparison); or a fleet review (iofp fleet --json); or a "
        "flight recorder's directory (iofp record -o).",
    ),
    out: Path = typer.Option(..., "-o", "--output", help="The HTML file to write."),
    slo: list[str] = typer.Option(
        [], "--slo", metavar="TERMS", help=slomod.HELP + " Drawn on a trace's latency and commit charts and "
        "its tails; judged on results (without it a headroom sweep's own)."
    ),
    window: str | None = typer.Option(
        None, "--window", help=WINDOW_HELP + " Traces only.", show_default=False
    ),
    device: str | None = typer.Option(None, "--device", help="Only this device (traces only)."),
    force: bool = force_option("an existing report"),
) -> None:
    """Write one self-contained HTML report; it needs no network to view. Of a trace: the biggest
    spike's answer first; IOPS, MB/s, latency and commits per window with the spikes numbered and
    the hot windows marked (log axes where one spike dwarfs the rest), each big spike on a panel of
    its own, each kind of request's tail (p99, p99.9 and the SLO marked), on wall-clock time;
    histograms, fingerprint tables. Of replay results (a comparison when several): per candidate,
    achieved vs demanded IOPS, latency over time and tails per op, the commit latency (one panel per
    candidate), against the SLO. Of a probe: the four cells and the queue-depth sweep.
    Of a headroom sweep: the verdict, latency p50/p99 per op and demanded vs achieved rates against
    the load scale, with the SLO (--slo, else the sweep's own), and every step; steps not run (above
    the replayer's ceiling) or stopped are marked, not drawn. Results of all kinds mix on one page. Of
    a flight recorder (iofp record -o): its per-second summary over the run, rates and p99 per op,
    with the incidents it saved.

    Example: iofp report samples/traces/market-open -o market-open.html
    """
    from fingerprint.api import write_text
    from iofp.contract import check_output_file
    from iofp.windows import parse_window_option

    check_output_file(out, force=force)
    rules = slomod.parse(slo) if slo else None
    page, what = report_paths(paths, rules, parse_window_option(window), device)
    write_text(page, out, force=force)
    typer.echo(f"Wrote {out}. Next: open it in a browser (it reports {what})")


def report_paths(
    paths: list[Path], slo: Slo | None, window_ns: int | None, device: str | None
) -> tuple[str, str]:
    """The HTML report of `paths` (one trace, or replay, probe and headroom results) and what it
    reports."""
    from fingerprint.api import Options, report_trace
    from fleet import load_view
    from report import fleet_page, results_page, trace_page

    if len(paths) == 1 and (view := load_view(paths[0])) is not None:
        return fleet_page(view), "a fleet review"
    if len(paths) == 1 and is_recorder(paths[0]):
        from record import incidents, iostat
        from report import recorder_page

        view = iostat(paths[0], whole=True, rows=RECORDER_POINTS, device=device)
        return recorder_page(view.to_dict(), incidents(paths[0])), "a flight recorder's summary"
    if len(paths) == 1 and is_trace(paths[0]):
        fp, tl = report_trace(paths[0], Options(window_ns, device))
        return trace_page(fp, tl, slo), "a trace"
    if traces := [p for p in paths if is_trace(p)]:
        raise BadInput(f"{traces[0]}: a trace; report it alone (iofp report {traces[0]} -o OUT.html)")
    found = results(paths)
    return results_page(found, slo), found.what()


NEITHER = (
    "neither a trace nor results; pass a trace directory (iofp capture, iofp import), results "
    "(iofp replay, iofp probe, iofp headroom) or a directory holding results"
)


RECORDER_POINTS = 720  # a recorder's summary drawn in at most this many steps (1 s to an hour each)


def is_recorder(path: Path) -> bool:
    """An `iofp record -o` directory: its summary and its state are there."""
    return (path / "summary").is_dir() and (path / "recorder.json").is_file()


def is_trace(path: Path) -> bool:
    """Looks like a trace (its manifest or its io table is there; in a store, its manifest): the
    trace contract then says whether it is a good one."""
    if (url := objstore.url_of(path)) is not None:
        return objstore.head(url.join(MANIFEST)) is not None
    return (path / MANIFEST).exists() or (path / "io").is_dir()


def results(paths: list[Path]) -> Results:
    """The replay, probe and headroom results named by `paths` (each a results directory, or a
    directory holding them: a comparison), read through their contracts; BadInput for anything else."""
    from report import Candidate, Results, sweep

    g = Results()
    for given in paths:
        path = results_dir.local(given, captures=True)  # s3://: a local copy of what the report reads
        found = [path] if _is_result(path) else sorted(p for p in _children(path) if _is_result(p))
        if not found:
            raise BadInput(f"{results_dir.shown(path)}: {NEITHER}")
        for d in found:
            shown = results_dir.shown(d)  # where it was read from, as the page names it
            if hr.is_result(d):
                g.sweeps.append(replace(sweep(*hr.load(d)), path=shown))
            elif (d / pr.RECORD).is_file():
                g.probes.append((shown, pr.load(d)[1]))
            else:
                root, res = rr.load(d)
                name = res.labels.get("device") or root.name
                capture = inside(root, root / "capture", "its capture")
                g.cands.append(Candidate(name, shown, res, run_curves(capture)))
    return g


def run_curves(capture: Path) -> Curves | None:
    """The latency curves of a replay's capture directory (None when it has none)."""
    from iofp import duck
    from iofp.contract import IO_TABLE, SYNC_TABLE, open_trace
    from report import curves

    if not (capture / "trace.json").is_file():
        return None
    trace = open_trace(capture)
    con = duck.connect()
    try:
        return curves(con, trace.relation(con, IO_TABLE), trace.relation(con, SYNC_TABLE))
    finally:
        con.close()


def _is_result(p: Path) -> bool:
    return (p / rr.RECORD).is_file() or (p / pr.RECORD).is_file() or (p / hr.RECORD).is_file()


def _children(p: Path) -> list[Path]:
    return [c for c in p.iterdir() if c.is_dir()] if p.is_dir() else []


def register(app: typer.Typer) -> None:
    app.command("report")(report_cmd)
