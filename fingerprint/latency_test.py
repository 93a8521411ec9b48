"""How far a latency percentile must move, as a ratio B / A, before `iofp diff` calls it a change.

Three limits, on a log scale, and the largest holds:

- the floor: a move smaller than the diff's FLOOR is not worth a verdict;
- the I/Os: how precisely each scope's I/Os fix its percentile. The q-th percentile of n I/Os is
  the value at rank n q, and a resample of them (a bootstrap) moves that rank by about
  sqrt(n q (1 - q)) (binomial): the values at those ranks, read from the latency buckets each
  fingerprint carries (fingerprint_doc.LogHistogram), give the percentile's sampling error in closed
  form. Z_IO of those, combined over both scopes. A short spike of a sparse service has few I/Os,
  and this is what stops it from calling a small move a change;
- the batches: how far the figure moves from batch to batch within each trace (noise.py's sd_log),
  times the two-sided 99% t quantile for the batches there are (with 3 batches a side the spread is
  itself barely known: 4.6 of them; with 10, 2.9). A re-run of the same job moves a percentile by
  about this spread (stalls come and go over minutes), which the I/Os' own error does not cover.
  For a median the batch limit is at most RUN_CAP: the same job re-run moved its median by 1.4x at
  most (bench/diff_same_job.py, BENCHMARKS.md), and a scope with few batches must not hide a 4x move
  behind their spread; a median whose batches were too few to spread is held to RUN_CAP. A tail
  percentile without a batch spread is not judged: a tail moves between runs far beyond its I/Os'
  error (a p99 went 1,447 -> 93 µs between two runs of one job).

A scope states what it resolves: its typical latency's (p50's) limit. A scope where nothing moved
says "no change" only where that limit is within RESOLVE, a doubling (or halving): on this 2-core VM,
the same 15 s job's scopes resolved their p50 within ±32% to ±100% (bench/diff_same_job.py). One that
cannot resolve even that (a short spike of a sparse service: its few I/Os fix its median only
loosely) says "inconclusive", not "no change".
"""

from __future__ import annotations

import math
from dataclasses import dataclass

from iofp.fingerprint_doc import LogHistogram

Z_IO = 4.0
RUN_CAP = 2.0
RESOLVE = RUN_CAP - 1
QUANTILES = {"p50_us": 0.5, "p99_us": 0.99, "p99_9_us": 0.999}
# two-sided 99% quantiles of Student's t (t_0.995) by degrees of freedom; beyond the table, the normal
# quantile with its first Cornish-Fisher term
T_995 = {1: 63.657, 2: 9.925, 3: 5.841, 4: 4.604, 5: 4.032, 6: 3.707, 7: 3.499, 8: 3.355, 9: 3.250,
         10: 3.169, 11: 3.106, 12: 3.055, 13: 3.012, 14: 2.977, 15: 2.947, 16: 2.921, 17: 2.898,
         18: 2.878, 19: 2.861, 20: 2.845}  # fmt: skip
Z_995 = 2.5758


@dataclass(frozen=True)
class Side:
    """One scope's side of a percentile: its value (µs), its batch spread on a log scale (None:
    too few batches), how many batches, and its latency buckets (None: none carried)."""

    value: float
    sd_log: float | None
    batches: int
    buckets: LogHistogram | None


@dataclass(frozen=True)
class Limit:
    log: float  # the |ln(B / A)| a change must exceed
    by: str  # which limit it is: "floor", "I/Os" or "batches"


def t995(df: int) -> float:
    if df < 1:
        return math.inf
    return T_995.get(df, Z_995 + (Z_995**3 + Z_995) / (4 * df))


def limit(q: float, a: Side, b: Side, floor: float) -> Limit | None:
    """The limit a percentile q's ratio B / A must exceed; None: not judged (a tail without a batch
    spread on either side)."""
    parts = {"floor": math.log1p(floor), "I/Os": Z_IO * math.hypot(io_error(a, q), io_error(b, q))}
    if a.sd_log is not None and b.sd_log is not None:
        run = t995(a.batches + b.batches - 2) * math.hypot(a.sd_log, b.sd_log)
        parts["batches"] = min(run, math.log(RUN_CAP)) if q == 0.5 else run
    elif q == 0.5:
        parts["batches"] = math.log(RUN_CAP)
    else:
        return None
    by = max(parts, key=lambda k: parts[k])
    return Limit(parts[by], by)


def io_error(s: Side, q: float) -> float:
    """The sampling error of percentile q of the scope's I/Os, on a log scale: half the log-distance
    between the values one binomial standard deviation of rank either side of n q (0: no buckets)."""
    h = s.buckets
    if h is None or not h.counts:
        return 0.0
    n = sum(h.counts)
    spread = math.sqrt(n * q * (1 - q))
    lo, hi = _at_rank(h, max(1, math.ceil(n * q - spread))), _at_rank(h, min(n, math.ceil(n * q + spread)))
    return (hi - lo) / 2 / 10  # buckets are round(10 ln ns): a bucket is 0.1 of a log


def _at_rank(h: LogHistogram, rank: int) -> int:
    """The bucket (round(10 ln ns)) holding the rank-th smallest value."""
    seen = 0
    for k, c in enumerate(h.counts):
        seen += c
        if seen >= rank:
            return h.first + k
    return h.first + len(h.counts) - 1
