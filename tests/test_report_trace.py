"""What a reviewer must see in a trace's report (report/trace.py), rendered by headless Chromium on the
shared real traces and a commit burst with a wall clock: the biggest spike's answer first; spikes
numbered on the charts as in the table; a log axis where one spike dwarfs the rest, and each big spike
on a panel of its own; every hot window the text calls hot marked; latency and commits over time on log
axes; the tails as exceedance curves with p99 and p99.9 marked and the SLO's limit drawn; wall-clock
time on the time axes. Each page's screenshot is kept (helpers.keep_artifact)."""

from __future__ import annotations

import math
import re
from pathlib import Path

import pytest
from conftest import REPO, needs_root
from helpers import COMMIT_BURST_SPIKE, assert_drawn, commit_burst_trace, run_chromium, run_iofp, shared_trace

from fingerprint.api import fingerprint_trace


def rendered(trace: Path, out: Path, *args: str) -> str:
    """`iofp report TRACE` as Chromium builds it (its DOM)."""
    code, _, err = run_iofp("report", trace, "-o", out, *args)
    assert code == 0, err
    dom = run_chromium("--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    return dom.stdout


def chart(html: str, name: str) -> str:
    """The SVG of the chart named `name` (its data-chart attribute)."""
    at = html.index(f'data-chart="{name}"')
    return html[html.rindex("<svg", 0, at) : html.index("</svg>", at)]


def ticks(svg: str, axis: str) -> list[str]:
    return re.findall(rf'class="tick {axis}"[^>]*>([^<]*)</text>', svg)


@pytest.mark.slow
@pytest.mark.parametrize("which", ["mysql", "mssql"])
def test_a_real_traces_report_shows_its_spikes_and_why_the_other_hot_windows_are_none(
    which, tmp_path_factory, tmp_path
):
    trace = shared_trace(which, tmp_path_factory)
    fp = fingerprint_trace(trace)
    out = tmp_path / f"{which}.html"
    html = rendered(trace, out)
    reg = fp.regimes
    # the biggest spike's answer opens the page
    lead = r'<div class="verdict" id="lead"><b>spike #1 [\d,]+-[\d,]+ s: IOPS-bound \(demand only\)'
    assert re.search(lead, html)
    iops = chart(html, "iops")
    # every spike shaded and numbered as in the table
    tags = re.findall(r'class="spike-label" data-rank="(\d+)"[^>]*>#(\d+)</text>', iops)
    assert sorted(int(a) for a, b in tags if a == b) == list(range(1, reg.spikes_total + 1))
    for sp in reg.spikes:
        assert f'<tr data-rank="{sp.rank}"><td>{sp.rank}</td>' in html
    # every hot window in no spike is marked, as many as the text counts
    w = fp.params.window_ns / 1e9
    strips = re.findall(r'class="regime hot" data-start="([\d.e+]+)" data-end="([\d.e+]+)"', iops)
    assert round(sum(float(b) - float(a) for a, b in strips) / w) == reg.hot_outside_spikes
    assert f"{reg.hot_windows:,} windows are hot, {reg.hot_outside_spikes:,} of them in no spike" in html
    # windows-mssql: one 811-IOPS spike dwarfs the 7 others: a log axis, and a panel per big spike
    if which == "mssql":
        assert 'data-y-scale="log"' in iops and "one spike dwarfs the rest" in iops
        powers = [float(t.replace(",", "")) for t in ticks(iops, "y")]
        assert all(math.log10(v).is_integer() for v in powers) and len(powers) >= 3, powers
    panels = re.findall(r'data-panel="(\d+)"', html)
    assert panels == [str(sp.rank) for sp in reg.spikes[:6]]
    # what the less common figures mean, on screen
    assert 'id="significance"><b>significance (Li-Ma)</b>' in html and "index of dispersion" in html
    assert_drawn(tmp_path, out, "1280,2600")


@pytest.fixture(scope="module")
def burst(tmp_path_factory) -> Path:
    return commit_burst_trace(tmp_path_factory.mktemp("burst") / "cb")


@pytest.mark.slow
def test_the_commit_bursts_report_has_wall_clock_log_latency_and_tails_against_the_slo(burst, tmp_path):
    out = tmp_path / "burst.html"
    html = rendered(burst, out, "--slo", "p99<=1ms,commit.p99<=100us")
    lead = re.search(r'<div class="verdict" id="lead"><b>([^<]*)</b>', html)
    assert lead and lead.group(1).startswith(
        f"spike #1 {COMMIT_BURST_SPIKE[0]}-{COMMIT_BURST_SPIKE[1]} (42-47 s): fsync-latency-bound: 3,000 "
        "commits/s, 39% of wall time in fsync"
    )
    # wall-clock time on the time axes: round times of day
    for name in ("iops", "latency", "commits", "commit-latency"):
        assert ticks(chart(html, name), "x")[:3] == ["09:14:45", "09:15:00", "09:15:15"], name
        assert "time of day (" in chart(html, name)
    # latency and commit latency on log axes, the commit limit drawn
    for name in ("latency", "commit-latency"):
        assert 'data-y-scale="log"' in chart(html, name)
    assert ">SLO commit.p99&lt;=100us</text>" in chart(html, "commit-latency")
    # the tails: exceedance on log-log axes, p99 and p99.9 marked on each kind, the SLO's limits drawn
    tails = chart(html, "tails")
    assert 'data-x-scale="log" data-y-scale="log"' in tails
    for kind in ("reads", "writes", "flushes", "commits"):
        assert re.search(rf'class="mark-label p99"[^>]*>{kind} p99 [\d.]+ µs</text>', tails), kind
        assert re.search(rf'class="mark-label p99_9"[^>]*>{kind} p99.9 [\d.]+ µs</text>', tails), kind
    assert ">commits p99 130 µs</text>" in tails  # the commits miss 100 µs: right of the line
    assert re.search(r'class="ref v"[^>]*>(</line>)?\s*<text[^>]*>SLO commit.p99&lt;=100us</text>', tails)
    assert_drawn(tmp_path, out, "1280,2600")


def pg_installed() -> bool:
    return any(Path("/usr/lib/postgresql").glob("*/bin/pgbench"))


@pytest.fixture(scope="module")
def pg_burst(tmp_path_factory) -> Path:
    """iofp's capture of PostgreSQL (a fresh cluster on ext4 on a RAM loop device, as
    bench/commit_fidelity.py makes it) running pgbench at 100 transactions/s for 4 s, 1,000/s from 8
    clients for 2 s, and 100/s for 4 s again: a commit burst, live (~15 s)."""
    import contextlib
    import sys

    import bpf

    sys.path.insert(0, str(REPO))
    from bench.commit_fidelity import Lab, sh

    work = tmp_path_factory.mktemp("pgburst")
    with contextlib.closing(Lab(work, f"/dev/shm/iofp-test-{work.name}-")) as lab:
        dev, sock = lab.cluster("ram", 512, 1)
        opts = bpf.CaptureOptions(output=work / "pg", devices=[Path(dev).name], force=True)
        with bpf.start_capture(opts) as bg:
            for rate, clients, seconds in ((100, 2, 4), (1000, 8, 2), (100, 2, 4)):
                sh("runuser", "-u", "postgres", "--", lab.bin / "pgbench", "-h", sock, "-n", "-R", str(rate),
                   "-c", str(clients), "-j", "2", "-T", str(seconds), "postgres")  # fmt: skip
            bg.stop()
    return work / "pg"


@pytest.mark.slow
@needs_root
@pytest.mark.skipif(not pg_installed(), reason="needs PostgreSQL (scripts/setup.sh installs it as root)")
def test_a_live_postgres_captures_report_leads_with_its_commit_burst_on_the_clock(pg_burst, tmp_path):
    fp = fingerprint_trace(pg_burst)
    # the burst is 10x the transactions (5x beside two CPU hogs, where pgbench made ~500/s): a spike
    assert fp.regimes.spikes_total >= 1
    out = tmp_path / "postgres.html"
    html = rendered(pg_burst, out, "--slo", "p99<=1ms,commit.p99<=100us")
    # the spike's answer first, on the wall clock, with its commits and their share of wall time
    clock = r"\d\d:\d\d:\d\d(\.\d+)?"
    lead = re.search(r'<div class="verdict" id="lead"><b>([^<]*)</b>', html)
    # its class is the load's: beside CPU hogs the burst's fsync share fell under 20%, IOPS-bound
    bound = "(fsync-latency|throughput|IOPS)-bound"
    assert lead and re.match(rf"spike #1 {clock}-{clock} \([\d.,]+-[\d.,]+ s\): {bound}", lead.group(1))
    # a share near the 20% fsync-bound limit prints a decimal (iofp/values.py share_text): 20.2%
    assert re.search(r"[\d,]+ commits/s, \d+(\.\d+)?% of wall time in fsync", lead.group(1)), lead.group(1)
    for name in ("iops", "latency", "commits", "commit-latency"):
        svg = chart(html, name)
        assert "time of day (" in svg and all(re.fullmatch(clock, t) for t in ticks(svg, "x")), name
        assert ">#1</text>" in svg, name  # the spike numbered as in the table
    for name in ("latency", "commit-latency"):
        assert 'data-y-scale="log"' in chart(html, name)
    # PostgreSQL's own fdatasync calls as an exceedance curve: p99 and p99.9 marked, the limit drawn
    tails = chart(html, "tails")
    assert 'data-x-scale="log" data-y-scale="log"' in tails
    for pct in ("p99", "p99_9"):
        mark = rf'class="mark-label {pct}"[^>]*>commits p99(\.9)? [\d.,]+ [µm]?s</text>'
        assert re.search(mark, tails), pct
    assert ">SLO commit.p99&lt;=100us</text>" in tails
    assert_drawn(tmp_path, out, "1280,2600")
