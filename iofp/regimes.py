"""The regimes of a trace, one rule for every stage: steady state, baseline and spikes, per window.

Data flows one way: the per-window series comes from SQL (`series`, iofp/sql/regime_series.sql),
`classify` labels its windows in Python, and the result, a `Regimes`, is what the fingerprint
summarises (its scope queries join `Regimes.table()`, one row per window) and what replay's
`--regime` selects from (`Regimes.run`). So what a fingerprint calls its rank-1 spike is what
`iofp replay --regime spike` replays, given the same --window and --device.

The rule (docs/fingerprint-schema.md says it for users; the constants below are its parameters):

* I/Os are data requests (reads, writes, discards), as iostat counts them; bytes are theirs.
* **baseline**: the median I/Os and bytes per window with I/O and their spread: the widest of the
  counting noise (sqrt(median) for I/Os; for bytes, the compound-Poisson sqrt(median x E[size^2] /
  E[size])), 1.4826 x the MAD and the window-to-window noise (1.4826 x the MAD of successive
  differences / sqrt(2)): overdispersed traces (bursty production I/O) get the wider. Idle windows do
  not count, so a service idle half the time is not one long spike whenever it works. Estimated
  once, then again without the hot windows (Farrington's reweighting), so bursts do not inflate it.
* **hot window**: I/Os or bytes above BOTH (a) the Cornish-Fisher upper quantile of the baseline at a
  family-wise alpha of 0.05 over all windows and both measures (z = Phi^-1(1 - alpha / 2N)): a window
  of counting noise exceeds it in 1 trace of 20, whatever the trace's length; and (b) an effect size:
  1.5 x the baseline, and at least 5 I/Os (or 5 mean-sized I/Os' bytes; Farrington's limit).
* **spike**: hot windows merged across gaps of up to 2 windows, then widened while a neighbour is
  still half as far above the baseline as a hot window must be (hysteresis at the edges, as
  Prometheus' keep_firing_for); kept when it is sustained (2 or more hot windows) or outsized (a
  Li-Ma significance of 5 or more over the baseline, deflated by the overdispersion). Ranked by
  excess I/Os over the baseline (the extra requests the device served; ties by excess bytes), so
  rank 1 is the biggest.
* **steady**: the SNIA PTS rule on I/Os per window: 5 consecutive windows whose range is within 20%
  of their mean and whose least-squares slope moves by at most 10% of the mean across them; a
  steady window is in such a block and in no spike. When none passes, the closest block says by
  how much.
* Every window that is in no spike is **baseline** (steady ones included): a sparse production trace
  with no steady state still has two regimes, baseline and spike.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from statistics import NormalDist
from typing import Any

import numpy as np
import pyarrow as pa

from iofp import fingerprint_doc as doc
from iofp.sqlfiles import load_sql
from iofp.values import duration_text
from iofp.windows import (
    DEFAULT_MIN_MEDIAN_IOS,
    DEFAULT_WINDOW_RULE,
    check_window_ns,
    default_steps_ns,
    default_window_ns,
)

SQL = "iofp.sql"
REGIME_NAMES = ("steady", "spike", "baseline")  # what --regime selects
BASELINE, STEADY, SPIKE = 0, 1, 2  # a window's class (Regimes.table's rg); steady windows are baseline too

ALPHA = 0.05
HOT_RATIO = 1.5
HOT_MIN_IOS = 5
GAP_WINDOWS = 2
SUSTAINED_WINDOWS = 2
OUTSIZED_SIGNIFICANCE = 5.0
STEADY_BLOCK, STEADY_RANGE, STEADY_SLOPE = 5, 0.20, 0.10
# Poisson counts pass the SNIA rule on noise alone only from ~400 per window (87% of 5-window blocks;
# 29% at 100, 0.4% at 6): below it, "not steady" says little about the workload.
SNIA_NOISE_IOS = 400
MAX_LISTED = 100  # spikes in the document (biggest first); the rest are counted
MAX_RANGES = 20  # steady and baseline ranges in the document (longest first, listed in time order)
STEADY_RULE = (
    "SNIA PTS on I/Os per window over 5 consecutive windows: max - min <= 20% of the mean and |slope x 4| "
    "<= 10% of the mean; a steady window is in such a block and in no spike"
)
SPIKE_RULE = (
    "hot window: I/Os or bytes above the baseline's Cornish-Fisher upper quantile at family-wise alpha 0.05 "
    "(baseline: median, spread max(1.4826 MAD, Poisson noise)) and above 1.5 x the baseline and 5 I/Os; "
    "spike: hot windows merged across gaps <= 2 windows, widened while a neighbour is half as far above, "
    "kept with >= 2 hot windows or Li-Ma significance >= 5; ranked by excess I/Os over the baseline"
)


@dataclass(frozen=True)
class Series:
    """Data requests and their bytes per window, every window from the first arrival (t0_ns, trace
    clock) to the last, empty ones included; and the size moments the bytes' noise is scaled by."""

    t0_ns: int
    window_ns: int
    window_rule: str  # how window_ns was chosen: "--window", or the default rule
    ios: np.ndarray
    bytes: np.ndarray
    size_m1: float  # E[size], E[size^2], E[size^3] over the data requests (0 without any)
    size_m2: float
    size_m3: float

    @property
    def windows(self) -> int:
        return len(self.ios)


def span(con: Any, device: str | None = None) -> tuple[int, int] | None:
    """First and last arrival (trace clock) of the I/O rows of `device` (or all) in view `io`."""
    [(t0, t1)] = con.execute(load_sql(SQL, "io_span"), {"device": device}).fetchall()
    return None if t0 is None else (int(t0), int(t1))


def series(con: Any, window_ns: int | None, device: str | None = None) -> Series:
    """The series of view `io` (rows of `device`, or all) at `window_ns`, or at the default window
    (iofp/windows.py) when None. A window outside every stage's limits is BadInput. One pass over
    the rows: the counts at the first default step give every candidate's (each is a multiple)."""
    t0, t1 = span(con, device) or (0, -1)
    if window_ns is not None:
        check_window_ns(window_ns, max(t1 - t0, 0))  # before a query of that many windows
    step = window_ns if window_ns is not None else default_steps_ns(max(t1 - t0, 0))[0]
    params = {"window_ns": step, "device": device, "t0": t0}
    rows = con.execute(load_sql(SQL, "regime_series"), params).fetchnumpy()
    sq, cube = (float(rows[c][0]) if len(rows["k"]) else 0.0 for c in ("sq", "cube"))
    return series_of(rows, (sq, cube), t0, t1, step, window_ns)


def series_of(
    rows: dict[str, np.ndarray],
    moments: tuple[float, float],
    t0: int,
    t1: int,
    step_ns: int,
    window_ns: int | None,
) -> Series:
    """The series from per-step sums (k: the step's index from t0, only steps with data requests;
    ios and bytes) and the sums of size^2 and size^3 over every data request (`moments`), at
    `window_ns`, or at the default window when None (then `step_ns` must be the first default step:
    every candidate is a multiple of it, and its counts sum up exactly)."""
    nstep = 0 if t1 < t0 else (t1 - t0) // step_ns + 1
    ios, nbytes = np.zeros(nstep), np.zeros(nstep)
    k = np.asarray(rows["k"], np.int64)
    ios[k], nbytes[k] = rows["ios"], rows["bytes"]
    n = float(ios.sum())
    m2, m3 = (m / n if n else 0.0 for m in moments)
    rule = "--window"
    if window_ns is None:
        window_ns, rule = default_window_ns(ios, max(t1 - t0, 0)), DEFAULT_WINDOW_RULE
    check_window_ns(window_ns, max(t1 - t0, 0))
    assert window_ns % step_ns == 0, "a window is a run of whole steps"
    if (m := window_ns // step_ns) > 1:  # a multiple of the step: its windows are runs of m steps
        starts = np.arange(0, nstep, m)
        ios, nbytes = np.add.reduceat(ios, starts), np.add.reduceat(nbytes, starts)
    return Series(t0, window_ns, rule, ios, nbytes, float(nbytes.sum()) / n if n else 0.0, m2, m3)


@dataclass(frozen=True)
class Level:
    """The baseline of one measure (I/Os or bytes per window) and the thresholds derived from it."""

    median: float
    sigma: float  # max(1.4826 x MAD, the counting noise)
    noise: float  # the counting noise alone
    hot: float
    edge: float

    @property
    def overdispersion(self) -> float:
        return (self.sigma / self.noise) ** 2 if self.noise > 0 else 1.0


@dataclass
class Episode:
    first: int  # window indexes, inclusive
    last: int
    hot_windows: int
    ios: float
    bytes: float
    excess_ios: float
    excess_bytes: float
    tripped: str
    significance: float


@dataclass
class Regimes:
    """Every window's regime, the spikes ranked biggest first, and the numbers behind them."""

    series: Series
    classes: np.ndarray  # BASELINE, STEADY or SPIKE per window
    spikes: list[Episode]  # ranked: spikes[0] is the biggest
    ios: Level
    bytes: Level
    z: float
    closest: tuple[int, float, float, float] | None  # SNIA block: first window, range %, slope %, mean I/Os
    dropped: int = field(default=0)  # hot runs neither sustained nor outsized
    hot: np.ndarray | None = None  # each window: above the hot thresholds (in a spike or not)

    def table(self) -> pa.Table:
        """(w, rg): each window's class, for the scope queries to join."""
        w = pa.array(np.arange(len(self.classes)), pa.int64())
        return pa.table({"w": w, "rg": pa.array(self.classes, pa.uint8())})

    def run(self, regime: str) -> tuple[int, int] | None:
        """The windows (first, last) `--regime` replays: spike, the rank-1 spike; steady or baseline,
        the longest run of such windows (the earliest on a tie); None if there is none."""
        if regime == "spike":
            return (self.spikes[0].first, self.spikes[0].last) if self.spikes else None
        runs = _runs(self.classes == STEADY if regime == "steady" else self.classes != SPIKE)
        return max(runs, key=lambda r: (r[1] - r[0], -r[0])) if runs else None

    def summary(self, total_ios: int) -> doc.Regimes:
        """The document's regime summary (no per-window data: that stays with the trace)."""
        w_s = self.series.window_ns / 1e9
        steady = self.classes == STEADY
        return doc.Regimes(
            windows=self.series.windows,
            window_ios_median=float(np.median(self.series.ios)) if self.series.windows else 0.0,
            sparse_hint=self.sparse_hint(),
            steady=self._steady_check(steady),
            baseline=doc.Baseline(
                windows=int((self.classes != SPIKE).sum()),
                ranges_s=_ranges_s(_runs(self.classes != SPIKE), w_s),
                median_iops=self.ios.median / w_s,
                median_mbps=self.bytes.median / w_s / 1e6,
                sigma_iops=self.ios.sigma / w_s,
                sigma_mbps=self.bytes.sigma / w_s / 1e6,
                overdispersion=self.ios.overdispersion,
            ),
            thresholds=doc.Thresholds(
                alpha=ALPHA,
                z=self.z,
                hot_iops=self.ios.hot / w_s,
                hot_mbps=self.bytes.hot / w_s / 1e6,
                edge_iops=self.ios.edge / w_s,
                edge_mbps=self.bytes.edge / w_s / 1e6,
            ),
            spike_windows=int((self.classes == SPIKE).sum()),
            hot_windows=None if self.hot is None else int(self.hot.sum()),
            hot_outside_spikes=None if self.hot is None else int((self.hot & (self.classes != SPIKE)).sum()),
            blips=self.dropped,
            spikes_total=len(self.spikes),
            spikes=[self._spike(i, e, total_ios) for i, e in enumerate(self.spikes[:MAX_LISTED])],
        )

    def sparse_hint(self) -> str | None:
        median = float(np.median(self.series.ios)) if self.series.windows else 0.0
        if median >= DEFAULT_MIN_MEDIAN_IOS:
            return None
        return (
            f"windows are sparse (median {median:g} I/Os per {duration_text(self.series.window_ns)} window, "
            f"under {DEFAULT_MIN_MEDIAN_IOS}): regimes stand on few I/Os"
        )

    def _steady_check(self, steady: np.ndarray) -> doc.SteadyCheck:
        w_s = self.series.window_ns / 1e9
        runs = _runs(steady)
        c = self.closest
        return doc.SteadyCheck(
            met=bool(steady.any()),
            windows=int(steady.sum()),
            ranges_s=_ranges_s(runs, w_s),
            ranges_total=len(runs),
            closest_start_s=None if c is None else c[0] * w_s,
            closest_range_pct=None if c is None else c[1],
            closest_slope_pct=None if c is None else c[2],
            closest_mean_iops=None if c is None else c[3] / w_s,
        )

    def _spike(self, i: int, e: Episode, total_ios: int) -> doc.Spike:
        w_s = self.series.window_ns / 1e9
        sl = slice(e.first, e.last + 1)
        return doc.Spike(
            rank=i + 1,
            start_s=e.first * w_s,
            end_s=(e.last + 1) * w_s,
            duration_s=(e.last - e.first + 1) * w_s,
            windows=e.last - e.first + 1,
            ios=int(e.ios),
            bytes=int(e.bytes),
            peak_iops=float(self.series.ios[sl].max()) / w_s,
            peak_mbps=float(self.series.bytes[sl].max()) / w_s / 1e6,
            baseline_iops=self.ios.median / w_s,
            excess_ios=e.excess_ios,
            excess_bytes=e.excess_bytes,
            io_share=e.ios / total_ios if total_ios else None,
            tripped=e.tripped,
            significance=e.significance,
        )


def classify(s: Series) -> Regimes:
    """The regimes of series `s` (the rule in this module's docstring)."""
    n = s.windows
    z = NormalDist().inv_cdf(1 - ALPHA / (2 * max(n, 1)))
    # A compound Poisson sum of sizes has variance mean x E[size^2] / E[size] and a skew term of
    # E[size^3] / E[size^2] bytes; a count is the same with every size 1.
    per = s.size_m2 / s.size_m1 if s.size_m1 else 0.0
    skew = s.size_m3 / s.size_m2 if s.size_m2 else 0.0
    hot = np.zeros(n, bool)
    busy = s.ios > 0
    for _ in range(2):  # the baseline, then again without the hot windows
        base = next((m for m in (~hot & busy, ~hot, busy) if m.any()), np.ones(n, bool))
        ios = _level(s.ios[base], 1.0, 1.0, z, HOT_MIN_IOS)
        nbytes = _level(s.bytes[base], per, skew, z, HOT_MIN_IOS * s.size_m1)
        hot_ios, hot_bytes = s.ios > ios.hot, s.bytes > nbytes.hot
        hot = hot_ios | hot_bytes
    warm = (s.ios > ios.edge) | (s.bytes > nbytes.edge)
    found = [_episode(s, a, b, hot, hot_ios, hot_bytes, ios, nbytes) for a, b in _widen(_merge(hot), warm)]
    kept = [e for e in found if e.hot_windows >= SUSTAINED_WINDOWS or e.significance >= OUTSIZED_SIGNIFICANCE]
    kept.sort(key=lambda e: (-e.excess_ios, -e.excess_bytes, e.first))
    classes = np.full(n, BASELINE, np.uint8)
    closest, passing = _snia(s.ios)
    classes[passing] = STEADY
    for e in kept:
        classes[e.first : e.last + 1] = SPIKE
    return Regimes(s, classes, kept, ios, nbytes, z, closest, len(found) - len(kept), hot)


def _level(x: np.ndarray, per: float, skew: float, z: float, floor: float) -> Level:
    """The baseline of one measure over windows `x` (in time order): median, spread and the hot and
    edge thresholds. The spread is the widest of the counting noise sqrt(median x per), 1.4826 x the
    MAD of the values, and 1.4826 x the MAD of successive differences / sqrt(2): the window-to-window
    noise, which routine short bursts (a database's checkpoint every few seconds) raise while one
    sustained excursion, two edges in a long run, does not. The Cornish-Fisher term (z^2 - 1) / 6 x skew
    is a Poisson count's (per = skew = 1) or a compound Poisson sum's upper-tail correction."""
    med = float(np.median(x)) if len(x) else 0.0
    mad = 1.4826 * float(np.median(np.abs(x - med))) if len(x) else 0.0
    jumps = 1.4826 * float(np.median(np.abs(np.diff(x)))) / math.sqrt(2) if len(x) > 1 else 0.0
    noise = math.sqrt(med * per) if med > 0 else 0.0
    sigma = max(mad, jumps, noise)
    hot = max(med + z * sigma + (z * z - 1) / 6 * skew, HOT_RATIO * med, floor)
    return Level(med, sigma, noise, hot, med + (hot - med) / 2)


def _merge(hot: np.ndarray) -> list[tuple[int, int]]:
    """Runs of hot windows, merged across gaps of up to GAP_WINDOWS."""
    out: list[list[int]] = []
    for k in np.flatnonzero(hot):
        if out and k - out[-1][1] <= GAP_WINDOWS + 1:
            out[-1][1] = int(k)
        else:
            out.append([int(k), int(k)])
    return [(a, b) for a, b in out]


def _widen(runs: list[tuple[int, int]], warm: np.ndarray) -> list[tuple[int, int]]:
    """Each run widened while its neighbour is warm; runs that come to touch are merged."""
    out: list[tuple[int, int]] = []
    for a, b in runs:
        while a > 0 and warm[a - 1]:
            a -= 1
        while b < len(warm) - 1 and warm[b + 1]:
            b += 1
        if out and a <= out[-1][1] + 1:
            out[-1] = (out[-1][0], max(out[-1][1], b))
        else:
            out.append((a, b))
    return out


def _episode(
    s: Series, a: int, b: int, hot: np.ndarray, hot_ios: np.ndarray, hot_bytes: np.ndarray, ios: Level,
    nbytes: Level,
) -> Episode:  # fmt: skip
    sl = slice(a, b + 1)
    n_ios, n_bytes, k = float(s.ios[sl].sum()), float(s.bytes[sl].sum()), b - a + 1
    by_ios, by_bytes = bool(hot_ios[sl].any()), bool(hot_bytes[sl].any())
    # Li-Ma significance of the I/Os over a known background (a -> 0), deflated by the overdispersion
    # (a quasi-Poisson deviance). Not of the bytes: their heavy-tailed sizes make a Poisson
    # likelihood overstate it, so a spike of bytes alone is kept only when sustained.
    return Episode(
        first=a, last=b, hot_windows=int(hot[sl].sum()), ios=n_ios, bytes=n_bytes,
        excess_ios=n_ios - ios.median * k, excess_bytes=n_bytes - nbytes.median * k,
        tripped="both" if by_ios and by_bytes else "iops" if by_ios else "mbps",
        significance=_li_ma(n_ios, ios.median * k) / math.sqrt(ios.overdispersion),
    )  # fmt: skip


def _li_ma(n: float, b: float) -> float:
    """sqrt(2 [n ln(n/b) - (n - b)]): Li & Ma (1983) eq. 17 with a known background b."""
    if n <= b:
        return 0.0
    if b <= 0:
        return math.inf
    return math.sqrt(2 * (n * math.log(n / b) - (n - b)))


def _snia(x: np.ndarray) -> tuple[tuple[int, float, float, float] | None, np.ndarray]:
    """Windows covered by a 5-window block passing the SNIA rule, and the block closest to passing
    (first window, range % of mean, |slope x 4| % of mean, mean), judged by the larger of its two
    excursions against their limits."""
    n, k = len(x), STEADY_BLOCK
    covered = np.zeros(n, bool)
    if n < k:
        return None, covered
    blocks = np.lib.stride_tricks.sliding_window_view(x, k)
    mean = blocks.mean(axis=1)
    rng = blocks.max(axis=1) - blocks.min(axis=1)
    t = np.arange(k) - (k - 1) / 2
    slope = blocks @ t / (t @ t)
    with np.errstate(divide="ignore", invalid="ignore"):
        range_pct = np.where(mean > 0, rng / mean * 100, np.inf)
        slope_pct = np.where(mean > 0, np.abs(slope * (k - 1)) / mean * 100, np.inf)
    ok = (range_pct <= STEADY_RANGE * 100) & (slope_pct <= STEADY_SLOPE * 100)
    for i in np.flatnonzero(ok):
        covered[i : i + k] = True
    score = np.maximum(range_pct / (STEADY_RANGE * 100), slope_pct / (STEADY_SLOPE * 100))
    if not np.isfinite(score).any():
        return None, covered
    i = int(np.argmin(score))
    return (i, float(range_pct[i]), float(slope_pct[i]), float(mean[i])), covered


def _runs(mask: np.ndarray) -> list[tuple[int, int]]:
    """(first, last) of each run of True."""
    d = np.diff(np.concatenate([[0], mask.astype(np.int8), [0]]))
    return list(zip(np.flatnonzero(d == 1).tolist(), (np.flatnonzero(d == -1) - 1).tolist(), strict=True))


def _ranges_s(runs: list[tuple[int, int]], w_s: float) -> list[list[float]]:
    """The longest MAX_RANGES runs as [start, end) seconds from the first arrival, in time order."""
    longest = sorted(sorted(runs, key=lambda r: (r[0] - r[1], r[0]))[:MAX_RANGES])
    return [[a * w_s, (b + 1) * w_s] for a, b in longest]
