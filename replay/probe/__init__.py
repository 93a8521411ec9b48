"""`iofp probe`: a target's four-cell table and queue-depth sweep, every fio run kept.

The runs a probe makes (plan.py), each run and fio's figures of it (fio_run.py), iofp's own
measurement of the commit cells (capture.py), the workload's shape (like.py: --like a fingerprint),
the steady-state check (steady.py), the sweep's knee (knee.py), the terminal text (render.py), the
order of it all (run.py: `probe`) and the command (commands.py: `register`).

Other families import only these names; the modules behind them are this package's own.
"""

from replay.probe.commands import register
from replay.probe.plan import ProbeOptions
from replay.probe.run import default_output, probe

__all__ = ["ProbeOptions", "default_output", "probe", "register"]
