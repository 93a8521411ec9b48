"""Benchmark: how often the regime rule (iofp/regimes.py) calls counting noise a spike.

    .venv/bin/python -m bench.regime_false_spikes [--traces 200]

Poisson arrivals at a constant rate, sizes drawn 60/20/10/10% from 4, 8, 16 and 64 KiB, no burst in
them: every spike kept is a false one, and every trace with a hot window (before the episode rule)
measures the hot-window test's family-wise alpha (0.05 by design). Pure numpy, seconds per row; no
lock needed (nothing load-dependent is measured).
"""

from __future__ import annotations

import argparse

import numpy as np

from iofp import regimes

RATES = (3, 10, 25, 60, 200, 1_000, 5_000)  # I/Os per window
WINDOWS = (120, 720, 3600)


def poisson_series(rng: np.random.Generator, rate: float, windows: int) -> regimes.Series:
    ios = rng.poisson(rate, windows).astype(float)
    sizes = rng.choice([4096.0, 8192.0, 16384.0, 65536.0], int(ios.sum()), p=[0.6, 0.2, 0.1, 0.1])
    nbytes = np.bincount(np.repeat(np.arange(windows), ios.astype(int)), weights=sizes, minlength=windows)
    moments = [float((sizes**k).mean()) if len(sizes) else 0.0 for k in (1, 2, 3)]
    return regimes.Series(0, 10**9, "--window", ios, nbytes, *moments)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--traces", type=int, default=200, help="traces per (rate, windows) cell")
    ap.add_argument("--seed", type=int, default=1000)
    a = ap.parse_args()
    total = spikes_total = hot_total = 0
    for rate in RATES:
        for windows in WINDOWS:
            spikes = hot = 0
            for i in range(a.traces):
                reg = regimes.classify(poisson_series(np.random.default_rng(a.seed + i), rate, windows))
                spikes += len(reg.spikes)
                hot += bool(reg.spikes or reg.dropped)
            total, spikes_total, hot_total = total + a.traces, spikes_total + spikes, hot_total + hot
            print(f"{rate:6d} I/Os per window, {windows:5d} windows: {spikes} spikes in {a.traces} traces; "
                  f"{hot} ({hot / a.traces:.1%}) with a hot window")  # fmt: skip
    print(f"all: {spikes_total} false spikes in {total} traces ({spikes_total / total:.2%}); "
          f"{hot_total} ({hot_total / total:.1%}) with a hot window")  # fmt: skip


if __name__ == "__main__":
    main()
