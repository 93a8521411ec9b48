"""Repeats: one run is not a decision (issue 26 §2). The rules every command uses to state a figure and
a verdict from several runs of the same thing, defined once; imports no stage.

* A figure of N runs is shown as its median and range (`Spread`).
* A verdict (pass/FAIL, a rank, a scale of a headroom sweep) is stated only where the runs agree
  (`agree`): every conclusive run gave it. A run that was inconclusive because of the host (the
  evidence of iofp/host_evidence.py) says nothing about the device and is set aside; runs that
  disagree, or none conclusive, give "inconclusive" with the count.
* hyperfine's habit: a run far from the others is an outlier (`outliers`: its distance from the
  median beyond OUTLIER_MADS scaled median absolute deviations, Iglewicz and Hoaglin's modified
  z-score, the threshold hyperfine uses), and outliers suggest interference from other programs.
"""

from __future__ import annotations

import statistics
from collections import Counter
from dataclasses import dataclass, field

DEFAULT_REPEAT = 3  # runs of a decision whose run is short
SHORT_RUN_S = 60.0  # a run this short (its demanded span) is repeated DEFAULT_REPEAT times by default
OUTLIER_MADS = 10.0  # hyperfine: |x - median| / (1.4826 MAD) > 10
MAD_SCALE = 1.4826  # the MAD of a normal sample times this estimates its standard deviation

PASS, FAIL, INCONCLUSIVE = "pass", "FAIL", "inconclusive"


def default_repeat(span_s: float | None) -> int:
    """How many runs a decision takes when the user did not say: DEFAULT_REPEAT for a short run."""
    return DEFAULT_REPEAT if span_s is not None and span_s <= SHORT_RUN_S else 1


@dataclass
class Spread:
    """A figure over N runs: median and range; `outliers` are the indexes of runs far from the rest."""

    median: float
    lo: float
    hi: float
    n: int
    outliers: list[int] = field(default_factory=list)

    @property
    def rel_range(self) -> float | None:
        """(hi - lo) / median: how far apart the runs are, as a share."""
        return (self.hi - self.lo) / self.median if self.median else None


def spread(values: list[float | None]) -> Spread | None:
    """Median and range of the runs' values (None where a run had none; None if no run had one)."""
    vals = [v for v in values if v is not None]
    if not vals:
        return None
    return Spread(statistics.median(vals), min(vals), max(vals), len(vals), outliers(values))


def outliers(values: list[float | None]) -> list[int]:
    """Indexes of the values whose modified z-score exceeds OUTLIER_MADS (three runs at least)."""
    vals = [v for v in values if v is not None]
    if len(vals) < 3:
        return []
    med = statistics.median(vals)
    mad = statistics.median(abs(v - med) for v in vals) * MAD_SCALE
    if mad == 0:
        return [i for i, v in enumerate(values) if v is not None and v != med and _far(v, med)]
    return [i for i, v in enumerate(values) if v is not None and abs(v - med) / mad > OUTLIER_MADS]


def _far(v: float, med: float) -> bool:
    """With most runs identical (MAD 0), a run is an outlier when it is off by more than 10%."""
    return abs(v - med) > 0.1 * abs(med) if med else v != 0


@dataclass
class Agreement:
    verdict: str  # the verdict every conclusive run gave, or INCONCLUSIVE
    runs: int
    counts: dict[str, int]  # verdict -> runs that gave it (host-inconclusive runs included)
    why: str  # "" when the runs agree; else what the runs said

    @property
    def agreed(self) -> bool:
        return self.verdict != INCONCLUSIVE


def agree(verdicts: list[str]) -> Agreement:
    """The verdict of several runs: stated only where every conclusive run gave it. A run's verdict
    starting with "inconclusive" (the host limited it) is set aside."""
    counts = dict(Counter(verdicts))
    conclusive = [v for v in verdicts if not v.startswith(INCONCLUSIVE)]
    n = len(verdicts)
    if conclusive and len(set(conclusive)) == 1:
        why = "" if len(conclusive) == n else f"{n - len(conclusive)} of {n} runs inconclusive (the host)"
        return Agreement(conclusive[0], n, counts, why)
    if not conclusive:
        return Agreement(INCONCLUSIVE, n, counts, f"{n} of {n} runs inconclusive (the host)")
    said = ", ".join(f"{k} in {v}" for k, v in sorted(counts.items(), key=lambda kv: -kv[1]))
    return Agreement(INCONCLUSIVE, n, counts, f"the runs disagree: {said} of {n}")
