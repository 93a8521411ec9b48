"""What a reader reads first (fingerprint/headline.py, fingerprint/summary.py): the biggest spike's
answer in one line with its reason and wall-clock time, then the table, each scope's verdict with its
reason, the rule that turns hot windows into spikes; at 80 columns, in `iofp fingerprint`, `iofp diff`
and `iofp catalog list`, with nothing cut (a spike whose verdict is long: fsync-latency-bound)."""

from __future__ import annotations

import os
import re
import subprocess
from pathlib import Path

import pytest
from conftest import REPO
from helpers import COMMIT_BURST_SPIKE, IOFP, commit_burst_trace, run_iofp

from fingerprint import headline
from fingerprint.api import fingerprint_trace
from iofp.values import share_text

LEAD = re.compile(
    rf"spike #1 {COMMIT_BURST_SPIKE[0]}-{COMMIT_BURST_SPIKE[1]} \(42-47 s\): fsync-latency-bound: 3,000 "
    r"commits/s, 39% of wall time in fsync \(p99 130 µs\); peak 3,500 IOPS, 4\.4x the baseline's 800"
)


def at_80(*args: str | Path) -> list[str]:
    """`iofp ARGS` in a terminal 80 columns wide: its lines, each checked to fit and nothing cut."""
    r = subprocess.run([*IOFP, *map(str, args)], capture_output=True, text=True, cwd=REPO, timeout=120,
                       env={**os.environ, "COLUMNS": "80"})  # fmt: skip
    assert r.returncode in (0, 1), r.stderr
    lines = r.stdout.splitlines()
    assert max(len(x) for x in lines) <= 80, r.stdout
    assert "…" not in r.stdout, r.stdout
    return lines


def table_rows(lines: list[str]) -> dict[str, list[str]]:
    """The summary table's rows: label -> its cells, a cell wrapped over lines joined by a space."""
    out: dict[str, list[str]] = {}
    label = ""
    for cells in (x.split("│")[1:-1] for x in lines if x.startswith("│ ")):
        label = cells[0].strip() or label
        got = out.setdefault(label, [""] * (len(cells) - 1))
        out[label] = [f"{a} {b.strip()}".strip() for a, b in zip(got, cells[1:], strict=True)]
    return out


@pytest.fixture(scope="module")
def burst(tmp_path_factory) -> Path:
    return commit_burst_trace(tmp_path_factory.mktemp("burst") / "cb")


def test_the_biggest_spikes_answer_comes_first_with_its_reason_and_wall_clock(burst):
    lines = at_80("fingerprint", burst)
    title = next(i for i, x in enumerate(lines) if x.startswith("capture"))
    lead = " ".join(x.strip() for x in lines[:title])
    assert LEAD.fullmatch(lead), lead
    text = "\n".join(lines)
    # the table's bound row names the resource in words, which wrap: never "fsync-latency-…"
    assert table_rows(lines)["bound by"] == ["IOPS", "IOPS", "fsync latency"]
    # each scope's verdict says which scope it is: the whole trace's commits are under the 20% while
    # the spike's set the pace, and neither reads as the other's
    flat = " ".join(text.split())
    whole = "whole: mixed OLTP, IOPS-bound: 950 IOPS, mean size 8.0 KiB, 8% sequential; 450 commits/s, 4% of "
    assert whole + "wall time in fsync (under the 20% that sets the pace)" in flat
    # the busiest second with its time, and the rule that made the spike where the threshold is
    busiest = ["3,500 at 09:15:12", "801 at 09:15:11", "3,500 at 09:15:12"]
    assert table_rows(lines)["busiest 1 s (I/Os)"] == busiest
    assert "a window is hot above 1,200.0 IOPS or 9.83 MB/s" in flat
    assert "5 windows are hot, all in spikes" in flat
    assert re.search(r"^ 1 +09:15:12-09:15:17 +3,500\.0 +800\.0", text, re.M), text


def test_reads_and_writes_apart_and_one_flush_row(burst):
    lines = at_80("fingerprint", burst)
    rows = table_rows(lines)
    assert rows["read µs p50/99/99.9"] == ["80 / 80 / 80"] * 3
    assert rows["write µs p50/99/99.9"] == ["40 / 40 / 40"] * 3
    assert "flush+FUA /s" not in rows  # no FUA in the trace: it said what flushes /s says
    assert rows["sequential per dev"] == ["8.2%", "0.0%", "40.0%"]  # three streams interleaved
    assert rows["sequential per pid"] == ["47.4%", "37.5%", "85.7%"]  # each committer appends


def test_a_share_beside_its_threshold_never_rounds_onto_it(tmp_path):
    """3,000 commits/s at 66 µs is 19.8% of wall time: under the 20%, and printed so."""
    fp = fingerprint_trace(commit_burst_trace(tmp_path / "cb", fsync_us=66))
    assert fp.spike1 is not None and fp.spike1.bound.verdict == "IOPS-bound"
    lead = headline.lead(fp)
    assert lead is not None and "3,000 commits/s, 19.8% of wall time in fsync (under the 20%" in lead, lead
    assert "fsync takes 19.8% of wall time" in fp.spike1.bound.why
    shares = (share_text(0.196, 0.2), share_text(0.1996, 0.2), share_text(0.39, 0.2))
    assert shares == ("19.6%", "19.96%", "39%")


def test_the_diff_leads_each_side_with_its_spike_at_80_columns(burst, tmp_path):
    slower = commit_burst_trace(tmp_path / "slower", fsync_us=400, base_fsync_us=800)
    for trace, out in ((burst, tmp_path / "a.json"), (slower, tmp_path / "b.json")):
        code, _, err = run_iofp("fingerprint", trace, "--json", out)
        assert code == 0, err
    lines = at_80("diff", tmp_path / "a.json", tmp_path / "b.json")
    a = " ".join(x.strip() for x in lines[2 : next(i for i, x in enumerate(lines) if x.startswith("B "))])
    assert a.startswith("1 spike; spike #1 09:15:12-09:15:17 (42-47 s): fsync-latency-bound: 3,000 commits/s")
    assert all(x.startswith("   ") for x in lines[2:4])  # wrapped under its own indent


def test_catalog_list_wraps_the_bound_never_cuts_it(burst, tmp_path):
    slower = commit_burst_trace(tmp_path / "slower", base_fsync_us=800)  # its baseline commit-bound too
    db = tmp_path / "cat.duckdb"
    for trace in (burst, slower):
        fp = tmp_path / f"{trace.name}.json"
        assert run_iofp("fingerprint", trace, "--json", fp)[0] == 0
        code, _, err = run_iofp("catalog", "add", fp, "--service", "order-router", "--catalog", db)
        assert code == 0, err
    lines = at_80("catalog", "list", "--catalog", db)
    head = next(x for x in lines if x.startswith("#"))
    assert head.split()[-2:] == ["bound", "by"]
    bounds = [x[head.index("bound by") :].strip() for x in lines[lines.index(head) + 1 :]]
    assert bounds[:2] == ["IOPS", "fsync latency"], lines


@pytest.mark.slow
def test_every_hot_window_is_in_a_spike_or_the_text_says_why(mysql_trace):
    """linux-mysql: "a window is hot above 47.6 IOPS" while ~90 windows above it are in no spike. The
    summary counts them where it states the threshold and the rule that keeps a spike, and the
    count is the trace's own (its 5 s windows, counted here)."""
    import duckdb

    fp = fingerprint_trace(mysql_trace)
    reg, t, w_s = fp.regimes, fp.regimes.thresholds, fp.params.window_ns / 1e9
    t0, width = fp.provenance.capture_window_ns[0], fp.params.window_ns
    [(hot,)] = duckdb.sql(
        f"SELECT count(*) FROM (SELECT (ts_ns - {t0}) // {width} "
        f"AS w, count(*) / {w_s} AS iops, sum(size) / {w_s} / 1e6 AS mbps FROM '{mysql_trace}/io/*.parquet' "
        f"GROUP BY w) WHERE iops > {t.hot_iops} OR mbps > {t.hot_mbps}"
    ).fetchall()
    assert (reg.hot_windows, reg.hot_outside_spikes) == (hot, 89) and hot == 112
    text = " ".join(summary_text(fp).split())
    assert "a window is hot above 47.6 IOPS or 0.57 MB/s" in text
    assert "112 windows are hot, 89 of them in no spike: lone hot windows (bursts too brief to name), " \
        "neither sustained nor outsized" in text  # fmt: skip


def summary_text(fp) -> str:
    from rich.console import Console

    from fingerprint.summary import render

    console = Console(width=80, record=True, file=open(os.devnull, "w"))  # noqa: SIM115
    render(fp, console)
    return console.export_text()


def test_every_shape_classify_names_is_one_a_stored_document_is_trusted_with():
    import ast
    import inspect

    from fingerprint import classify

    tree = ast.parse(inspect.getsource(classify.classify_shape))
    names = [n.value for n in ast.walk(tree) if isinstance(n, ast.Assign) and n.targets[0].id == "name"]
    consts = [c.value for v in names for c in ast.walk(v) if isinstance(c, ast.Constant)]
    given = {c for c in consts if isinstance(c, str)}
    assert given == set(classify.SHAPE_NAMES)


def test_a_capped_scopes_reason_is_the_rate_held_and_the_requests_waiting():
    from iofp.fingerprint_doc import Bound

    b = Bound(verdict="capped", side="demand+service", why="",
              numbers={"iops": 500.0, "waiting_requests": 3.2, "waiting_share": 0.8})  # fmt: skip
    assert headline.reason(b) == "held at 500 IOPS with 3.2 requests waiting, 80% of the application's time"
    assert headline.bound_words("capped") == "capped"
