"""The replayer's own ceiling: how fast fio can issue one resolved plan on this machine.

The plan's iologs, with the same jobs, engines and queue depths as a replay, are run once with
`replay_no_stall=1` (fio ignores the logs' times and issues as fast as it can) onto a sparse file in
/dev/shm, a RAM file system: what is left is fio's own cost per I/O and the system calls, with next to
no device time. Each job's I/Os (data and sync calls) per second of its own runtime is its ceiling;
all the jobs' I/Os over the longest job's runtime the total. A sweep step that would demand more than
that of some job, or of all of them, cannot be replayed here whatever the device: its verdict is the
replayer's limit, not the device's (replay/headroom.py).

The RAM file is folded into CEILING_FILE_BYTES (the offsets move, the rate does not), so the run
holds at most that much memory, and it is removed afterwards. Nothing is written to the target.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import replace
from pathlib import Path

from iofp.headroom_result import Ceiling
from replay import fiorun, iolog, results, runner
from replay import pacing as pacemod

RAM_DIR = Path("/dev/shm")
CEILING_FILE_BYTES = 64 << 20
HOW = (
    "the plan's iologs, same jobs, engines and depths, replayed with fio's replay_no_stall=1 onto a "
    "RAM file (/dev/shm): fio's own issue rate, next to no device time"
)


def measure(prep: runner.Prepared, out: Path) -> Ceiling:
    """Run the plan unpaced onto a RAM file in `out` (fio's raw artifacts kept there)."""
    if not RAM_DIR.is_dir():
        return Ceiling("not measured", HOW, reason=f"no {RAM_DIR} (a RAM file system) on this machine")
    ram = RAM_DIR / f"iofp-ceiling-{os.getpid()}.img"
    mapping = replace(prep.mapping, target=str(ram), fold_size=CEILING_FILE_BYTES, time_scale=1.0, trim=False)
    out.mkdir(parents=True, exist_ok=True)
    try:
        with open(ram, "wb") as f:
            f.truncate(CEILING_FILE_BYTES)
        conv = iolog.write(
            prep.plan, out / "ceiling.iolog", mapping, force=True, pacing=pacemod.Pacing("off")
        )
        jobs = runner.jobs_of(conv.report)
        job_path = out / "job.fio"
        job_path.write_text(runner.job_file(prep.plan.trace, jobs, per_job=True))
        cmd = fiorun.command(prep.fio.path, job_path)
        rc = fiorun.run(cmd, out, conv.report.kept, 0.0, False, ram)
    finally:
        with contextlib.suppress(FileNotFoundError):
            ram.unlink()
    doc = results.parse_fio_json((out / "fio.stdout").read_text(errors="replace"))
    if rc != 0 or doc is None:
        return Ceiling("not measured", HOW, reason=f"fio exited with status {rc}; see {out / 'fio.stderr'}")
    return _ceiling(doc, conv.report)


def _ceiling(doc: dict, report: iolog.ConvertReport) -> Ceiling:
    kept = {s["name"]: s["kept"] for s in report.streams if s["kept"]}
    span_s = report.duration_us / 1e6
    # fio reports whole milliseconds; a job done within one is given one (its ceiling a lower bound)
    runtime_s = {j["jobname"]: max(j.get("job_runtime", 0), 1) / 1e3 for j in doc.get("jobs", [])}
    per_job = {name: n / runtime_s[name] for name, n in kept.items() if name in runtime_s}
    if not per_job:
        return Ceiling("not measured", HOW, reason="fio reported none of the plan's jobs")
    return Ceiling(
        "measured",
        HOW,
        total_iops=sum(kept.values()) / max(runtime_s.values()),
        per_job=per_job,
        demanded_per_job={name: n / span_s for name, n in kept.items()} if span_s > 0 else {},
    )
