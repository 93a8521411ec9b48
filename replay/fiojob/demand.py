"""What a fingerprint scope asks of a device, in the terms a fio job is written in.

`demand(fp, scope)` reads one scope of a checked `Fingerprint` (never the JSON by hand) and returns
per-second rates per op, the per-op block sizes as a fio `bssplit`, the sequential shares, the commit
rate, the queue depth cap, the 1 s burstiness and the footprint with its skew. Every figure is
the fingerprint's; where the job has to choose (a size inside a histogram bucket, a zipf theta) the
choice is fitted to the fingerprint's own figure and said so by the caller.

Rates of the whole scope are over the I/O span (first to last arrival), not the capture window: a
capture starts before the workload and ends after it, and a job reproduces the workload while it
runs (the tolerance check measures both sides the same way).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from iofp.fingerprint_doc import Fingerprint, Histogram, Scope

SECTOR = 512
OVERFLOW_MAX = 4 << 20  # the largest size the open last bucket (> 512 KiB) is played as


@dataclass
class SizeSplit:
    """A per-op size distribution as fio's bssplit: (bytes, percent) with whole percents summing
    to 100, fitted so that its mean is the op's mean size."""

    parts: list[tuple[int, int]]
    target_mean: float
    mean: float
    ranged: list[str]  # the buckets that hold a range of sizes, and the size each is played as

    def text(self) -> str:
        return ":".join(f"{b}/{p}" for b, p in self.parts)


@dataclass
class Demand:
    scope: str
    seconds: float
    ios: int
    read_iops: float
    write_iops: float
    discard_iops: float
    read_sizes: SizeSplit | None
    write_sizes: SizeSplit | None
    seq_share: float | None
    seq_read_share: float | None
    seq_write_share: float | None
    commits_per_s: float  # fsync-family calls (or, without a sync table, flushes) per second
    commit_source: str
    iodepth: int | None  # the in-flight p99, None when the trace has no in-flight counts
    inflight_mean: float | None
    peak_to_mean_1s: float | None
    peak_ios_1s: int | None

    @property
    def iops(self) -> float:
        return self.read_iops + self.write_iops


def scope_seconds(fp: Fingerprint, scope: Scope) -> float:
    """The span a scope's rates are per second of, for a job: the I/O span for the whole trace."""
    if scope.name == "whole" and fp.provenance.io_span_s > 0:
        return fp.provenance.io_span_s
    return scope.seconds


def demand(fp: Fingerprint, scope: Scope) -> Demand:
    secs = scope_seconds(fp, scope)
    mix = scope.mix
    calls = sum(c.calls for c in scope.durability.sync_calls.values())
    if calls:
        commits, source = calls / secs, "fsync-family calls"
    elif scope.durability.flags_known and mix.flushes:
        commits, source = mix.flushes / secs, "flush requests (the trace has no sync table)"
    else:
        commits, source = 0.0, "none"
    burst = scope.burstiness.get("1s")
    return Demand(
        scope=scope.name,
        seconds=secs,
        ios=scope.ios,
        read_iops=mix.reads / secs,
        write_iops=mix.writes / secs,
        discard_iops=mix.discards / secs,
        read_sizes=size_split(scope.size.hist.read, mix.read_bytes / mix.reads) if mix.reads else None,
        write_sizes=size_split(scope.size.hist.write, mix.write_bytes / mix.writes) if mix.writes else None,
        seq_share=scope.sequential.share,
        seq_read_share=scope.sequential.read_share,
        seq_write_share=scope.sequential.write_share,
        commits_per_s=commits,
        commit_source=source,
        iodepth=scope.inflight.p99 if scope.inflight else None,
        inflight_mean=scope.inflight.mean if scope.inflight else None,
        # The busiest second over the mean rate (as fingerprint.tolerance judges it); none for a
        # scope shorter than two 1 s bins.
        peak_to_mean_1s=burst.peak_ios * secs / scope.ios
        if burst and burst.bins >= 2 and scope.ios
        else None,
        peak_ios_1s=burst.peak_ios if burst else None,
    )


def size_split(hist: Histogram | None, target_mean: float) -> SizeSplit | None:
    """The histogram as whole percents per size. A bucket of one size (4096: (4095, 4096]) is that
    size; a bucket holding a range (4097-8191) is played as one sector-aligned size inside it, the
    ranged buckets all placed at the same fraction of their range so that the split's mean is the
    op's measured mean (bytes / I/Os): the histogram says how many, the mean says where."""
    if hist is None or not sum(hist.counts):
        return None
    lows = [0, *hist.limits]
    highs = [*hist.limits, OVERFLOW_MAX]
    pct = _whole_percents(hist.counts)
    buckets = []  # (low size, high size, percent) of the sector-aligned sizes in each used bucket
    for lo, hi, p in zip(lows, highs, pct, strict=True):
        if p:
            first = (lo // SECTOR + 1) * SECTOR
            last = hi // SECTOR * SECTOR
            buckets.append((first, max(first, last), p))
    fixed = sum(p * lo for lo, hi, p in buckets if lo == hi)
    spread = sum(p * (hi - lo) for lo, hi, p in buckets if lo != hi)
    base = sum(p * lo for lo, hi, p in buckets if lo != hi)
    frac = 0.5 if spread == 0 else min(1.0, max(0.0, (target_mean * 100 - fixed - base) / spread))
    parts: dict[int, int] = {}
    ranged = []
    for lo, hi, p in buckets:
        size = lo if lo == hi else round((lo + frac * (hi - lo)) / SECTOR) * SECTOR
        parts[size] = parts.get(size, 0) + p
        if lo != hi:
            ranged.append(f"{lo}-{hi} B as {size} B")
    out = sorted(parts.items())
    mean = sum(b * p for b, p in out) / 100
    return SizeSplit(out, target_mean, mean, ranged)


def _whole_percents(counts: list[int]) -> list[int]:
    """Counts as whole percents summing to 100 (largest remainder): fio's bssplit takes whole ones."""
    total = sum(counts)
    exact = [100 * c / total for c in counts]
    out = [math.floor(x) for x in exact]
    order = sorted(range(len(exact)), key=lambda i: exact[i] - out[i], reverse=True)
    for i in order[: 100 - sum(out)]:
        out[i] += 1
    return out


def zipf_theta(hot_share: float, ranges: int) -> float | None:
    """The zipf theta (fio's random_distribution=zipf:THETA over `ranges` blocks) whose hottest 1% of
    blocks take `hot_share` of the I/Os, or None when uniform is as close (share <= 2% for 1%)."""
    k = max(1, math.ceil(ranges / 100))
    if hot_share <= 0.02 or ranges < 200 or k >= ranges:
        return None

    def share(theta: float) -> float:
        # Partial sums of i^-theta, by the integral approximation past the first 1,000 terms.
        def h(n: int) -> float:
            m = min(n, 1000)
            s = sum(i**-theta for i in range(1, m + 1))
            if n > m:
                s += _tail(m, n, theta)
            return s

        return h(k) / h(ranges)

    lo, hi = 0.0, 3.0
    for _ in range(60):
        mid = (lo + hi) / 2
        if share(mid) < hot_share:
            lo = mid
        else:
            hi = mid
    theta = round((lo + hi) / 2, 3)
    return 1.001 if theta == 1.0 else theta  # fio refuses theta 1.0 exactly


def _tail(m: int, n: int, theta: float) -> float:
    """sum over i in (m, n] of i^-theta, by the integral from m + 0.5 to n + 0.5."""
    a, b = m + 0.5, n + 0.5
    if abs(theta - 1.0) < 1e-9:
        return math.log(b / a)
    return (b ** (1 - theta) - a ** (1 - theta)) / (1 - theta)


def expected_blocks(n: int, theta: float | None, seq: float, rand: float) -> float:
    """Distinct 4 KiB blocks a job touches in a region of `n` blocks: `seq` touches by sequential runs
    (fresh blocks, at most the region) and `rand` by random I/Os, each block i drawn with fio's zipf
    probability (uniform without a theta): n - sum over i of P(missed by the runs) P(never drawn)."""
    if theta is None:
        missed = n * math.exp(-rand / n)
    else:
        p = np.arange(1, n + 1, dtype=float) ** -theta
        missed = float(np.exp(-rand * p / p.sum()).sum())
    return n - (1 - min(seq, n) / n) * missed


def fit_region(blocks: int, seq: float, rand: float, hot: float | None) -> tuple[int, float | None]:
    """The region (in 4 KiB blocks) and zipf theta in which a job's touches reach the trace's
    `blocks` (its footprint), the theta still giving the hottest 1% their `hot` share. Random I/O
    revisits blocks, so a job of about as many touches as the footprint needs a wider region."""
    n, theta = blocks, zipf_theta(hot, blocks) if hot else None
    for _ in range(3):  # theta depends on the region, the region on theta: settles in two rounds
        lo, hi = blocks, blocks * 32
        if expected_blocks(hi, theta, seq, rand) < blocks:
            return hi, theta
        while hi - lo > max(1, blocks // 1000):
            mid = (lo + hi) // 2
            lo, hi = (mid, hi) if expected_blocks(mid, theta, seq, rand) < blocks else (lo, mid)
        n = hi
        theta = zipf_theta(hot, n) if hot else None
    return n, theta
