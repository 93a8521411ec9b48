"""fio, run safely: the one launcher (`launch`: every fio run, its raw artifacts kept, its JSON
trimmed in one place), what the installed fio can do (`installed`), the stop signals that end fio
first (`trap`, `deferred`, `Interrupted`, `Stopped`), the target's safety checks (`inspect_target`,
`check_target`, `check_target_size`) and a results directory's artifacts and fio's summary.

Other families import only these names; the modules behind them are this package's own.
"""

from replay.fio.capabilities import FioCaps, installed
from replay.fio.interrupt import Interrupted, Stopped, deferred, trap
from replay.fio.launcher import FioRun, Progress, command, fio_json, launch, write_job
from replay.fio.results import ARTIFACTS, clear_artifacts, fio_summary, prepare_dir
from replay.fio.safety import OVERRIDE, Target, check_target, check_target_size, inspect_target

__all__ = [
    "ARTIFACTS",
    "OVERRIDE",
    "FioCaps",
    "FioRun",
    "Interrupted",
    "Progress",
    "Stopped",
    "Target",
    "check_target",
    "check_target_size",
    "clear_artifacts",
    "command",
    "deferred",
    "fio_json",
    "fio_summary",
    "inspect_target",
    "installed",
    "launch",
    "prepare_dir",
    "trap",
    "write_job",
]
