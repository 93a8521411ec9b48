"""The workload a probe is shaped like: the sizes and depths of its cells, from a fingerprint (--like)
or the defaults, each with the reason it has that value (kept in the result as `workload.basis`).

From the fingerprint's `whole` scope (docs/fingerprint-schema.md):

- read / write size: the median bucket of `size.hist.read` / `.write` (vscsiStats ioLength limits;
  a limit like 4095 means "up to one block", so it is rounded up to 512 bytes); past the last limit,
  the mean (mix.read_bytes / mix.reads). Rounded up to the target's logical block size.
- production queue depths of cell 1: the p50 and p99 buckets of `inflight.hist.read` (in flight at
  issue, itself included; the upper limit of the bucket), `inflight.max` past the last limit.
- commit concurrency of cell 3: Little's law on the sync table's figures, the sum over fsync and
  fdatasync of calls/s x mean latency (the mean number of commits in progress), rounded up.

A fingerprint comes from elsewhere, and its figures become fio's options: each is clamped to what fio
and this machine can run (a size to [512 B, MAX_SIZE], a depth to [1, max_iodepth()], committers to
[1, MAX_COMMIT_JOBS]), and the basis says so: an in-flight count of 1e9 was passed to fio as its
iodepth, and a commit rate x latency of 1e6 planned a million committer processes.
"""

from __future__ import annotations

import math
from pathlib import Path
from typing import Any

from iofp.probe_result import Workload

DEFAULT_READ_SIZE = 4096
DEFAULT_WRITE_SIZE = 4096
DEFAULT_READ_IODEPTHS = (1, 32)
DEFAULT_COMMIT_JOBS = (1, 8)
COMMIT_CALLS = ("fsync", "fdatasync")
MAX_SIZE = 16 << 20  # a probe cell's block: far above any workload's median request
MAX_IODEPTH = 4096  # and below what libaio's aio-max-nr leaves one job (max_iodepth)
MAX_COMMIT_JOBS = 64  # committer processes, one fio job each


def max_iodepth() -> int:
    """The deepest queue one fio job gets here: MAX_IODEPTH, or less when fs.aio-max-nr (the system's
    in-flight AIO requests, shared by every process) is small."""
    try:
        aio = int(Path("/proc/sys/fs/aio-max-nr").read_text())
    except (OSError, ValueError):
        return MAX_IODEPTH
    return max(1, min(MAX_IODEPTH, aio // 4))


def _clamp(value: float, lo: int, hi: int) -> tuple[int, bool]:
    """`value` as a whole number in [lo, hi] (NaN: lo), and whether it had to be moved there."""
    if not math.isfinite(value):
        return (lo if math.isnan(value) else hi), True
    n = int(value)
    return min(max(n, lo), hi), not lo <= n <= hi


def defaults() -> Workload:
    return Workload(
        source="defaults",
        read_size=DEFAULT_READ_SIZE,
        write_size=DEFAULT_WRITE_SIZE,
        read_iodepths=list(DEFAULT_READ_IODEPTHS),
        commit_jobs=list(DEFAULT_COMMIT_JOBS),
        basis={
            "read_size": "default 4KiB",
            "write_size": "default 4KiB",
            "read_iodepths": "default QD 1 and 32",
            "commit_jobs": "default 1 and 8 committers",
        },
    )


def load(path: Path) -> dict[str, Any]:
    """The fingerprint at `path`, read and checked through its contract (iofp/fingerprint_doc.py,
    BadInput if unusable), as the JSON object from_fingerprint reads."""
    from iofp import fingerprint_doc

    return fingerprint_doc.load(path).to_dict()


def from_fingerprint(doc: dict[str, Any], where: str) -> Workload:
    """The workload of a fingerprint document; a figure it does not have keeps its default, said so."""
    w = defaults()
    w.source = where
    whole = doc["whole"]
    size, mix = whole.get("size") or {}, whole.get("mix") or {}
    for op in ("read", "write"):
        hist = (size.get("hist") or {}).get(op)
        limit = _quantile_limit(hist, 0.5)
        mean = (mix.get(f"{op}_bytes") or 0) / mix[f"{op}s"] if mix.get(f"{op}s") else None
        if limit is not None and math.isfinite(limit):
            value, why = limit, f"median {op} size bucket (<= {limit:.0f} bytes)"
        elif mean and math.isfinite(mean):
            value, why = mean, f"mean {op} size ({mean:.0f} bytes; median past the last bucket)"
        else:
            w.basis[f"{op}_size"] += f" (the fingerprint has no {op}s)"
            continue
        n, moved = _clamp(value, 512, MAX_SIZE)
        setattr(w, f"{op}_size", _round_up(n, 512))
        w.basis[f"{op}_size"] = why + (f"; clamped to {n} bytes" if moved else "")
    _depths(w, whole.get("inflight"))
    _commits(w, (whole.get("durability") or {}).get("sync_calls") or {})
    return w


def _depths(w: Workload, inflight: dict[str, Any] | None) -> None:
    hist = ((inflight or {}).get("hist") or {}).get("read")
    p50, p99 = _quantile_limit(hist, 0.5), _quantile_limit(hist, 0.99)
    if p50 is None or p99 is None:
        w.basis["read_iodepths"] += " (the fingerprint has no in-flight counts of reads)"
        return
    top = (inflight or {}).get("max") or 1
    deepest = max_iodepth()
    got = [_clamp(float(top if math.isinf(q) else q), 1, deepest) for q in (p50, p99)]
    qd = [n for n, _ in got]
    w.read_iodepths = sorted(set(qd))
    w.basis["read_iodepths"] = f"reads in flight at issue: p50 bucket <= {qd[0]}, p99 bucket <= {qd[1]}"
    if any(moved for _, moved in got):
        w.basis["read_iodepths"] += f" (clamped to 1-{deepest}: fio's queue here)"


def _commits(w: Workload, calls: dict[str, Any]) -> None:
    busy = sum(
        (c.get("rate_per_s") or 0) * (c.get("mean_us") or 0) / 1e6
        for name, c in calls.items()
        if name in COMMIT_CALLS
    )
    if not busy:
        w.basis["commit_jobs"] += " (the fingerprint has no fsync or fdatasync calls)"
        return
    n, moved = _clamp(math.ceil(busy) if math.isfinite(busy) else busy, 1, MAX_COMMIT_JOBS)
    w.commit_jobs = sorted({1, n})
    w.basis["commit_jobs"] = (
        f"commits in progress, Little's law: calls/s x mean latency = {busy:.2f}, rounded up to {n}"
    )
    if moved:
        w.basis["commit_jobs"] += f" (clamped to at most {MAX_COMMIT_JOBS} committer processes)"


def _quantile_limit(hist: dict[str, Any] | None, q: float) -> float | None:
    """The upper limit of the bucket holding the q-quantile (inf past the last limit); None if empty."""
    if not hist or not sum(hist.get("counts") or []):
        return None
    counts, limits = hist["counts"], hist["limits"]
    want, seen = q * sum(counts), 0
    for i, c in enumerate(counts):
        seen += c
        if seen >= want and c:
            return float(limits[i]) if i < len(limits) else math.inf
    return math.inf


def _round_up(n: int, unit: int) -> int:
    return max(unit, -(-n // unit) * unit)


def fit_to_block(w: Workload, logical_block_size: int) -> None:
    """Direct I/O needs sizes in whole logical blocks of the target: round up, and say so."""
    for op in ("read", "write"):
        size = getattr(w, f"{op}_size")
        fitted = _round_up(size, logical_block_size)
        if fitted != size:
            setattr(w, f"{op}_size", fitted)
            w.basis[f"{op}_size"] += f"; rounded up to the target's {logical_block_size}-byte blocks"
