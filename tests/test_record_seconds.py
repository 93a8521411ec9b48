"""The recorder's per-second summary and its trigger (record/seconds.py, record/trigger.py), on raw
records made here: every request counted once in the second it completed, and the SLO judged on each
window as compare judges it, except that an idle window misses no latency term."""

from __future__ import annotations

import numpy as np
import pytest
from helpers import raw_io, raw_sync

from bpf.btf import kernel_btf
from bpf.record import ReqBits
from iofp import slo
from record import histogram
from record.seconds import COMMIT, LOST, NS, Seconds, Windows
from record.trigger import Trigger, window_figures

T0 = 1_800_000_000 * NS  # a wall-clock second
DEV = (7 << 20) | 9


@pytest.fixture(scope="module")
def bits() -> ReqBits:
    return ReqBits.from_btf(kernel_btf())


def test_each_request_counts_once_in_the_second_it_completed(bits):
    s = Seconds({DEV: "loop9"}, "loop9", T0)
    # issued in second 0, completing in seconds 0, 1 (a long one) and 1; one nobody saw complete
    io = raw_io([T0 + 100, T0 + NS - 10, T0 + NS + 5, T0 + NS + 7], [50, 1000, 20, None],
                ["read", "write", "write", "flush"])  # fmt: skip
    s.add_io(io, bits, 0)
    s.add_sync(raw_sync([T0 + NS + 1], [2_000_000]), 0)
    s.add_counted(LOST, 3, T0 + 2 * NS)
    s.add_counted("write", 2, T0 + 2 * NS)  # empty flush barriers: /sys/block counts them as writes
    assert s.close(T0 + NS - 1) == []  # second 0 not over yet
    first = s.close(T0 + NS + 500)
    assert [x.t for x in first] == [T0 // NS]
    assert {k: c.count for k, c in first[0].cells.items()} == {("loop9", "read"): 1}
    second = s.close(T0 + 2 * NS)[0]
    cells = second.cells
    assert cells[("loop9", "write")].count == 4 and cells[("loop9", "write")].lat_unknown == 2
    assert cells[("loop9", "write")].lat_max_ns == 1000 and cells[("loop9", "write")].lat_sum_ns == 1020
    assert cells[("loop9", "flush")].count == cells[("loop9", "flush")].lat_unknown == 1
    assert cells[("loop9", COMMIT)].count == 1 and cells[("loop9", LOST)].count == 3
    assert cells[("loop9", "write")].bytes == 2 * 4096


def test_a_quiet_second_is_a_recorded_zero_and_a_late_record_is_counted_not_lost(bits):
    s = Seconds({DEV: "loop9"}, "loop9", T0)
    assert [(x.t, x.cells) for x in s.close(T0 + 3 * NS)] == [(T0 // NS + i, {}) for i in range(3)]
    s.add_io(raw_io([T0 + NS], [10], ["read"]), bits, 0)  # completed in a second already final
    (late,) = s.close(T0 + 4 * NS)
    assert s.late == 1 and late.t == T0 // NS + 3 and late.cells[("loop9", "read")].count == 1


def _second(bits, lats, t=0):
    s = Seconds({DEV: "loop9"}, "loop9", T0 + t * NS)
    n = len(lats)
    s.add_io(raw_io(T0 + t * NS + np.arange(n) * 1000, lats, ["read"] * n), bits, 0)
    s.add_sync(raw_sync([T0 + t * NS + 10] * 4, [1_000_000] * 4), 0)
    return s.close(T0 + (t + 1) * NS)[0]


def test_a_window_is_judged_as_compare_judges_a_replay(bits):
    lats = list(range(1000, 1000 + 1000 * 100, 1000))  # 100 reads: p99 = the 99th = 99,000 ns
    figs = window_figures([_second(bits, lats)])[0]
    assert figs.latency("read", "p99") == 99_000 and figs.latency("all", "p50") == 50_000
    assert (figs.achieved_iops, figs.commits_per_s, figs.latency("commit", "p99")) == (100, 4, 1_000_000)
    assert slo.parse("read.p99<=98us,iops<=99").failures(figs) == ["read p99 99 µs > 98 µs", "100 IOPS > 99"]
    assert slo.parse("read.p99<=99us,commit.p99<=1ms,mbps<=1").failures(figs) == []
    assert figs.max_inflight == 1 and slo.parse("inflight<=0").failures(figs) == ["1 in flight > 0"]


def test_the_trigger_fires_once_the_slo_is_missed_for_the_whole_hold(bits):
    trig = Trigger(slo.parse("read.p99<=10us"), hold=2)
    fast, slow = [5000] * 10, [50_000] * 10
    seconds = [_second(bits, lat, t) for t, lat in enumerate([fast, slow, fast, slow, slow, slow])]
    fired = [trig.judge([s]) for s in seconds]
    assert [f is not None for f in fired] == [False, False, False, False, True, False]
    assert fired[4].failures == ["read p99 50 µs > 10 µs"] and fired[4].end_ns == T0 + 5 * NS
    assert fired[4].figures[0]["read"]["p99_ns"] == 50_000


def test_an_idle_window_misses_no_latency_or_inflight_term_but_is_judged_on_its_rates(bits):
    idle = Seconds({DEV: "loop9"}, "loop9", T0).close(T0 + NS)  # a second without a request
    for terms in ("read.p99<=1ms", "commit.p99<=1ms,flush.p99<=1ms", "p99<=1ms,all.p50<=1us", "inflight<=1"):
        assert Trigger(slo.parse(terms)).judge(idle) is None, terms
    assert Trigger(slo.parse("read.p99<=1ms,iops>=100")).judge(idle).failures == ["0 IOPS < 100"]
    # reads but no commits: the read term is judged, the commit term waits for a commit
    reads = Seconds({DEV: "loop9"}, "loop9", T0)
    reads.add_io(raw_io(T0 + np.arange(10) * 1000, [50_000] * 10, ["read"] * 10), bits, 0)
    fired = Trigger(slo.parse("commit.p99<=1ms,read.p99<=10us")).judge(reads.close(T0 + NS))
    assert fired is not None and fired.failures == ["read p99 50 µs > 10 µs"]

def test_a_relative_rate_is_judged_against_the_baseline_before_the_window_once_it_spans_a_minute(bits):
    def judge(trig, t, n):
        return trig.judge([_second(bits, [1000] * n, t)])

    trig = Trigger(slo.parse("iops<=3x,iops>=0.5x"), baseline_s=600, devices=("loop9",))
    assert [judge(trig, t, 100 if t < 59 else 400) for t in range(60)] == [None] * 60  # 59 s: no baseline
    fired = judge(trig, 60, 400)  # 59 s at 100/s and one at 400/s: 105/s
    assert fired.failures == ["400 IOPS > 3x the baseline 105"]
    assert judge(trig, 61, 0).failures == ["0 IOPS < 0.5x the baseline 110"]  # an I/O stop is one too
    # the baseline reaches back --history (30 s: judged from then on), and a gap starts it afresh
    short = Trigger(slo.parse("iops<=3x"), baseline_s=30)
    assert [judge(short, t, 100) for t in range(30)] == [None] * 30
    assert judge(short, 30, 400).failures == ["400 IOPS > 3x the baseline 100"]
    assert judge(short, 40, 400) is None
    # several devices: an idle one is judged on its rate too, and named
    idle = Seconds({DEV: "loop9"}, "loop9", T0).close(T0 + NS)
    fired = Trigger(slo.parse("iops>=10"), devices=("loop8", "loop9")).judge(idle)
    assert fired.failures == ["loop8: 0 IOPS < 10", "loop9: 0 IOPS < 10"]

def test_windows_fall_on_wall_clock_multiples(bits):
    w = Windows(5)
    ends = [w.push(_second(bits, [1000], t)) for t in range(12)]
    assert [T0 // NS + t + 1 for t, e in enumerate(ends) if e] == [T0 // NS + 5, T0 // NS + 10]
    assert histogram.exact(np.array([3, 1, 2]), "p50") == 2
