"""The fleet's quarterly view and its HTML page, without Spark: the rows come from the fleet's own task
function (fleet.job.fingerprint_task: fetch, fingerprint, write beside) run serially against a real
S3 server process (moto's, on a loopback port), over 2 services x 4 hosts x 3 days with a bad disk
planted; the view flags it, `iofp fleet --json`'s document makes the page, and Chromium draws it."""

from __future__ import annotations

import json

import pytest
from helpers import assert_drawn, run_iofp
from s3server import BUCKET, s3_server

from bench.fleet_lake import dates_from, fill_lake
from fleet import find_traces, fingerprint_task, quarterly
from iofp import objstore

pytestmark = pytest.mark.slow  # 24 traces fingerprinted: ~10 s


@pytest.fixture(scope="module")
def view(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")):
        lake = objstore.Url(BUCKET, "lake")
        fill_lake(lake, ["orders", "ledger"], 4, dates_from("2026-03-02", 3), bad=("orders", 1),
                  spool=tmp_path_factory.mktemp("spool"), rate=100, seconds=10)  # fmt: skip
        rows = [fingerprint_task(t) for t in find_traces(lake)]
    return quarterly(rows)


def test_the_view_flags_the_bad_disk_and_only_it(view):
    assert [(o["service"], o["host"]) for o in view["outliers"]] == [("orders", "ord-02")] * 2
    assert view["services"]["orders"]["figures"]["commit_p99_us"]["max"] > 3 * (
        view["services"]["ledger"]["figures"]["commit_p99_us"]["median"])


def test_iofp_report_draws_the_fleet_view(view, tmp_path):
    doc = tmp_path / "q.json"
    doc.write_text(json.dumps(view))
    out = tmp_path / "fleet.html"
    code, stdout, err = run_iofp("report", str(doc), "-o", str(out))
    assert code == 0, err
    assert stdout.startswith(f"Wrote {out}.") and "a fleet review" in stdout
    page = out.read_text()
    assert page.count("<svg") == 2 and "ord-02 (outlier)" in page and "orders ord-02" in page
    assert_drawn(tmp_path, out)
