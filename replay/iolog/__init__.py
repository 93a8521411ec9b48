"""Trace -> fio iolog: which part of a trace a replay uses (selection.py), the commit groups
(commits.py) and streams (streams.py) it holds, all resolved once into a plan (plan.py: `resolve`),
the gaps written so that fio keeps the trace's schedule (pacing.py) and the iologs themselves
(converter.py: `convert`, `write`), with the I/Os they demand (`Expected`) for fidelity.

Other families import only these names; the modules behind them are this package's own.
"""

from replay.iolog.converter import (
    HEADER_LINES,
    Conversion,
    ConvertReport,
    Expected,
    Mapping,
    cli_mapping,
    convert,
    expected_of,
    fio_command,
    fold_modulus,
    names_no_target,
    write,
)
from replay.iolog.pacing import PaceSpec, Pacing, calibrate, calibration_gap_ns
from replay.iolog.plan import Plan, resolve
from replay.iolog.selection import Selection, SelectionStats
from replay.iolog.streams import MODES as STREAM_MODES
from replay.iolog.streams import TOP_N as STREAM_TOP_N
from replay.iolog.streams import StreamPlan

__all__ = [
    "HEADER_LINES",
    "STREAM_MODES",
    "STREAM_TOP_N",
    "Conversion",
    "ConvertReport",
    "Expected",
    "Mapping",
    "PaceSpec",
    "Pacing",
    "Plan",
    "Selection",
    "SelectionStats",
    "StreamPlan",
    "calibrate",
    "calibration_gap_ns",
    "cli_mapping",
    "convert",
    "expected_of",
    "fio_command",
    "fold_modulus",
    "names_no_target",
    "resolve",
    "write",
]
