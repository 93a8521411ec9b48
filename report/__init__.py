"""Reports: the self-contained HTML pages (inline SVG and CSS, no script, no network) of a trace and
of results (replays, a comparison of candidates, probes, headroom sweeps).

It draws documents, never paths: a fingerprint and its timeline (fingerprint/), the replay, probe and
headroom records (iofp/'s contracts) and a run capture's relations; `iofp report` (cli/report.py)
reads the paths and hands them in. Modules: `svg` (the chart primitives), `page` (the one HTML page),
`trace` (the trace page), `results` (the results page), `curves` (a run's latency curves, SQL in
report/sql), `headroom` (a sweep's section), `slo` (an SLO's limits as reference lines).

    trace_page(fp, timeline) -> str
    fleet_page(view) -> str   (the view iofp fleet computes: fleet.quarterly)
    recorder_page(view, incidents) -> str   (a flight recorder: record.iostat's view, record.incidents)
    results_page(Results(cands=[Candidate(name, path, result, curves(con, io, sync))]), slo) -> str
"""

from report.curves import Curves, curves
from report.fleet import fleet_page
from report.headroom import Sweep, sweep
from report.recorder import recorder_page
from report.results import Candidate, Results, results_page
from report.trace import trace_page

__all__ = [
    "Candidate", "Curves", "Results", "Sweep", "curves", "fleet_page", "recorder_page", "results_page",
    "sweep", "trace_page",
]  # fmt: skip
