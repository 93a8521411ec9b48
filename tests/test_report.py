"""report: one self-contained HTML page, rendered by headless Chromium, with regions and numbers."""

from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from helpers import run_iofp, synthetic_steady_with_spike

from fingerprint.importing import import_trace


def chromium() -> str:
    for name in ("chromium", "chromium-browser", "google-chrome"):
        if path := shutil.which(name):
            return path
    pytest.skip("needs chromium (apt install chromium) to render the report")


def run_chromium(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run(
        [chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", *args],
        capture_output=True,
        text=True,
        timeout=120,
    )


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
    assert '<table id="spikes">' in html and "<td>1</td><td>30</td><td>35</td>" in html
    assert '<table id="scopes">' in html and "IOPS-bound" in html and 'data-hist="latency"' in html
    png = tmp_path / "report.png"
    shot = run_chromium(f"--screenshot={png}", "--window-size=1200,1600", out.as_uri())
    assert shot.returncode == 0 and png.stat().st_size > 20_000  # a real rendering, not a blank page


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
    assert "mixed OLTP" in page and "demand-side only" in page
    # 0.136 s of TPC-C: the default window is 1 ms (137 windows), not one 1 s window and no timeline
    assert "window 1ms (the default rule): 137 windows" in page
    assert len(re.findall(r'<polyline data-line="iops"[^>]* points="([^"]*)"', page)[0].split()) == 137
