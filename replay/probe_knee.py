"""The queue-depth knee of cell 1's sweep: the depth past which p99 grows faster than IOPS.

Rule: walking the swept depths in order, the knee is the last depth before the first step (to the
next depth of the sweep) that gains less than IOPS_GAIN_BELOW more IOPS while p99 grows more than
P99_GROWTH_ABOVE. Going deeper than the knee buys little throughput for much more tail latency. No
such step: no knee within the swept depths (IOPS still growing, or p99 not growing). A step is one
move along the --qd list as given (the default list doubles).
"""

from __future__ import annotations

import itertools

from iofp.probe_result import Knee, Sweep, SweepPoint

IOPS_GAIN_BELOW = 0.10
P99_GROWTH_ABOVE = 0.50
RULE = (
    f"the last depth before the first step to the next swept depth that gains < "
    f"{IOPS_GAIN_BELOW:.0%} IOPS while p99 grows > {P99_GROWTH_ABOVE:.0%}"
)


def find_knee(points: list[SweepPoint]) -> tuple[Knee | None, str]:
    """The knee of `points` (ascending depths) and a sentence saying what the rule found."""
    for a, b in itertools.pairwise(points):
        if not a.iops or not a.p99_us or b.p99_us is None:
            continue
        gain, growth = b.iops / a.iops - 1, b.p99_us / a.p99_us - 1
        if gain < IOPS_GAIN_BELOW and growth > P99_GROWTH_ABOVE:
            knee = Knee(a.iodepth, b.iodepth, gain, growth)
            return knee, (
                f"knee at QD{a.iodepth}: QD{a.iodepth} -> QD{b.iodepth} gains {gain:+.0%} IOPS "
                f"while p99 grows {growth:+.0%}"
            )
    if len(points) < 2:
        return None, "no knee: fewer than two depths swept"
    return None, f"no knee within QD{points[0].iodepth}-QD{points[-1].iodepth}"


def sweep(block_size: int, points: list[SweepPoint]) -> Sweep:
    knee, finding = find_knee(points)
    return Sweep(block_size, points, knee, RULE, IOPS_GAIN_BELOW, P99_GROWTH_ABOVE, finding)
