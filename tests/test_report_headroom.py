"""report of headroom results: real sweeps on a RAM loop drawn as their curve, every number the
record's, the steps that were not run or were stopped marked and left off the curve; beside replay
and probe results on one page; a damaged record is one line."""

from __future__ import annotations

import html
import re
from pathlib import Path

import numpy as np
import pytest
from conftest import needs_fio, needs_root
from helpers import MEASURE_NICE, assert_drawn, headroom_record, interrupted_headroom, iofp_in, run_iofp
from lab import destroy_loop, make_loop

from iofp import headroom_result as hr
from iofp.slo import format_ns
from report import headroom as rh

# Above what fio can issue of the read trace on any host (here 1,470x beside two hogs, up to 3,050x
# quiet): the step is not run. At 5,000x, 1.6x above that, a faster host would run it (its budget of 2
# spent, the sweep would stop before it).
TOP = 50_000


@pytest.fixture(scope="module")
def sweeps(reads_trace, tmp_path_factory) -> Path:
    """Two real sweeps of the 500 IOPS read trace on a RAM loop: `ceiling` ran 1x and 2x and found
    TOP above the replayer's ceiling (not run); `stopped` was sent SIGINT during its 1.5x step. A budget
    of 2: a third step would be a bisection's midpoint below the ceiling; at nice -10 and 500-1,000
    reads/s judged on 1 s windows, a busy machine's other work does not stall a step here."""
    base = tmp_path_factory.mktemp("sweeps")
    dev, backing = make_loop(64)
    try:
        proc = iofp_in(None, "headroom", reads_trace, "--target", dev, "--slo", "p99<=50ms",
                       "--scales", f"1,2,{TOP}", "--max-scale", str(TOP), "--budget", "2", "--repeat", "1",
                       "--label", "device=ram-loop", "-o", base / "ceiling", nice=MEASURE_NICE)  # fmt: skip
        assert proc.returncode == 0, proc.stderr
        code, _, err = interrupted_headroom(reads_trace, dev, base / "stopped", "--label", "device=ram-stop")
        assert code == 130, err
    finally:
        destroy_loop(dev, backing)
    return base


def row(page: str, scale: float) -> list[str]:
    """The cells of a step's row in the steps table (text, unescaped)."""
    m = re.search(rf'<tr class="step [a-z]+" data-scale="{scale:g}"[^>]*>(.*?)</tr>', page)
    assert m, scale
    return [html.unescape(c) for c in re.findall(r"<td[^>]*>(.*?)</td>", m.group(1))]


def line_points(page: str, name: str) -> list[tuple[float, float]]:
    """The points of every polyline of that name (both charts draw each step once)."""
    out = []
    for pts in re.findall(rf'<polyline data-line="{re.escape(name)}"[^>]* points="([^"]*)"', page):
        out += [tuple(map(float, p.split(","))) for p in pts.split()]
    return out


def colour_share(pixels: np.ndarray, rgb: tuple[int, int, int]) -> float:
    """The share of the screenshot in that colour (within 2 per channel: Chromium's colour management)."""
    return float((np.abs(pixels[..., :3].astype(int) - rgb).max(axis=2) <= 2).mean())


@needs_root
@needs_fio
def test_the_curve_is_the_records_and_the_step_above_the_ceiling_is_marked(sweeps, tmp_path):
    _, res = hr.load(sweeps / "ceiling")
    ran = [s for s in res.steps if s.dir]
    h, not_run = res.headroom, [s for s in res.steps if s.verdict == hr.ABOVE_CEILING]
    assert [s.scale for s in ran] == [1, 2] and h.bound == "replayer", h
    assert TOP in [s.scale for s in not_run] and h.failed_at == min(s.scale for s in not_run), res.steps
    out = tmp_path / "h.html"
    code, stdout, err = run_iofp("report", sweeps / "ceiling", "-o", out)
    assert (
        code == 0 and "(it reports 0 replay result(s), 0 probe result(s), 1 headroom result(s))" in stdout
    ), err
    page = out.read_text()
    assert not re.search(r"(src|href)=\"https?://", page)
    assert '<section class="headroom" data-name="ram-loop">' in page
    assert f"<h2>headroom: ram-loop ({res.target['path']})</h2>" in page
    verdict = re.search(r'<p class="verdict headroom-verdict">(.*?)</p>', page).group(1)
    assert html.unescape(verdict).startswith(
        f"headroom 2x (failed at {h.failed_at:g}x: the replayer's ceiling: fio could not issue that load on "
        "this machine, so it is not the device's limit (it demands"
    ), verdict
    for s in ran:  # every number shown is the record's
        lat = s.latency_ns["read"]
        assert row(page, s.scale) == [
            f"{s.scale:g}x", f"{s.demanded_iops:,.0f}", f"{s.achieved_iops:,.0f}", "-", "-",
            format_ns(lat["p50"]), format_ns(lat["p99"]), format_ns(lat["p99.9"]), "pass",
        ]  # fmt: skip
    for s in not_run:  # 5000x, and the bisection's midpoints above the ceiling: marked, no figures
        cells = row(page, s.scale)
        assert f'<tr class="step marked" data-scale="{s.scale:g}"' in page and cells[2:8] == ["-"] * 6
        assert cells[1] == f"{s.demanded_iops:,.0f}" and cells[-1].startswith(rh.NOT_RUN)
    # the curve: the two steps run, in both charts; the one not run is the shaded span, not a point
    for name in ("read p50", "read p99", "demanded IOPS", "achieved IOPS"):
        assert len(line_points(page, name)) == 2, name
    assert page.count('class="marked ceiling"') == 2 and "steps above not run" in page
    assert "read.p99" not in page and page.count("SLO p99&lt;=50ms") == 1  # the record's SLO, once
    assert "SLO lines: p99&lt;=50ms, the sweep&#x27;s own" in page
    ticks = re.findall(r'class="tick x"[^>]*>([^<]*)</text>', page)  # log2: a tick every other power
    assert ticks[:7] == ["1x", "4x", "16x", "64x", "256x", "1024x", "4096x"], ticks
    pixels = assert_drawn(tmp_path, out, "1280,1000")
    assert colour_share(pixels, (0xE6, 0xE2, 0xD8)) > 0.004  # the not-run span and row, shaded alike
    assert colour_share(pixels, (0x27, 0xAE, 0x60)) > 0.0002  # the headroom line, green
    assert colour_share(pixels, (0x3A, 0x6E, 0xA5)) > 0.0001  # the read latency curve (1x-2x)


@needs_root
@needs_fio
def test_a_given_slo_is_drawn_and_named_beside_the_one_the_sweep_judged(sweeps, tmp_path):
    out = tmp_path / "h.html"
    code, _, err = run_iofp("report", sweeps / "ceiling", "-o", out, "--slo", "read.p99<=1ms")
    assert code == 0, err
    page = out.read_text()
    assert "SLO read.p99&lt;=1ms" in page and "SLO p99&lt;=50ms" not in page
    assert "SLO lines: --slo read.p99&lt;=1ms; the sweep judged its steps against p99&lt;=50ms" in page


@needs_root
@needs_fio
def test_a_stopped_step_is_marked_and_not_drawn(sweeps, tmp_path):
    _, res = hr.load(sweeps / "stopped")
    assert [(s.scale, s.verdict) for s in rh.drawn(res)] == [(1.0, hr.PASS)]
    assert (res.steps[-1].scale, res.steps[-1].verdict) == (1.5, hr.STOPPED)
    out = tmp_path / "s.html"
    assert run_iofp("report", sweeps / "stopped", "-o", out)[0] == 0
    page = out.read_text()
    assert "PARTIAL: stopped by SIGINT" in page
    assert "headroom at least 1x: the sweep was stopped (SIGINT) before a step failed" in page
    today = f"{res.demand['iops']:,.0f} IOPS"  # 1,000 reads over the 1.998 s from the first to the last
    # "(1 of 3 runs passed)" between them: a factor stands confirmed once its --repeat runs passed
    assert f"up to at least 1x today&#x27;s rate ({today})" in page
    assert re.search(r"today&#x27;s rate \([0-9,]+ IOPS\)[^<]*, where the sweep was stopped \(SIGINT\)", page)
    assert '<tr class="step marked" data-scale="1.5"' in page
    assert row(page, 1.5)[-1] == "stopped by a signal: partial figures, not the device's"
    assert len(line_points(page, "read p99")) == 1  # 1x alone: the stopped step is no device result
    assert "1.5x stopped (SIGINT): not drawn" in page
    pixels = assert_drawn(tmp_path, out, "1280,900")
    assert colour_share(pixels, (0xE6, 0xE2, 0xD8)) > 0.001  # the stopped step's row, shaded


@needs_root
@needs_fio
def test_headroom_beside_replay_and_probe_results_on_one_page(sweeps, comparison, tmp_path):
    both = tmp_path / "all"
    both.mkdir()
    for name, src in (("h", sweeps / "ceiling"), ("r", comparison / "ram"), ("p", comparison / "probe-ram")):
        (both / name).symlink_to(src)
    for args in ([both], [sweeps / "ceiling", comparison / "ram", comparison / "probe-ram"]):
        out = tmp_path / "mixed.html"
        code, stdout, err = run_iofp("report", *args, "-o", out, "--force", "--slo", "p99<=50ms")
        assert code == 0, err
        assert "(it reports 1 replay result(s), 1 probe result(s), 1 headroom result(s))" in stdout
        page = out.read_text()
        for section in ('class="headroom" data-name="ram-loop"', 'class="candidate" data-name="ram-loop"',
                        'class="probe" data-name="ram-loop"'):  # fmt: skip
            assert page.count(section) == 1, section
    assert_drawn(tmp_path, out, "1280,2400")


@needs_root
@needs_fio
@pytest.mark.parametrize(
    ("damage", "why"),
    [
        (lambda text: text[: len(text) // 2], "not valid JSON ("),
        (lambda text: re.sub(r'"achieved_iops": [0-9.]+', '"achieved_iops": "fast"', text, count=1),
         "not a complete headroom result (a step at 1x holds a figure that is not a number); "
         "run the sweep again"),
        (lambda text: text.replace('"iofp-headroom-result"', '"something-else"'),
         "not an iofp headroom result; pass a directory written by `iofp headroom`"),
    ],
)  # fmt: skip
def test_a_damaged_headroom_record_is_one_line(sweeps, tmp_path, damage, why):
    record = tmp_path / "h" / hr.RECORD
    record.parent.mkdir()
    record.write_text(damage((sweeps / "ceiling" / hr.RECORD).read_text()))
    out = tmp_path / "r.html"
    code, stdout, err = run_iofp("report", record.parent, "-o", out)
    assert code == 2 and stdout == "" and len(err.splitlines()) == 1, err
    assert err.startswith(f"iofp: {record}: {why}"), err
    assert not out.exists()
    if why.startswith("not valid JSON"):
        assert err.endswith("; the record is damaged: run `iofp headroom` again\n"), err


# ---- no I/O: the verdict in plain words, per bound --------------------------------------------


def step(scale: float, verdict: str = hr.PASS, **kw) -> hr.Step:
    return hr.Step(scale, "sweep", None if verdict == hr.ABOVE_CEILING else "d", verdict, **kw)


@pytest.mark.parametrize(
    ("steps", "headroom", "line"),
    [
        ([step(1), step(3), step(4, hr.FAIL, slo_failures=["read p99 3.10 ms > 2.00 ms"])],
         hr.Headroom(3, 4, "slo", ""), "headroom 3x (failed at 4x: the SLO: read p99 3.10 ms > 2.00 ms)"),
        ([step(1), step(2, hr.FAIL, saturation="device", rate_failures=["IOPS MAPE 7.6% > 5%"])],
         hr.Headroom(1, 2, "rate", ""),
         "headroom 1x (failed at 2x: the device's rate: it did not keep the demanded rate "
         "(IOPS MAPE 7.6% > 5%))"),
        ([step(1, hr.FAIL, saturation="device", rate_failures=["r"])], hr.Headroom(None, 1, "first step", ""),
         "no headroom: failed at 1x, today's load (the device's rate: it did not keep the demanded "
         "rate (r))"),
        ([step(1), step(8)], hr.Headroom(8, None, "max-scale", ""),
         "headroom at least 8x: every scale asked passed, up to --max-scale 8x"),
        ([step(1), step(2)], hr.Headroom(2, None, "budget", ""),
         "headroom at least 2x: the step budget ran out before a step failed"),
        ([], hr.Headroom(None, None, "none", ""), "no headroom measured: no step ran"),
    ],
)  # fmt: skip
def test_the_verdict_says_whose_limit_in_plain_words(steps, headroom, line):
    assert rh.verdict_line(headroom_record(steps, headroom=headroom)) == line


def test_a_scale_run_twice_is_drawn_once_by_the_run_whose_verdict_stands():
    slow = {"read": {"p50": 20_000, "p99": 90_000, "p99.9": 300_000}}
    fast = {"read": {"p50": 10_000, "p99": 50_000, "p99.9": 100_000}}
    mape = ["IOPS MAPE 28.2% > 5%"]
    first = step(8, hr.FAIL, saturation="device", rate_failures=mape, achieved_iops=7000.0, latency_ns=slow)
    again = hr.Step(8, "confirm", "d2", hr.PASS, achieved_iops=8000.0, latency_ns=fast)
    res = headroom_record([step(1, achieved_iops=1000.0), first, again])
    assert rh.drawn(res) == [res.steps[0], again]
    table = rh.steps_table(res)
    assert row(table, 8) == ["8x", "-", "7,000", "-", "-", "20 µs", "90 µs", "300 µs",
                             "FAIL: the device's saturation: IOPS MAPE 28.2% > 5%"]  # fmt: skip
    assert '<tr class="step pass" data-scale="8" data-phase="confirm"><td>8x (again)</td>' in table
