"""Fidelity figures on traces with known differences (the live-capture side is in test_replay.py)."""

from __future__ import annotations

import pytest
from helpers import write_trace

from iofp.contract import open_trace
from replay.iolog import expected_of
from replay.run import fidelity

N = 2000  # 100 IOPS for 20 s


def _expected(tmp_path, n=N, gap_ns=10_000_000):
    ts = [i * gap_ns for i in range(n)]
    rows = {
        "ts_ns": ts,
        "offset": [(i * 7919 % 5000) * 4096 for i in range(n)],
        "size": [4096 if i % 3 else 16384 for i in range(n)],
        "op": ["flush" if i % 50 == 49 else ("read" if i % 3 else "write") for i in range(n)],
        "inflight": [1 + i % 4 for i in range(n)],
    }
    rows["offset"] = [0 if op == "flush" else o for op, o in zip(rows["op"], rows["offset"], strict=True)]
    rows["size"] = [0 if op == "flush" else s for op, s in zip(rows["op"], rows["size"], strict=True)]
    return rows


def _trace(tmp_path, name, rows, comm="fio"):
    n = len(rows["ts_ns"])
    return open_trace(write_trace(tmp_path / name, {"comm": [comm] * n, **rows}))


def _demand(tmp_path, rows):
    """The rows as a replay's demand: their data I/Os, and an fsync per flush (no sync table)."""
    return expected_of(_trace(tmp_path, "e", rows))


def _data(rows, key="ts_ns"):
    return [v for v, op in zip(rows[key], rows["op"], strict=True) if op != "flush"]


def _shifted(rows, scale=1.0, offset_ns=123_456_789):
    """The same I/Os on another clock (a capture starts at its own zero), optionally stretched."""
    return {**rows, "ts_ns": [offset_ns + round(t * scale) for t in rows["ts_ns"]]}


def test_identical_replay_is_faithful_and_precise(tmp_path):
    rows = _expected(tmp_path)
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", _shifted(rows)))
    assert (f.expected, f.replayed, f.matched, f.missing, f.extra) == (N, N, N, 0, 0)
    assert f.per_op["flush"] == {"expected": 40, "replayed": 40, "matched": 40}
    assert (f.late_p50_us, f.late_p99_us, f.final_drift_us, f.stretch) == (0, 0, 0, 0)
    assert f.iops_mape == 0 and f.window_s == 1.0 and len(f.iops_series) == 20
    assert f.faithful and f.timing == "precise" and f.verdict == "faithful"


def test_accumulating_drift_is_measured_exactly(tmp_path):
    rows = _expected(tmp_path)
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", _shifted(rows, scale=1.03)))
    last = _data(rows)[-1]  # the last data I/O: the last row is a flush, judged as a call
    assert f.stretch == pytest.approx(0.03)
    assert f.final_drift_us == pytest.approx(0.03 * last / 1e3, abs=1)
    assert f.late_max_us == f.final_drift_us and f.late_min_us == 0
    # nearest-rank median of 0.03 * t over the data I/Os' t (flushes are judged as calls, not timed)
    data = _data(rows)
    assert f.late_p50_us == pytest.approx(0.03 * data[(len(data) + 1) // 2 - 1] / 1e3, abs=1)
    assert f.iat_err_p50_us == pytest.approx(300, abs=1)  # every 10 ms gap became 10.3 ms
    assert f.late_over_1ms == sum(1 for t in data if 0.03 * t > 1_000_000)
    # 3% slower: each 1 s window holds ~3% fewer I/Os, the tail spills into a 21st window
    assert 0.02 < f.iops_mape < 0.04 and len(f.iops_series) == 21
    assert f.faithful and f.timing == "drifting"  # 3% stretch: not on schedule either


def test_too_slow_replay_is_not_faithful_and_says_why(tmp_path):
    rows = _expected(tmp_path)
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", _shifted(rows, scale=1.10)))
    assert not f.faithful
    assert f.reasons == ["IOPS WAPE 9.0% > 5%", "duration stretch +10.0% beyond ±5%"]


def test_a_short_selections_span_is_judged_beyond_fios_pacing_clock(tmp_path):
    """40 I/Os in 10 ms that ended 0.6 ms early (-6%) read as a stretch beyond ±5% and, in headroom,
    as the device's saturation: fio paces with a 1 ms clock, so the span is judged beyond 2 ms."""
    rows = _expected(tmp_path, n=40, gap_ns=250_000)
    demand = _demand(tmp_path, rows)
    f = fidelity.compare(demand, _trace(tmp_path, "r", _shifted(rows, scale=0.94)))
    assert -0.06 < f.stretch < -0.02 and f.faithful and f.timing != "drifting"  # the anchor takes a part
    f = fidelity.compare(demand, _trace(tmp_path, "r2", _shifted(rows, scale=0.5)))
    assert f.stretch < -0.2 and not f.faithful  # 2.4 ms of 10: beyond the clock
    assert f.reasons == [f"duration stretch {100 * f.stretch:+.1f}% beyond ±2 ms"]


def test_missing_changed_and_foreign_ios_are_counted(tmp_path):
    rows = _expected(tmp_path)
    rep = _shifted(rows)
    rep = {k: v[1:] for k, v in rep.items()}  # the first I/O never happened
    rep["offset"][10] += 4096  # one landed elsewhere
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    assert (f.matched, f.missing, f.extra) == (N - 2, 2, 1)
    assert f.reasons[0] == "2 demanded I/Os missing, 1 extra" and not f.faithful


def test_other_processes_on_the_target_are_not_extras(tmp_path):
    rows = _expected(tmp_path, n=200)
    e = _demand(tmp_path, rows)
    rep = _shifted(rows)
    n = len(rep["ts_ns"])
    rep = {k: [*v, v[-1]] for k, v in rep.items()}  # udev's blkid reading after fio closed the device
    rep["comm"] = ["fio"] * n + ["systemd-udevd"]
    r = open_trace(write_trace(tmp_path / "r", rep))
    assert fidelity.compare(e, r).extra == 0
    assert fidelity.compare(e, r, comm=None).extra == 1


K = 1 << 20  # the reshaped writes lie past every _expected offset (< 20 MiB): 66 writes of 200 I/Os
RESHAPED = [(25 * K, 16384), (26 * K, 8192), (27 * K, 8192), (27 * K + 8192, 8192)]  # (offset, size)


def _reshaped(tmp_path, name, pieces):
    """A replay of _expected(n=200) plus the RESHAPED writes, these arriving as `pieces`: (offset, size,
    comm) written after the rest."""
    rows = _expected(tmp_path, n=200)
    demand = {k: [*v] for k, v in rows.items()}
    rep = {k: [*v] for k, v in _shifted(rows).items()} | {"comm": ["fio"] * 200}
    for side, t0, writes in ((demand, 2_000_000_000, [(o, s, None) for o, s in RESHAPED]),
                             (rep, 2_200_000_000, pieces)):  # fmt: skip
        for i, (o, s, comm) in enumerate(writes):
            row = {"ts_ns": t0 + i, "offset": o, "size": s, "op": "write", "inflight": 1, "comm": comm}
            for k in side:
                side[k].append(row[k])
    return _demand(tmp_path, demand), open_trace(write_trace(tmp_path / name, rep))


def test_writes_the_kernel_split_merged_or_wrote_back_match_by_their_bytes(tmp_path):
    # A buffered commit under memory pressure: the flusher wrote the first half of a 16 KiB write before
    # the replayed fdatasync wrote the rest, and all of the next one; the last two were written back
    # together, as one request.
    e, r = _reshaped(tmp_path, "r", [(25 * K, 8192, "kworker/u8:0"), (25 * K + 8192, 8192, "fio"),
                                     (26 * K, 8192, "kworker/u8:2"), (27 * K, 16384, "fio")])  # fmt: skip
    f = fidelity.compare(e, r)
    assert (f.missing, f.extra, f.reshaped, f.pieces, f.writeback) == (0, 0, 4, 2, 2)
    assert f.per_op["write"] == {"expected": 70, "replayed": 68, "matched": 66, "reshaped": 4, "pieces": 2,
                                 "writeback": 2}  # fmt: skip
    assert f.faithful, f.reasons


@pytest.mark.parametrize(
    ("pieces", "missing", "extra"),
    [
        ([], 4, 0),  # dropped: nobody wrote them
        ([(25 * K, 8192, "kworker/u8:0"), (26 * K, 8192, "fio"), (27 * K, 16384, "fio")], 1, 0),  # half
        ([(25 * K, 16384, "fio"), (26 * K, 12288, "fio"), (27 * K, 16384, "fio")], 1, 1),  # 4 KiB beyond
        ([(25 * K, 8192, "fio"), (25 * K, 16384, "fio"), (26 * K, 8192, "fio"), (27 * K, 16384, "fio")],
         0, 1),  # 8 KiB written twice: the exact one matches, the other is extra
        ([(25 * K, 8192, "fio"), (25 * K, 8192, "fio"), (26 * K, 8192, "fio"), (27 * K, 16384, "fio")],
         1, 2),  # twice the first half, never the second
    ],
)
def test_bytes_nobody_wrote_are_missing_and_bytes_beyond_the_demand_extra(tmp_path, pieces, missing, extra):
    f = fidelity.compare(*_reshaped(tmp_path, "r", pieces))
    assert (f.missing, f.extra) == (missing, extra)
    assert not f.faithful and f.reasons[0] == f"{missing} demanded I/Os missing, {extra} extra"


def test_the_kernels_writeback_is_never_an_extra(tmp_path):
    pieces = [(o, s, "fio") for o, s in RESHAPED]
    pieces += [(30 * K, 65536, "kworker/u8:1"), (25 * K, 16384, "kworker/0:1")]
    e, r = _reshaped(tmp_path, "r", pieces)
    f = fidelity.compare(e, r)
    assert (f.missing, f.extra, f.reshaped, f.writeback) == (0, 0, 0, 0) and f.faithful
    assert fidelity.compare(e, r, comm=None).extra == 2  # every task's I/O taken as the replay's


def test_inflight_is_reported_per_side(tmp_path):
    rows = _expected(tmp_path, n=400)
    rep = _shifted(rows)
    rep["inflight"] = [1] * 400
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    inflight = _data(rows, "inflight")
    mean = sum(inflight) / len(inflight)
    assert f.inflight["expected"] == {
        "inflight_mean": pytest.approx(mean),
        "inflight_p99": 4,
        "inflight_max": 4,
    }
    assert f.inflight["replayed"] == {"inflight_mean": 1.0, "inflight_p99": 1, "inflight_max": 1}


@pytest.mark.parametrize(
    ("span_s", "ios", "window"),
    [(3600, 80794, 1.0), (1.57, 570, 1.0), (0.25, 621, 0.1), (0.136, 6999, 0.01), (5, 10**7, 0.1)],
)
def test_rate_window_keeps_enough_ios_per_window(span_s, ios, window):
    assert fidelity.rate_window(span_s, ios) == pytest.approx(window)


def test_one_late_first_io_does_not_shift_every_other_io(tmp_path):
    # 1 ms gaps: 10 I/Os in the anchor's first 10 ms. The replay's first I/O woke 2 ms late (a replay's
    # first wake-up here can be), the others are exactly on time relative to each other.
    rows = _expected(tmp_path, n=2000, gap_ns=1_000_000)
    rep = _shifted(rows)
    rep["ts_ns"][0] += 2_000_000
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    assert (f.late_p50_us, f.abs_late_p50_us, f.late_max_us, f.late_min_us) == (0, 0, 2000, 0)


def test_a_stall_at_the_start_does_not_shift_every_other_io(tmp_path):
    # fio stalled 20 ms at its start (11 ms seen once beside a CPU hog): the I/Os demanded in the first
    # 20 ms went together at 20 ms, the rest on time. Anchored on the first 10 ms alone, every later
    # I/O read ~15 ms early and the rate windows were off by as much; the first tenth's median is not.
    rows = _expected(tmp_path, n=2000, gap_ns=1_000_000)
    rep = _shifted(rows)
    t0 = rep["ts_ns"][0]
    rep["ts_ns"] = [max(t, t0 + 20_000_000) for t in rep["ts_ns"]]
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    assert (f.late_p50_us, f.abs_late_p50_us, f.late_max_us, f.late_min_us) == (0, 0, 20_000, 0)
    assert f.final_drift_us == 0 and f.iops_mape < 0.02


def test_precise_timing_is_judged_on_absolute_lateness(tmp_path):
    # After an exact start, I/Os 0.3 ms early, on time, 0.3 ms late in turn: the signed median is 0 and
    # the signed p99 0.3 ms (the old rule's "precise"), yet two I/Os in three are 0.3 ms off.
    rows = _expected(tmp_path, n=2000, gap_ns=1_000_000)
    rep = _shifted(rows)
    rep["ts_ns"] = [t + (0 if i < 20 else (i % 3 - 1) * 300_000) for i, t in enumerate(rep["ts_ns"])]
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    assert (f.late_p50_us, f.late_p99_us) == (0, 300)
    assert (f.abs_late_p50_us, f.abs_late_p99_us) == (300, 300)
    assert f.faithful and f.timing == "on schedule"  # nothing accumulated, but not within 50 µs


def test_late_bursts_that_catch_up_are_jittery_not_drifting(tmp_path):
    # Every 20th I/O 3 ms late, the rest on time: nothing accumulates (no stretch, same per-second
    # rates), but p99 |lateness| is 3 ms, beyond "on schedule"
    rows = _expected(tmp_path, n=2000, gap_ns=1_000_000)
    rep = _shifted(rows)
    rep["ts_ns"] = [t + (3_000_000 if i >= 20 and i % 20 == 0 else 0) for i, t in enumerate(rep["ts_ns"])]
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep))
    assert f.abs_late_p99_us == 3000 and abs(f.stretch) < 0.01
    assert f.faithful and f.timing == "jittery"


def test_one_near_empty_window_does_not_make_a_faithful_replay_unfaithful(tmp_path):
    """The PostgreSQL spike of issue 26: 80 windows of 100 ms, one of them (10 demanded I/Os) between
    busy ones. The last 60 I/Os of the busy window before it went 13 ms late (a burst the replayer
    caught up on): that window read 440 of 500, the near-empty one 70 of 10 (+600%). Judged on
    windows, the mean of percentages made it "not faithful" (MAPE 7.6%); on I/Os, 120 of 39,510 were
    in another window than demanded (WAPE 0.3%): faithful, and nothing accumulated: not drifting."""
    window_ns, quiet = 100_000_000, 40
    ts = []
    for w in range(80):
        n = 10 if w == quiet else 500
        ts += [w * window_ns + i * window_ns // n for i in range(n)]
    n = len(ts)
    rows = {"ts_ns": ts, "offset": [(i * 7919 % 50_000) * 4096 for i in range(n)], "size": [8192] * n,
            "op": ["write" if i % 4 == 0 else "read" for i in range(n)], "inflight": [1] * n}  # fmt: skip
    rep = _shifted(rows)
    late = [i for i, t in enumerate(ts) if (quiet - 1) * window_ns + 88_000_000 <= t < quiet * window_ns]
    assert len(late) == 60
    for i in late:
        rep["ts_ns"][i] += 13_000_000
    f = fidelity.compare(_demand(tmp_path, rows), _trace(tmp_path, "r", rep), window_s=0.1)
    series = dict(enumerate(f.iops_series))
    assert series[quiet - 1] == (5000, 4400) and series[quiet] == (100, 700)  # /s: 500 -> 440, 10 -> 70
    assert sum(e == r for e, r in f.iops_series) == 78 and f.iops_mape > 0.05  # the old rule's "not faithful"
    assert f.iops_wape == pytest.approx(120 / (79 * 500 + 10))
    assert f.faithful and f.verdict == "faithful" and f.reasons == []
    assert f.stretch == 0 and f.late_growth_us == 0 and f.timing in ("precise", "on schedule")
