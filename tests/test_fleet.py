"""`iofp fleet` on local Spark against a real S3 server process (moto's, on a loopback port): 3
services x 4 hosts x 5 days of generated traces shipped into a lake, every fingerprint equal to
serial `iofp fingerprint` of the same trace, a planted bad disk flagged; a rerun resumes; an
unreadable trace is named while the rest go on; and Spark SQL reads the lake as it is.

One Spark session (local[2]) for the module. Run under the heavy-run lock:
    flock /tmp/iofp-heavy.lock .venv/bin/python -m pytest tests/test_fleet.py
"""

from __future__ import annotations

import json
import os
import re

import pytest
from conftest import REPO
from helpers import close, run_iofp
from rich.console import Console
from s3server import BUCKET, s3_server

from bench.fleet_lake import dates_from, fill_lake
from fingerprint.api import fingerprint_trace
from iofp import objstore
from iofp.contract import FINGERPRINT, IO_TABLE, fetch_trace, open_trace

pyspark = pytest.importorskip("pyspark", reason="needs pyspark (pip install '.[fleet]'; scripts/setup.sh)")
pytestmark = pytest.mark.slow  # a Spark session and a 60-trace lake: a minute

from fleet import quarterly, render_view, run_fleet, spark_session  # noqa: E402

LAKE = objstore.Url(BUCKET, "lake")
SERVICES = ["orders", "pricing", "ledger"]
DATES = dates_from("2026-01-05", 5)
BAD = ("ledger", 2)  # led-03's disk is 6x slower


# The store fails the first 4 PUTs of one fingerprint (500s): botocore's own 4 tries are spent, the
# task fails, and Spark runs it again.
FLAKY = "host=ord-02/service=orders/date=2026-01-06/fingerprint.json"


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    os.environ["IOFP_TEST_S3_FAIL_PUT"] = f"{FLAKY}:4"
    try:
        with s3_server(tmp_path_factory.mktemp("s3")) as server:
            yield server
    finally:
        os.environ.pop("IOFP_TEST_S3_FAIL_PUT", None)


@pytest.fixture(scope="module")
def spark():
    session = spark_session("local[2]")
    yield session
    session.stop()


@pytest.fixture(scope="module")
def lake(s3, tmp_path_factory):
    made = fill_lake(LAKE, SERVICES, 4, DATES, bad=BAD, spool=tmp_path_factory.mktemp("spool"),
                     rate=100, seconds=10)  # fmt: skip
    assert len(made) == 60
    return made


@pytest.fixture(scope="module")
def first_run(lake, spark):
    return run_fleet(LAKE, spark=spark)


def test_every_trace_is_fingerprinted_as_serial_iofp_fingerprint_does(first_run, tmp_path):
    assert len(first_run) == 60 and {r["status"] for r in first_run} == {"made"}
    retried = [r["trace"] for r in first_run if r["attempt"] > 0]
    # the failed task, tried again (on a busy machine a few others may be too: a store's timeout
    # under load is the same transient failure, and Spark's answer to it is the same)
    assert str(LAKE.join(FLAKY.rsplit("/", 1)[0])) in retried
    assert len({r["trace"] for r in first_run}) == 60
    for r in first_run:  # every one: serial fingerprint_trace (what `iofp fingerprint` runs), ~0.4 s each
        url = objstore.url_of(r["trace"])
        serial = fingerprint_trace(fetch_trace(url, tmp_path / url.key)).to_dict()
        stored = json.loads(objstore.get_bytes(url.join(FINGERPRINT)))
        for d in (serial, stored, r["doc"]):
            d["provenance"].pop("fingerprint_tool_version")
        # figure by figure, floats to 1e-12 (DuckDB's parallel sums may differ in the last bit)
        assert close(r["doc"], serial)
        assert close(stored, serial)


def test_the_bad_disk_is_the_one_outlier(first_run):
    view = quarterly(first_run)
    assert sorted(view["services"]) == sorted(SERVICES)
    assert all(s["host_days"] == 20 and s["hosts"] == 4 for s in view["services"].values())
    flagged = {(o["service"], o["host"], o["figure"]) for o in view["outliers"]}
    assert flagged == {("ledger", "led-03", "commit_p99_us"), ("ledger", "led-03", "flush_p99_us")}
    assert all(o["why"].startswith("the device") and o["ratio"] > 3 for o in view["outliers"])
    console = Console(width=80, record=True)
    render_view(view, console)
    text = console.export_text()
    assert max(len(line) for line in text.splitlines()) <= 80
    assert "outlier: ledger led-03: commit p99" in text


def test_a_rerun_resumes_and_an_unreadable_trace_is_named(first_run, spark, lake):
    bad = LAKE.join("host=ord-09/service=orders/date=2026-01-05")
    objstore.put_bytes(bad.join("io/part-000001.parquet"), b"PAR1 this is no parquet PAR1")
    objstore.put_bytes(bad.join("trace.json"), b'{"schema_version": 1}')
    rows = run_fleet(LAKE, spark=spark)
    by_status = {s: [r for r in rows if r["status"] == s] for s in ("made", "current", "unreadable")}
    assert (len(by_status["current"]), len(by_status["made"])) == (60, 0)
    [u] = by_status["unreadable"]
    assert u["trace"] == str(bad) and "part-000001.parquet" in u["error"]
    objstore.delete(bad.join("trace.json"))
    objstore.delete(bad.join("io/part-000001.parquet"))


def test_iofp_fleet_prints_the_view_and_writes_json(first_run, tmp_path, spark):
    out = tmp_path / "q.json"
    code, stdout, err = run_iofp("fleet", str(LAKE), "--json", str(out))
    assert code == 0, err
    assert "60 traces: 0 fingerprinted, 60 current, 0 unreadable" in stdout
    view = json.loads(out.read_text())
    assert [o["host"] for o in view["outliers"]] == ["led-03", "led-03"]


def test_spark_sql_reads_the_lake_as_iofp_does(lake, spark, tmp_path):
    """The lake's io tables read by spark.read.parquet: the trace contract's types survive, the
    partition columns appear, and per host-day counts and p99 equal iofp's fingerprint."""
    local = tmp_path / "lake"
    picks = [(h, s, d) for (h, s, d) in lake if d in DATES[:2] and s == "ledger"]
    for h, s, d in picks:
        part = f"host={h}/service={s}/date={d}"
        fetch_trace(LAKE.join(part), local / part)
    io = spark.read.option("basePath", str(local)).parquet(str(local / "host=*/service=*/date=*/io"))
    types = {f.name: f.dataType.simpleString() for f in io.schema.fields}
    want = {"ts_ns": "bigint", "lat_ns": "bigint", "offset": "bigint", "size": "int", "op": "string",
            "device": "string", "error": "smallint", "host": "string", "service": "string", "date": "date"}
    assert {k: types[k] for k in want} == want
    # the README's block, as written, on this lake
    section = (REPO / "README.md").read_text().split("### Querying the lake", 1)[1]
    block = re.search(r"```python\n(.*?)```", section, re.S)[1].replace('"lake', f'"{local}')
    scope = {"spark": spark}
    exec(block, scope)
    got = {(r["host"], str(r["date"])): r for r in scope["per_day"].collect()}
    assert len(got) == len(picks)
    for h, _, d in picks:
        trace = open_trace(local / f"host={h}/service=ledger/date={d}")
        fp = fingerprint_trace(trace.root)
        assert got[(h, d)]["ios"] == fp.whole.mix.reads + fp.whole.mix.writes
        assert got[(h, d)]["ios"] == trace.num_rows(IO_TABLE) - fp.whole.mix.flushes
        assert got[(h, d)]["p99_ns"] / 1e3 == pytest.approx(fp.whole.latency["all"].p99_us, abs=1e-9)
