"""`iofp fio-job`: a plain fio job file that reproduces a fingerprint's demand, from the fingerprint
alone: what a scope asks of a device (demand.py), the planned jobs (`plan`, job.py) and their fio
syntax (`render`, `write`, text.py). It imports nothing else in replay.

Other families import only these names; the modules behind them are this package's own.
"""

from replay.fiojob.job import FioJob, JobOptions, check_options, digest, plan, sampling_error
from replay.fiojob.text import render, summary, write

__all__ = [
    "FioJob",
    "JobOptions",
    "check_options",
    "digest",
    "plan",
    "render",
    "sampling_error",
    "summary",
    "write",
]
