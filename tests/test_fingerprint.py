"""Fingerprint: exact features on a hand-checkable tiny trace, regimes on a synthetic trace with a
known steady part and a known spike, the default window, null features for columns a trace lacks,
traces of flushes alone, and the CLI."""

from __future__ import annotations

import json
import os
import subprocess
from datetime import datetime, timedelta
from pathlib import Path

import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO
from helpers import IOFP, close, run_iofp, synthetic_steady_with_spike

from fingerprint import compute
from fingerprint.api import fingerprint_trace, report_trace
from fingerprint.frame import Options
from fingerprint.scope import BINS
from fingerprint.summary import absent_rows, rows
from iofp.contract import TraceMeta, TraceWriter, open_trace
from iofp.fingerprint_doc import Fingerprint, Histogram, LogHistogram, dumps, from_dict
from iofp.values import duration_text
from replay.iolog import selection

MS = 1_000_000


# ts, lat, offset, size, op, sync, fua, preflush, pid, comm, inflight
TINY = [
    (0 * MS, 100_000, 0, 4096, "write", True, False, False, 10, "db", 1),
    (1 * MS, 200_000, 4096, 4096, "write", True, False, False, 10, "db", 1),  # sequential
    (2 * MS, 300_000, 8192, 8192, "write", True, True, False, 10, "db", 2),  # sequential, FUA
    (3 * MS, 400_000, 1 << 20, 512, "read", False, False, False, 20, "cat", 3),  # a seek
    (4 * MS, 1_000_000, 0, 0, "flush", False, False, True, 10, "db", 1),  # neither starts nor breaks a run
    (10 * MS, 500_000, (1 << 20) + 512, 65536, "read", False, False, False, 20, "cat", 1),  # sequential
]
TINY_COLS = ("ts_ns", "lat_ns", "offset", "size", "op", "sync", "fua", "preflush", "pid", "comm", "inflight")


@pytest.fixture
def tiny_trace(tmp_path):
    """Six I/Os on one device with latency, flags, processes and in-flight, written via the contract."""
    cols = {c: [r[i] for r in TINY] for i, c in enumerate(TINY_COLS)}
    cols["device"] = ["d0"] * len(TINY)
    meta = TraceMeta(source="capture", host="h1", kernel="6.18", devices={"d0": {"model": "m"}})
    meta.capture_start_ns = 1_700_000_000 * 10**9
    meta.loss = {"lost_events": 0}
    with TraceWriter(tmp_path / "tiny", meta) as w:
        w.write("io", pa.table(cols))
        w.write("sync", pa.table({"ts_ns": [1 * MS, 5 * MS], "lat_ns": [2_000_000, 4_000_000],
                                  "call": ["fsync", "fsync"], "pid": [10, 10]}))  # fmt: skip
    return tmp_path / "tiny"


def counts(hist: Histogram, limits_key: str) -> dict[float, int]:
    """{limit: count} of the non-empty buckets (inf for the '> last' bucket)."""
    limits = [*BINS[limits_key], float("inf")]
    assert hist.limits == BINS[limits_key]
    return {limits[i]: c for i, c in enumerate(hist.counts) if c}


def test_tiny_trace_features_are_exact(tiny_trace):
    fp = fingerprint_trace(tiny_trace, Options(window_ns=10 * MS))
    assert (fp.fingerprint_version, fp.params.window_ns, fp.params.window_rule) == (3, 10 * MS, "--window")
    p = fp.provenance
    assert (p.host, p.kernel, p.source, p.lost_events) == ("h1", "6.18", "capture", 0)
    assert p.devices == {"d0": {"model": "m"}} and p.capture_window_ns == [0, 10 * MS]
    w = fp.whole
    # 6 requests, 5 of them I/Os (data requests); the flush is counted on its own, as iostat's f/s
    assert (w.requests, w.ios, w.bytes, w.mix.reads, w.mix.writes, w.mix.flushes) == (6, 5, 82432, 2, 3, 1)
    assert w.intensity.iops == pytest.approx(5 / 0.010)
    assert w.intensity.flushes_per_s == pytest.approx(1 / 0.010)
    assert w.mix.read_share == pytest.approx(2 / 5)
    assert w.mix.read_share_bytes == pytest.approx(66048 / 82432)
    assert w.size.mean_bytes == pytest.approx(82432 / 5)  # flushes carry no size
    assert counts(w.size.hist.all, "io_length_bytes") == {512: 1, 4096: 2, 8192: 1, 65536: 1}
    assert counts(w.size.hist.read, "io_length_bytes") == {512: 1, 65536: 1}
    seq = w.sequential
    assert (seq.share, seq.runs, seq.mean_run_ios) == (pytest.approx(3 / 5), 2, 2.5)
    # seek in LBNs from the previous data I/O's last LBN: +1 sequential; 2048 - 31 = +2017; 2049 - 2048 = +1
    assert counts(w.seek.hist.all, "seek_lbn") == {1: 3, 5000: 1}
    assert counts(w.inflight.hist.all, "outstanding_ios") == {1: 4, 2: 1, 4: 1}
    assert w.inflight.max == 3
    # gaps 1, 1, 1, 1, 6 ms -> all in the <= 5000 µs bucket except the 6 ms one
    assert counts(w.interarrival.hist, "interarrival_us") == {1000: 4, 15000: 1}
    assert w.interarrival.mean_us == pytest.approx(2000)
    lat = w.latency
    # the headline ("all") is reads and writes: 100..500 µs; the 1 ms flush is reported on its own
    assert (lat["all"].p50_us, lat["all"].p99_us, lat["all"].p99_9_us) == (300, 500, 500)
    assert (lat["all"].ios, lat["all"].mean_us, lat["all"].max_us) == (5, 300, 500)
    assert (lat["write"].p50_us, lat["write"].p99_us, lat["read"].p50_us) == (200, 300, 400)
    assert (lat["flush"].ios, lat["flush"].p50_us) == (1, 1000)
    assert counts(lat["all"].hist_us, "latency_us") == {100: 1, 500: 4}
    d = w.durability
    assert (d.fua, d.preflush, d.sync_writes) == (1, 1, 3)
    assert d.flush_fua_share == pytest.approx(2 / 6) and d.sync_write_share == 1.0
    assert d.flush_fua_per_s == pytest.approx(2 / 0.010)
    assert (d.flush_gap_p50_us, d.flush_gap_p99_us) == (2000, 2000)
    assert d.sync_calls["fsync"].calls == 2 and d.sync_calls["fsync"].p99_us == 4000
    assert d.commits_per_s == pytest.approx(2 / 0.010)
    # blocks 0-3 (0..16 KiB) and 256-272 ((1 MiB) .. 1 MiB + 66 KiB): 4 + 17
    assert w.footprint.blocks_4k == 21 and w.footprint.hot_1pct_blocks == 1
    # the hottest block (1 of them: 1% of 21, rounded up) is block 256, where both reads start
    assert w.footprint.hot_1pct_io_share == pytest.approx(2 / 5)
    procs = [(p.pid, p.comm, p.ios, p.reads, p.writes, p.flushes) for p in w.top_processes]
    assert procs == [(10, "db", 3, 0, 3, 1), (20, "cat", 2, 2, 0, 0)]
    # 2 fsyncs in 10 ms, 3 ms each on average: the commit path is busy 60% of the time
    assert w.bound.verdict == "fsync-latency-bound" and w.bound.side == "demand+service"
    assert w.bound.numbers["commit_busy_share"] == pytest.approx(0.6)
    assert json.loads(dumps(fp)) == fp.to_dict()  # JSON-ready as returned
    assert from_dict(fp.to_dict(), "x") == fp  # and read back as written


def test_tiny_trace_latency_buckets_queue_and_application_waits_are_exact(tiny_trace, tmp_path):
    w = fingerprint_trace(tiny_trace, Options(window_ns=10 * MS)).whole
    # buckets 10% wide: round(10 ln ns) of 100, 200, 300, 400 and 500 µs is 115, 122, 126, 129, 131
    assert w.latency is not None
    assert w.latency["write"].buckets == LogHistogram(115, [1, *[0] * 6, 1, 0, 0, 0, 1])
    assert w.latency["read"].buckets == LogHistogram(129, [1, 0, 1])
    assert w.latency["all"].buckets == LogHistogram(115, [1, *[0] * 6, 1, 0, 0, 0, 1, 0, 0, 1, 0, 1])
    assert w.latency["flush"].buckets is None  # the data ops' only
    assert w.durability.sync_calls["fsync"].buckets == LogHistogram(145, [1, *[0] * 6, 1])  # 2 and 4 ms
    assert w.queue_latency is None and w.app_latency is None  # no entry times, no data calls

    # The same rows entered the block layer 10 µs (writes) and 20 µs (reads) before issue, and the
    # application's two reads (pread64, 600 and 800 µs) are recorded
    cols = {c: [r[i] for r in TINY] for i, c in enumerate(TINY_COLS)}
    cols["device"] = ["d0"] * len(TINY)
    cols["queue_ns"] = [t - {"write": 10_000, "read": 20_000}[op] if op != "flush" else None
                        for t, op in zip(cols["ts_ns"], cols["op"], strict=True)]  # fmt: skip
    calls = {"ts_ns": [3 * MS - 100_000, 10 * MS - 100_000], "lat_ns": [600_000, 800_000],
             "call": ["pread64"] * 2, "op": ["read"] * 2, "device": ["d0"] * 2,
             "ret": [512, 65536]}  # fmt: skip
    with TraceWriter(tmp_path / "waits", TraceMeta(source="capture")) as tw:
        tw.write("io", pa.table(cols))
        tw.write("calls", pa.table(calls))
    w = fingerprint_trace(tmp_path / "waits", Options(window_ns=10 * MS)).whole
    assert w.queue_latency is not None and w.app_latency is not None
    assert {op: (q.ios, q.mean_us) for op, q in w.queue_latency.items()} == {
        "read": (2, 20.0), "write": (3, 10.0), "all": (5, 14.0)}  # fmt: skip
    assert w.queue_latency["all"].p50_us == pytest.approx(10, rel=0.01)  # from 2%-wide buckets
    assert w.queue_latency["all"].p99_us == w.queue_latency["all"].max_us == 20
    assert {op: (a.ios, a.mean_us, a.max_us) for op, a in w.app_latency.items()} == {
        "read": (2, 700.0, 800.0), "all": (2, 700.0, 800.0)}  # fmt: skip
    # Little's law: the reads' calls took 1,400 µs, their requests 900 µs at the device: 500 µs of
    # waiting over the 10 ms the trace spans is 0.05 requests waiting, 36% of the calls' time
    assert w.bound.numbers["waiting_requests"] == pytest.approx(0.05)
    assert w.bound.numbers["waiting_share"] == pytest.approx(500 / 1400)
    assert w.bound.verdict == "fsync-latency-bound"  # none of that is a cap


def test_imported_trace_without_latency_gives_null_features_and_a_demand_side_verdict(tmp_path):
    meta = TraceMeta(source="import:test")
    n = 1000
    with TraceWriter(tmp_path / "t", meta) as w:
        w.write("io", pa.table({"ts_ns": [i * MS for i in range(n)], "device": ["x"] * n,
                                "offset": [i * 8192 * 7 for i in range(n)], "size": [8192] * n,
                                "op": ["read"] * n}))  # fmt: skip
    w = fingerprint_trace(tmp_path / "t").whole
    assert w.latency is None and w.inflight is None
    assert w.durability.flush_fua_share is None and w.durability.commits_per_s is None
    assert w.intensity.flushes_per_s is None  # the format cannot record a flush: not "0 flushes/s"
    assert w.top_processes == []
    assert w.shape.name == "OLTP point-read"
    assert w.bound.side == "demand-only" and "demand-side only" in w.bound.why
    assert w.bound.numbers["fsync_p50_us"] is None


def test_a_burst_of_large_ios_at_the_same_iops_is_a_spike(tmp_path):
    # A backup or scan: the same 1,000 I/Os per second, but 256 KiB each for 5 s (4 -> 262 MB/s).
    # Fingerprint and replay selection both call it the spike.
    trace = synthetic_steady_with_spike(tmp_path, spike_rate=1000, spike_size=256 << 10)
    fp = fingerprint_trace(trace)
    [sp] = fp.regimes.spikes
    assert abs(sp.start_s - 30) <= 1 and abs(sp.end_s - 35) <= 1
    assert sp.peak_mbps > 200 and sp.peak_iops < fp.regimes.thresholds.hot_iops and sp.tripped == "mbps"
    assert fp.spike.intensity.iops == pytest.approx(1000, rel=0.1)
    con = selection.connect(open_trace(trace))
    try:
        stats = selection.resolve(con, open_trace(trace), selection.Selection(regime="spike"))
    finally:
        con.close()
    assert 29e9 <= stats.t_lo_ns <= 31e9 and 34e9 <= stats.t_hi_ns <= 36e9  # windows start at the first I/O


def test_synthetic_steady_part_and_spike_are_split_within_one_window(tmp_path):
    fp = fingerprint_trace(synthetic_steady_with_spike(tmp_path))
    reg = fp.regimes
    assert fp.params.window_ns == 10**9  # the default rule: 1 s holds ~1,000 I/Os
    [sp] = reg.spikes
    assert abs(sp.start_s - 30) <= 1 and abs(sp.end_s - 35) <= 1
    assert sp.peak_iops > 4500 and 4 <= sp.duration_s <= 6 and sp.rank == 1 and sp.tripped == "both"
    assert sp.excess_ios == pytest.approx(5 * 4000, rel=0.05)
    assert sp.io_share == pytest.approx(25 / 80, rel=0.05)
    # every window outside the spike (and its neighbours) is steady
    assert reg.steady.windows >= 60 - 5 - 2 and reg.steady.met
    steady = fp.steady
    assert steady.intensity.iops == pytest.approx(1000, rel=0.05)
    assert fp.spike.intensity.iops == pytest.approx(5000, rel=0.05)
    assert fp.whole.ios >= steady.ios + fp.spike.ios  # disjoint regimes
    assert fp.whole.ios == fp.baseline.ios + fp.spike.ios  # the baseline is every window in no spike
    # Poisson arrivals: inter-arrival CV near 1 in the steady state; IDC(1 s) far above 1 overall
    assert steady.interarrival.cv == pytest.approx(1.0, abs=0.1)
    assert fp.whole.burstiness["1s"].index_of_dispersion > 100


def test_between_selects_a_user_window_by_seconds_and_wall_clock(tmp_path):
    trace = synthetic_steady_with_spike(tmp_path)
    fp = fingerprint_trace(trace, Options(between=("30", "35")))
    assert fp.between.intensity.iops == pytest.approx(5000, rel=0.05)
    assert (fp.between.span.from_, fp.between.span.to, fp.between.span.lo_ns) == ("30", "35", 30 * 10**9)
    from iofp.errors import BadInput

    with pytest.raises(BadInput, match="no wall clock"):
        fingerprint_trace(trace, Options(between=("09:15:00", "09:16:00")))


def test_between_takes_hours_and_minutes_of_the_wall_clock():
    """--between 09:15 09:30 (README's market-open example): HH:MM as well as HH:MM:SS[.fff], placed
    on the trace's clock to the ns (iofp/windows.py, the parser every command uses)."""
    trace = REPO / "samples/traces/commit-heavy"  # 10 s of commits, captured with a wall clock
    start_ns = open_trace(trace).meta.capture_start_ns
    minute = datetime.fromtimestamp(start_ns // 10**9).replace(second=0)
    t1, t2 = ((minute + timedelta(minutes=m)).strftime("%H:%M") for m in (0, 1))
    fp = fingerprint_trace(trace, Options(between=(t1, t2)))
    into = start_ns - int(minute.timestamp()) * 10**9  # how far into its minute the capture started
    assert (fp.between.span.from_, fp.between.span.lo_ns) == (t1, -into)


def test_cli_fingerprint_writes_json_and_refuses_to_overwrite(tiny_trace, tmp_path):
    out = tmp_path / "fp.json"
    code, stdout, _ = run_iofp("fingerprint", str(tiny_trace), "--window", "10ms",
                           "--json", str(out), "--label", "service=db")  # fmt: skip
    assert code == 0 and f"Wrote {out}. Next: iofp report {tiny_trace} -o report.html" in stdout
    assert "fsync-latency-bound" in stdout
    doc = json.loads(out.read_text())
    assert doc["provenance"]["labels"] == {"service": "db"}
    assert list(doc) == ["fingerprint_version", "provenance", "params", "regimes", "whole", "steady",
                         "baseline", "spike", "between", "spike1"]  # fmt: skip
    code, _, err = run_iofp("fingerprint", str(tiny_trace), "--json", str(out))
    assert code == 2 and err == f"iofp: {out} already exists; pass --force to overwrite it\n"
    code, _, err = run_iofp("fingerprint", str(tiny_trace), "--window", "fast")
    want = "iofp: --window 'fast' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h\n"
    assert code == 2 and err == want
    code, _, err = run_iofp("fingerprint", str(tiny_trace), "--device", "sdz")
    assert code == 2 and err == "iofp: the trace has no I/O on device sdz; its devices: d0\n"


def _even_trace(root, per_s: float, seconds: float, size: int = 4096) -> Path:
    """Writes at `per_s` evenly spaced over `seconds`, written through the contract."""
    n = round(per_s * seconds)
    step = seconds * 1e9 / n
    with TraceWriter(root, TraceMeta(source="import:test")) as w:
        w.write("io", pa.table({"ts_ns": [round(i * step) for i in range(n)], "device": ["x"] * n,
                                "offset": [i * size for i in range(n)], "size": [size] * n,
                                "op": ["write"] * n}))  # fmt: skip
    return root


@pytest.mark.parametrize(
    ("per_s", "seconds", "window", "median"),
    [
        (1000, 60, "1s", 1000),  # dense: the smallest step, 1 s
        (5, 300, "5s", 25),  # 5 I/Os per second: 1 s and 2 s windows hold 5 and 10
        (5, 60, "2s", 10),  # as sparse, but 5 s windows would be 13: the widest giving 20 windows
        (51_000, 0.136, "1ms", 51),  # TPC-C's shape: 0.136 s, so the sub-second steps
    ],
    ids=["dense", "sparse-long", "sparse-short", "tpcc-short"],
)
def test_the_default_window_is_the_smallest_step_holding_25_ios(tmp_path, per_s, seconds, window, median):
    fp = fingerprint_trace(_even_trace(tmp_path / "t", per_s, seconds))
    assert duration_text(fp.params.window_ns) == window and fp.params.window_rule.startswith("default: ")
    assert fp.regimes.window_ios_median == median and fp.regimes.windows >= 20
    want = (
        f"windows are sparse (median {median} I/Os per {window} window, under 25): regimes stand on few I/Os"
    )
    assert fp.regimes.sparse_hint == (want if median < 25 else None)
    code, out, _ = run_iofp("fingerprint", str(tmp_path / "t"))
    assert code == 0 and f"window {window} (the default rule)" in " ".join(out.split())


def test_an_explicit_window_is_kept_and_said_to_be_sparse(tmp_path):
    fp = fingerprint_trace(_even_trace(tmp_path / "t", 5, 300), Options(window_ns=10**9))
    assert fp.params.window_ns == 10**9 and fp.params.window_rule == "--window"
    assert fp.regimes.sparse_hint.startswith("windows are sparse (median 5 I/Os per 1s window, under 25)")


def nearest_rank(values: np.ndarray, num: int, den: int) -> int:
    """The nearest-rank percentile num/den of `values`: the ceil(n * num / den)-th smallest."""
    n = len(values)
    return int(np.sort(values)[-(-n * num // den) - 1])


def test_latency_percentiles_are_exact_nearest_rank(tmp_path):
    """Latency percentiles come from value counts, not a sort: latencies crowded on powers of two
    and their neighbours, small values and repeats must still give exactly the sorted values'
    nearest rank, per op and for a --between window."""
    rng = np.random.default_rng(7)
    n = 30_000
    edges = np.array([v + d for k in range(1, 41) for v in [1 << k] for d in (-1, 0, 1)], np.int64)
    lat = np.concatenate([
        rng.choice(edges, n // 3),
        rng.integers(0, 5000, n // 3),
        rng.lognormal(12, 2, n - 2 * (n // 3)).astype(np.int64) + 1,
    ])  # fmt: skip
    rng.shuffle(lat)
    ops = rng.choice(np.array(["read", "write", "flush"]), n, p=[0.5, 0.4, 0.1])
    ts = np.arange(n, dtype=np.int64) * 1000  # 30 ms of arrivals, one 1 s window
    meta = TraceMeta(source="capture", devices={"d0": {}})
    with TraceWriter(tmp_path / "t", meta) as w:
        w.write("io", pa.table({
            "ts_ns": ts, "lat_ns": lat, "device": ["d0"] * n,
            "offset": rng.integers(0, 1 << 20, n) * 4096, "size": np.where(ops == "flush", 0, 4096),
            "op": ops,
        }))  # fmt: skip
    fp = fingerprint_trace(tmp_path / "t", Options(between=("0.005", "0.02")))
    btw = (ts >= 5 * MS) & (ts <= 20 * MS)
    for scope, sel in (("whole", np.ones(n, bool)), ("between", btw)):
        lat_fp = getattr(fp, scope).latency
        for op, pick in (("all", sel & (ops != "flush")), ("read", sel & (ops == "read")),
                         ("write", sel & (ops == "write")),
                         ("flush", sel & (ops == "flush"))):  # fmt: skip
            want = [nearest_rank(lat[pick], a, b) / 1e3 for a, b in ((1, 2), (99, 100), (999, 1000))]
            got = [lat_fp[op].p50_us, lat_fp[op].p99_us, lat_fp[op].p99_9_us]
            assert got == want, (scope, op)


def test_footprint_counts_each_touched_block_once(tmp_path):
    """The footprint ORs per-8-block masks: I/Os at group edges, spanning many groups (a 4 MiB
    discard-sized write), nested, sharing a start or merely adjacent must count each 4 KiB block
    once, as a set of every block touched does; with --between too."""
    rng = np.random.default_rng(11)
    n = 4000
    blocks = np.concatenate([rng.integers(0, 4096, n - 6), [63, 64, 127, 0, 5, 1000]])
    offset = blocks * 4096 + rng.choice(np.array([0, 512, 4095]), n)  # starts inside a block too
    size = rng.choice(np.array([512, 4096, 8192, 65536, 262144]), n)
    size[-6:] = [4097, 4096, 4096 * 65, 4 << 20, 4096, 4096 * 130]
    ts = np.arange(n, dtype=np.int64) * MS
    with TraceWriter(tmp_path / "t", TraceMeta(source="import:test", devices={"d0": {}})) as w:
        w.write("io", pa.table({"ts_ns": ts, "device": ["d0"] * n, "offset": offset,
                                "size": size.astype(np.int32), "op": ["write"] * n}))  # fmt: skip
    fp = fingerprint_trace(tmp_path / "t", Options(between=("1", "2")))

    def touched(sel):
        return len({b for o, s in zip(offset[sel], size[sel], strict=True)
                    for b in range(o // 4096, (o + s - 1) // 4096 + 1)})  # fmt: skip

    assert fp.whole.footprint.blocks_4k == touched(np.ones(n, bool))
    btw = (ts >= 1000 * MS) & (ts <= 2000 * MS)
    assert fp.between.footprint.blocks_4k == touched(btw)


def test_the_hot_share_counts_every_start_block_exactly(tmp_path):
    """The hottest 1% of the footprint's blocks and the I/Os starting in them, as a count per block
    gives: with blocks started in 1, 2, ... times, neighbours in one packed group of eight, and blocks
    with 256 starts and more (a group counted block by block); with --between too."""
    rng = np.random.default_rng(5)
    hot = np.repeat([0, 1, 9, 700], [300, 256, 255, 1000])  # 0 and 1 share a group of eight blocks
    blocks = rng.permutation(np.concatenate([hot, rng.integers(8, 20000, 30000), rng.integers(0, 64, 500)]))
    n = len(blocks)
    ts = np.arange(n, dtype=np.int64) * (MS // 10)
    with TraceWriter(tmp_path / "t", TraceMeta(source="import:test", devices={"d0": {}})) as w:
        w.write("io", pa.table({"ts_ns": ts, "device": ["d0"] * n, "offset": blocks * 4096,
                                "size": np.full(n, 4096, np.int32), "op": ["read"] * n}))  # fmt: skip
    fp = fingerprint_trace(tmp_path / "t", Options(between=("0.5", "2.5")))

    def hot_share(sel):
        counts = np.sort(np.unique(blocks[sel], return_counts=True)[1])[::-1]
        k = max(1, -(-len(counts) // 100))
        return k, counts[:k].sum() / sel.sum()

    for scope, sel in (("whole", np.ones(n, bool)), ("between", (ts >= 500 * MS) & (ts <= 2500 * MS))):
        got = getattr(fp, scope).footprint
        assert (got.hot_1pct_blocks, got.hot_1pct_io_share) == hot_share(sel), scope


def test_idle_capture_is_one_line_exit_2_everywhere(tmp_path):
    # What a capture of an idle device writes: a manifest and no io files.
    idle = tmp_path / "idle"
    TraceWriter(idle, TraceMeta(source="capture", host="h1", kernel="6.18")).close()
    want = (
        f"iofp: {idle} holds no block I/O (was the device idle during the capture?); nothing to fingerprint\n"
    )
    code, _, err = run_iofp("fingerprint", str(idle), "--json", str(tmp_path / "fp.json"))
    assert (code, err) == (2, want) and not (tmp_path / "fp.json").exists()
    code, _, err = run_iofp("report", str(idle), "-o", str(tmp_path / "e.html"))
    assert (code, err) == (2, want) and not (tmp_path / "e.html").exists()


def test_window_has_a_lower_bound_and_a_bounded_count(tiny_trace, tmp_path):
    # --window 1us used to mean 30 M windows and minutes of CPU on a 30 s trace.
    code, _, err = run_iofp("fingerprint", str(tiny_trace), "--window", "1us")
    assert (code, err) == (2, "iofp: --window 1us: the shortest window is 1ms; e.g. --window 100ms\n")
    code, _, err = run_iofp("report", str(tiny_trace), "-o", str(tmp_path / "r.html"),
                        "--window", "0.5ms")  # fmt: skip
    assert (code, err) == (2, "iofp: --window 500us: the shortest window is 1ms; e.g. --window 100ms\n")
    # Two I/Os 2,500 s apart: 2,500,001 windows of 1 ms, more than the 2 M allowed; 2 ms gives 1.25 M.
    with TraceWriter(tmp_path / "long", TraceMeta(source="import:test")) as w:
        w.write("io", pa.table({"ts_ns": [0, 2500 * 10**9], "device": ["x"] * 2, "offset": [0, 4096],
                                "size": [4096] * 2, "op": ["read"] * 2}))  # fmt: skip
    code, _, err = run_iofp("fingerprint", str(tmp_path / "long"), "--window", "1ms")
    want = ("iofp: --window 1ms: 2,500,001 windows over this trace's 2,500.000 s, more than 2,000,000; "
            "use --window 2ms or wider\n")  # fmt: skip
    assert (code, err) == (2, want)


@pytest.mark.parametrize(
    ("t1", "t2", "why"),
    [
        ("-5", "10", "--between -5 10: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        ("10", "5", "--between 10 5: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        ("nan", "10", "--between nan 10: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        ("0", "inf", "--between 0 inf: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        ("0", "1e308", "--between 0 1e+308: need 0 <= T1 < T2 <= 360,000,000 (seconds on the trace's clock)"),
        ("0", "09:15:00", "--between 0 09:15:00: give both as seconds from the start or both as HH:MM:SS"),
    ],
)
def test_between_refuses_negative_inverted_and_mixed_spans(tiny_trace, t1, t2, why):
    code, _, err = run_iofp("fingerprint", str(tiny_trace), "--between", t1, t2)
    assert (code, err) == (2, f"iofp: {why}\n")


def test_headline_latency_leaves_out_fast_flushes(tmp_path):
    """fsync=1 writes: every 4 KiB write (slow tail) is followed by a 10 µs flush. With the flushes
    counted, half the requests are fast and the p99.9 lands in the 50 µs body (the 3 ms tail hides).
    The headline, the bound's p99 and the per-window series are the writes' own; flushes have theirs."""
    n = 2000
    write_lat = np.concatenate([np.full(n - 4, 50_000), [2_000_000, 3_000_000, 4_000_000, 5_000_000]])
    ts = np.arange(2 * n, dtype=np.int64) * 100_000  # 0.4 s, one window
    ops = np.array(["write", "flush"] * n)
    lat = np.empty(2 * n, np.int64)
    lat[0::2], lat[1::2] = write_lat, 10_000
    meta = TraceMeta(source="capture", devices={"d0": {}})
    with TraceWriter(tmp_path / "t", meta) as w:
        w.write("io", pa.table({
            "ts_ns": ts, "lat_ns": lat, "device": ["d0"] * (2 * n), "offset": np.arange(2 * n) * 4096,
            "size": np.where(ops == "flush", 0, 4096), "op": ops,
        }))  # fmt: skip
    fp, tl = report_trace(tmp_path / "t")
    lat_fp = fp.whole.latency
    assert (lat_fp["all"].p50_us, lat_fp["all"].p99_us, lat_fp["all"].p99_9_us) == (50, 50, 3000)
    assert lat_fp["all"].ios == n and lat_fp["all"].max_us == 5000
    assert (lat_fp["flush"].ios, lat_fp["flush"].p99_9_us) == (n, 10)
    assert fp.whole.bound.numbers["latency_p99_us"] == 50
    # the report's timeline, from the trace in the fingerprint's windows: the writes' own p50
    assert len(tl) == fp.regimes.windows and set(tl.columns["lat_p50_us"]) == {50.0}


def _burst_trace(tmp_path, name: str, source: str, duration_ns: int | None) -> Fingerprint:
    """1,500 4 KiB writes and 100 fsyncs in the first 50 ms (a `--comm dd` capture's shape)."""
    n = 1500
    meta = TraceMeta(source=source, devices={"d0": {}}, duration_ns=duration_ns)
    with TraceWriter(tmp_path / name, meta) as w:
        w.write("io", pa.table({
            "ts_ns": np.arange(n, dtype=np.int64) * 33_333 + 2 * MS, "lat_ns": np.full(n, 20_000),
            "device": ["d0"] * n, "offset": np.arange(n) * 4096, "size": np.full(n, 4096),
            "op": ["write"] * n,
        }))  # fmt: skip
        w.write("sync", pa.table({"ts_ns": np.arange(100, dtype=np.int64) * 500_000 + 2 * MS,
                                  "lat_ns": np.full(100, 30_000), "call": ["fdatasync"] * 100,
                                  "pid": [7] * 100}))  # fmt: skip
    return fingerprint_trace(tmp_path / name)


def test_a_capture_rates_over_its_capture_window_an_import_over_its_io(tmp_path):
    span = 1499 * 33_333
    cap = _burst_trace(tmp_path, "cap", "capture", 5_300_000_000)
    p, w = cap.provenance, cap.whole
    assert (p.duration_s, p.duration_basis, p.io_span_s) == (5.3, "capture window", span / 1e9)
    assert w.seconds == 5.3
    assert w.intensity.iops == pytest.approx(1500 / 5.3)
    assert w.intensity.mbps == pytest.approx(1500 * 4096 / 1e6 / 5.3)
    assert w.durability.commits_per_s == pytest.approx(100 / 5.3)
    assert w.durability.sync_calls["fdatasync"].rate_per_s == pytest.approx(100 / 5.3)
    code, out, _ = run_iofp("fingerprint", str(tmp_path / "cap"))
    assert code == 0 and "capture · d0 · 5.3 s" in out and "283.0" in out  # 1500 / 5.3 s
    # an import's duration_ns is its I/O span; a capture window shorter than the I/O is not trusted
    for fp in (
        _burst_trace(tmp_path, "imp", "import:fio", span),
        _burst_trace(tmp_path, "odd", "capture", 1000),
    ):
        p, w = fp.provenance, fp.whole
        assert (p.duration_s, p.duration_basis, w.seconds) == (span / 1e9, "first to last I/O", span / 1e9)
        assert w.intensity.iops == pytest.approx(1500 / (span / 1e9))


@pytest.mark.parametrize("flushes", [1, 10, 500])
def test_a_trace_of_flushes_alone_fingerprints_and_reports(tmp_path, flushes):
    """A valid capture of a device that only saw cache flushes (no data request at all)."""
    ts = np.arange(flushes, dtype=np.int64) * 2 * MS
    meta = TraceMeta(source="capture", devices={"d0": {}})
    with TraceWriter(tmp_path / "t", meta) as w:
        w.write("io", pa.table({"ts_ns": ts, "lat_ns": np.full(flushes, 30_000), "device": ["d0"] * flushes,
                                "offset": np.zeros(flushes, np.int64), "size": np.zeros(flushes, np.int32),
                                "op": ["flush"] * flushes, "preflush": [True] * flushes}))  # fmt: skip
    fp = fingerprint_trace(tmp_path / "t")
    w = fp.whole
    assert (w.requests, w.ios, w.bytes, w.mix.flushes) == (flushes, 0, 0, flushes)
    assert w.intensity.iops == (0 if flushes > 1 else None)  # one flush spans no time to divide by
    assert w.size.mean_bytes is None and w.sequential.share is None and w.mix.read_share is None
    assert w.latency["flush"].p50_us == 30 and "all" not in w.latency
    assert w.shape.name == "flushes only" and fp.regimes.spikes == [] and not fp.regimes.steady.met
    code, _, err = run_iofp("fingerprint", str(tmp_path / "t"), "--json", str(tmp_path / "fp.json"))
    assert code == 0, err
    assert close(from_dict(json.loads((tmp_path / "fp.json").read_text()), "fp.json").to_dict(), fp.to_dict())
    code, _, err = run_iofp("report", str(tmp_path / "t"), "-o", str(tmp_path / "r.html"))
    assert code == 0 and "flushes only" in (tmp_path / "r.html").read_text(), err


def test_a_baseline_of_steady_windows_alone_is_the_steady_summary(tmp_path, monkeypatch):
    """When every window in no spike is steady, compute copies the steady summary as the baseline
    instead of summarising the same rows twice: it must be what summarising them gives."""
    trace = synthetic_steady_with_spike(tmp_path)
    copied = fingerprint_trace(trace)
    monkeypatch.setattr(compute.Frame, "baseline_is_steady", property(lambda self: False))
    summarised = fingerprint_trace(trace)
    assert copied.regimes.baseline.windows == copied.regimes.steady.windows  # the case this is about
    assert close(copied.to_dict(), summarised.to_dict())  # floats to 1e-12: parallel sums vary


def test_the_table_shows_no_rate_a_trace_cannot_have(tpcc_trace):
    """TPC-C's 0.136 s has no whole second: its one 1 s bin is every I/O (6,999), not a busiest or
    a mean second, so those rows are not shown; an import has no latency, in-flight, flushes or
    processes, which one line under the table names; the bound is the demand's alone."""
    fp = fingerprint_trace(tpcc_trace)
    shown, w = dict(rows(fp)), fp.whole
    assert w.burstiness["1s"].bins == 1
    assert "busiest 1 s (I/Os)" not in shown and "IOPS var/mean 1 s" not in shown
    assert shown["bound by (demand)"](w) == "IOPS" and "bound by" not in shown
    assert absent_rows(fp) == ["processes", "in-flight", "flushes", "sync calls", "latency"]
    # a capture of 35 s, with latency: both figures, the busiest second with its wall-clock time,
    # reads and writes apart, the flush rows that say the same once, and the time before issue (the
    # sample has no data calls: captured before they were recorded)
    fp = fingerprint_trace(REPO / "samples/traces/market-open")
    shown, w = dict(rows(fp)), fp.whole
    assert absent_rows(fp) == [] and "app µs p50/99/99.9" not in shown
    assert shown["queue µs p50/p99"](w) == "2 / 5"
    assert w.burstiness["1s"].peak_start_s == 16.0
    prov = fp.provenance
    at = datetime.fromtimestamp(round((prov.capture_start_ns + prov.capture_window_ns[0]) / 1e9 + 16))
    assert shown["busiest 1 s (I/Os)"](w) == f"3,001 at {at:%H:%M:%S}" and shown["bound by"](w) == "IOPS"
    assert shown["read µs p50/99/99.9"](w) == "18 / 66 / 768"
    assert shown["write µs p50/99/99.9"](w) == "21 / 90 / 357"
    # a loop device has no FUA and each fdatasync is one flush: one row, not three equal ones
    assert shown["flushes = syncs /s"](w) == "687.5" and "flush+FUA /s" not in shown


@pytest.mark.parametrize("columns", [80, 120])
def test_four_scopes_fit_the_terminal_without_cutting_a_word(columns):
    """The whole trace, steady, spike and a --between span of the market-open sample (its spike's
    shape is "OLTP point-write/commit"): every line within the width, no value cut short."""
    args = [*IOFP, "fingerprint", "samples/traces/market-open", "--between", "10", "20"]
    env = {**os.environ, "COLUMNS": str(columns)}
    r = subprocess.run(args, capture_output=True, text=True, cwd=REPO, env=env)
    assert r.returncode == 0, r.stderr
    table = r.stdout[: r.stdout.index("window ")]
    assert "between" in table and "…" not in table
    assert max(len(line) for line in table.splitlines()) <= columns
