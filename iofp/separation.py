"""When a busy host still allows a verdict: two devices told apart by the same job under the same host
load (issue 26 §1, §2). Imports no stage.

A run that missed while the host was busy says nothing about its device on its own (iofp/host_evidence.py
`limit`). But a buyer compares devices, and a busy host slows the same job by about the same on each:
when a device is slower than a peer at the same job, beside the same busy host, by far more than that
job moves between runs under such a host, the difference is the devices', not the host's. Refusing it
("inconclusive: the host was busy") would hide a 7x fsync gap behind two CPU hogs.

The rule (`slower`): device B is slower than A when **every** run of B is slower than **every** run of
A (their ranges do not overlap: the repeats' spread, as a rank test of 3 against 3 runs has it at
p = 1/20) **and** B's fastest run is at least EFFECT times A's slowest on the typical latency (p50) of
the operation that matters (a commit where both measured commits, else every I/O). A's runs count
whatever its host was doing: EFFECT is above the most a busy host was measured to move one job's p50,
so a peer replayed on a quieter host cannot make a gap this large on its own.

EFFECT is from measured spreads (BENCHMARKS.md): the same job on the same RAM loop moved its p50 up to
2.3x between two runs beside two CPU hogs (bench.diff_same_job) and 1.4x on a quiet host; a RAM loop
against a direct-io disk loop differs 5.0x-9.4x in fsync p50, quiet and beside a hog (bench.probe_lab,
bench.commit_fidelity's 12x). 3x is above the first and below the second. A p99 moved 126x between
two runs of one job beside hogs: the tail is never the evidence here, only the typical latency.

The rule holds where both devices' runs alternate beside one host load (compare's repeats). Two
captures made at different times are another matter: beside two hogs and a test suite, one job's p50
moved 3.2x between two of them, the slower capture being the busier in each of 7 pairs. So diff
(fingerprint/diff.py) never calls a move toward a side whose host was busy, whatever its size.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import Protocol

EFFECT = 3.0  # B's fastest run over A's slowest, on the typical latency (see the docstring)
SAME_JOB_SPREAD = 2.3  # the largest same-job p50 move measured beside two CPU hogs (said in verdicts)
OPS = ("commit", "all")  # the operation compared: commits where both sides have them, else every I/O


class Run(Protocol):
    def latency(self, op: str, pct: str) -> float | None: ...


@dataclass(frozen=True)
class Slower:
    """B slower than A at the same job: on `op`'s p50, B's runs `b` (lo, hi) against A's `a`."""

    op: str
    ratio: float  # B's fastest run over A's slowest
    a: tuple[float, float]
    b: tuple[float, float]


def slower(b_runs: Sequence[Run], a_runs: Sequence[Run], effect: float = EFFECT) -> Slower | None:
    """B slower than A beyond the same job's spread (the rule in the docstring); None when not shown."""
    for op in OPS:
        bs = [v for r in b_runs if (v := r.latency(op, "p50")) is not None]
        as_ = [v for r in a_runs if (v := r.latency(op, "p50")) is not None]
        if len(bs) != len(b_runs) or len(as_) != len(a_runs) or not bs or not as_:
            continue  # this op not measured in every run: the next one
        ratio = min(bs) / max(as_) if max(as_) > 0 else 0.0
        if ratio >= effect:
            return Slower(op, ratio, (min(as_), max(as_)), (min(bs), max(bs)))
        return None
    return None
