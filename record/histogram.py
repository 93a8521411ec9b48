"""Latency histograms of the per-second summary: fio's log-linear bins, so that percentiles merged
over any span (a minute, `--between 14:30 14:45`) carry one stated error.

A latency v (ns) falls in bin `bucket(v)`: below 128 ns one bin per nanosecond; above, each power of
two is split into 64 equal bins (fio's FIO_IO_U_PLAT_BITS = 6). A bin's width is at most 1/64 of its
lower edge, and a percentile is reported as its bin's midpoint: within ERROR (1/128, 0.78%) of the
exact nearest-rank value, the same bound fio states for its own percentiles.
"""

from __future__ import annotations

import numpy as np

SUB_BITS = 6
SUB = 1 << SUB_BITS  # bins per power of two
ERROR = 1 / (2 * SUB)  # a reported percentile is within this fraction of the exact one
# the percentiles the summary reports, as exact fractions (nearest rank without rounding error)
PCT_FRACTIONS = {"p50": (1, 2), "p99": (99, 100), "p99.9": (999, 1000)}


def bucket(v: np.ndarray) -> np.ndarray:
    """The bin of each latency (ns, >= 0), as int32."""
    v = np.maximum(np.asarray(v, np.int64), 0)
    # the highest set bit, exact for every int64 (frexp is exact below 2**53, and latencies are)
    msb = np.frexp(v.astype(np.float64))[1].astype(np.int64) - 1
    shift = np.maximum(msb - SUB_BITS, 0)
    return (np.where(v < 2 * SUB, v, (shift << SUB_BITS) + (v >> shift))).astype(np.int32)


def lower(idx: np.ndarray | int) -> np.ndarray:
    """The smallest latency (ns) in each bin."""
    idx = np.asarray(idx, np.int64)
    shift = np.maximum(idx // SUB - 1, 0)
    return np.where(idx < 2 * SUB, idx, (idx - shift * SUB) << shift)


def width(idx: np.ndarray | int) -> np.ndarray:
    idx = np.asarray(idx, np.int64)
    return np.where(idx < 2 * SUB, 1, 1 << np.maximum(idx // SUB - 1, 0))


def midpoint(idx: np.ndarray | int) -> np.ndarray:
    """What a percentile falling in each bin is reported as (ns)."""
    return lower(idx) + (width(idx) - 1) / 2


def rank(n: int, pct: str) -> int:
    """The nearest rank (1-based) of percentile `pct` among `n` values: ceil(n x fraction), as
    DuckDB's quantile_disc and fio compute it."""
    num, den = PCT_FRACTIONS[pct]
    return max(1, -(-n * num // den))


def percentile(idx: np.ndarray, counts: np.ndarray, pct: str) -> float | None:
    """Percentile `pct` of a histogram (bins ascending, their counts), as its bin's midpoint."""
    n = int(counts.sum())
    if n == 0:
        return None
    at = int(np.searchsorted(np.cumsum(counts), rank(n, pct)))
    return float(midpoint(idx[at]))


def exact(values: np.ndarray, pct: str) -> float | None:
    """The exact nearest-rank percentile of raw values (what compare's quantile_disc gives)."""
    n = len(values)
    if n == 0:
        return None
    k = rank(n, pct) - 1
    return float(np.partition(values, k)[k])


NBINS = int(bucket(np.array([2**63 - 1]))[0]) + 1  # every bin an int64 latency can fall in


def counts(v: np.ndarray) -> np.ndarray:
    """The dense histogram (NBINS counts) of latencies `v`."""
    return np.bincount(bucket(v), minlength=NBINS)
