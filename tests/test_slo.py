"""The one SLO grammar (iofp/slo.py): what parses, what each term judges, and bad terms named in one line."""

from __future__ import annotations

from dataclasses import dataclass, field

import pytest
from helpers import run_iofp

from iofp import slo
from iofp.errors import BadInput


@dataclass
class Fig:
    lat: dict[tuple[str, str], float] = field(default_factory=dict)
    demanded_iops: float | None = 1000.0
    achieved_iops: float | None = 1000.0
    commits_per_s: float | None = None

    def latency(self, op: str, pct: str) -> float | None:
        return self.lat.get((op, pct))


def test_terms_and_units():
    s = slo.parse(["p99<=2ms,fsync.p99<=1ms", "read.p99.9 <= 500us", "iops>=demanded", "commits>=1500/s"])
    assert [t.text for t in s.terms] == [
        "p99<=2ms", "fsync.p99<=1ms", "read.p99.9<=500us", "iops>=demanded", "commits>=1500/s",
    ]  # fmt: skip
    assert s.terms[0] == slo.LatencyTerm(None, "p99", 2e6, "p99<=2ms")
    assert s.terms[2].limit_ns == 500e3
    assert s.terms[4] == slo.CommitsTerm(1500.0, "commits>=1500/s")
    for text, ns in (("p50<=3ns", 3), ("p50<=3µs", 3e3), ("p50<=1.5s", 1.5e9), ("commit.p50<=7ms", 7e6)):
        assert slo.parse(text).terms[0].limit_ns == ns


def test_a_bare_term_judges_reads_and_writes_each():
    s = slo.parse("p99<=1ms")
    both = Fig({("read", "p99"): 900e3, ("write", "p99"): 1.2e6})
    assert s.failures(both) == ["write p99 1.20 ms > 1.00 ms"]
    assert s.failures(Fig({("read", "p99"): 900e3})) == []  # a read-only replay: the reads
    assert s.failures(Fig()) == ["no read or write p99 measured"]


def test_op_terms_rates_and_commits():
    fig = Fig({("fsync", "p99"): 2.5e6, ("flush", "p50"): 40e3}, achieved_iops=940.0, commits_per_s=1200)
    assert slo.parse("fsync.p99<=2ms,flush.p50<=50us").failures(fig) == ["fsync p99 2.50 ms > 2.00 ms"]
    assert slo.parse("commit.p99<=2ms").failures(fig) == ["no commit p99 measured"]
    assert slo.parse("iops>=demanded").failures(fig) == ["achieved 940 IOPS < demanded 1,000"]
    assert slo.parse("iops>=demanded").failures(Fig(achieved_iops=951.0)) == []  # within 5%
    assert slo.parse("commits>=1500/s").failures(fig) == ["commits 1,200/s < 1,500/s"]
    assert slo.parse("commits>=1000/s").failures(fig) == []


@pytest.mark.parametrize(
    ("text", "term"),
    [
        ("p99<2", "'p99<2'"),
        ("p101<=1ms", "'p101<=1ms'"),
        ("p99<=fast", "'p99<=fast'"),
        ("p99<=2", "'p99<=2'"),  # a time needs its unit
        ("fsnyc.p99<=1ms", "'fsnyc.p99<=1ms'"),
        ("p99<=2ms,iops>=lots", "'iops>=lots' (in 'p99<=2ms,iops>=lots')"),
        ("", "''"),
    ],
)
def test_a_bad_term_is_named_with_the_grammar(text, term):
    with pytest.raises(BadInput) as e:
        slo.parse(text)
    assert str(e.value) == f"--slo term {term}: {slo.GRAMMAR}"


def test_compare_refuses_a_bad_slo_before_reading_anything(tmp_path):
    code, out, err = run_iofp("compare", tmp_path / "nothing", "--slo", "p99<2")
    assert (code, out, err) == (2, "", f"iofp: --slo term 'p99<2': {slo.GRAMMAR}\n")


def test_format_ns():
    assert [slo.format_ns(v) for v in (None, 512, 87_400, 1_460_000, 2e9)] == [
        "-", "512 ns", "87 µs", "1.46 ms", "2.00 s",
    ]  # fmt: skip


def test_upper_and_lower_bounds_on_rates_and_in_flight():
    s = slo.parse("iops<=3000,mbps<=400,iops>=100,mbps>=1.5,inflight<=32")
    assert s.terms[0] == slo.RateTerm("iops", "<=", 3000.0, "iops<=3000")
    assert s.terms[4] == slo.InflightTerm(32, "inflight<=32")
    quiet = Fig(achieved_iops=2500.0)
    quiet.achieved_mbps, quiet.max_inflight = 10.2, 32
    assert s.failures(quiet) == []
    surge = Fig(achieved_iops=4210.0)
    surge.achieved_mbps, surge.max_inflight = 512.4, 33
    assert s.failures(surge) == ["4,210 IOPS > 3,000", "512 MB/s > 400", "33 in flight > 32"]
    idle = Fig(achieved_iops=40.0)
    idle.achieved_mbps, idle.max_inflight = 1.2, 1
    assert s.failures(idle) == ["40 IOPS < 100", "1.2 MB/s < 1.5"]


def test_a_relative_rate_bound_is_n_times_the_figures_baseline():
    s = slo.parse("iops<=3x,mbps>=0.5x")
    assert s.terms[0] == slo.RateTerm("iops", "<=", 3.0, "iops<=3x", relative=True)
    surge = Fig(achieved_iops=4210.0)
    surge.achieved_mbps, surge.baseline_iops, surge.baseline_mbps = 1.2, 1000.0, 4.0
    assert s.failures(surge) == ["4,210 IOPS > 3x the baseline 1,000", "1.2 MB/s < 0.5x the baseline 4"]
    surge.achieved_iops, surge.achieved_mbps = 3000.0, 2.0
    assert s.failures(surge) == []
    # a row with no baseline (compare's) says so, never holds
    no_base = Fig(achieved_iops=10.0)
    no_base.achieved_mbps = 1.0
    assert s.failures(no_base) == ["no baseline IOPS measured", "no baseline MB/s measured"]

def test_a_figure_a_row_does_not_measure_is_named_not_held():
    """A command whose rows have no MB/s or in-flight figure (a fingerprint's scope) says so."""
    assert slo.parse("mbps<=400,inflight<=8").failures(Fig()) == [
        "achieved MB/s not measured", "in-flight requests not measured",
    ]  # fmt: skip


BAD_RATES = ["iops<=", "iops<3000", "mbps<=fast", "inflight>=4", "inflight<=1.5", "iops<=x", "iops<=3xx",
             "inflight<=2x"]  # fmt: skip


@pytest.mark.parametrize("text", BAD_RATES)
def test_bad_rate_terms_are_named(text):
    with pytest.raises(BadInput, match="expected terms"):
        slo.parse(text)


def test_compare_judges_the_rate_bounds_on_its_measured_rates():
    from iofp.replay_result import Measured
    from replay.compare import Row

    measured = Measured("replay capture", achieved_iops=1000.0, achieved_mbps=4.1)
    row = Row("ram-loop", "results/ram", "candidate", 1000.0, 4.1, measured, "replay capture")
    assert slo.parse("iops<=900,mbps<=4,iops>=500").failures(row) == ["1,000 IOPS > 900", "4.1 MB/s > 4"]
