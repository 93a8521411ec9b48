"""`iofp headroom`: one plan replayed at rising load until the SLO breaks, then bisected. The sweep
and its verdicts (sweep.py: `headroom`), the replayer's own ceiling on this machine (ceiling.py) and
the terminal text (render.py: `summary`, `stopped_line`); each scale's verdict from its runs
(decide.py: `scale_verdicts`, which compare's ranking reads).

Other families import only these names; the modules behind them are this package's own.
"""

from replay.headroom.decide import scale_verdicts
from replay.headroom.render import stopped_line, summary
from replay.headroom.sweep import (
    ARTIFACTS,
    HeadroomOptions,
    default_output,
    headroom,
    parse_precision,
    parse_scales,
)

__all__ = [
    "ARTIFACTS",
    "HeadroomOptions",
    "default_output",
    "headroom",
    "parse_precision",
    "parse_scales",
    "scale_verdicts",
    "stopped_line",
    "summary",
]
