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
            setattr(w, f"{op}_size", _round_up(int(limit), 512))
            w.basis[f"{op}_size"] = f"median {op} size bucket (<= {int(limit)} bytes)"
        elif mean:
            setattr(w, f"{op}_size", _round_up(round(mean), 512))
            w.basis[f"{op}_size"] = f"mean {op} size ({mean:.0f} bytes; median past the last bucket)"
        else:
            w.basis[f"{op}_size"] += f" (the fingerprint has no {op}s)"
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
    qd = [int(top if math.isinf(q) else q) for q in (p50, p99)]
    w.read_iodepths = sorted(set(qd))
    w.basis["read_iodepths"] = f"reads in flight at issue: p50 bucket <= {qd[0]}, p99 bucket <= {qd[1]}"


def _commits(w: Workload, calls: dict[str, Any]) -> None:
    busy = sum(
        (c.get("rate_per_s") or 0) * (c.get("mean_us") or 0) / 1e6
        for name, c in calls.items()
        if name in COMMIT_CALLS
    )
    if not busy:
        w.basis["commit_jobs"] += " (the fingerprint has no fsync or fdatasync calls)"
        return
    n = max(1, math.ceil(busy))
    w.commit_jobs = sorted({1, n})
    w.basis["commit_jobs"] = (
        f"commits in progress, Little's law: calls/s x mean latency = {busy:.2f}, rounded up to {n}"
    )


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
