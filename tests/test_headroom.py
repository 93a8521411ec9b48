"""`iofp headroom` on lab devices: a device throttled to N IOPS holds a selection demanding D for about
N/D times, and says the device gave out; a device capped below the commit-heavy sample's writes misses
at 1x and ranks below the RAM loop; a scale past the replayer's ceiling is reported as the replayer's
limit; bad input is one line before any I/O; a stop signal keeps the steps done as a partial result."""

from __future__ import annotations

import json
import time
from contextlib import nullcontext
from pathlib import Path

import pytest
from conftest import COMMIT_HEAVY, DEMAND_IOPS, blkio_throttle, needs_fio, needs_root
from helpers import MEASURE_NICE, headroom_record, interrupted_headroom, iofp_in, run_iofp, slowed_trace
from lab import destroy_loop, make_loop

from iofp import headroom_result as hr
from iofp import replay_result as rr
from iofp import slo
from iofp.host_evidence import DeviceLoad, HostEvidence, limit
from replay.headroom import ceiling as headroom_ceiling
from replay.headroom import decide
from replay.headroom import sweep as headroom
from report import headroom as report_headroom

# ---- no I/O: the options and the rules ------------------------------------------------------


def test_the_scales_climb_then_double_to_the_max():
    assert list(headroom.rising((1.0, 1.5, 2.0, 3.0, 4.0), 32)) == [1, 1.5, 2, 3, 4, 8, 16, 32]
    assert list(headroom.rising((1.0, 3.0), 5)) == [1, 3, 5]
    assert headroom.parse_scales("2, 1,1.5") == (1.0, 1.5, 2.0)
    assert headroom.parse_precision("5%") == 0.05 and headroom.parse_precision("0.1") == 0.1


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--slo", "p99<2"], "iofp: --slo term 'p99<2': expected terms joined by ','"),
        (["--slo", "p101<=1ms"], "iofp: --slo term 'p101<=1ms': expected terms joined by ','"),
        (["--slo", "p99<=fast"], "iofp: --slo term 'p99<=fast': expected terms joined by ','"),
        (["--slo", "disk.p99<=1ms"], "iofp: --slo term 'disk.p99<=1ms': expected terms joined by ','"),
        (["--slo", "p99<=2ms", "--scales", "1,0"], "iofp: --scales 1,0: '0' is not a scale > 0;"),
        (["--slo", "p99<=2ms", "--scales", "1,-2"], "iofp: --scales 1,-2: '-2' is not a scale > 0;"),
        (["--slo", "p99<=2ms", "--scales", "1,x"], "iofp: --scales 1,x: 'x' is not a scale > 0;"),
        (["--slo", "p99<=2ms", "--scales", "1,64"], "iofp: --scales 64 is above --max-scale 32;"),
        (["--slo", "p99<=2ms", "--precision", "150%"], "iofp: --precision 150%: must be between"),
    ],
)
def test_bad_options_are_one_line_before_anything(args, message, tmp_path):
    out = tmp_path / "h"
    code, stdout, err = run_iofp("headroom", COMMIT_HEAVY, "--target", "/dev/null", "-o", out, *args)
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1 and err.startswith(message), err
    assert not out.exists()


# ---- lab devices -----------------------------------------------------------------------------


@needs_root
@needs_fio
def test_a_target_smaller_than_the_selection_is_refused_before_any_io(tmp_path):
    dev, backing = make_loop(4)
    out = tmp_path / "h"
    try:
        before = Path(f"/sys/block/{Path(dev).name}/stat").read_text()
        code, stdout, err = run_iofp("headroom", "--repeat", "1",
                                     COMMIT_HEAVY, "--between", "5", "6", "--target", dev,
                                     "--slo", "p99<=2ms", "-o", out)  # fmt: skip
        after = Path(f"/sys/block/{Path(dev).name}/stat").read_text()
    finally:
        destroy_loop(dev, backing)
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1 and "--fold" in err, err
    assert before.split()[4:8] == after.split()[4:8]  # not one write reached it (reads: the safety probe)
    assert not out.exists()


HEADROOM_THROTTLE_IOPS = 3 * DEMAND_IOPS  # N / D = 3
# Above what fio can issue of the read trace on any host (its ceiling here: 0.8-1.5 M reads/s in all
# quiet, 735 k beside two CPU hogs: 1,470-3,050x the trace's 500/s), so that step is never run.
TOP_SCALE = 50_000


@needs_root
@needs_fio
def test_a_throttled_device_holds_n_over_d(loop_device, reads_trace, tmp_path):
    """N = 1,500 read IOPS (blkio throttle), D = 500: the headroom is about 3x, the device's limit.

    A CI run found 2.25x at N = 3,000, D = 1,000: its QD1 replay kept 2,785 and 2,985 of 3,000 reads/s
    at 3x, a host too slow for 333 us a read. Here, beside CPU hogs (one or two) or under a 30-60% CPU
    quota, every sweep found 3x: at N = 3,000, D = 1,000 in 18 of 18, 3 after a confirming run; at
    N = 1,500, D = 500 in 10 of 10, none. At nice -10, with a budget that leaves room for two
    confirming runs, the test measures the throttle, not the host."""
    out = tmp_path / "h"
    t0 = time.monotonic()
    with blkio_throttle(loop_device, read_iops=HEADROOM_THROTTLE_IOPS) as group:
        proc = iofp_in(group, "headroom", reads_trace, "--target", loop_device, "--slo", "p99<=50ms",
                       "--budget", "10", "--repeat", "2", "--label", "device=throttled", "-o", out,
                       nice=MEASURE_NICE, timeout=400)  # fmt: skip
    wall = time.monotonic() - t0
    assert proc.returncode == 0, proc.stderr
    _, res = hr.load(out)
    h = res.headroom
    print(proc.stdout, f"\nwall {wall:.0f} s")
    expected = HEADROOM_THROTTLE_IOPS / DEMAND_IOPS
    assert abs(h.factor / expected - 1) <= 0.15, h
    # the device did not keep the rate (not the SLO, not the replayer); or, on a busy host, the runs
    # above the factor are inconclusive, and their evidence says the host was busy: never the opposite
    assert h.bound in ("rate", "host", "limit"), h
    first_fail = [s for s in res.steps if s.scale == h.failed_at]
    if h.bound == "limit":  # it kept nearly all the rate there (decide.LIMIT_SHARE): neither held nor failed
        assert all(s.saturation in ("limit", "host") for s in first_fail), first_fail
        assert all(decide.kept(s) >= decide.LIMIT_SHARE for s in first_fail if s.saturation == "limit")
    elif h.bound == "rate":  # the conclusive runs there: the device's rate; beside them may be the host's
        convicted = [s for s in first_fail if s.verdict == hr.FAIL]
        assert convicted and all(s.saturation == "device" and s.rate_failures for s in convicted), first_fail
        assert all(limit(s.host).who == "host" for s in first_fail if s.verdict != hr.FAIL), first_fail
    else:
        assert all(limit(s.host).who == "host" for s in first_fail), [s.host for s in first_fail]
    scales = {s.scale for s in res.steps if s.dir}
    assert (h.failed_at - h.factor) / h.factor <= 0.05 or h.bound == "host" or len(scales) == 10
    assert len(scales) <= 10 and all(sum(s.scale == x for s in res.steps) <= 2 for x in scales)  # the budget
    for s in res.steps:  # every step ran is a whole replay result, judged by iofp's capture
        assert s.dir is None or json.loads((out / s.dir / "results.json").read_text())["status"] == "complete"
    passed = [s for s in res.steps if s.verdict == hr.PASS]
    assert all(s.achieved_iops >= 0.95 * s.demanded_iops for s in passed)
    least = "at least " if h.bound == "host" else ""
    assert f"throttled holds p99<=50ms up to {least}{h.factor:g}x today's rate" in proc.stdout


@needs_root
@needs_fio
def test_a_scale_above_the_replayers_ceiling_is_the_replayers_limit(reads_trace, tmp_path):
    dev, backing = make_loop(64)
    out = tmp_path / "h"
    try:
        # a budget of 1: a second step would be a bisection's midpoint below the ceiling (at nice -10,
        # 500 reads/s on 1 s windows: a busy machine's other work does not stall the 1x step)
        proc = iofp_in(None, "headroom", reads_trace, "--target", dev, "--slo", "p99<=50ms",
                       "--scales", f"1,{TOP_SCALE}", "--max-scale", str(TOP_SCALE), "--budget", "1",
                       "--repeat", "1", "-o", out, nice=MEASURE_NICE)  # fmt: skip
    finally:
        destroy_loop(dev, backing)
    code, stdout, err = proc.returncode, proc.stdout, proc.stderr
    assert code == 0, err
    _, res = hr.load(out)
    assert res.ceiling.status == "measured" and res.ceiling.total_iops > 10 * DEMAND_IOPS
    limit = res.ceiling.scale_limit()
    top = next(s for s in res.steps if s.scale == TOP_SCALE)
    assert top.verdict == hr.ABOVE_CEILING and top.dir is None and top.saturation == "replayer"
    assert [s.scale for s in res.steps if s.dir] == [1.0]  # nothing above the ceiling was run
    assert all(s.verdict == hr.ABOVE_CEILING for s in res.steps if s.scale > limit)
    assert res.headroom.bound == "replayer" and res.headroom.factor == 1.0
    assert "the replayer's limit, not the device's" in stdout
    # The 1,000-I/O plan is done in a few ms, which fio times in whole ms (its ceiling once read
    # 2,000,000 I/Os/s, 2,000 / 1 ms): repeated until fio's clock can time it, every line replayed
    job = json.loads((out / "ceiling" / "fio.stdout").read_text())["jobs"][0]
    times = int(res.ceiling.how.split("repeated ")[1].split("x")[0])
    assert job["job_runtime"] >= headroom_ceiling.MIN_RUN_MS / 2, job["job_runtime"]
    assert job["read"]["total_ios"] == times * 2 * DEMAND_IOPS
    assert res.ceiling.total_iops == pytest.approx(times * 2 * DEMAND_IOPS / (job["job_runtime"] / 1e3))


# The commit-heavy sample's [5, 6.5) s with its clock slowed 5x: 300 fdatasync'd appends/s and 60
# checkpoint writes/s, 7.5 s at 1x. At the sample's own rate (1,500 commits/s) the RAM loop's 1x step
# missed (sweep and confirming run) beside two CPU hogs in 3 of 4 sweeps, and in one CI run (13.9% IOPS
# MAPE): the loop device's worker runs at nice 0, behind whatever else runs. Beside two hogs, slowed
# 3x its 1x missed in 1 of 10 sweeps; slowed 5x, in 0 of 6 (1x passed at once in each; the factor
# 1.5x-4x).
SLOWED = 5
# Half the slowed slice's 660 writes/s at 1x, its 300 flushes counted: the throttle counts them.
CAPPED_WRITE_IOPS = 330


@needs_root
@needs_fio
def test_a_device_capped_below_todays_writes_misses_at_1x_and_ranks_last(tmp_path):
    """The commit-heavy sample slowed 5x (300 fdatasync'd appends/s, 60 checkpoint writes/s) on two
    RAM loops, one capped at 330 writes/s: the capped one cannot keep today's rate, the other holds it
    or more.

    The RAM loop's factor is the 2-core machine's, not the device's (BENCHMARKS.md, headroom). A RAM
    loop against the direct-io disk loop (2x quiet) was the test before; in one CI run the RAM loop
    missed commit.p99<=2ms at 1x twice, its commits 10x slower than here. A cap is a limit no load
    moves; what holds beside it under load is asserted. The sweeps stop at 2x: nothing here reads the
    RAM loop's factor past 1x; beside `nice -n 5 yes` its sweep to 8x ran 13 steps of ~12 s, the 9
    above 2x each inconclusive because of the host: ~2.5 min of the test's 4.4."""
    trace = slowed_trace(COMMIT_HEAVY, (5, 6.5), SLOWED, tmp_path / "trace")
    factors, heads, codes = {}, {}, {}
    for name, cap in (("ram", None), ("capped", CAPPED_WRITE_IOPS)):
        dev, backing = make_loop(256)
        try:
            with blkio_throttle(dev, write_iops=cap) if cap else nullcontext() as group:
                for args in (
                    ["headroom", trace, "--target", dev, "--scales", "1,2", "--max-scale", "2",
                     "--slo", "commit.p99<=20ms", "--precision", "25%", "--budget", "6",
                     "-o", tmp_path / name],
                    ["probe", dev, "--cells", "commit", "--runtime", "1s", "-o", tmp_path / f"probe-{name}"],
                ):  # fmt: skip
                    # at nice -10: the test measures the devices, and a busy CI machine's other work
                    # must not take the replayer's CPU. At the sample's own rate the RAM loop's 1x
                    # step kept it beside one nice-0 CPU hog 8 times in 8 (nice 0 and -10); with both
                    # cores hogged, 0 in 5 at nice 0 and 2 in 5 at nice -10 (slowed 5x: above).
                    proc = iofp_in(group, *args, "--label", f"device={name}", nice=MEASURE_NICE)
                    codes[name, args[0]] = proc.returncode
                    assert proc.returncode in (0, 1), proc.stderr
        finally:
            destroy_loop(dev, backing)
        heads[name] = hr.load(tmp_path / name)[1]
        factors[name] = heads[name].headroom.factor
    print("headroom factors", factors, codes)
    ram = heads["ram"].headroom
    assert (codes["ram", "probe"], codes["capped", "probe"]) == (0, 0)
    if ram.factor is None:
        # the host too busy to tell at 1x, as its evidence says in every 1x run (a fresh-clone CI's start
        # beside the hog: 3 of 3 runs at CPU pressure 59%, 0% idle, the device idle 77%): inconclusive and
        # no factor shown (exit 1), never a miss called the RAM loop's
        assert ram.bound == "host" and codes["ram", "headroom"] == 1, ram
        assert all(limit(s.host).who == "host" for s in heads["ram"].steps if s.scale == 1.0), ram
    else:
        assert ram.factor >= 1 and codes["ram", "headroom"] == 0, ram
    capped = heads["capped"].headroom
    # below 1x: headroom exits 1. The cap's miss is the device's; on a host too busy to tell, the
    # runs are inconclusive, and their evidence says so: never a pass
    assert codes["capped", "headroom"] == 1 and capped.factor is None and capped.failed_at == 1.0, capped
    assert capped.bound in ("first step", "host"), capped
    ones = [s for s in heads["capped"].steps if s.scale == 1.0]
    if capped.bound == "first step":
        assert all(s.saturation == "device" and s.rate_failures for s in ones if s.verdict == hr.FAIL), ones
        first = next(s for s in ones if s.verdict == hr.FAIL)
        assert first.achieved_iops < 0.8 * first.demanded_iops, first  # the rate, not the SLO or fio
    else:
        assert all(limit(s.host).who == "host" for s in ones), [s.host for s in ones]

    # compare ranks them by headroom (the capped one given first), the probe's commit cell beside
    dirs = [tmp_path / "capped", tmp_path / "ram", tmp_path / "probe-capped", tmp_path / "probe-ram"]
    code, out, err = run_iofp("compare", *dirs)
    assert code == 0, err
    assert "ranking by headroom: capped" not in out, out
    if ram.factor is None:
        return  # nothing shown for the RAM loop: no ranking to check, and none reversed (above)
    lines = out.splitlines()
    assert lines[0].split() == ["ram", "capped"]
    # a factor the sweep did not get past (the budget ran out, as when two steps needed confirming
    # runs) is a lower bound, and compare says so; a miss at 1x is below 1x
    bound = ">=" if heads["ram"].headroom.bound in hr.OPEN_BOUNDS else ""
    row = lines[[x.split(" ")[0] for x in lines].index("headroom")].split()[1:]
    assert row == [f"{bound}{factors['ram']:g}x", "<1x" if capped.bound == "first step" else "?"], out
    ranked = "ranking by headroom: ram > capped" in out
    assert ranked or capped.bound == "host", out
    assert any(x.startswith("c3 x1 commits/s") for x in lines) and all(len(x) <= 80 for x in lines), out


@needs_root
@needs_fio
def test_a_stop_signal_stops_fio_and_keeps_the_steps_done(reads_trace, tmp_path):
    dev, backing = make_loop(64)
    out = tmp_path / "h"
    try:
        code, stdout, err = interrupted_headroom(reads_trace, dev, out)
    finally:
        destroy_loop(dev, backing)
    assert code == 130, err
    _, res = hr.load(out)
    assert res.status == "partial" and res.interrupted == "SIGINT"
    # 1x passed (after a confirming run, if a busy machine stalled the first), then 1.5x was stopped
    *before, last = [(s.scale, s.verdict) for s in res.steps]
    assert before[-1] == (1.0, hr.PASS) and {x for x, _ in before} == {1.0} and last == (1.5, hr.STOPPED)
    done = f"{len(before)} step{'s' * (len(before) != 1)}"
    assert err.splitlines()[-1] == (
        f"iofp: interrupted (SIGINT) after {done}; fio was stopped, and the steps done so far are kept "
        "as a partial result"
    )
    step2 = json.loads((out / res.steps[-1].dir / "results.json").read_text())
    assert step2["status"] == "partial" and step2["interrupted"].startswith("SIGINT while fio ran")
    assert "1x" in stdout and "PARTIAL" in stdout
    assert not [p for p in Path("/proc").iterdir() if p.name.isdigit() and _names(p, out)]


def _names(proc: Path, out: Path) -> bool:
    try:
        return str(out).encode() in (proc / "cmdline").read_bytes()
    except OSError:
        return False


def conclude(steps: list[hr.Step], repeat: int = 1, **fields) -> hr.Headroom:
    res = headroom_record(steps, **fields)
    return decide.conclude(res, max_scale=8, precision=0.05, budget=12, repeat=repeat)


def ok(x: float, phase: str = "sweep") -> hr.Step:
    return hr.Step(x, phase, "d", hr.PASS)


def test_the_finding_names_the_bound_and_the_load():
    slo_miss = hr.Step(2.2, "bisect", "d", hr.FAIL, slo_failures=["read p99 3.10 ms > 2.00 ms"])
    h = conclude([ok(1), ok(2), slo_miss, ok(2.1)])
    assert (h.factor, h.failed_at, h.bound) == (2.1, 2.2, "slo")
    assert h.finding == (
        "cand holds p99<=2ms up to 2.1x today's spike (2,100 IOPS); at 2.2x read p99 3.10 ms > 2.00 ms"
    )
    h = conclude([ok(1), ok(4), ok(8)])
    assert (h.factor, h.bound) == (8, "max-scale") and "up to at least 8x" in h.finding
    h = conclude([ok(1)], status="partial", interrupted="SIGINT")
    assert h.bound == "budget" and h.finding.endswith("(1,000 IOPS), where the sweep was stopped (SIGINT)")
    above = hr.Step(16, "sweep", None, hr.ABOVE_CEILING, saturation="replayer", rate_failures=["x"])
    h = conclude([ok(1), above])
    assert h.bound == "replayer" and "the replayer's limit, not the device's" in h.finding
    assert "not bisected to 5%" in h.finding
    h = conclude([hr.Step(1, "sweep", "d", hr.FAIL, rate_failures=["r"], saturation="device")])
    assert (h.factor, h.bound) == (None, "first step") and h.finding.startswith("cand misses p99<=2ms at 1x")


HOST = "the host's CPU was busy (pressure 31%, 4% idle); the device was idle 60% of the run"


def busy(x: float, phase: str = "sweep") -> hr.Step:
    """A run that missed while the host limited it (decide.judge's verdict for such evidence)."""
    return hr.Step(x, phase, "d", hr.INCONCLUSIVE, rate_failures=["IOPS WAPE 9.1% > 5%"], saturation="host",
                   limit=HOST)  # fmt: skip


def test_a_miss_while_the_host_was_busy_names_the_host_never_the_device():
    h = conclude([busy(1), busy(1, "confirm"), busy(1, "confirm")], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (None, 1, "host")
    assert h.finding == f"cand: inconclusive at 1x today's spike: {HOST} (3 of 3 runs); rerun on a quiet host"
    assert "saturation" not in h.finding
    # a pass among the host's runs: the device held it; the scale above, the host again
    h = conclude([busy(1), ok(1, "confirm"), ok(1, "confirm"), busy(2), busy(2, "confirm")], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (1, 2, "host")
    assert h.finding.startswith(
        "cand holds p99<=2ms up to at least 1x today's spike (1,000 IOPS) (2 of 3 runs passed); above that "
        "is inconclusive: at 2x the host's CPU was busy"
    )


def replayed(
    stretch: float, reasons: list[str], host: HostEvidence, achieved: float = 4000.0
) -> rr.ReplayResult:
    """A 1x step's replay of 40 I/Os (4,000 IOPS demanded), its latencies well within the SLO, with this
    fidelity and `achieved` IOPS."""
    lat = rr.Latency(40, 40 * 4096, 40_000, 90_000, 100_000)
    m = rr.Measured("replay capture", 0.01, {"write": lat, "all": lat}, {}, "none", achieved, 16.4, None)
    fid = {"status": "measured", "verdict": "not faithful" if reasons else "faithful", "timing": "precise",
           "reasons": reasons, "stretch": stretch, "iops_mape": 0.0, "late_growth_us": 0.0}  # fmt: skip
    demanded = rr.Demand(40, 0, 40 * 4096, 0.01)
    return rr.ReplayResult("t", "h", "k", {}, {}, {}, {}, {}, {}, {}, {}, {}, demanded=demanded,
                           measured=m, fidelity=fid, host_evidence=host)  # fmt: skip


def test_a_replay_that_ran_short_is_never_the_devices_saturation():
    """A CI run beside a CPU hog: headroom's 1x step 'fail: the device's saturation: duration stretch
    -6.1%'. fio started late and caught up; no device makes a replay end early."""
    quiet = HostEvidence(1.0, 10, 2, 0.02, 0.04, 0.0, 0.0, [0.3, 0.2], [0.0, 0.0], [])
    short = replayed(-0.30, ["duration stretch -30.0% beyond ±2 ms"], quiet)
    step = decide.judge(short, 1.0, "sweep", "d", slo.parse("p99<=1s"), None)
    assert (step.verdict, step.saturation) == (hr.INCONCLUSIVE, "host")
    assert step.limit.startswith("the replay ran 30.0% shorter than demanded: fio started late")
    # a run that took longer is the device's (the host was quiet); one with no failure passes
    long = replayed(0.30, ["duration stretch +30.0% beyond ±2 ms"], quiet)
    step = decide.judge(long, 1.0, "sweep", "d", slo.parse("p99<=1s"), None)
    assert (step.verdict, step.saturation) == (hr.FAIL, "device")
    step = decide.judge(replayed(-0.04, [], quiet), 1.0, "sweep", "d", slo.parse("p99<=1s"), None)
    assert step.verdict == hr.PASS


def test_a_rate_missed_by_a_mostly_idle_device_is_not_called_its_saturation():
    """Issue 26's verdict runs: the RAM loop at 8-16x, busy 8-12% of the run on a quiet host, read
    "the device's saturation". Its limit was a serial committer's wait on each fsync (or, elsewhere, a
    cap above the device): still the device's, not its saturation. A device busy the whole run is."""

    def quiet(util: float) -> HostEvidence:
        disk = DeviceLoad("loop9", "target", util, 0.2, 0.1, 2, 128, 4000)
        return HostEvidence(1.0, 10, 2, 0.02, 0.04, 0.0, 0.0, [0.3, 0.2], [0.0, 0.0], [disk])

    slow = replayed(0.30, ["duration stretch +30.0% beyond ±2 ms"], quiet(0.10))
    step = decide.judge(slow, 8.0, "sweep", "d", slo.parse("p99<=1s"), None)
    assert (step.verdict, step.saturation) == (hr.FAIL, "device")  # the device's limit: it fails
    said = "; ".join(decide.why(step))
    assert "saturation:" not in said and said.startswith(
        "the device's latency or a cap above it, not a saturated device (neither the device (busy 10% "
        "of the run) nor the host's CPU (pressure 2%, 75% idle) was saturated): duration stretch +30.0%"
    ), said
    step = decide.judge(replayed(0.30, ["duration stretch +30.0%"], quiet(0.95)), 8.0, "sweep", "d",
                        slo.parse("p99<=1s"), None)  # fmt: skip
    assert decide.why(step)[0].startswith("the device's saturation: duration stretch"), decide.why(step)


QUIET = HostEvidence(1.0, 10, 2, 0.02, 0.04, 0.0, 0.0, [0.3, 0.2], [0.0, 0.0], [])


def test_a_rate_kept_within_the_drift_of_a_ceiling_is_the_devices_limit_not_its_failure():
    """Issue 26's verdict bench: quiet sweeps of the RAM loop kept 90.5-100.3% of the rate at 8x; one
    passed 8x in 3 of 3 runs, the next failed it in 3 of 3 (IOPS WAPE 9-13% > 5%, 96.6-98.1% kept):
    "holds 8x" and "fails at 8x" of one device. A rate kept within the runs' drift: the device's limit."""
    near = replayed(0.0, ["IOPS WAPE 10.2% > 5%"], QUIET, achieved=3880.0)
    step = decide.judge(near, 8.0, "sweep", "d", slo.parse("p99<=1s"), None)
    assert (step.verdict, step.saturation) == (hr.INCONCLUSIVE, "limit")
    assert step.limit == "at its limit: it kept 97.0% of the demanded rate (3,880 of 4,000 IOPS)"
    said = decide.why(step)[0]
    assert said == (
        "inconclusive: at its limit: it kept 97.0% of the demanded rate (3,880 of 4,000 IOPS), within "
        "identical runs' ±10% drift (a run that kept 82% may keep it all the next) (it missed: IOPS WAPE "
        "10.2% > 5%)"
    )
    far = replayed(0.0, ["IOPS WAPE 15.0% > 5%"], QUIET, achieved=3400.0)  # 85%: a next run may keep it all
    assert decide.judge(far, 8.0, "sweep", "d", slo.parse("p99<=1s"), None).saturation == "limit"
    # below LIMIT_SHARE (82%) the device failed; nearly all the rate kept but the SLO missed: failed too;
    # a run that took 30% longer kept 1/1.3 of the rate, whatever its count says
    for rres, objective in (
        (replayed(0.0, ["IOPS WAPE 30.0% > 5%"], QUIET, achieved=3200.0), "p99<=1s"),
        (near, "p99<=10us"),
        (replayed(0.30, ["duration stretch +30.0% beyond ±2 ms"], QUIET), "p99<=1s"),
    ):
        step = decide.judge(rres, 8.0, "sweep", "d", slo.parse(objective), None)
        assert (step.verdict, step.saturation) == (hr.FAIL, "device"), step


def at_limit(x: float, share: float, phase: str = "sweep") -> hr.Step:
    return hr.Step(x, phase, "d", hr.INCONCLUSIVE, demanded_iops=1e3 * x, achieved_iops=1e3 * x * share,
                   rate_failures=["IOPS WAPE 10.2% > 5%"], saturation="limit", limit="at its")  # fmt: skip


def test_a_sweep_at_the_devices_limit_says_so_and_never_that_it_failed_there():
    """The factor is the scale below the limit; the limit is neither held nor failed, so one sweep that
    passed the scale and another that was at its limit there do not contradict each other (the compare
    ranking and the bench read the bound); a failure above it bounds it and is said."""
    fail = hr.Step(8, "sweep", "d", hr.FAIL, demanded_iops=8000, achieved_iops=4400,
                   rate_failures=["IOPS WAPE 60.0% > 5%"], saturation="device")  # fmt: skip
    limits = [at_limit(4, 0.981), at_limit(4, 0.980, "confirm"), at_limit(4, 0.966, "confirm")]
    steps = [ok(1), ok(2), ok(2, "confirm"), ok(2, "confirm"), *limits, fail]
    h = conclude(steps, repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (2, 4, "limit")
    assert h.finding == (
        "cand holds p99<=2ms up to 2x today's spike (2,000 IOPS), 3 runs agreeing; at 4x it is at its limit: "
        "it kept 96.6-98.1% of the demanded rate (3,864-3,924 of 4,000 IOPS) in 3 of 3 runs, within "
        "identical runs' ±10% drift (a run that kept 82% may keep it all the next) (it missed: IOPS WAPE "
        "10.2% > 5%); it fails at 8x: the device's saturation: IOPS WAPE 60.0% > 5%"
    )
    res = headroom_record(steps, headroom=h)
    assert report_headroom.verdict_line(res).startswith("headroom 2x, at its limit at 4x: it kept 96.6")
    assert [s.scale for s in report_headroom.drawn(res)] == [1, 2, 4, 8]  # the device's figures at its limit
    assert report_headroom.step_verdict(limits[0]).endswith(": another identical run could keep it all")
    # a pass beside a run at its limit: the scale passed (as beside a run the host limited)
    h = conclude([ok(1), ok(2), at_limit(2, 0.97, "confirm"), ok(2, "confirm")], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (2, None, "budget") and "(2 of 3 runs passed)" in h.finding
    # at its limit at today's load: no factor (headroom exits 1), and no failure said
    h = conclude([at_limit(1, 0.93), at_limit(1, 0.95, "confirm"), at_limit(1, 0.94, "confirm")], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (None, 1, "limit")
    assert h.finding.startswith(
        "cand is at its limit at 1x today's spike: it kept 93.0-95.0% of the demanded"
    )
    assert "fails" not in h.finding and "saturation" not in h.finding


def test_a_scale_fails_only_when_none_of_its_runs_could_have_kept_the_rate():
    """s7's quiet sweeps of the disk loop: one failed 4x in 2 runs at 80.8-81.7% kept beside a third at
    93.3% (at its limit), another held 4x. One run at its limit beside failures: the scale is at the
    limit, and no failure is stated there."""
    fails = [hr.Step(4, p, "d", hr.FAIL, demanded_iops=4e3, achieved_iops=a, rate_failures=["IOPS WAPE 20%"],
                     saturation="device") for p, a in (("sweep", 3232.0), ("confirm", 3268.0))]  # fmt: skip
    runs = [fails[0], at_limit(4, 0.933, "confirm"), fails[1]]
    v = decide.scale_verdict(runs, 4)
    assert v is not None and v.verdict == hr.INCONCLUSIVE, v
    kept = "it kept 93.3% of the demanded rate (3,732 of 4,000 IOPS) in 1 of 3 runs (80.8-81.7% in 2), within"
    assert v.why.startswith(kept), v.why
    h = conclude([ok(1), ok(2), ok(2, "confirm"), ok(2, "confirm"), *runs], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (2, 4, "limit") and "fails" not in h.finding, h
    assert decide.scale_verdict(fails, 4).verdict == hr.FAIL  # every run below LIMIT_SHARE: it failed


def test_a_scale_whose_runs_disagree_is_inconclusive_and_a_factor_needs_its_repeats():
    fail = hr.Step(2, "confirm", "d", hr.FAIL, rate_failures=["IOPS WAPE 7.0% > 5%"], saturation="device")
    h = conclude([ok(1), ok(1, "confirm"), ok(1, "confirm"), ok(2), fail], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (1, 2, "inconclusive")
    assert "at 2x the runs disagree: 1 of 2 passed, 1 failed (the device's saturation: IOPS WAPE" in h.finding
    assert "3 runs agreeing" in h.finding
    fails = [hr.Step(2, p, "d", hr.FAIL, rate_failures=["r"], saturation="device") for p in ("a", "b")]
    h = conclude([ok(1), ok(1, "confirm"), ok(1, "confirm"), *fails], repeat=3)
    assert (h.factor, h.failed_at, h.bound) == (1, 2, "rate") and "(2 of 2 runs)" in h.finding
