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
def s3(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@pytest.fixture(scope="module")
def view(s3, tmp_path_factory):
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


def test_iofp_report_draws_a_view_in_the_store_as_it_draws_one_here(s3, view, tmp_path):
    doc, url = tmp_path / "q.json", objstore.Url(BUCKET, "reviews/q.json")
    text = json.dumps(view, indent=1)
    doc.write_text(text)
    objstore.put_bytes(url, text.encode())
    for where, out in ((doc, tmp_path / "here.html"), (url, tmp_path / "there.html")):
        code, stdout, err = run_iofp("report", str(where), "-o", str(out))
        assert code == 0, err
        assert "a fleet review" in stdout
    assert (tmp_path / "here.html").read_text() == (tmp_path / "there.html").read_text()


def test_a_view_nested_too_deep_is_one_line(tmp_path):
    doc = tmp_path / "q.json"
    doc.write_text('{"kind": "iofp-fleet-view", "services": ' + "[" * 100_000 + "]" * 100_000 + "}")
    code, _, err = run_iofp("report", str(doc), "-o", str(tmp_path / "q.html"))
    assert (code, err) == (2, f"iofp: {doc}: JSON nested deeper than 64 levels; write it again with iofp "
                              "fleet --json\n")  # fmt: skip
