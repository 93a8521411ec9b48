"""fio, run safely: the one launcher (`launch`: every fio run, its raw artifacts kept, its JSON trimmed
in one place), what the installed fio can do (`installed`), the stop signals that end fio first
(`trap`, `deferred`, `Interrupted`, `Stopped`), the target's safety checks (`inspect_target`,
`check_target`, `check_target_size`, `hold_target`: resolved once, held open for the run), a results
directory's artifacts and fio's summary, and the one writer of what fio reads (`JobFile`,
`fio_value`, `fio_path`, `iolog_name`: no value can say more than it was meant to).

Other families import only these names; the modules behind them are this package's own.
"""

from replay.fio.capabilities import FioCaps, installed
from replay.fio.interrupt import Interrupted, Stopped, deferred, trap
from replay.fio.jobfile import JobFile, iolog_name
from replay.fio.jobfile import path_value as fio_path
from replay.fio.jobfile import value as fio_value
from replay.fio.launcher import FioRun, Progress, command, fio_json, launch, write_job
from replay.fio.results import ARTIFACTS, clear_artifacts, fio_summary, prepare_dir
from replay.fio.safety import OVERRIDE, Target, check_target, check_target_size, hold_target, inspect_target

__all__ = [
    "ARTIFACTS",
    "OVERRIDE",
    "FioCaps",
    "FioRun",
    "Interrupted",
    "JobFile",
    "Progress",
    "Stopped",
    "Target",
    "check_target",
    "check_target_size",
    "clear_artifacts",
    "command",
    "deferred",
    "fio_json",
    "fio_path",
    "fio_summary",
    "fio_value",
    "hold_target",
    "inspect_target",
    "installed",
    "iolog_name",
    "launch",
    "prepare_dir",
    "trap",
    "write_job",
]
