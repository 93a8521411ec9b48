"""`iofp headroom`: the selection replayed at rising load until the SLO breaks, then bisected.

    check options -> resolve the plan ONCE (run.prepare: fio, target, selection, commit groups,
    streams, mapping) -> the replayer's ceiling (ceiling.py) -> steps at rising time scale
    (run.run_step: a whole replay each, judged by iofp's capture) -> bisection -> the result

A step **passes** when the SLO holds (iofp/slo.py, on the step's own measured figures) and the replay
kept the demanded rate: the step is faithful by the fidelity check (every demanded I/O replayed, the
rate within 5% I/O for I/O, duration within 5%) and its lateness did not grow (the median lateness of
the last tenth of the I/Os minus the first tenth stays within max(2 ms, 5% of the step's span)). A
step that missed is judged by decide.py: the replayer's saturation near fio's ceiling here, else the
device's, unless the host limited the run (its evidence, iofp/host_evidence.py): then the step is
inconclusive. A step demanding more than the ceiling is not run: whatever the device, fio could not
issue it here.

The scales: `--scales` (default 1,1.5,2,3,4), then doubling up to `--max-scale`, until the first
scale that does not pass; then the bisection between the last scale that passed and the first that
failed, to `--precision` ((fail - pass) / pass), within `--budget` scales in all. A scale is run up to
`--repeat` times (default 3: a step is a short run, iofp/repeats.py): a run that passes ends it (a
pass is the device holding that load), a failure or an inconclusive run is run again, and a pass
among failures makes the scale inconclusive (the runs disagree); the scale the factor names is run
until `--repeat` runs passed, or one failed (then it is inconclusive, and the factor the scale below).
So one stall of the machine (measured: a 0.3 s pause in the first step of a sweep on a RAM loop, 18%
IOPS MAPE) neither ends the climb at today's load nor makes a factor. Each step's replay result
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
from iofp.contract import Trace, check_own_dir
from iofp.errors import BadInput, IofpError
from iofp.repeats import default_repeat
from iofp.replay_result import ReplayResult
from iofp.slo import Slo
from replay import run
from replay.fio import Interrupted, Stopped, prepare_dir, trap
from replay.headroom import ceiling as headroom_ceiling
from replay.headroom.decide import CEILING_SHARE, conclude, judge, scale_verdict, why
from replay.headroom.render import scale_text

Note = Callable[[str], None]
DEFAULT_SCALES = (1.0, 1.5, 2.0, 3.0, 4.0)
DEFAULT_MAX_SCALE = 32.0
DEFAULT_PRECISION = 0.05
DEFAULT_BUDGET = 12
MIN_RATE_WINDOW_S = 0.1  # a fast step's rate windows: 1 ms of pacing jitter stays within 1% of one


@dataclass(kw_only=True)
class HeadroomOptions:
    replay: run.ReplayOptions  # its output: the headroom directory; its time_scale: unused
    slo: Slo
    scales: tuple[float, ...] = DEFAULT_SCALES
    max_scale: float = DEFAULT_MAX_SCALE
    precision: float = DEFAULT_PRECISION
    budget: int = DEFAULT_BUDGET
    repeat: int | None = None  # runs of a scale; None: iofp/repeats.py's default for the span

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
            raise BadInput(f"--budget {self.budget}: must be at least 1 scale")
        if self.repeat is not None and self.repeat < 1:
            raise BadInput(f"--repeat {self.repeat}: must be at least 1 run")


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
    repeat: int = 1  # runs of a scale (HeadroomOptions.repeat, resolved)
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
            sel = prep.plan.stats
            repeat = opts.repeat or default_repeat(sel.duration_ns / 1e9)
            res = _new_result(prep, opts, repeat)
            return _run(_Sweep(prep, opts, out, res, note or (lambda s: None), repeat=repeat))
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
        o = sw.opts
        res.headroom = conclude(res, o.max_scale, o.precision, o.budget, sw.repeat)
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
    """Rising scales to the first that does not pass, then bisection to the precision, within the
    budget; then the factor's scale confirmed by --repeat runs."""
    for scale in rising(sw.opts.scales, sw.opts.max_scale):
        verdict = _decide(sw, scale, "sweep")
        if verdict == hr.STOPPED:
            return
        if verdict is None:  # the budget ran out
            break
        if verdict != hr.PASS:
            sw.failed = scale
            break
        sw.passed = scale
    if sw.passed is not None and sw.failed is not None:
        while (sw.failed - sw.passed) / sw.passed > sw.opts.precision:
            mid = round((sw.passed + sw.failed) / 2, 4)
            verdict = _decide(sw, mid, "bisect")
            if verdict == hr.STOPPED:
                return
            if verdict is None:
                break
            if verdict == hr.PASS:
                sw.passed = mid
            else:
                sw.failed = mid
    _confirm_factor(sw)


def _decide(sw: _Sweep, scale: float, phase: str) -> str | None:
    """Run `scale` until its verdict stands (decide.py's rule): a pass ends it, a failure or an
    inconclusive run is run again up to --repeat runs. None: the budget allowed no run."""
    if not _within_budget(sw, scale):
        return None
    verdict = None
    for i in range(sw.repeat):
        step = _step(sw, scale, phase if i == 0 else "confirm")
        if step.verdict == hr.STOPPED:
            return hr.STOPPED
        v = scale_verdict(sw.res.steps, scale)
        verdict = v.verdict if v else None
        if verdict in (hr.PASS, hr.ABOVE_CEILING) or (verdict == hr.INCONCLUSIVE and v and v.passes):
            break
    return verdict


def _confirm_factor(sw: _Sweep) -> None:
    """Run the highest passing scale until --repeat runs passed; a failure there makes it
    inconclusive, and the scale below that passed is confirmed in turn."""
    while sw.res.interrupted is None:
        verdicts = [scale_verdict(sw.res.steps, x) for x in _scales(sw)]
        passed = [v for v in verdicts if v is not None and v.verdict == hr.PASS]
        if not passed:
            return
        top = max(passed, key=lambda v: v.scale)
        if top.passes >= sw.repeat or len(top.runs) >= sw.repeat:
            return
        if _step(sw, top.scale, "confirm").verdict == hr.STOPPED:
            return


def _scales(sw: _Sweep) -> list[float]:
    return sorted({s.scale for s in sw.res.steps})


def _within_budget(sw: _Sweep, scale: float) -> bool:
    """Whether a new scale may be judged: `--budget` scales in all (each up to --repeat runs); one
    above the ceiling is not run, so costs nothing; a scale already judged is no new one."""
    limit = sw.res.ceiling.scale_limit()
    judged = {s.scale for s in sw.res.steps if s.dir is not None}
    return (limit is not None and scale > limit) or scale in judged or len(judged) < sw.opts.budget


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
    said = "; ".join(why(step))
    shown = said if step.verdict == hr.INCONCLUSIVE else step.verdict + (f": {said}" if said else "")
    sw.note(f"[{name}] {shown}")
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


def _new_result(prep: run.Prepared, opts: HeadroomOptions, repeat: int) -> hr.HeadroomResult:
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
                  "ceiling_share": CEILING_SHARE, "min_rate_window_s": MIN_RATE_WINDOW_S,
                  "repeat": repeat},
        selection=prep.plan.stats.how, demand={}, ceiling=hr.Ceiling("not measured", reason="not run yet"),
    )  # fmt: skip


def _check_output(out: Path, force: bool) -> None:
    check_own_dir(out, "the sweep's results")
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
