"""The regime rule (iofp/regimes.py): the windows a fingerprint calls steady or spike are the windows
`iofp replay --regime` / `iofp iolog --regime` select, on a synthetic trace built so that a rule over
all windows (idle ones included) and the rule over the steady windows disagree, and on the samples."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest

from fingerprint.api import fingerprint_trace
from fingerprint.compute import Options
from iofp import regimes
from iofp.contract import TraceMeta, TraceWriter, open_trace
from iofp.errors import BadInput
from replay import selection

SAMPLES = Path(__file__).resolve().parent.parent / "samples"
S = 10**9
ORIGIN = 5_250_000_000  # first I/O at 5.25 s on the trace clock: windows start there, not at 0
# I/Os per 1 s window of device loop9: steady at 1,000, a 6 s plateau at 2,000 (a spike, yet steady by
# the SNIA rule on its own), steady again, 25 idle windows, then a trickle that ends the trace.
LOOP9 = [1000] * 10 + [2000] * 6 + [1000] * 6 + [0] * 25 + [10]
# A few stray I/Os on a second device in the idle stretch: not steady, not a spike, whichever device.
LOOP8 = {30: 3, 35: 1}


def _arrivals(rate: int, window: int) -> list[int]:
    return [ORIGIN + window * S + i * (S // rate) for i in range(rate)]


@pytest.fixture
def plateau_trace(tmp_path) -> Path:
    """LOOP9 and LOOP8 as evenly spaced 4 KiB reads, written through the contract."""
    ts9 = [t for w, r in enumerate(LOOP9) if r for t in _arrivals(r, w)]
    ts8 = [t + 1000 for w, r in LOOP8.items() for t in _arrivals(r, w)]
    ts = ts9 + ts8
    n = len(ts)
    with TraceWriter(tmp_path / "plateau", TraceMeta(source="import:synthetic")) as w:
        w.write("io", pa.table({
            "ts_ns": ts, "device": ["loop9"] * len(ts9) + ["loop8"] * len(ts8),
            "offset": [i * 4096 for i in range(n)], "size": [4096] * n, "op": ["read"] * n,
        }))  # fmt: skip
    return tmp_path / "plateau"


def _runs(ranges_s: list[tuple[float, float]], window_s: float) -> list[tuple[int, int]]:
    """[start_s, end_s) ranges from a fingerprint -> (first, last) window indexes."""
    return [(round(a / window_s), round(b / window_s) - 1) for a, b in ranges_s]


def _replayed(trace: Path, regime: str, device: str | None) -> tuple[int, int, int]:
    """(t_lo_ns, t_hi_ns, I/Os) of the span `--regime` selects, through replay's own selection."""
    t = open_trace(trace)
    con = selection.connect(t)
    try:
        stats = selection.resolve(con, t, selection.Selection(device=device, regime=regime))
    finally:
        con.close()
    return stats.t_lo_ns, stats.t_hi_ns, stats.rows


def _fingerprint_span(fp: dict, regime: str) -> tuple[int, int] | None:
    """The span of the trace clock the fingerprint says `--regime` takes: its busiest spike, or its
    longest run of steady windows (the earliest on a tie, for both); None if it lists none."""
    reg, w_s = fp["regimes"], fp["params"]["window_s"]
    t0, w_ns = fp["provenance"]["capture_window_ns"][0], round(w_s * S)
    if regime == "spike":
        if not reg["spikes"]:
            return None
        busiest = max(reg["spikes"], key=lambda s: s["peak_iops"])  # max() keeps the first of equals
        a, b = _runs([(busiest["start_s"], busiest["end_s"])], w_s)[0]
    else:
        if not reg["steady_ranges_s"]:
            return None
        a, b = max(_runs(reg["steady_ranges_s"], w_s), key=lambda r: r[1] - r[0])
    return t0 + a * w_ns, t0 + (b + 1) * w_ns


@pytest.mark.parametrize("device", [None, "loop9"])
def test_replay_selects_the_windows_the_fingerprint_calls_spike_and_steady(plateau_trace, device):
    fp = fingerprint_trace(plateau_trace, Options(device=device))
    reg = fp["regimes"]
    # The rule itself: the spike threshold stands on the steady windows' median (1,000 IOPS), not on
    # the median of all 48 windows, which the 25 idle ones make 0 (every busy window a "spike").
    assert reg["steady_median_iops"] == 1000 and reg["spike_threshold_iops"] == 1500
    assert [(s["start_s"], s["end_s"]) for s in reg["spikes"]] == [(10, 16)]
    # The plateau is steady by the SNIA rule but a spike: a window is never both.
    assert reg["steady_ranges_s"] == [[0, 10], [16, 22]] and reg["spike_windows"] == 6

    spike, steady = _fingerprint_span(fp, "spike"), _fingerprint_span(fp, "steady")
    assert spike == (ORIGIN + 10 * S, ORIGIN + 16 * S)
    lo, hi, rows = _replayed(plateau_trace, "spike", device)
    assert (lo, hi) == spike
    assert rows == fp["spike"]["ios"] == 6 * 2000
    lo, hi, rows = _replayed(plateau_trace, "steady", device)
    assert (lo, hi) == steady == (ORIGIN, ORIGIN + 10 * S)
    assert rows == 10 * 1000


@pytest.mark.parametrize("name", ["market-open", "market-open-q2", "commit-heavy", "mysql-1and1"])
def test_replay_selects_what_the_sample_fingerprint_says(name):
    """samples/fingerprints/NAME.fp.json (what a user reads) against `--regime` on samples/traces/NAME."""
    fp = json.loads((SAMPLES / "fingerprints" / f"{name}.fp.json").read_text())
    trace = SAMPLES / "traces" / name
    for regime in ("spike", "steady"):
        want = _fingerprint_span(fp, regime)
        if want is None:
            with pytest.raises(BadInput, match=f"no {regime} windows"):
                _replayed(trace, regime, None)
        else:
            assert _replayed(trace, regime, None)[:2] == want, regime


@pytest.mark.parametrize("device", [None, "loop9"])
@pytest.mark.parametrize("window_ns", [S, 300_000_000])
def test_the_fingerprint_series_is_the_series_replay_classifies(plateau_trace, device, window_ns):
    """The fingerprint computes its rule input in window_series.sql, replay in window_rates.sql: the
    same windows, start times and rates, to the bit."""
    fp = fingerprint_trace(plateau_trace, Options(window_ns=window_ns, device=device))
    t = open_trace(plateau_trace)
    con = selection.connect(t)
    try:
        rates = regimes.window_rates(con, window_ns, device)
    finally:
        con.close()
    ser = fp["series"]["window"]
    t0 = fp["provenance"]["capture_window_ns"][0]
    assert t0 == ORIGIN and rates.num_rows == fp["regimes"]["windows"]
    assert rates["start_ns"].to_pylist() == [t0 + k * window_ns for k in range(rates.num_rows)]
    assert rates["iops"].to_pylist() == ser["iops"]
    assert rates["mbps"].to_pylist() == ser["mbps"]
