"""The regime rule (iofp/regimes.py): spikes as ranked episodes, the steady state and the baseline,
on synthetic series with known answers (and Poisson noise with none), on the samples and on the shared
production traces; and the windows a fingerprint names are the windows `iofp replay --regime` /
`iofp iolog --regime` select, with the default window or a --window given to both stages; a --window
outside the fingerprint's limits is refused by iolog and replay as by the fingerprint."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import needs_fio
from helpers import load_result, run_iofp

from fingerprint.api import fingerprint_trace, report_trace
from fingerprint.frame import Options
from iofp import regimes
from iofp.contract import TraceMeta, TraceWriter, open_trace
from iofp.errors import BadInput
from iofp.fingerprint_doc import Fingerprint
from iofp.fingerprint_doc import load as load_fingerprint
from replay.iolog import selection

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


def _replayed(trace: Path, regime: str, device: str | None, window_ns: int | None = S) -> tuple[int, ...]:
    """(t_lo_ns, t_hi_ns, I/Os) of the span `--regime` selects, through replay's own selection."""
    t = open_trace(trace)
    con = selection.connect(t)
    try:
        sel = selection.Selection(device=device, regime=regime, window_ns=window_ns)
        stats = selection.resolve(con, t, sel)
    finally:
        con.close()
    return stats.t_lo_ns, stats.t_hi_ns, stats.rows


def _fingerprint_span(fp: Fingerprint, regime: str) -> tuple[int, int] | None:
    """The span of the trace clock the fingerprint says `--regime` takes: its rank-1 spike, or its
    longest run of steady (or baseline) windows (the earliest on a tie); None if it lists none."""
    reg, w_s = fp.regimes, fp.params.window_ns / S
    t0, w_ns = fp.provenance.capture_window_ns[0], fp.params.window_ns
    if regime == "spike":
        if not reg.spikes:
            return None
        assert reg.spikes[0].rank == 1
        a, b = _runs([(reg.spikes[0].start_s, reg.spikes[0].end_s)], w_s)[0]
    else:
        ranges = reg.steady.ranges_s if regime == "steady" else reg.baseline.ranges_s
        if not ranges:
            return None
        a, b = max(_runs(ranges, w_s), key=lambda r: r[1] - r[0])  # max() keeps the first of equals
    return t0 + a * w_ns, t0 + (b + 1) * w_ns


@pytest.mark.parametrize("device", [None, "loop9"])
def test_replay_selects_the_windows_the_fingerprint_calls_spike_and_steady(plateau_trace, device):
    fp = fingerprint_trace(plateau_trace, Options(window_ns=S, device=device))
    reg = fp.regimes
    # The baseline stands on the windows with I/O (1,000 IOPS), not on all 48, which the 25 idle
    # ones would make 0 (every busy window a "spike"); a spike needs 1.5 x the baseline.
    assert reg.baseline.median_iops == 1000 and reg.thresholds.hot_iops == 1500
    assert [(s.start_s, s.end_s) for s in reg.spikes] == [(10, 16)]
    # The plateau is steady by the SNIA rule but a spike: a window is never both.
    assert reg.steady.ranges_s == [[0, 10], [16, 22]] and reg.spike_windows == 6
    assert reg.baseline.windows == 48 - 6

    spike, steady = _fingerprint_span(fp, "spike"), _fingerprint_span(fp, "steady")
    assert spike == (ORIGIN + 10 * S, ORIGIN + 16 * S)
    lo, hi, rows = _replayed(plateau_trace, "spike", device)
    assert (lo, hi) == spike
    assert rows == fp.spike.ios == 6 * 2000
    lo, hi, rows = _replayed(plateau_trace, "steady", device)
    assert (lo, hi) == steady == (ORIGIN, ORIGIN + 10 * S)
    assert rows == 10 * 1000
    # baseline: the longest run of windows in no spike, the 32 after the plateau (idle ones included)
    lo, hi, _ = _replayed(plateau_trace, "baseline", device)
    assert (lo, hi) == _fingerprint_span(fp, "baseline") == (ORIGIN + 16 * S, ORIGIN + 48 * S)


@pytest.mark.parametrize("name", ["market-open", "market-open-q2", "commit-heavy", "mysql-1and1"])
def test_replay_selects_what_the_sample_fingerprint_says(name):
    """samples/fingerprints/NAME.fp.json (what a user reads) against `--regime` on samples/traces/NAME,
    both at their default window."""
    fp = load_fingerprint(SAMPLES / "fingerprints" / f"{name}.fp.json")
    assert fp.params.window_rule.startswith("default: ")
    trace = SAMPLES / "traces" / name
    for regime in ("spike", "steady", "baseline"):
        want = _fingerprint_span(fp, regime)
        if want is None:
            with pytest.raises(BadInput, match=f"no {regime} windows"):
                _replayed(trace, regime, None, None)
        else:
            assert _replayed(trace, regime, None, None)[:2] == want, regime


@pytest.mark.parametrize("device", [None, "loop9"])
@pytest.mark.parametrize("window_ns", [S, 300_000_000])
def test_the_report_timeline_counts_what_the_regimes_classify(plateau_trace, device, window_ns):
    """The report draws its timeline with fingerprint/sql/timeline.sql, the regimes classify
    iofp/sql/regime_series.sql: the same windows and the same I/Os per window, to the bit."""
    fp, tl = report_trace(plateau_trace, Options(window_ns=window_ns, device=device))
    t = open_trace(plateau_trace)
    con = selection.connect(t)
    try:
        series = regimes.series(con, window_ns, device)
    finally:
        con.close()
    assert series.t0_ns == fp.provenance.capture_window_ns[0] == ORIGIN
    assert series.windows == fp.regimes.windows == len(tl)
    assert [v * window_ns / S for v in tl.columns["iops"]] == pytest.approx(series.ios.tolist(), abs=1e-6)
    assert tl.columns["regime"] == regimes.classify(series).classes.tolist()


# --------------------------------------------------------------------------------------------
# The rule on series with known answers, and on noise
# --------------------------------------------------------------------------------------------


def _series(ios: list[float] | np.ndarray, size: int = 4096, window_ns: int = S) -> regimes.Series:
    ios = np.asarray(ios, float)
    moments = (float(size), float(size) ** 2, float(size) ** 3)
    return regimes.Series(0, window_ns, "--window", ios, ios * size, *moments)


def test_spikes_are_episodes_ranked_by_excess_ios():
    rng = np.random.default_rng(5)
    x = rng.poisson(100, 600).astype(float)
    x[100:110] = rng.poisson(200, 10)  # 10 windows at 2x: +1,000 I/Os
    x[300] = 900  # one outsized window: +800 I/Os
    x[400:403] = [300, 100, 300]  # hot, a quiet window, hot: one episode across the gap
    x[500] = 152  # one window just over 1.5x: hot, but neither sustained nor outsized (S 4.8 < 5)
    reg = regimes.classify(_series(x))
    got = [(e.first, e.last, e.hot_windows) for e in reg.spikes]
    assert got == [(100, 109, 10), (300, 300, 1), (400, 402, 2)]
    assert [round(e.excess_ios, -2) for e in reg.spikes] == [1000, 800, 400]
    assert reg.spikes[1].significance > regimes.OUTSIZED_SIGNIFICANCE and reg.dropped >= 1
    assert reg.classes[500] != regimes.SPIKE and reg.run("spike") == (100, 109)


def test_hysteresis_widens_a_spike_while_its_edges_are_still_high():
    x = np.full(200, 1000.0)
    x[50:56] = [1300, 3000, 3000, 3000, 1300, 1200]  # edges above halfway (1250) to the threshold (1500)
    reg = regimes.classify(_series(x))
    assert [(e.first, e.last) for e in reg.spikes] == [(50, 54)]


def test_steady_when_met_and_by_how_much_when_not():
    reg = regimes.classify(_series(np.full(30, 1000.0)))
    assert reg.classes.tolist() == [regimes.STEADY] * 30 and reg.closest[1:3] == (0.0, 0.0)
    saw = np.tile([800.0, 1000.0, 1200.0, 1000.0, 800.0], 6)  # range 40% of the mean in every block
    reg = regimes.classify(_series(saw))
    assert regimes.STEADY not in reg.classes.tolist()
    _, range_pct, _, mean = reg.closest
    assert range_pct == pytest.approx(400 / (4800 / 5) * 100) and mean == pytest.approx(960)
    check = reg.summary(int(saw.sum())).steady
    assert not check.met and check.closest_range_pct == pytest.approx(range_pct)
    assert reg.run("steady") is None and reg.run("baseline") == (0, 29)


# Measured with `python -m bench.regime_false_spikes` (BENCHMARKS.md): Poisson counts at 3 to 5,000
# I/Os per window over 120 to 3,600 windows, mixed sizes, 4,200 traces with no burst in them: 2 spikes
# kept (0.05% of traces); 97 traces (2.3%) with a raw hot window, under the 5% family-wise alpha (6% at
# 3 I/Os per window, where the Cornish-Fisher quantile is short of the discrete tail; 0 from 1,000
# up). This grid of 300 traces allows at most 2 false spikes (0.7%, 14x the measured rate).
@pytest.mark.slow  # 4-5 s
def test_a_poisson_steady_state_has_no_spikes():
    spikes = hot = traces = 0
    for rate in (3, 10, 25, 60, 200, 1_000):
        for windows in (120, 3600):
            for seed in range(25):
                rng = np.random.default_rng(seed)
                ios = rng.poisson(rate, windows).astype(float)
                sizes = rng.choice([4096.0, 8192.0, 16384.0, 65536.0], int(ios.sum()), p=[0.6, 0.2, 0.1, 0.1])
                window_of = np.repeat(np.arange(windows), ios.astype(int))
                nbytes = np.bincount(window_of, weights=sizes, minlength=windows)
                moments = [float((sizes**k).mean()) for k in (1, 2, 3)]
                reg = regimes.classify(regimes.Series(0, S, "--window", ios, nbytes, *moments))
                spikes += len(reg.spikes)
                hot += bool(reg.spikes or reg.dropped)
                traces += 1
    assert spikes <= 2, spikes
    assert hot / traces <= 0.08, hot  # the family-wise alpha of the hot window test, 0.05, with margin


# --------------------------------------------------------------------------------------------
# The samples and the shared production traces
# --------------------------------------------------------------------------------------------


def test_market_open_spike_is_found_exactly_and_reads_as_iostat_counts():
    """The fio job: 600 reads/s + 400 fdatasync'd writes/s, then 2,000 more writes/s from 12 s to 18 s."""
    fp = fingerprint_trace(SAMPLES / "traces" / "market-open")
    assert fp.params.window_ns == S
    [sp] = fp.regimes.spikes
    assert (sp.start_s, sp.end_s, sp.rank, sp.tripped) == (12, 18, 1, "both")
    assert sp.peak_iops == pytest.approx(3000, abs=5) and sp.baseline_iops == pytest.approx(1000, abs=5)
    steady = fp.steady
    assert steady.intensity.iops == pytest.approx(1000, rel=0.005)  # reads + writes, not 1,402 with flushes
    assert steady.mix.read_share == pytest.approx(0.60, abs=0.005)
    assert steady.intensity.flushes_per_s == pytest.approx(400, rel=0.01)  # on their own, as iostat's f/s


@pytest.fixture(scope="module")
def mssql_trace(tmp_path_factory):
    from conftest import SHARED_TRACES
    from helpers import import_trace

    src = SHARED_TRACES / "windows-mssql.load.gz"
    if not src.exists():
        pytest.skip(f"needs the shared traces at {SHARED_TRACES}")
    return import_trace("blkreplay", src, tmp_path_factory.mktemp("t") / "mssql")


def test_mysql_rank_1_spike_holds_the_1646_s_burst(mysql_trace):
    from helpers import blkreplay_records, mysql_load

    fp = fingerprint_trace(mysql_trace)
    assert fp.params.window_ns == 5 * S  # 1 s windows hold a median of 5 I/Os, 5 s windows 104
    reg = fp.regimes
    assert 5 <= reg.spikes_total <= 20  # an hour: at most ~20 spikes (it was 786 at 1 s)
    # the busiest second, counted from the raw .load file: 489 I/Os at 1,646 s
    per_s: dict[int, int] = {}
    for ts, _ in blkreplay_records(mysql_load()):
        per_s[ts // S] = per_s.get(ts // S, 0) + 1
    busiest = max(per_s, key=per_s.get)
    assert (busiest, per_s[busiest]) == (1646, 489)
    first = reg.spikes[0]
    assert first.rank == 1 and first.start_s <= busiest < first.end_s
    assert [s.excess_ios for s in reg.spikes] == sorted((s.excess_ios for s in reg.spikes), reverse=True)
    assert fp.baseline is not None and reg.baseline.windows + reg.spike_windows == reg.windows
    assert _replayed(mysql_trace, "spike", None, None)[:2] == _fingerprint_span(fp, "spike")


def test_mssql_and_tpcc_get_usable_windows_and_few_spikes(mssql_trace, tpcc_trace):
    ms = fingerprint_trace(mssql_trace)
    assert ms.params.window_ns == 30 * S and ms.regimes.window_ios_median >= 25
    assert 1 <= ms.regimes.spikes_total <= 20  # 51 minutes of a bursty log writer
    # the biggest: the 2,220-2,310 s burst that carries 88% of the trace's I/O
    assert ms.regimes.spikes[0].io_share > 0.8
    tp = fingerprint_trace(tpcc_trace)  # 0.136 s: 1 s would be one window and an empty timeline
    assert tp.params.window_ns == 1_000_000 and tp.regimes.windows == 137
    assert tp.regimes.window_ios_median >= 25 and tp.regimes.sparse_hint is None


# --------------------------------------------------------------------------------------------
# --window: iolog and replay select in the windows of the fingerprint made with the same --window
# --------------------------------------------------------------------------------------------

MS = 10**6
# I/Os per 250 ms window: 1,000 IOPS for 2 s, 4,000 IOPS for 0.5 s, 1,000 IOPS for 4.5 s. In 250 ms
# windows the spike is 2.0-2.5 s and the longest steady run 2.5-7.0 s; in 1 s windows the spike is
# all of 2-3 s and no 5 windows in a row are steady: a replay that ignored --window would select
# other spans (or refuse --regime steady).
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


def _cli_fingerprint(trace: Path, out: Path, *window: str) -> Fingerprint:
    code, _, err = run_iofp("fingerprint", trace, *window, "--json", out)
    assert code == 0, err
    return load_fingerprint(out)


def _cli_iolog(trace: Path, out: Path, regime: str, *window: str) -> dict:
    """The `selection` of `iofp iolog --json` (t_lo_ns, t_hi_ns, rows, ...)."""
    code, stdout, err = run_iofp(
        "iolog", trace, "-o", out, "--target", "/dev/x", "--regime", regime, *window, "--json", "-"
    )
    assert code == 0, err
    return json.loads(stdout)["selection"]


@pytest.mark.parametrize("regime", ["spike", "steady"])
def test_iolog_window_selects_the_windows_of_the_fingerprint_with_that_window(burst_trace, tmp_path, regime):
    fp = _cli_fingerprint(burst_trace, tmp_path / "fp.json", "--window", "250ms")
    assert fp.params.window_ns == 250 * MS
    assert [(s.start_s, s.end_s) for s in fp.regimes.spikes] == [(2.0, 2.5)]
    assert fp.regimes.steady.ranges_s == [[0, 2], [2.5, 7]]
    want = {"spike": (ORIGIN + 2000 * MS, ORIGIN + 2500 * MS), "steady": (ORIGIN + 2500 * MS, ORIGIN + 7 * S)}
    assert _fingerprint_span(fp, regime) == want[regime]

    sel = _cli_iolog(burst_trace, tmp_path / "w.iolog", regime, "--window", "250ms")
    assert (sel["t_lo_ns"], sel["t_hi_ns"]) == want[regime]
    if regime == "spike":
        assert sel["rows"] == fp.spike.ios == 2 * 1000
        assert sel["how"] == "spike #1 (the biggest): windows 8-9 of 250ms (7.250 s to 7.750 s)"
    else:  # the longest of the two steady runs the fingerprint's steady scope sums
        assert sel["rows"] == 18 * 250 and fp.steady.ios == (8 + 18) * 250
        assert sel["how"] == "steady windows 10-27 of 250ms (7.750 s to 12.250 s)"

    # Without --window both take the default rule: on this 7 s trace, 50 ms (the smallest step whose
    # median window holds 25 I/Os). Other windows, the same spans.
    fp1 = _cli_fingerprint(burst_trace, tmp_path / "fp1.json")
    assert fp1.params.window_ns == 50 * MS and fp1.regimes.window_ios_median == 50
    sel1 = _cli_iolog(burst_trace, tmp_path / "d.iolog", regime)
    assert (sel1["t_lo_ns"], sel1["t_hi_ns"]) == _fingerprint_span(fp1, regime) == want[regime]
    assert " of 50ms (" in sel1["how"]


@needs_fio
@pytest.mark.slow
@pytest.mark.parametrize("regime", ["spike", "steady"])
def test_replay_window_replays_the_windows_of_the_fingerprint_with_that_window(burst_trace, tmp_path, regime):
    """The same through `iofp replay` (real fio, onto a new file; no capture, so no root needed)."""
    fp = _cli_fingerprint(burst_trace, tmp_path / "fp.json", "--window", "250ms")
    target = Path("/dev/shm") / f"iofp-window-{tmp_path.name}-{regime}.dat"
    out = tmp_path / "r"
    try:
        code, _, err = run_iofp(
            "replay", "--repeat", "1",
            burst_trace, "--target", target, "--regime", regime, "--window", "250ms",
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
         "--window '0': a duration must be longer than 0; use e.g. 30s, 100ms or 250us"),
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
        argv = ["replay", "--repeat", "1", path, "--target", target, "--no-fidelity", "--output", out, *args]
    try:
        code, stdout, err = run_iofp(*argv)
        assert (code, err) == (2, f"iofp: {message}\n"), stdout
        assert not out.exists() and not target.exists()
    finally:
        target.unlink(missing_ok=True)
