"""The replayer's own ceiling: how fast fio can issue one resolved plan on this machine.

The plan's iologs, with the same jobs, engines and queue depths as a replay, are run once with
`replay_no_stall=1` (fio ignores the logs' times and issues as fast as it can) onto a sparse file in
/dev/shm, a RAM file system: what is left is fio's own cost per I/O and the system calls, with next to
no device time. Each job's I/Os (data and sync calls) per second of its own runtime is its ceiling;
all the jobs' I/Os over the longest job's runtime the total. A sweep step that would demand more than
that of some job, or of all of them, cannot be replayed here whatever the device: its verdict is the
replayer's limit, not the device's (sweep.py).

fio times a job in whole milliseconds, so a short plan (a 2,000-I/O selection is done in a few ms)
would have a ceiling of n / 1 ms: a figure of the clock's resolution, not of fio. Such a plan's
iologs are repeated (the timestamps shifted so that they still rise) until the run lasts about
MIN_RUN_MS, and run again; the ceiling counts the repeats.

The RAM file is folded into CEILING_FILE_BYTES (the offsets move, the rate does not), so the run
holds at most that much memory, and it is removed afterwards. Nothing is written to the target. It is
created O_EXCL|O_NOFOLLOW in a directory of this run's own (mkdtemp: mode 0700, a name nobody can
guess), and fio is handed the open file (/dev/fd/N): /dev/shm is writable by every user, and a
predictable name there was a link another user could plant to have iofp truncate a file of root's.
"""

from __future__ import annotations

import math
import os
import shutil
import tempfile
from dataclasses import replace
from pathlib import Path

from iofp.headroom_result import Ceiling
from replay import iolog, run
from replay.fio import launch, write_job

RAM_DIR = Path("/dev/shm")
CEILING_FILE_BYTES = 64 << 20
MIN_RUN_MS = 100  # fio's 1 ms clock is then within 1% of the run
MAX_REPEATED_LINES = 250_000  # what a repeated plan may hold, all streams together (~15 MB of iolog)
HOW = (
    "the plan's iologs, same jobs, engines and depths, replayed with fio's replay_no_stall=1 onto a "
    "RAM file (/dev/shm): fio's own issue rate, next to no device time"
)


def measure(prep: run.Prepared, out: Path) -> Ceiling:
    """Run the plan unpaced onto a RAM file in `out` (fio's raw artifacts kept there)."""
    if not RAM_DIR.is_dir():
        return Ceiling("not measured", HOW, reason=f"no {RAM_DIR} (a RAM file system) on this machine")
    out.mkdir(parents=True, exist_ok=True)
    private = Path(tempfile.mkdtemp(prefix="iofp-ceiling-", dir=RAM_DIR))
    ram = private / "ceiling.img"
    fd = os.open(ram, os.O_RDWR | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600)
    mapping = replace(prep.mapping, target=str(ram), fold_size=CEILING_FILE_BYTES, time_scale=1.0, trim=False)
    try:
        os.ftruncate(fd, CEILING_FILE_BYTES)
        conv = iolog.write(
            prep.plan, out / "ceiling.iolog", mapping, force=True, pacing=iolog.Pacing("off")
        )
        jobs = run.jobs_of(conv.report)
        job = run.job_file(prep.plan.trace, jobs, redirect=f"/dev/fd/{fd}", per_job=True)
        args = [write_job(out, job)]
        rc, doc = _run(out, args, fd)
        times = 1
        for _ in range(3):  # a plan done within one ms is timed as 1 ms: its first repeat may be short
            more = _repeats(doc, conv.report.kept * times) if rc == 0 and doc is not None else 1
            if more == 1:
                break
            for st in conv.report.streams:
                if st["kept"]:
                    repeat_iolog(Path(st["iolog"]), more)
            times *= more
            rc, doc = _run(out, args, fd)
    finally:
        os.close(fd)
        shutil.rmtree(private, ignore_errors=True)
    if rc != 0 or doc is None:
        return Ceiling("not measured", HOW, reason=f"fio exited with status {rc}; see {out / 'fio.stderr'}")
    return _ceiling(doc, conv.report, times)


def _run(out: Path, args: list[str], fd: int) -> tuple[int, dict | None]:
    res = launch(out, args, fds=(fd,))
    return res.rc, res.doc


def _repeats(doc: dict, lines: int) -> int:
    """How many times over to repeat iologs of `lines` I/O lines that fio ran as `doc` says, so
    that the run lasts about MIN_RUN_MS (1: as they are)."""
    longest = max((j.get("job_runtime", 0) for j in doc.get("jobs", [])), default=0)
    if longest >= MIN_RUN_MS or lines == 0:
        return 1
    return max(1, min(math.ceil(MIN_RUN_MS / max(longest, 1)), MAX_REPEATED_LINES // lines))


def repeat_iolog(path: Path, times: int) -> None:
    """Rewrite a v3 iolog with its I/O lines `times` times over, each pass's timestamps after the
    last one's (fio's replay_no_stall ignores the gaps, not the order)."""
    lines = path.read_bytes().splitlines(keepends=True)
    head, body = lines[: iolog.HEADER_LINES], lines[iolog.HEADER_LINES :]
    if not body:
        return
    parsed = [(int(stamp), rest) for stamp, rest in (line.split(b" ", 1) for line in body)]
    step = parsed[-1][0] - parsed[0][0] + 1
    tmp = path.with_name(f".{path.name}.tmp")
    with open(tmp, "wb", buffering=1 << 22) as f:
        f.writelines(head)
        for r in range(times):
            shift = r * step
            f.writelines(b"%d %s" % (t + shift, rest) for t, rest in parsed)
    os.replace(tmp, path)


def _ceiling(doc: dict, report: iolog.ConvertReport, times: int = 1) -> Ceiling:
    demanded = {s["name"]: s["kept"] for s in report.streams if s["kept"]}
    kept = {name: n * times for name, n in demanded.items()}
    span_s = report.duration_us / 1e6
    # fio reports whole milliseconds; a job done within one is given one (its ceiling a lower bound)
    runtime_s = {j["jobname"]: max(j.get("job_runtime", 0), 1) / 1e3 for j in doc.get("jobs", [])}
    per_job = {name: n / runtime_s[name] for name, n in kept.items() if name in runtime_s}
    if not per_job:
        return Ceiling("not measured", HOW, reason="fio reported none of the plan's jobs")
    return Ceiling(
        "measured",
        HOW + (f"; the plan repeated {times}x so that fio's millisecond clock times it" if times > 1 else ""),
        total_iops=sum(kept.values()) / max(runtime_s.values()),
        per_job=per_job,
        demanded_per_job={name: n / span_s for name, n in demanded.items()} if span_s > 0 else {},
    )
