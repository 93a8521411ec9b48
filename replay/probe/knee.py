"""The queue-depth knee of cell 1's sweep: the depth past which p99 grows faster than IOPS.

Rule: walking the swept depths in order, the knee is the first depth from which the step to the
next swept depth gains less than IOPS_GAIN_BELOW more IOPS while p99 grows more than
P99_GROWTH_ABOVE, and no deeper depth reaches IOPS_GAIN_BELOW more IOPS than it: going deeper buys
little throughput for much more tail latency. The second condition keeps one noisy step from being
called the knee: on this shared 2-vCPU VM a RAM loop's sweep dipped from QD2 to QD4 (+5% IOPS, p99
+78%) and then doubled its IOPS by QD16 (BENCHMARKS.md). No such depth: no knee within the swept
depths. A step is one move along the --qd list as given (the default list doubles).
"""

from __future__ import annotations

import itertools

from iofp.probe_result import Knee, Sweep, SweepPoint

IOPS_GAIN_BELOW = 0.10
P99_GROWTH_ABOVE = 0.50
RULE = (
    f"the first depth from which the step to the next swept depth gains < {IOPS_GAIN_BELOW:.0%} IOPS "
    f"while p99 grows > {P99_GROWTH_ABOVE:.0%}, and no deeper depth gains {IOPS_GAIN_BELOW:.0%} or more"
)


def find_knee(points: list[SweepPoint]) -> tuple[Knee | None, str]:
    """The knee of `points` (ascending depths) and a sentence saying what the rule found."""
    for i, (a, b) in enumerate(itertools.pairwise(points)):
        if not a.iops or not a.p99_us or b.p99_us is None:
            continue
        gain, growth = b.iops / a.iops - 1, b.p99_us / a.p99_us - 1
        plateau = max(p.iops for p in points[i + 1 :]) < (1 + IOPS_GAIN_BELOW) * a.iops
        if gain < IOPS_GAIN_BELOW and growth > P99_GROWTH_ABOVE and plateau:
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
