"""`iofp headroom`: the selection replayed at rising load until the SLO breaks, then bisected.

    check options -> resolve the plan ONCE (run.prepare: fio, target, selection, commit groups,
    streams, mapping) -> the replayer's ceiling (ceiling.py) -> steps at rising time scale
    (run.run_step: a whole replay each, judged by iofp's capture) -> bisection -> the result

A step **passes** when the SLO holds (iofp/slo.py, on the step's own measured figures) and the replay
kept the demanded rate: the step is faithful by the fidelity check (every demanded I/O replayed, per
window IOPS MAPE <= 5%, duration within 5%) and its lateness did not grow (the median lateness of the
last tenth of the I/Os minus the first tenth stays within max(2 ms, 5% of the step's span)). A step
that did not keep the rate is a saturation: the replayer's when the step demanded at least
CEILING_SHARE of what fio could issue of this plan here (the ceiling), else the device's. A step
demanding more than the ceiling is not run: whatever the device, fio could not issue it here.

The scales: `--scales` (default 1,1.5,2,3,4), then doubling up to `--max-scale`, until the first
step that fails; a step of this climb that fails is run once more ("confirm") and the scale fails only
if that run fails too, so that one stall of the machine (measured: a 0.3 s pause in the first step of
a sweep on a RAM loop, 18% IOPS MAPE) does not end the climb at today's load; then the bisection
between the last scale that passed and the first that failed, to `--precision` ((fail - pass) /
pass), within `--budget` steps in all. Each step's replay result
(iofp/replay_result.py) is kept whole under steps/; the record (iofp/headroom_result.py) is written
after every step, so a sweep stopped by SIGINT, SIGTERM or SIGHUP (fio stopped first,
replay/fio/interrupt.py) keeps the steps done so far as a valid partial result.
"""

from __future__ import annotations

import platform
import socket
import time
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from datetime import UTC, datetime
from pathlib import Path

from iofp import __version__
from iofp import headroom_result as hr
from iofp.contract import Trace
from iofp.errors import BadInput, IofpError
from iofp.replay_result import PCTS, ReplayResult
from iofp.slo import Slo
from replay import run
from replay.fio import Interrupted, Stopped, prepare_dir, trap
from replay.headroom import ceiling as headroom_ceiling
from replay.headroom.render import scale_text

Note = Callable[[str], None]
DEFAULT_SCALES = (1.0, 1.5, 2.0, 3.0, 4.0)
DEFAULT_MAX_SCALE = 32.0
DEFAULT_PRECISION = 0.05
DEFAULT_BUDGET = 12
CEILING_SHARE = 0.8  # a step demanding this much of fio's ceiling that misses the rate: the replayer's
MIN_RATE_WINDOW_S = 0.1  # a fast step's rate windows: 1 ms of pacing jitter stays within 1% of one
GROWTH_FLOOR_US = run.ON_SCHEDULE_LATE_P99_NS / 1e3


@dataclass(kw_only=True)
class HeadroomOptions:
    replay: run.ReplayOptions  # its output: the headroom directory; its time_scale: unused
    slo: Slo
    scales: tuple[float, ...] = DEFAULT_SCALES
    max_scale: float = DEFAULT_MAX_SCALE
    precision: float = DEFAULT_PRECISION
    budget: int = DEFAULT_BUDGET

    def check(self) -> None:
        self.replay.check()
        if not self.slo:
            raise BadInput("--slo: give the service level each step must hold, e.g. --slo 'p99<=2ms'")
        if not self.max_scale > 0:
            raise BadInput(f"--max-scale {self.max_scale:g}: must be > 0 (32 = 32 times today's rate)")
        if over := [s for s in self.scales if s > self.max_scale]:
            raise BadInput(
                f"--scales {over[0]:g} is above --max-scale {self.max_scale:g}; raise --max-scale or drop it"
            )
        if not 0 < self.precision < 1:
            raise BadInput(f"--precision {self.precision:.0%}: must be between 0% and 100%, e.g. 5%")
        if self.budget < 1:
            raise BadInput(f"--budget {self.budget}: must be at least 1 step")


def parse_scales(text: str) -> tuple[float, ...]:
    """`1,1.5,2` -> (1.0, 1.5, 2.0), sorted; BadInput naming a value that is not a number > 0."""
    out = []
    for raw in text.split(","):
        try:
            v = float(raw)
        except ValueError:
            v = float("nan")
        if not v > 0:
            raise BadInput(
                f"--scales {text}: {raw.strip()!r} is not a scale > 0; pass numbers like 1,1.5,2 "
                "(1 = today's rate, 2 = twice as fast)"
            )
        out.append(v)
    return tuple(sorted(set(out)))


def parse_precision(text: str) -> float:
    """`5%` or `0.05` -> 0.05."""
    t = text.strip()
    try:
        return float(t[:-1]) / 100 if t.endswith("%") else float(t)
    except ValueError:
        raise BadInput(f"--precision {text}: pass a share such as 5% or 0.05") from None


@dataclass
class _Sweep:
    prep: run.Prepared
    opts: HeadroomOptions
    out: Path
    res: hr.HeadroomResult
    note: Note
    passed: float | None = None
    failed: float | None = None
    stats: dict[str, float] = field(default_factory=dict)


def headroom(trace: Trace, opts: HeadroomOptions, note: Note | None = None) -> tuple[Path, hr.HeadroomResult]:
    """Run the sweep; returns (headroom.json path, result). A stopped sweep returns its partial result
    with `interrupted` set (the caller says so); a failing fio raises after the partial result is
    written."""
    opts.check()
    out = Path(opts.replay.output).absolute()
    _check_output(out, opts.replay.force)
    with trap():  # also over the cleanup: a second signal is remembered, not obeyed
        try:
            prep = run.prepare(trace, opts.replay)
        except Interrupted as e:
            raise Stopped(
                f"headroom stopped by {e.name} before anything was written", e.signum
            ) from None
        try:
            if not prep.target.is_block:
                raise BadInput(
                    f"{prep.target.path} is not a block device: headroom judges each step by iofp's "
                    "capture of the target; pass a block device (e.g. a loop device over the file)"
                )
            _prepare_output(out, opts.replay.force)
            return _run(_Sweep(prep, opts, out, _new_result(prep, opts), note or (lambda s: None)))
        except Interrupted as e:  # between the plan and the sweep's first record
            raise Stopped(f"headroom stopped by {e.name} before any step ran", e.signum) from None
        finally:
            prep.close()


def _run(sw: _Sweep) -> tuple[Path, hr.HeadroomResult]:
    res, t0 = sw.res, time.monotonic()
    try:
        sw.note("measuring the replayer's ceiling (the plan unpaced onto a RAM file)")
        res.ceiling = headroom_ceiling.measure(sw.prep, sw.out / hr.CEILING_DIR)
        hr.write(sw.out, res)
        _search(sw)
    except Interrupted as e:
        res.interrupted = res.interrupted or e.name
    except IofpError:
        res.status = "partial"
        raise
    finally:
        res.status = "partial" if res.interrupted or res.status == "partial" else "complete"
        res.headroom = conclude(res, sw.opts)
        res.wall_s = round(time.monotonic() - t0, 3)
        path = hr.write(sw.out, res)
    return path, res


def rising(scales: tuple[float, ...], max_scale: float) -> Iterator[float]:
    """The given scales, then doubling the last one up to max_scale (included)."""
    yield from scales
    s = scales[-1]
    while s < max_scale:
        s = min(s * 2, max_scale)
        yield s


def _search(sw: _Sweep) -> None:
    """Rising steps to the first failure, then bisection to the precision, within the budget."""
    for scale in rising(sw.opts.scales, sw.opts.max_scale):
        if not _within_budget(sw, scale):
            return
        verdict = _step(sw, scale, "sweep").verdict
        if verdict == hr.FAIL and _within_budget(sw, scale):  # one stall must not end the climb
            verdict = _step(sw, scale, "confirm").verdict
        if verdict == hr.STOPPED:
            return
        if verdict != hr.PASS:
            sw.failed = scale
            break
        sw.passed = scale
    if sw.passed is None or sw.failed is None:
        return  # the first step failed (no bisection below today's load), or every scale passed
    while (sw.failed - sw.passed) / sw.passed > sw.opts.precision:
        mid = round((sw.passed + sw.failed) / 2, 4)
        if not _within_budget(sw, mid):
            return
        verdict = _step(sw, mid, "bisect").verdict
        if verdict == hr.STOPPED:
            return
        if verdict == hr.PASS:
            sw.passed = mid
        else:
            sw.failed = mid


def _within_budget(sw: _Sweep, scale: float) -> bool:
    """Whether a step at `scale` may go: one above the ceiling is not run, so costs nothing."""
    limit = sw.res.ceiling.scale_limit()
    return (limit is not None and scale > limit) or sum(
        1 for s in sw.res.steps if s.dir is not None
    ) < sw.opts.budget


def _step(sw: _Sweep, scale: float, phase: str) -> hr.Step:
    """Replay the prepared plan at `scale` (or record why not), judge it, record it."""
    res = sw.res
    name = f"{len(res.steps) + 1:02d}-x{scale:g}"
    limit = res.ceiling.scale_limit()
    rres: ReplayResult | None = None
    if limit is not None and scale > limit:
        step = hr.Step(scale, phase, None, hr.ABOVE_CEILING, saturation="replayer")
        step.demanded_iops = res.demand["iops"] * scale if res.demand.get("iops") else None
        step.rate_failures = [
            f"it demands {scale / limit:.1f}x what fio could issue of this plan here "
            f"(its ceiling: {scale_text(limit)} today's rate)"
        ]
    else:
        sw.note(f"[{name}] replaying at {scale:g}x")
        t0 = time.monotonic()
        opts = replace(sw.opts.replay, output=sw.out / hr.STEPS_DIR / name, time_scale=scale, force=False)
        opts.fidelity_window_s = _rate_window(res.demand, scale)
        _, rres = run.run_step(sw.prep, opts)
        _demand(res, rres, scale)
        step = judge(rres, scale, phase, f"{hr.STEPS_DIR}/{name}", sw.opts.slo, limit)
        step.wall_s = round(time.monotonic() - t0, 3)
    res.steps.append(step)
    hr.write(sw.out, res)
    sw.note(f"[{name}] {step.verdict}" + (f": {'; '.join(why(step))}" if why(step) else ""))
    if rres is not None and rres.interrupted:
        res.interrupted = rres.interrupted.split()[0]
    elif rres is not None and rres.fio["exit_code"] != 0:
        raise IofpError(
            f"fio exited with status {rres.fio['exit_code']} at {scale:g}x; see "
            f"{sw.out / hr.STEPS_DIR / name / 'fio.stderr'} (the steps so far are kept in {sw.out})"
        )
    return step


def _rate_window(demand: dict, scale: float) -> float | None:
    if not demand.get("span_s"):
        return None  # the first step: the fidelity check's own rule
    span = demand["span_s"] / scale
    return max(run.rate_window(span, demand["data_ios"] + demand["syncs"]), min(MIN_RATE_WINDOW_S, span))


def _demand(res: hr.HeadroomResult, rres: ReplayResult, scale: float) -> None:
    """Today's demand (1x), from the first step's conversion: the same I/Os at every scale."""
    if res.demand:
        return
    d = rres.demanded
    span = d.span_s * scale
    res.demand = {
        "data_ios": d.data_ios, "syncs": d.syncs, "bytes": d.bytes, "span_s": span,
        "iops": d.data_ios / span if span else None,
        "commits_per_s": d.syncs / span if span and d.syncs else None,
    }  # fmt: skip
    res.selection = rres.selection.get("how", "")


def judge(rres: ReplayResult, scale: float, phase: str, where: str, slo: Slo, limit: float | None) -> hr.Step:
    """One step's verdict from its replay result: the SLO on its measured figures, and the rate kept."""
    m, fid = rres.measured, rres.fidelity
    step = hr.Step(scale, phase, where, hr.PASS, demanded_iops=rres.demanded.iops,
                   demanded_commits_per_s=rres.demanded.commits_per_s)  # fmt: skip
    step.host = rres.host_evidence
    if m is not None:
        step.achieved_iops, step.commits_per_s = m.achieved_iops, m.commits_per_s
        step.latency_ns = {op: {p: m.latency(op, p) for p in PCTS} for op in hr.OPS}
    if rres.interrupted:
        step.verdict = hr.STOPPED
        return step
    if fid.get("status") != "measured":
        step.fidelity = fid.get("status", "not measured")
        step.rate_failures = [f"the rate was not measured: {fid.get('reason', 'no capture')}"]
    else:
        step.fidelity = f"{fid['verdict']}, {fid['timing']}"
        step.iops_mape, step.stretch, step.late_growth_us = (
            fid["iops_mape"],
            fid["stretch"],
            fid["late_growth_us"],
        )
        step.rate_failures = list(fid["reasons"])
        allowed_us = max(GROWTH_FLOOR_US, run.FAITHFUL_STRETCH * rres.demanded.span_s * 1e6)
        if (step.late_growth_us or 0) > allowed_us:
            step.rate_failures.append(
                f"lateness grew {step.late_growth_us / 1e3:,.1f} ms over the run "
                f"(allowed {allowed_us / 1e3:,.1f} ms)"
            )
    step.slo_failures = slo.failures(_Figures(rres)) if m else ["no figures: the step was not captured"]
    if step.rate_failures:
        step.saturation = "replayer" if limit is not None and scale >= CEILING_SHARE * limit else "device"
    if step.rate_failures or step.slo_failures:
        step.verdict = hr.FAIL
    return step


class _Figures:
    """A step's figures as the SLO reads them (iofp/slo.py's Figures)."""

    def __init__(self, rres: ReplayResult) -> None:
        assert rres.measured is not None
        self.m = rres.measured
        self.demanded_iops = rres.demanded.iops
        self.achieved_iops = self.m.achieved_iops
        self.commits_per_s = self.m.commits_per_s

    def latency(self, op: str, pct: str) -> float | None:
        return self.m.latency(op, pct)


def why(step: hr.Step) -> list[str]:
    """Why a step failed, rate first (a saturated device misses latency too: the rate is the cause)."""
    who = f"the {step.saturation}'s saturation: " if step.saturation else ""
    return [who + "; ".join(step.rate_failures)] * bool(step.rate_failures) + step.slo_failures


def conclude(res: hr.HeadroomResult, opts: HeadroomOptions) -> hr.Headroom:
    """The headroom factor, why the search stopped there, and the sentence that says what it means."""
    ran = [s for s in res.steps if s.verdict != hr.STOPPED]
    passed = [s for s in ran if s.verdict == hr.PASS]
    factor = max((s.scale for s in passed), default=None)
    failing = [s for s in ran if s.verdict != hr.PASS and (factor is None or s.scale > factor)]
    first_fail = min(failing, key=lambda s: s.scale, default=None)
    name = res.labels.get("device") or res.target.get("name") or res.target.get("path")
    what = _what(res)
    if first_fail is None:
        if factor is None:
            return hr.Headroom(None, None, "none", f"{name}: no step ran")
        bound = "max-scale" if factor >= opts.max_scale else "budget"
        limit = "the most asked (--max-scale)" if bound == "max-scale" else "where the step budget ran out"
        if bound == "budget" and res.interrupted:  # the budget was not what stopped it
            limit = f"where the sweep was stopped ({res.interrupted})"
        return hr.Headroom(factor, None, bound, f"{name} holds {res.slo} up to at least {factor:g}x "
                           f"{what}{_load(res, factor)}, {limit}")  # fmt: skip
    bound = (
        "replayer" if first_fail.saturation == "replayer"
        else "rate" if first_fail.rate_failures else "slo"
    )  # fmt: skip
    if factor is None:
        text = f"{name} misses {res.slo} at {first_fail.scale:g}x {what}: {'; '.join(why(first_fail))}"
        return hr.Headroom(None, first_fail.scale, "first step", text)
    at = f"at {first_fail.scale:g}x {'; '.join(why(first_fail))}"
    if bound == "replayer":
        text = (f"{name} holds {res.slo} up to at least {factor:g}x {what}{_load(res, factor)}; above "
                f"that is the replayer's limit, not the device's: {at}")  # fmt: skip
    else:
        text = f"{name} holds {res.slo} up to {factor:g}x {what}{_load(res, factor)}; {at}"
    if (first_fail.scale - factor) / factor > opts.precision:
        text += f" (not bisected to {opts.precision:.0%}: the step budget of {opts.budget} ran out)"
    return hr.Headroom(factor, first_fail.scale, bound, text)


def _what(res: hr.HeadroomResult) -> str:
    regime = (res.settings.get("selection") or {}).get("regime")
    return {"spike": "today's spike", "steady": "today's steady state"}.get(regime or "", "today's rate")


def _load(res: hr.HeadroomResult, scale: float) -> str:
    d = res.demand
    parts = [f"{d['iops'] * scale:,.0f} IOPS"] if d.get("iops") else []
    if d.get("commits_per_s"):
        parts.append(f"{d['commits_per_s'] * scale:,.0f} commits/s")
    return f" ({', '.join(parts)})" if parts else ""


def _new_result(prep: run.Prepared, opts: HeadroomOptions) -> hr.HeadroomResult:
    t, r = prep.target, opts.replay
    return hr.HeadroomResult(
        tool_version=__version__, host=socket.gethostname(), kernel=platform.release(),
        started=datetime.now(UTC).isoformat(),
        trace={"path": prep.plan.trace.where, "source": prep.plan.trace.meta.source,
               "host": prep.plan.trace.meta.host},
        target={"path": str(t.path), "name": t.name, "kind": t.kind, "size_bytes": t.size},
        labels=dict(r.labels), slo=opts.slo.text,
        settings={"scales": list(opts.scales), "max_scale": opts.max_scale, "precision": opts.precision,
                  "budget": opts.budget, "selection": r.selection.to_dict(), "engine": r.engine,
                  "iodepth": r.iodepth, "streams": prep.plan.streams.mode, "pace": r.pace,
                  "fold_size": prep.mapping.fold_size, "align": prep.mapping.align,
                  "ceiling_share": CEILING_SHARE, "min_rate_window_s": MIN_RATE_WINDOW_S},
        selection=prep.plan.stats.how, demand={}, ceiling=hr.Ceiling("not measured", reason="not run yet"),
    )  # fmt: skip


def _check_output(out: Path, force: bool) -> None:
    if out.exists() and (not out.is_dir() or any(out.iterdir())) and not (force and out.is_dir()):
        raise BadInput(f"{out} already exists and is not empty; pass --force or choose another --output")


ARTIFACTS = (hr.RECORD, hr.STEPS_DIR, hr.CEILING_DIR)  # what a sweep writes in its directory


def _prepare_output(out: Path, force: bool) -> None:
    """Make `out` ready; --force removes a previous sweep's artifacts (and only those)."""
    prepare_dir(out, force, ARTIFACTS, "the sweep's results")


def default_output(target: Path) -> Path:
    stamp = datetime.now().strftime("%Y%m%d-%H%M%S")
    return Path("results") / f"headroom-{Path(target).name}-{stamp}"


__all__ = ["ARTIFACTS", "HeadroomOptions", "conclude", "default_output", "headroom", "judge",
           "parse_precision", "parse_scales", "rising", "why"]  # fmt: skip
