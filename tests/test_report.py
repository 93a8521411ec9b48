"""report: one self-contained HTML page, rendered by headless Chromium, with regions and numbers."""

from __future__ import annotations

import json
import re

from conftest import REPO, needs_fio, needs_root
from helpers import assert_drawn, run_chromium, run_iofp, synthetic_steady_with_spike

from fingerprint.importing import import_trace


def test_report_renders_with_steady_and_spike_regions(tmp_path):
    trace = synthetic_steady_with_spike(tmp_path)
    out = tmp_path / "report.html"
    code, stdout, _ = run_iofp("report", str(trace), "-o", str(out))
    assert code == 0 and f"Wrote {out}." in stdout
    page = out.read_text()
    assert not re.search(r"(src|href)=\"https?://", page)  # nothing fetched from the network
    dom = run_chromium("--dump-dom", out.as_uri())
    assert dom.returncode == 0, dom.stderr[-2000:]
    html = dom.stdout
    spikes = re.findall(r'class="regime spike" data-start="([\d.]+)" data-end="([\d.]+)"', html)
    assert set(spikes) == {("30", "35")}  # the one spike, on every timeline chart
    assert 'class="regime steady"' in html
    assert re.search(r"Steady state: <b>\d+</b> of 60 windows", html)
    assert '<table id="spikes">' in html and '<td>1</td><td class="nowrap">30-35</td><td>5</td>' in html
    assert '<table id="scopes">' in html and "IOPS-bound" in html and 'data-hist="latency"' in html
    # the spike's answer first, and every scope's verdict with its reason
    assert re.search(r'<div class="verdict" id="lead"><b>spike #1 30-35 s: IOPS-bound: [\d,.]+ IOPS', html)
    assert re.search(r"<li>whole: [^<]*IOPS-bound: [\d,.]+ IOPS, mean size", html)
    # real axes: round ticks on both, each axis named with its unit
    assert re.search(r'class="tick x"[^>]*>60</text>', html) and 'class="tick y"' in html
    assert ">seconds from the first I/O</text>" in html and ">IOPS</text>" in html
    # the histograms' y axis: % of the I/Os, ending on a round tick above the tallest bar (here 100%)
    size = html[html.index('data-hist="I/O size"') : html.index("</svg>", html.index('data-hist="I/O size"'))]
    assert ">% of I/Os</text>" in size and re.search(r'text-anchor="end">100</text>', size)
    # reads and writes apart on a log latency axis, named in its legend
    at = html.index('data-chart="latency"')
    latency = html[at : html.index("</svg>", at)]
    assert 'data-y-scale="log"' in latency and 'data-line="read p99"' in latency
    assert ">reads</span>" in html and ">writes</span>" in html
    assert_drawn(tmp_path, out)


def test_report_of_an_imported_trace_and_refusal_to_overwrite(shared_traces, tmp_path):
    import_trace("auto", [shared_traces / "tpcc-small.trace"], tmp_path / "t")
    out = tmp_path / "r.html"
    out.write_text("keep me")
    args = ("report", str(tmp_path / "t"), "-o", str(out))
    code, _, err = run_iofp(*args)
    assert code == 2 and out.read_text() == "keep me"
    assert err == f"iofp: {out} already exists; pass --force to overwrite it\n"
    code, _, _ = run_iofp(*args, "--force")
    assert code == 0
    page = out.read_text()
    assert "mixed OLTP" in page and "demand only: the trace has no latency" in page
    assert 'data-chart="latency"' not in page and "No latency in this trace: no tails to draw." in page
    assert " · 0.136 s</h1>" in page  # not 0.1 s
    # 0.136 s of TPC-C: the default window is 1 ms (137 windows), not one 1 s window and no timeline
    assert "window 1ms (the default rule): 137 windows" in page
    assert len(re.findall(r'<polyline data-line="iops"[^>]* points="([^"]*)"', page)[0].split()) == 137


def test_the_trace_report_is_titled_by_its_service_and_capture_time(tmp_path):
    out = tmp_path / "m.html"
    code, _, err = run_iofp("report", str(REPO / "samples" / "traces" / "market-open"), "-o", str(out))
    assert code == 0, err
    assert "<h1>order-router · 2026-11-22 23:58:35 UTC · loop1 · 34.9 s</h1>" in out.read_text()


def test_a_directory_that_is_neither_trace_nor_results_is_one_line(tmp_path):
    (tmp_path / "x").mkdir()
    out = tmp_path / "r.html"
    code, _, err = run_iofp("report", str(tmp_path / "x"), "-o", str(out))
    assert (code, err) == (2, f"iofp: {tmp_path / 'x'}: neither a trace nor results; pass a trace directory "
                              "(iofp capture, iofp import), results (iofp replay, iofp probe, iofp headroom) "
                              "or a directory holding results\n")  # fmt: skip
    assert not out.exists()


@needs_root
@needs_fio
def test_a_replay_report_draws_the_candidate_against_its_slo(comparison, tmp_path):
    from iofp import replay_result
    from iofp.slo import format_ns

    out = tmp_path / "replay.html"
    code, stdout, err = run_iofp(
        "report", str(comparison / "ram"), "-o", str(out), "--slo", "p99<=50ms,fsync.p99<=50ms"
    )
    assert code == 0 and "(it reports 1 replay result(s), 0 probe result(s))" in stdout, err
    page = out.read_text()
    assert not re.search(r"(src|href)=\"https?://", page)
    assert '<section class="candidate" data-name="ram-loop">' in page and "<b>meets it</b>" in page
    for line in ("demanded", "achieved", "write p99", "sync calls p99", "commits (sync calls)"):
        assert f'<polyline data-line="{line}"' in page, line
    # the SLO's two limits, on the latency over time and on the tails
    assert page.count(">SLO p99&lt;=50ms</text>") == 2 and page.count(">SLO fsync.p99&lt;=50ms</text>") == 2
    tails = page[page.index('data-chart="tails"') :]
    assert 'class="mark p99"' in tails and 'class="mark p99_9"' in tails
    _, res = replay_result.load(comparison / "ram")
    commit = res.measured.syncs["all"]  # the figures compare shows: the run's own capture
    assert f"<td>{format_ns(commit.p50)}</td><td>{format_ns(commit.p99)}</td>" in page
    assert_drawn(tmp_path, out, "1280,1600")
    code, _, _ = run_iofp(
        "report", str(comparison / "ram"), "-o", str(tmp_path / "miss.html"), "--slo", "fsync.p50<=1us"
    )
    assert code == 0 and "<b>misses it</b>: fsync p50" in (tmp_path / "miss.html").read_text()


@needs_root
@needs_fio
def test_a_probe_and_a_comparison_directory_report(comparison, tmp_path):
    out = tmp_path / "probe.html"
    assert run_iofp("report", str(comparison / "probe-ram"), "-o", str(out))[0] == 0
    page = out.read_text()
    assert '<section class="probe" data-name="ram-loop">' in page and '<table class="cells">' in page
    iops = re.search(r'<polyline data-line="IOPS"[^>]* points="([^"]*)"', page)
    assert iops and len(iops.group(1).split()) == 2  # QD 1 and 4
    assert_drawn(tmp_path, out, "1400,700")
    both = tmp_path / "both.html"
    code, stdout, err = run_iofp("report", str(comparison), "-o", str(both))
    assert code == 0 and "(it reports 1 replay result(s), 1 probe result(s))" in stdout, err
    text = both.read_text()
    assert 'class="candidate" data-name="ram-loop"' in text and 'class="probe" data-name="ram-loop"' in text


@needs_root
@needs_fio
def test_a_comparison_draws_each_candidates_commit_tail_in_a_panel_on_shared_axes(comparison, tmp_path):
    """Eight candidates' commit tails over each other were spaghetti: a panel each, in the order
    given, on one x axis (the copy has the same figures under another name: what this holds is the
    panels and their axis, not how far apart two devices' tails are)."""
    import shutil

    other = tmp_path / "other"
    shutil.copytree(comparison / "ram", other)
    doc = json.loads((other / "results.json").read_text())
    doc["labels"] = {**doc.get("labels", {}), "device": "other-loop"}
    (other / "results.json").write_text(json.dumps(doc))
    out = tmp_path / "two.html"
    code, _, err = run_iofp("report", str(comparison / "ram"), str(other), "-o", str(out))
    assert code == 0, err
    page = out.read_text()
    row = page[page.index('id="commit-multiples"') :]
    panels = re.findall(r'<svg[^>]*data-candidate="([^"]+)"(.*?)</svg>', row, re.S)
    assert [name for name, _ in panels] == ["ram-loop", "other-loop"], [n for n, _ in panels]
    ticks = [re.findall(r'class="tick x"[^>]*>([^<]+)<', body) for _, body in panels]
    assert ticks[0] and ticks[0] == ticks[1]  # the same axis in every panel
    assert_drawn(tmp_path, out, "1280,1600")


def test_a_narrow_log_axis_keeps_its_tick_labels_apart():
    from report.svg import log_ticks

    # a comparison's small panel (about 250 px across 10 µs-8 ms): powers of ten, not 1-2-5 run together
    assert log_ticks(10, 8000) == [10, 20, 50, 100, 200, 500, 1000, 2000, 5000]
    assert log_ticks(10, 8000, most=5) == [10, 100, 1000]
    assert log_ticks(0.01, 1000, most=4) == [0.01, 0.1, 1, 10, 100, 1000]  # none fits: the fewest
    assert log_ticks(150, 400, most=3) == [200, 300, 400]
