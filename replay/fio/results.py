"""The results record of one replay: DIR/results.json next to every raw artifact of the fio run.

Layout of a results directory (all kept, so a run can be re-examined without re-running it):

    job.fio        the fio job file            replay.iolog   the iolog fio read
    fio.cmd        the exact command line      fio.stdout     fio's stdout (JSON, maybe after warnings)
    fio.stderr     fio's stderr                fio.json       the JSON, non-JSON lines trimmed
    fio.rc         fio's exit status           expected/      the demanded I/Os (an iofp trace)
    capture/       iofp's capture of the target during the replay (block-device targets)
    replay.N.iolog one iolog per stream (--streams pid), instead of replay.iolog
    calibration/   the runs that measured fio's per-I/O overhead (--pace auto)
    results.json   the replay result (iofp/replay_result.py: the contract compare reads)
"""

from __future__ import annotations

import shutil
from fnmatch import fnmatch
from pathlib import Path
from typing import Any

from iofp.contract import check_own_dir
from iofp.errors import BadInput
from iofp.replay_result import RECORD

# Every name a replay writes into its directory (the iolog's temporary names, for a run that stopped).
ARTIFACTS = (
    RECORD, "job.fio", "fio.cmd", "fio.stdout", "fio.stderr", "fio.json", "fio.rc",
    "replay.iolog", "replay.*.iolog", ".replay*.tmp", "expected", "capture", "calibration", "repeat-*",
)  # fmt: skip


def clear_artifacts(root: Path) -> set[str]:
    """Remove a previous replay's artifacts from `root` (by name: a run that stopped early wrote no
    record to list them). Returns the names of everything else, left untouched."""
    kept = set()
    for p in root.iterdir():
        if not any(fnmatch(p.name, pat) for pat in ARTIFACTS):
            kept.add(p.name)
        elif p.is_dir() and not p.is_symlink():
            shutil.rmtree(p)
        else:
            p.unlink()
    return kept


def prepare_dir(out: Path, force: bool, artifacts: tuple[str, ...], what: str) -> Path:
    """Make the results directory `out` of a command that writes several runs (a probe, a headroom
    sweep) ready: refused when it holds anything unless --force, which removes that command's
    `artifacts` (and only those)."""
    check_own_dir(out, what)
    if out.exists() and (not out.is_dir() or any(out.iterdir())):
        if not force or not out.is_dir():
            raise BadInput(f"{out} already exists and is not empty; pass --force or choose another --output")
        for name in artifacts:
            p = out / name
            if p.is_dir() and not p.is_symlink():
                shutil.rmtree(p)
            else:
                p.unlink(missing_ok=True)
    try:
        out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise BadInput(f"cannot write {what} to {out}: {e.strerror}") from None
    check_own_dir(out, what)  # made by another user in the moment since the check: refused, not used
    return out


def fio_summary(doc: dict[str, Any] | None) -> dict[str, Any]:
    """The parts of fio's JSON a comparison needs, per direction (read/write/trim) plus sync."""
    if not doc or not doc.get("jobs"):
        return {}
    job = doc["jobs"][0]
    # The jobs (one per stream) start together and group_reporting reports them as one, in which
    # fio 3.33 sums job_runtime over the jobs but gives each direction the longest job's runtime:
    # the longest of those is the wall-clock span of the run, what a rate divides by.
    span = max((job.get(d) or {}).get("runtime", 0) for d in ("read", "write", "trim"))
    out: dict[str, Any] = {
        "job_runtime_ms": job.get("job_runtime"),
        "span_ms": span or job.get("job_runtime"),
        "error": job.get("error"),
    }
    for d in ("read", "write", "trim"):
        s = job.get(d) or {}
        clat = s.get("clat_ns") or {}
        out[d] = {
            "total_ios": s.get("total_ios", 0),
            "short_ios": s.get("short_ios", 0),
            "drop_ios": s.get("drop_ios", 0),
            "io_bytes": s.get("io_bytes", 0),
            "iops": s.get("iops", 0.0),
            "bw_bytes": s.get("bw_bytes", 0),
            "clat_mean_ns": clat.get("mean"),
            "clat_percentile_ns": clat.get("percentile", {}),
        }
    sync = job.get("sync") or {}
    lat = sync.get("lat_ns") or {}
    out["sync"] = {
        "total_ios": sync.get("total_ios", 0),
        "lat_mean_ns": lat.get("mean"),
        "lat_percentile_ns": lat.get("percentile", {}),
    }
    return out
