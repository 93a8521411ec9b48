"""The regime rule (iofp/regimes.py): the windows a fingerprint calls steady or spike are the windows
`iofp replay --regime` / `iofp iolog --regime` select, on a synthetic trace built so that a rule over
all windows (idle ones included) and the rule over the steady windows disagree, and on the samples;
with a --window other than the default, the same one given to both stages; and a --window outside
the fingerprint's limits is refused by iolog and replay as by the fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import pyarrow as pa
import pytest
from conftest import needs_fio
from helpers import load_result, run_iofp

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


def _replayed(trace: Path, regime: str, device: str | None, window_ns: int = S) -> tuple[int, int, int]:
    """(t_lo_ns, t_hi_ns, I/Os) of the span `--regime` selects, through replay's own selection."""
    t = open_trace(trace)
    con = selection.connect(t)
    try:
        sel = selection.Selection(device=device, regime=regime, window_ns=window_ns)
        stats = selection.resolve(con, t, sel)
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
    window_ns = round(fp["params"]["window_s"] * S)  # the sample's --window, which replay takes too
    for regime in ("spike", "steady"):
        want = _fingerprint_span(fp, regime)
        if want is None:
            with pytest.raises(BadInput, match=f"no {regime} windows"):
                _replayed(trace, regime, None, window_ns)
        else:
            assert _replayed(trace, regime, None, window_ns)[:2] == want, regime


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


# --------------------------------------------------------------------------------------------
# --window: iolog and replay select in the windows of the fingerprint made with the same --window
# --------------------------------------------------------------------------------------------

MS = 10**6
# I/Os per 250 ms window: 1,000 IOPS for 2 s, 4,000 IOPS for 0.5 s, 1,000 IOPS for 4.5 s. In 250 ms
# windows the spike is 2.0-2.5 s and the longest steady run 2.5-7.0 s; in the default 1 s windows
# the spike is all of 2-3 s and no 5 windows in a row are steady: a replay that ignored --window
# would select other spans (or refuse --regime steady).
BURST = [250] * 8 + [1000] * 2 + [250] * 18


@pytest.fixture
def burst_trace(tmp_path) -> Path:
    """BURST as evenly spaced 4 KiB reads on device loop9, written through the contract."""
    ts = [ORIGIN + w * 250 * MS + i * (250 * MS // n) for w, n in enumerate(BURST) for i in range(n)]
    n = len(ts)
    with TraceWriter(tmp_path / "burst", TraceMeta(source="import:synthetic")) as w:
        w.write("io", pa.table({
            "ts_ns": ts, "device": ["loop9"] * n, "offset": [i * 4096 for i in range(n)],
            "size": [4096] * n, "op": ["read"] * n,
        }))  # fmt: skip
    return tmp_path / "burst"


def _cli_fingerprint(trace: Path, out: Path, *window: str) -> dict:
    code, _, err = run_iofp("fingerprint", trace, *window, "--json", out)
    assert code == 0, err
    return json.loads(out.read_text())


def _cli_iolog(trace: Path, out: Path, regime: str, *window: str) -> dict:
    """The `selection` of `iofp iolog --json` (t_lo_ns, t_hi_ns, rows, ...)."""
    code, stdout, err = run_iofp(
        "iolog", trace, "-o", out, "--target", "/dev/x", "--regime", regime, *window, "--json"
    )
    assert code == 0, err
    return json.loads(stdout[: stdout.rindex("\nWrote ")])["selection"]


@pytest.mark.parametrize("regime", ["spike", "steady"])
def test_iolog_window_selects_the_windows_of_the_fingerprint_with_that_window(burst_trace, tmp_path, regime):
    fp = _cli_fingerprint(burst_trace, tmp_path / "fp.json", "--window", "250ms")
    assert fp["params"]["window_s"] == 0.25
    assert [(s["start_s"], s["end_s"]) for s in fp["regimes"]["spikes"]] == [(2.0, 2.5)]
    assert fp["regimes"]["steady_ranges_s"] == [[0, 2], [2.5, 7]]
    want = {"spike": (ORIGIN + 2000 * MS, ORIGIN + 2500 * MS), "steady": (ORIGIN + 2500 * MS, ORIGIN + 7 * S)}
    assert _fingerprint_span(fp, regime) == want[regime]

    sel = _cli_iolog(burst_trace, tmp_path / "w.iolog", regime, "--window", "250ms")
    assert (sel["t_lo_ns"], sel["t_hi_ns"]) == want[regime]
    if regime == "spike":
        assert sel["rows"] == fp["spike"]["ios"] == 2 * 1000
        assert sel["how"] == "spike windows 8-9 of 250ms (7.250 s to 7.750 s)"
    else:  # the longest of the two steady runs the fingerprint's steady scope sums
        assert sel["rows"] == 18 * 250 and fp["steady"]["ios"] == (8 + 18) * 250
        assert sel["how"] == "steady windows 10-27 of 250ms (7.750 s to 12.250 s)"

    # The default is the fingerprint's default (1 s), and its windows are not these.
    fp1 = _cli_fingerprint(burst_trace, tmp_path / "fp1.json")
    assert fp1["params"]["window_s"] == 1.0 and fp1["regimes"]["steady_ranges_s"] == []
    if regime == "spike":
        sel1 = _cli_iolog(burst_trace, tmp_path / "d.iolog", regime)
        assert (
            (sel1["t_lo_ns"], sel1["t_hi_ns"])
            == _fingerprint_span(fp1, regime)
            == (ORIGIN + 2 * S, ORIGIN + 3 * S)
        )
    else:
        code, _, err = run_iofp("iolog", burst_trace, "-o", tmp_path / "d.iolog", "--target", "/dev/x",
                                "--regime", "steady")  # fmt: skip
        assert code == 2 and err.startswith(f"iofp: {burst_trace}: no steady windows"), err


@needs_fio
@pytest.mark.parametrize("regime", ["spike", "steady"])
def test_replay_window_replays_the_windows_of_the_fingerprint_with_that_window(burst_trace, tmp_path, regime):
    """The same through `iofp replay` (real fio, onto a new file; no capture, so no root needed)."""
    fp = _cli_fingerprint(burst_trace, tmp_path / "fp.json", "--window", "250ms")
    target = Path("/dev/shm") / f"iofp-window-{tmp_path.name}-{regime}.dat"
    out = tmp_path / "r"
    try:
        code, _, err = run_iofp(
            "replay", burst_trace, "--target", target, "--regime", regime, "--window", "250ms",
            "--no-fidelity", "--output", out,
        )  # fmt: skip
        assert code == 0, err
    finally:
        target.unlink(missing_ok=True)
    rec = load_result(out)
    sel = rec["selection"]
    assert (sel["t_lo_ns"], sel["t_hi_ns"]) == _fingerprint_span(fp, regime)
    assert sel["rows"] == rec["conversion"]["kept"] == {"spike": 2 * 1000, "steady": 18 * 250}[regime]
    assert rec["settings"]["selection"]["window_ns"] == 250 * MS


@pytest.fixture
def long_trace(tmp_path) -> Path:
    """Two I/Os 2,500 s apart: 2,500,001 windows of 1 ms, more than the 2 M allowed."""
    with TraceWriter(tmp_path / "long", TraceMeta(source="import:test")) as w:
        w.write("io", pa.table({"ts_ns": [0, 2500 * S], "device": ["x"] * 2, "offset": [0, 4096],
                                "size": [4096] * 2, "op": ["read"] * 2}))  # fmt: skip
    return tmp_path / "long"


@pytest.mark.parametrize("command", ["iolog", "replay"])
@pytest.mark.parametrize(
    ("trace", "args", "message"),
    [
        ("burst", ["--regime", "spike", "--window", "1us"],
         "--window 1us: the shortest window is 1ms; e.g. --window 100ms"),
        ("burst", ["--regime", "spike", "--window", "0.5ms"],
         "--window 500us: the shortest window is 1ms; e.g. --window 100ms"),
        ("burst", ["--regime", "steady", "--window", "fast"],
         "--window 'fast' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h"),
        ("burst", ["--regime", "steady", "--window", "0"],
         "--window '0' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h"),
        ("burst", ["--regime", "spike", "--window", "9999999999999999h"],
         "--window '9999999999999999h' is too long; at most 100000h (11 years)"),
        ("long", ["--regime", "spike", "--window", "1ms"],
         "--window 1ms: 2,500,001 windows over this trace's 2,500.000 s, more than 2,000,000; "
         "use --window 2ms or wider"),
        ("burst", ["--window", "250ms"],
         "--window 250ms is the width of --regime's windows; add --regime steady or --regime spike, "
         "or leave --window out"),
        ("burst", ["--between", "0", "1", "--window", "250ms"],
         "--window 250ms is the width of --regime's windows; add --regime steady or --regime spike, "
         "or leave --window out"),
    ],
    ids=["1us", "0.5ms", "not-a-duration", "zero", "too-long", "too-many-windows", "no-regime", "between"],
)  # fmt: skip
def test_a_bad_window_is_one_line_and_exit_2(
    burst_trace, long_trace, tmp_path, command, trace, args, message
):
    """The fingerprint's --window limits, through the one shared check, before anything is written."""
    path = {"burst": burst_trace, "long": long_trace}[trace]
    target = Path("/dev/shm") / f"iofp-window-{tmp_path.name}.dat"
    out = tmp_path / "out"
    if command == "iolog":
        argv = ["iolog", path, "-o", out, "--target", "/dev/x", *args]
    else:
        argv = ["replay", path, "--target", target, "--no-fidelity", "--output", out, *args]
    try:
        code, stdout, err = run_iofp(*argv)
        assert (code, err) == (2, f"iofp: {message}\n"), stdout
        assert not out.exists() and not target.exists()
    finally:
        target.unlink(missing_ok=True)
