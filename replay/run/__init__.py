"""`iofp replay`: one run of a resolved plan on a target. The steps in order (runner.py: `replay`,
and `prepare` + `run_step` for a caller that runs one plan several times), iofp's own figures of a
run from its capture (figures.py: `measure`), the run's fidelity to what the plan demanded (fidelity.py) and
its terminal summary (render.py).

Other families import only these names; the modules behind them are this package's own.
"""

from replay.run.fidelity import FAITHFUL_STRETCH, ON_SCHEDULE_LATE_P99_NS, Fidelity, rate_window
from replay.run.figures import measure
from replay.run.render import repeats_summary, replay_summary
from replay.run.runner import (
    Prepared,
    ReplayOptions,
    default_output,
    job_file,
    jobs_of,
    prepare,
    replay,
    run_step,
)

__all__ = [
    "FAITHFUL_STRETCH",
    "ON_SCHEDULE_LATE_P99_NS",
    "Fidelity",
    "Prepared",
    "ReplayOptions",
    "default_output",
    "job_file",
    "jobs_of",
    "measure",
    "prepare",
    "rate_window",
    "repeats_summary",
    "replay",
    "replay_summary",
    "run_step",
]
