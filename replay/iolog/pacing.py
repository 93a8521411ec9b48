"""Pacing compensation: write the iolog's gaps so that fio 3.33 issues on the trace's *absolute* schedule.

fio 3.33 waits for each I/O's gap measured from the previous *actual* issue (fio 3.33's iolog.c:
`iolog_delay()` sleeps `delay - (now - last_issue)`), so whatever an I/O costs beyond its gap
(sleep overshoot, getting the io_u, io_submit, reaping) is added to the schedule and never caught up:
+2-13% duration at 2-20k IOPS. That cost is roughly constant per I/O, so the converter can pre-pay it.

Model: fio issues I/O i at q_i = max(t_i, q_{i-1} + c), where t_i is the demanded time and c the
per-I/O overhead (a gap shorter than c is not slept; the I/O goes as soon as fio can). Emitting the gap
e_i = q_i - q_{i-1} - c makes fio's actual issue land on q_i, which is the schedule whenever the
schedule can be met at all. Unrolled, the emitted timeline is a running maximum:

    L_i = sum(e_1..e_i) = max(0, max_{j <= i} (t_j - j * c))

so it streams batch by batch with a few carried values, needs no per-row Python, and a deficit (a
burst fio cannot issue in zero time) is carried forward and made up by shortening the following gaps:
the schedule is honoured on average (absolute-schedule emulation), never by emitting negative gaps.
libaio's syncs do not set fio's clock (see Pacer), so with libaio each line's gap is written from the
last data I/O's predicted issue.

c is calibrated before the replay (`calibrate`): fio replays a synthetic log of reads of the target
(always safe) at the selection's median gap for about a second, with the replay's engine, and
c = runtime / N - gap. `--pace off` writes the trace's own gaps; `--pace 20us` fixes c.

Any residual error in c still accumulates (1 µs = 30 ms per 10 s at 3,000 IOPS), and so does the
per-I/O jitter: with a c known exactly in hindsight, a 3 s replay at 3,000 IOPS still wandered by a
median 1.0-3.7 ms (BENCHMARKS.md, replay section, 2026-11-23). fio 3.33 has exactly one absolute clock
in its iolog replay: the version 2 `wait` line, "wait until T ms after fio started" (fio 3.33's iolog.c:
`mtime_since_genesis()`; the HOWTO's "relative to the previous wait" is wrong). `--pace absolute`
(`WaitClock`) writes a v2 log instead: before the first I/O of each millisecond a `wait START+T`, then
that millisecond's I/Os back to back. Nothing accumulates (every wait re-anchors to fio's start, shared
by all jobs, so streams stay aligned too); the price is 1 ms resolution: an I/O is issued at the start
of its millisecond, up to ~1 ms early or late, and I/Os of one millisecond go back to back.
"""

from __future__ import annotations

import json
import random
import re
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from iofp.errors import BadInput, IofpError
from replay.fio import fio_path, iolog_name, launch

CAL_SECONDS = 0.5  # per run; three runs
CAL_MAX_IOS = 2000
CAL_TIMEOUT_S = 120  # a calibration run takes ~1.5 s: longer is a hung fio
CAL_MIN_GAP_NS = 20_000  # below this the gap is mostly busy time, not sleep: calibrate at 20 µs
CAL_MAX_GAP_NS = 5_000_000
MAX_OVERHEAD_NS = 1_000_000  # a calibration above 1 ms per I/O is not overhead but a broken run
# --pace absolute: the first wait, in ms after fio starts. fio's start-up (job fork, file open, log parse)
# took 100-300 ms here (~120 ms for one job); an I/O due before the job runs would be issued late, in a burst.
START_MS = 500
SYNC_KEEPS_CLOCK = ("libaio",)  # engines whose `sync` does not move fio's last_issue (see Pacer)


@dataclass(frozen=True)
class PaceSpec:
    mode: str  # "absolute" | "auto" | "off" | "fixed"
    overhead_ns: float = 0.0  # for "fixed"

    @classmethod
    def parse(cls, text: str) -> PaceSpec:
        t = text.strip().lower()
        if t in ("absolute", "auto", "off"):
            return cls(t)
        m = re.fullmatch(r"(\d+(?:\.\d+)?)\s*(ns|us|µs|ms)", t)
        if not m:
            raise BadInput(f"--pace {text}: expected absolute, auto, off or an overhead such as 20us")
        scale = {"ns": 1, "us": 1e3, "µs": 1e3, "ms": 1e6}[m.group(2)]
        ns = float(m.group(1)) * scale
        if ns > MAX_OVERHEAD_NS:
            raise BadInput(f"--pace {text}: at most 1ms per I/O")
        return cls("fixed", ns)


@dataclass
class Pacing:
    """What a replay's converter compensates per stream: c in ns (0 = the trace's own gaps)."""

    mode: str = "off"
    overhead_ns: dict[str, float] = field(default_factory=dict)  # per engine
    calibration: list[dict[str, Any]] = field(default_factory=list)

    def for_engine(self, engine: str) -> float:
        return self.overhead_ns.get(engine, 0.0) if self.mode != "off" else 0.0

    @property
    def log_version(self) -> int:
        return 2 if self.mode == "absolute" else 3

    def pacer(self, engine: str) -> Pacer | WaitClock:
        """The converter's pacer for one stream; `off` writes the trace's own gaps, unchanged."""
        if self.mode == "absolute":
            return WaitClock()
        if self.mode == "off":
            return Pacer(0.0)
        return Pacer(self.for_engine(engine), sync_resets_clock=engine not in SYNC_KEEPS_CLOCK)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"overhead_us": {k: round(v / 1e3, 2) for k, v in self.overhead_ns.items()}}


class Pacer:
    """Emitted log timestamps (µs, from 1) for one stream's demanded times (ns from the selection start).

    `sync_resets_clock` False models fio 3.33's libaio: a `sync` runs synchronously in queue() and
    does not update `last_issue` (libaio sets issue times only in commit), so the I/O after a sync
    waits from the last *data* I/O's issue. Each line's gap is then written relative to that data
    I/O's predicted issue time. psync, pvsync2 and io_uring update it for every line.
    """

    def __init__(self, overhead_ns: float, *, sync_resets_clock: bool = True) -> None:
        self.c = float(overhead_ns)
        self.resets = sync_resets_clock
        self.n = 0  # clock-setting I/Os emitted so far
        self.level = 0.0  # running max of t_j - j*c (ns): the emitted time of the last clock-setting I/O
        self.emitted = 0.0  # emitted time of the last line (ns)
        self.q = 0.0  # predicted actual issue time of the last clock-setting I/O (ns)

    def log_us(self, t_ns: np.ndarray, is_sync: np.ndarray | None = None) -> np.ndarray:
        t = np.asarray(t_ns, dtype=np.float64)
        if self.c == 0 and (self.resets or is_sync is None or not is_sync.any()):
            return np.asarray(t_ns, dtype=np.int64) // 1000 + 1
        sets = np.ones(len(t), dtype=bool) if self.resets or is_sync is None else ~is_sync
        # Predicted actual issue of each clock-setting I/O: q_i = max(t_i, q_{i-1} + c), unrolled.
        idx = np.flatnonzero(sets)
        j = np.arange(self.n + 1, self.n + len(idx) + 1, dtype=np.float64)
        q_sets = j * self.c + np.maximum.accumulate(np.maximum(t[idx] - j * self.c, self.q - self.n * self.c))
        # For every line, the predicted issue of the clock-setting I/O before it (its reference).
        prev_q = np.concatenate(([self.q], q_sets))
        ref = prev_q[np.searchsorted(idx, np.arange(len(t)), side="left")]
        delay = np.maximum(t - ref - self.c, 0.0)
        # A clock-setting I/O's delay is exactly what lands it on q (q - ref - c >= 0 by construction).
        delay[idx] = q_sets - ref[idx] - self.c
        emitted = self.emitted + np.cumsum(delay)
        if len(idx):
            self.n += len(idx)
            self.q = float(q_sets[-1])
        self.emitted = float(emitted[-1]) if len(emitted) else self.emitted
        return np.floor(emitted / 1000).astype(np.int64) + 1


class WaitClock:
    """`--pace absolute`: the v2 log's `wait` times (ms after fio's start) for one stream's I/Os.

    An I/O demanded at t ns belongs to millisecond START_MS + floor(t / 1 ms); a `wait` goes before the
    first I/O of each millisecond (`waits`' mask). fio 3.33 sleeps (T - elapsed whole ms) from the
    moment it reads the wait, so the I/O lands within about 1 ms of its demanded time, never drifting.
    """

    def __init__(self, start_ms: int = START_MS) -> None:
        self.start_ms = start_ms
        self.last = -1  # the last wait written (carried across batches)

    def waits(self, t_ns: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """(ms, new): each I/O's millisecond, and True where a `wait ms` line must precede it."""
        ms = self.start_ms + np.asarray(t_ns, dtype=np.int64) // 1_000_000
        new = ms != np.concatenate(([self.last], ms[:-1]))  # rows arrive in time order
        if len(ms):
            self.last = int(ms[-1])
        return ms, new


def calibration_gap_ns(median_gap_ns: float | None) -> int:
    g = int(median_gap_ns or 1_000_000)
    return min(max(g, CAL_MIN_GAP_NS), CAL_MAX_GAP_NS)


def calibrate(
    target: Path,
    target_size: int,
    engines: list[str],
    gap_ns: int,
    workdir: Path,
    *,
    block: int = 4096,
    redirect: str | None = None,
    fds: tuple[int, ...] = (),
) -> Pacing:
    """Measure c per engine: fio replays N reads of `target` spaced `gap_ns`; c = runtime / N - gap.
    `redirect`: what fio opens instead of the name in the log (the held target, /dev/fd/N in `fds`)."""
    workdir.mkdir(parents=True, exist_ok=True)
    gap_us = max(1, gap_ns // 1000)
    n = int(min(CAL_MAX_IOS, max(200, CAL_SECONDS * 1e6 / gap_us)))
    span = max(1, target_size // block - 1)
    rng = random.Random(0)
    log = workdir / "calibration.iolog"
    name = iolog_name(target)
    lines = ["fio version 3 iolog", f"1 {name} add", f"1 {name} open"]
    lines += [f"{1 + (i + 1) * gap_us} {name} read {rng.randrange(span) * block} {block}" for i in range(n)]
    log.write_text("\n".join(lines) + "\n")
    read_log = f"--read_iolog={fio_path('read_iolog', log)}"
    pacing = Pacing(mode="auto")
    held = [f"--replay_redirect={fio_path('replay_redirect', redirect)}"] if redirect else []
    for engine in sorted(set(engines)):
        args = [
            *held, "--name=calibrate", f"--ioengine={engine}", "--direct=1",
            "--iodepth=4", read_log, "--stonewall",
            "--name=calibrate2", read_log, "--name=calibrate3", read_log,
        ]  # fmt: skip
        res = launch(workdir, args, name=f"calibration-{engine}", timeout_s=CAL_TIMEOUT_S, fds=fds)
        doc = res.doc
        if res.rc != 0 or doc is None:
            raise IofpError(
                f"pacing calibration failed (fio exit {res.rc}); see {workdir}; "
                "pass --pace off or --pace 20us to replay without it"
            )
        # One fio run, three jobs one after another (stonewall); the median is robust to one run
        # disturbed by a neighbour on a shared machine (single runs measured 19 and 40 µs here).
        runs = sorted(j["job_runtime"] for j in doc["jobs"])
        job = {"job_runtime": runs[len(runs) // 2], "all": runs}
        runtime_us = job["job_runtime"] * 1000
        c = runtime_us / n - gap_us
        # Negative = fio ran early (ms rounding, noise): no compensation rather than slowing it down.
        c_ns = min(max(c * 1e3, 0.0), MAX_OVERHEAD_NS)
        pacing.overhead_ns[engine] = c_ns
        pacing.calibration.append(
            {
                "engine": engine,
                "gap_us": gap_us,
                "ios": n,
                "runtime_ms": job["job_runtime"],
                "runs_ms": job["all"],
                "overhead_us": c,
            }
        )
    (workdir / "calibration.json").write_text(json.dumps(pacing.to_dict(), indent=2))
    return pacing
