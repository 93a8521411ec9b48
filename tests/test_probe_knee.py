"""The knee rule of the queue-depth sweep (replay/probe/knee.py) on sweeps with known answers."""

from __future__ import annotations

from iofp.probe_result import SweepPoint
from replay.probe.knee import find_knee


def sweep(*rows: tuple[int, float, float]) -> list[SweepPoint]:
    return [SweepPoint(qd, f"r{qd}", iops, p99 / 2, p99, p99 * 2) for qd, iops, p99 in rows]


def test_the_knee_is_the_depth_before_the_first_step_that_buys_little_iops_for_much_p99():
    # 1 -> 2: +80% IOPS; 2 -> 4: +50%; 4 -> 8: +5% IOPS, p99 +100%: the knee is 4
    knee, finding = find_knee(sweep((1, 100, 10), (2, 180, 12), (4, 270, 20), (8, 283.5, 40), (16, 290, 90)))
    assert knee is not None and (knee.iodepth, knee.next_iodepth) == (4, 8)
    assert round(knee.iops_gain, 6) == 0.05 and knee.p99_growth == 1.0
    assert finding == "knee at QD4: QD4 -> QD8 gains +5% IOPS while p99 grows +100%"


def test_both_conditions_must_hold():
    # 2 -> 4 gains 9% but p99 grows only 50% (not more); 4 -> 8 grows p99 60% but gains 10% (not less)
    knee, finding = find_knee(sweep((2, 100, 10), (4, 109, 15), (8, 119.9, 24)))
    assert knee is None and finding == "no knee within QD2-QD8"


def test_a_dip_that_the_deeper_depths_climb_out_of_is_no_knee():
    # 2 -> 4: +5% IOPS, p99 +78%, but QD16 has twice QD2's IOPS: the knee is where IOPS stop for good
    knee, _ = find_knee(sweep((2, 59_392, 100), (4, 62_583, 178), (16, 117_033, 300), (64, 120_000, 900)))
    assert knee is not None and (knee.iodepth, knee.next_iodepth) == (16, 64)


def test_a_flat_device_has_its_knee_at_the_first_depth():
    knee, _ = find_knee(sweep((1, 3000, 40), (16, 3002, 97_000), (64, 3024, 101_000)))
    assert knee is not None and knee.iodepth == 1


def test_one_depth_has_no_knee():
    assert find_knee(sweep((1, 100, 10))) == (None, "no knee: fewer than two depths swept")
