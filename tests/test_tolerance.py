"""fingerprint.tolerance and `iofp diff --tolerances`: per-metric deltas, pass/fail, exit status."""

from __future__ import annotations

import copy
import json
from pathlib import Path

from conftest import REPO
from helpers import run_iofp

from fingerprint import tolerance
from iofp import fingerprint_doc as fd

SAMPLES = REPO / "samples" / "fingerprints"


def test_spec_defaults_and_overrides() -> None:
    spec = tolerance.parse("default")
    assert spec.regime == "whole"
    assert {d.key: (d.limit, d.points) for d in spec.limits}["read_share"] == (0.02, True)
    spec = tolerance.parse("iops=3%,seq_share=1pt,regime=steady")
    got = {d.key: d.limit for d in spec.limits}
    assert (got["iops"], got["seq_share"], got["mbps"], spec.regime) == (0.03, 0.01, 0.10, "steady")


def test_original_against_itself_passes_and_whole_rates_are_over_the_io_span() -> None:
    fp = fd.load(SAMPLES / "market-open.fp.json")
    r = tolerance.check(fp, fp, tolerance.parse("default"))
    assert r.passed and all(x.delta in (0, None) for x in r.rows)
    iops = next(x for x in r.rows if x.key == "iops").original
    assert iops == fp.whole.ios / fp.provenance.io_span_s  # 1,400/s while fio ran, not 1,203 over 34.9 s
    assert abs(iops - 1400) < 1


def test_a_metric_beyond_its_limit_fails_by_its_exact_delta() -> None:
    a = fd.load(SAMPLES / "commit-heavy.fp.json")
    b = copy.deepcopy(a)
    b.whole.mix.read_share = 0.03  # 3 points more reads: beyond 2 points
    b.whole.size.mean_bytes = a.whole.size.mean_bytes * 1.04  # within 5%
    r = tolerance.check(a, b, tolerance.parse("default"))
    rows = {x.key: x for x in r.rows}
    assert (rows["read_share"].status, round(rows["read_share"].delta, 9)) == ("FAIL", 0.03)
    assert (rows["mean_size"].status, round(rows["mean_size"].delta, 9)) == ("pass", 0.04)
    assert [x.key for x in r.failed] == ["read_share"] and not r.passed


def test_regime_scope_and_missing_figures() -> None:
    a = fd.load(SAMPLES / "mysql-1and1.fp.json")  # an import: no flushes, no commits
    r = tolerance.check(a, a, tolerance.parse("regime=baseline"))
    rows = {x.key: x for x in r.rows}
    assert r.original_scope == "baseline"
    assert rows["flushes"].status == rows["commits"].status == "n/a"
    assert rows["footprint"].status == "n/a"  # a regime has no footprint
    assert rows["iops"].original == a.baseline.intensity.iops


def test_cli_prints_the_check_exits_1_on_a_failure_and_2_on_a_bad_spec(tmp_path: Path) -> None:
    a = SAMPLES / "market-open.fp.json"
    # the same job's demand on another device (diff refuses a fingerprint diffed with itself)
    q2 = SAMPLES / "market-open-q2.fp.json"
    code, stdout, _ = run_iofp("diff", str(a), str(q2), "--tolerances", "regime=phases")
    assert code == 0 and "every demand metric within tolerance" in stdout
    code, stdout, _ = run_iofp(
        "diff", str(a), str(SAMPLES / "commit-heavy.fp.json"), "--tolerances", "default", "--json", "-"
    )
    doc = json.loads(stdout)
    assert code == 1 and doc["tolerance"]["passed"] is False
    assert {r["key"] for r in doc["tolerance"]["rows"] if r["status"] == "FAIL"} >= {"iops", "read_share"}
    assert "verdict" in doc  # diff's own comparison is still there
    code, _, stderr = run_iofp("diff", str(a), str(q2), "--tolerances", "iops=5")
    assert (code, stderr.strip()) == (2, "iofp: --tolerances iops=5: give the limit in percent, e.g. 5%")
