"""The quarterly fleet review on Spark: every trace of a lake fingerprinted by iofp's own code, one
Spark task per trace (fleet/job.py), and the per-service view of hosts and days (fleet/view.py).

Public API: `run_fleet(lake, master=..., force=...)` -> rows, `quarterly(rows)` -> the view,
`render_view(view, console)`, `load_view(path)` (a view JSON, for iofp report),
`spark_session(master)`, `find_traces(lake)`, `fingerprint_task(task)` (one trace, as a Spark task
runs it), `headline(doc)`.
"""

from fleet.job import find_traces, fingerprint_task, spark_session
from fleet.job import run as run_fleet
from fleet.view import headline, quarterly
from fleet.view import load as load_view
from fleet.view import render as render_view

__all__ = [
    "find_traces", "fingerprint_task", "headline", "load_view", "quarterly", "render_view", "run_fleet",
    "spark_session",
]  # fmt: skip
