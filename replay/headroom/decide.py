"""What a sweep's steps say: each step's verdict from its replay and its host evidence (`judge`), each
scale's verdict from its runs (`scale_verdict`), and the headroom they support (`conclude`).

A step that missed (the SLO or the rate) is the device's only when the evidence allows it
(iofp/host_evidence.py `limit`): when the host limited the run (its tasks waited for a CPU, none was
idle, or the hypervisor took it) the step is **inconclusive**, saturation "host", and says so; a
rate missed at CEILING_SHARE of fio's ceiling is the replayer's, as before.

A step that missed only the rate while keeping at least LIMIT_SHARE of it is **at the device's limit**
(inconclusive, saturation "limit"), not its failure. A run's kept share k says the device managed
k x the demanded rate in that run; identical runs drift ±RUN_DRIFT, so another run may manage
(1 + RUN_DRIFT) / (1 - RUN_DRIFT) times as much, and keep all of it: only below LIMIT_SHARE (82%) can
no other identical run pass. Issue 26's verdict bench: quiet sweeps of the RAM loop kept 90.5-100.3%
of the rate at 8x, one passing 8x in 3 of 3 runs and the next failing it in 3 of 3 (IOPS WAPE 9-13%
> 5%, 96.6-98.1% kept): "holds 8x" and "fails at 8x" of one device; at 16x it kept 51-60%, failing
in every run. The disk loop kept 78-100% at 4x across quiet sweeps.

A scale is run up to `--repeat` times (iofp/repeats.py): it passes when a run passed and none
failed; it is at the device's limit when a run was, and none passed (failures beside it included: the
scale fails only when its best run kept under LIMIT_SHARE; over the 14 stored quiet sweeps of the
verdict bench, a "fails at 4x" at 81-82% kept beside a run at 93% was the one statement another
sweep's "holds 4x" contradicted); it fails when its conclusive runs all failed; it is inconclusive
when its runs disagree (a pass and a failure: "the runs disagree") or none was conclusive (the
host). The factor is the highest scale that passed, and a factor is stated as confirmed only when
`--repeat` runs at it all passed (the sweep runs them: sweep.py).
"""

from __future__ import annotations

from dataclasses import dataclass

from iofp import headroom_result as hr
from iofp.host_evidence import limit as host_limit
from iofp.host_evidence import whose_miss
from iofp.replay_result import PCTS, ReplayResult
from iofp.slo import Slo
from replay import run

CEILING_SHARE = 0.8  # a step demanding this much of fio's ceiling that misses the rate: the replayer's
RUN_DRIFT = 0.10  # identical runs drift ±10% (the lab's measured spread; BENCHMARKS.md, verdict_flips)
LIMIT_SHARE = (1 - RUN_DRIFT) / (1 + RUN_DRIFT)  # kept at least this: another identical run may keep it all
GROWTH_FLOOR_US = run.ON_SCHEDULE_LATE_P99_NS / 1e3
RERUN = "rerun on a quiet host"
WITHIN = (f"within identical runs' ±{RUN_DRIFT:.0%} drift (a run that kept {LIMIT_SHARE:.0%} may keep it all "
          "the next)")  # fmt: skip


def judge(rres: ReplayResult, scale: float, phase: str, where: str, slo: Slo, limit: float | None) -> hr.Step:
    """One step's verdict from its replay result: the SLO on its measured figures, the rate kept, and
    whose limit a miss was."""
    m = rres.measured
    step = hr.Step(scale, phase, where, hr.PASS, demanded_iops=rres.demanded.iops,
                   demanded_commits_per_s=rres.demanded.commits_per_s)  # fmt: skip
    step.host = rres.host_evidence
    if m is not None:
        step.achieved_iops, step.commits_per_s = m.achieved_iops, m.commits_per_s
        step.latency_ns = {op: {p: m.latency(op, p) for p in PCTS} for op in hr.OPS}
    if rres.interrupted:
        step.verdict = hr.STOPPED
        return step
    step.rate_failures = _rate_failures(rres, step)
    step.slo_failures = slo.failures(_Figures(rres)) if m else ["no figures: the step was not captured"]
    if not (step.rate_failures or step.slo_failures):
        return step
    step.verdict = hr.FAIL
    if step.rate_failures and limit is not None and scale >= CEILING_SHARE * limit:
        step.saturation = "replayer"
        return step
    lim = host_limit(rres.host_evidence)
    step.limit, who = (lim.why if lim.who != "unknown" else None), lim.who
    if who != "host" and not step.slo_failures and (early := _ran_short(rres, step)):
        step.limit, who = early, "host"
    if who == "host":
        step.verdict, step.saturation = hr.INCONCLUSIVE, "host"
    elif step.rate_failures and not step.slo_failures and (k := kept(step)) is not None and k >= LIMIT_SHARE:
        step.verdict, step.saturation = hr.INCONCLUSIVE, "limit"
        step.limit = f"at its limit: it kept {100 * k:.1f}% of the demanded rate{_rates([step])}"
    elif step.rate_failures:
        step.saturation = "device"
    return step


def kept(step: hr.Step) -> float | None:
    """The share of the demanded rate a step kept: the lowest of its IOPS and commits per second kept,
    and of the demanded span over the span it took (a replay that stretched kept less than its I/Os'
    count says). None when its rate was not measured."""
    pairs = ((step.demanded_iops, step.achieved_iops), (step.demanded_commits_per_s, step.commits_per_s))
    shares = [a / d for d, a in pairs if d and a is not None]
    if not shares:
        return None
    return min(*shares, 1 / (1 + max(step.stretch or 0.0, 0.0)))


def _rates(steps: list[hr.Step]) -> str:
    """' (13,913-14,126 of 14,400 IOPS)': what the steps achieved of what they demanded."""
    got = [s.achieved_iops for s in steps if s.achieved_iops is not None]
    asked = steps[0].demanded_iops
    if not got or not asked:
        return ""
    lo, hi = min(got), max(got)
    return f" ({lo:,.0f}{f'-{hi:,.0f}' if round(hi) != round(lo) else ''} of {asked:,.0f} IOPS)"


def _ran_short(rres: ReplayResult, step: hr.Step) -> str | None:
    """Why the run says nothing of the device when the replay *shortened* the schedule, its only rate
    failure: fio started late and caught up (its absolute pacing issues the late I/Os at once). No
    device makes a replay end early, so this is not its saturation (a CI run beside a CPU hog called
    a -6.1% stretch "the device's saturation"); None when the run missed for another reason too."""
    fid = rres.fidelity
    stretch = fid.get("stretch")
    if stretch is None or stretch >= 0 or len(step.rate_failures) != 1:
        return None
    if not step.rate_failures[0].startswith("duration stretch"):
        return None
    return (f"the replay ran {-100 * stretch:.1f}% shorter than demanded: fio started late and caught "
            "up, which no device causes")  # fmt: skip


def _rate_failures(rres: ReplayResult, step: hr.Step) -> list[str]:
    """Why the step did not keep the demanded rate (none: it did): not faithful, or its lateness grew."""
    fid = rres.fidelity
    if fid.get("status") != "measured":
        step.fidelity = fid.get("status", "not measured")
        return [f"the rate was not measured: {fid.get('reason', 'no capture')}"]
    step.fidelity = f"{fid['verdict']}, {fid['timing']}"
    step.iops_mape, step.stretch = fid["iops_mape"], fid["stretch"]
    step.late_growth_us = fid["late_growth_us"]
    out = list(fid["reasons"])
    allowed = max(GROWTH_FLOOR_US, run.FAITHFUL_STRETCH * rres.demanded.span_s * 1e6) / 1e3
    if (step.late_growth_us or 0) / 1e3 > allowed:
        grew = (step.late_growth_us or 0) / 1e3
        out.append(f"lateness grew {grew:,.1f} ms over the run (allowed {allowed:,.1f} ms)")
    return out


class _Figures:
    """A step's figures as the SLO reads them (iofp/slo.py's Figures)."""

    def __init__(self, rres: ReplayResult) -> None:
        assert rres.measured is not None
        self.m = rres.measured
        self.demanded_iops = rres.demanded.iops
        self.achieved_iops = self.m.achieved_iops
        self.commits_per_s = self.m.commits_per_s
        self.achieved_mbps = self.m.achieved_mbps

    def latency(self, op: str, pct: str) -> float | None:
        return self.m.latency(op, pct)


def why(step: hr.Step) -> list[str]:
    """Why a step failed, rate first (a saturated device misses latency too: the rate is the cause);
    for an inconclusive one, what the host was doing first."""
    if step.verdict == hr.INCONCLUSIVE:
        missed = "; ".join([*step.rate_failures, *step.slo_failures])
        rerun = f"; {RERUN}" if step.saturation != "limit" else f", {WITHIN}"
        return [f"inconclusive: {step.limit}{rerun} (it missed: {missed})"]
    out = [hr.whose_rate(step) + "; ".join(step.rate_failures)] * bool(step.rate_failures) + step.slo_failures
    if (
        step.verdict == hr.FAIL
        and not step.rate_failures
        and step.slo_failures
        and (w := whose_miss(step.host))
    ):
        out[-1] += f" ({w})"  # a latency miss: whose, from the host evidence
    return out


# ---- scales -------------------------------------------------------------------------------------


@dataclass
class ScaleVerdict:
    scale: float
    verdict: str  # hr.PASS | hr.FAIL | hr.INCONCLUSIVE | hr.ABOVE_CEILING
    runs: list[hr.Step]
    why: str = ""  # for INCONCLUSIVE: the host, or the runs disagreeing

    @property
    def passes(self) -> int:
        return sum(s.verdict == hr.PASS for s in self.runs)


def scale_verdict(steps: list[hr.Step], scale: float) -> ScaleVerdict | None:
    """The verdict of `scale` from every run of it (stopped runs left out; None if none ran)."""
    runs = [s for s in steps if s.scale == scale and s.verdict != hr.STOPPED]
    if not runs:
        return None
    kinds = [s.verdict for s in runs]
    if hr.ABOVE_CEILING in kinds:
        return ScaleVerdict(scale, hr.ABOVE_CEILING, runs)
    n, p, f = len(runs), kinds.count(hr.PASS), kinds.count(hr.FAIL)
    if p and f:
        disagree = f"the runs disagree: {p} of {n} passed, {f} failed"
        return ScaleVerdict(scale, hr.INCONCLUSIVE, runs, disagree)
    if p:
        return ScaleVerdict(scale, hr.PASS, runs)
    if at := [s for s in runs if s.saturation == "limit"]:  # one run that could have kept it: not a failure
        ks = [k for s in at if (k := kept(s)) is not None]
        said = f"it kept {_span(ks)}% of the demanded rate{_rates(at)} in {len(at)} of {n} runs"
        if fk := [k for s in runs if s.verdict == hr.FAIL and (k := kept(s)) is not None]:
            said += f" ({_span(fk)}% in {len(fk)})"
        missed = "; ".join(at[-1].rate_failures)
        return ScaleVerdict(scale, hr.INCONCLUSIVE, runs,
                            f"{said}, {WITHIN} (it missed: {missed})")  # fmt: skip
    if f:
        return ScaleVerdict(scale, hr.FAIL, runs)
    host = next(s for s in runs if s.verdict == hr.INCONCLUSIVE)
    return ScaleVerdict(scale, hr.INCONCLUSIVE, runs, f"{host.limit} ({n} of {n} runs)")


def _span(shares: list[float]) -> str:
    """'96.6-98.1': the shares kept, as percentages, one figure when they round alike."""
    lo, hi = f"{100 * min(shares):.1f}", f"{100 * max(shares):.1f}"
    return lo if lo == hi else f"{lo}-{hi}"


def scale_verdicts(res: hr.HeadroomResult) -> list[ScaleVerdict]:
    scales = sorted({s.scale for s in res.steps})
    return [v for v in (scale_verdict(res.steps, x) for x in scales) if v is not None]


def conclude(
    res: hr.HeadroomResult, max_scale: float, precision: float, budget: int, repeat: int
) -> hr.Headroom:
    """The headroom factor, why the search stopped there, and the sentence that says what it means."""
    verdicts = scale_verdicts(res)
    passed = [v for v in verdicts if v.verdict == hr.PASS]
    factor = max((v.scale for v in passed), default=None)
    above = [v for v in verdicts if v.verdict != hr.PASS and (factor is None or v.scale > factor)]
    first = min(above, key=lambda v: v.scale, default=None)
    name = res.labels.get("device") or res.target.get("name") or res.target.get("path")
    what = _what(res)
    runs = "" if factor is None else _runs(next(v for v in passed if v.scale == factor), repeat)
    if first is None:
        if factor is None:
            return hr.Headroom(None, None, "none", f"{name}: no step ran")
        bound = "max-scale" if factor >= max_scale else "budget"
        stop = "the most asked (--max-scale)" if bound == "max-scale" else "where the step budget ran out"
        if bound == "budget" and res.interrupted:  # the budget was not what stopped it
            stop = f"where the sweep was stopped ({res.interrupted})"
        return hr.Headroom(factor, None, bound, f"{name} holds {res.slo} up to at least {factor:g}x "
                           f"{what}{_load(res, factor)}{runs}, {stop}")  # fmt: skip
    bound, at = _bound(first)
    where = f"{first.scale:g}x {what}"
    if factor is None:
        if bound == "limit":
            above = _fails_above(verdicts, first.scale)
            return hr.Headroom(None, first.scale, bound, f"{name} is at its limit at {where}: {at}{above}")
        if bound in hr.UNJUDGED_BOUNDS:
            return hr.Headroom(None, first.scale, bound, f"{name}: inconclusive at {where}: {at}")
        return hr.Headroom(None, first.scale, "first step", f"{name} misses {res.slo} at {where}: {at}")
    held = f"{name} holds {res.slo} up to"
    load = f"{what}{_load(res, factor)}{runs}"
    if bound == "limit":
        above = _fails_above(verdicts, first.scale)
        text = f"{held} {factor:g}x {load}; at {first.scale:g}x it is at its limit: {at}{above}"
        return hr.Headroom(factor, first.scale, bound, text)
    if bound in ("replayer", *hr.UNJUDGED_BOUNDS):
        whose = "the replayer's limit, not the device's" if bound == "replayer" else "inconclusive"
        text = f"{held} at least {factor:g}x {load}; above that is {whose}: at {first.scale:g}x {at}"
    else:
        text = f"{held} {factor:g}x {load}; at {first.scale:g}x {at}"
    if bound not in hr.UNJUDGED_BOUNDS and (first.scale - factor) / factor > precision:
        text += f" (not bisected to {precision:.0%}: the step budget of {budget} ran out)"
    return hr.Headroom(factor, first.scale, bound, text)


def _bound(first: ScaleVerdict) -> tuple[str, str]:
    """Why the search stopped at the scale `first` (a bound of hr.BOUNDS) and what it says."""
    last = first.runs[-1]
    if first.verdict == hr.ABOVE_CEILING or any(s.saturation == "replayer" for s in first.runs):
        s = next(s for s in first.runs if s.saturation == "replayer")
        return "replayer", "; ".join(why(s))
    if first.verdict == hr.INCONCLUSIVE:
        if not first.passes and any(s.saturation == "limit" for s in first.runs):
            return "limit", first.why
        if first.passes:
            fail = next(s for s in first.runs if s.verdict == hr.FAIL)
            return "inconclusive", f"{first.why} ({'; '.join(why(fail))})"
        return "host", f"{first.why}; {RERUN}"
    fails = [s for s in first.runs if s.verdict == hr.FAIL]
    n = len(first.runs)
    text = "; ".join(why(fails[-1])) + (f" ({len(fails)} of {n} runs)" if n > 1 else "")
    return ("rate" if last.rate_failures or fails[-1].rate_failures else "slo"), text


def _fails_above(verdicts: list[ScaleVerdict], scale: float) -> str:
    """'; it fails at 16x: ...': the lowest scale above `scale` at which the device failed by its own
    limit, which bounds a device at its limit from above ('' when no scale above failed so)."""
    v = next((v for v in verdicts if v.scale > scale and v.verdict == hr.FAIL), None)
    if v is None or any(s.saturation == "replayer" for s in v.runs):
        return ""
    return f"; it fails at {v.scale:g}x: {'; '.join(why(v.runs[-1]))}"


def _runs(v: ScaleVerdict, repeat: int) -> str:
    """How many runs back the factor: all of `repeat`, or fewer (then said)."""
    if repeat <= 1:
        return ""
    passes = v.passes
    return f", {passes} runs agreeing" if passes >= repeat else f" ({passes} of {repeat} runs passed)"


def _what(res: hr.HeadroomResult) -> str:
    regime = (res.settings.get("selection") or {}).get("regime")
    return {"spike": "today's spike", "steady": "today's steady state"}.get(regime or "", "today's rate")


def _load(res: hr.HeadroomResult, scale: float) -> str:
    d = res.demand
    parts = [f"{d['iops'] * scale:,.0f} IOPS"] if d.get("iops") else []
    if d.get("commits_per_s"):
        parts.append(f"{d['commits_per_s'] * scale:,.0f} commits/s")
    return f" ({', '.join(parts)})" if parts else ""
