"""One probe run: its job file and fio, with every raw artifact kept in the run's directory.

    job.fio  fio.cmd  fio.stdout  fio.stderr  fio.json (the JSON, non-JSON lines trimmed)  fio.rc
    iops_iops.N.log   fio's IOPS per interval, one file per job (time-based runs)

fio runs in the run's directory (its logs land there), through replay's fio launcher
(replay/fio/launcher.py): in a session of its own, so that an interrupt stops its whole process group
(SIGTERM, then SIGKILL) and waits for it before going on, and under `setpriv --pdeathsig` so that
even a killed iofp stops it.
No fio is left writing to the target.
"""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

from iofp.errors import IofpError
from iofp.probe_result import FioFigures, Run
from replay.fio import Target, launch, write_job
from replay.probe.plan import LOG_WINDOWS, RunSpec


def run(spec: RunSpec, target: Target, probed: int, run_dir: Path, rel: str) -> Run:
    """Run `spec` on `target` (held: fio gets its descriptor); its artifacts go to `run_dir` (`rel`
    from the result directory)."""
    run_dir.mkdir(parents=True)
    args = [write_job(run_dir, spec.job_file(target.fio_path, probed))]
    started = time.time_ns()
    held = (target.fd,) if target.fd is not None else ()
    res = launch(run_dir, args, watch=target.name if target.is_block else None, fds=held)
    ended = time.time_ns()
    rc, doc = res.rc, res.doc
    if rc != 0 or doc is None:
        raise IofpError(f"fio exited with status {rc} in run {spec.name}; see {run_dir / 'fio.stderr'}")
    return Run(
        name=spec.name,
        dir=rel,
        kind=spec.kind,
        rw=spec.rw,
        block_size=spec.block_size,
        iodepth=spec.iodepth,
        jobs=spec.jobs,
        rate_iops=spec.rate_iops,
        runtime_s=spec.runtime_s,
        exit_code=rc,
        started_ns=started,
        ended_ns=ended,
        fio=figures(doc, "read" if spec.rw in ("read", "randread") else "write"),
        host=res.evidence,
    )


def figures(doc: dict[str, Any], ddir: str) -> FioFigures:
    """fio's figures for `ddir` (one group: group_reporting): IOPS, MB/s and the percentiles of its
    total latency (lat: submission to completion; the job asks for them with lat_percentiles=1).
    Not clat alone: an I/O that a loop device completes inside io_submit has a clat of ~1 µs while
    the application waited ~20 µs."""
    s = doc["jobs"][0][ddir]
    pct = (s.get("lat_ns") or {}).get("percentile") or {}
    us = lambda key: pct[key] / 1e3 if s.get("total_ios") and key in pct else None  # noqa: E731
    return FioFigures(
        ios=int(s.get("total_ios", 0)),
        iops=float(s.get("iops", 0.0)),
        mb_per_s=s.get("bw_bytes", 0) / 1e6,
        p50_us=us("50.000000"),
        p99_us=us("99.000000"),
        p99_9_us=us("99.900000"),
        runtime_ms=int(s.get("runtime", 0)),
    )


def log_window_ms(spec: RunSpec) -> int:
    return round((spec.runtime_s or 0) * 1000) // LOG_WINDOWS
