"""The catalog stores real fingerprints (computed by DuckDB from real Parquet traces) and reviews drift."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import time

import pyarrow as pa
import pytest
from conftest import REPO
from helpers import IOFP, run_iofp

from fingerprint.api import fingerprint_trace
from fingerprint.catalog import Catalog
from iofp.contract import TraceMeta, TraceWriter
from iofp.errors import BadInput


def _steady_trace(root, *, iops: int, lat_us: int, seconds: int = 12, start_ns: int = 0):
    """A random-read trace at a constant rate and constant latency, written through the contract."""
    n = iops * seconds
    step = 1_000_000_000 // iops
    tbl = pa.table(
        {
            "ts_ns": pa.array([i * step for i in range(n)], pa.int64()),
            "lat_ns": pa.array([lat_us * 1000] * n, pa.int64()),
            "device": ["vdb"] * n,
            "offset": pa.array([(i * 7919 % 50_000) * 4096 for i in range(n)], pa.int64()),
            "size": pa.array([4096] * n, pa.int32()),
            "op": ["read"] * n,
            "inflight": pa.array([1] * n, pa.int32()),
        }
    )
    with TraceWriter(root, TraceMeta(source="capture", capture_start_ns=start_ns)) as w:
        w.write("io", tbl)
    return root


@pytest.fixture
def quarters(tmp_path):
    """Three quarters of one service: Q1 baseline, Q2 same demand on a slower device, Q3 twice the IOPS."""
    day = 86_400 * 10**9
    q1 = fingerprint_trace(
        _steady_trace(tmp_path / "q1", iops=500, lat_us=100, start_ns=1_700_000_000 * 10**9)
    )
    q2 = fingerprint_trace(
        _steady_trace(tmp_path / "q2", iops=500, lat_us=300, start_ns=1_700_000_000 * 10**9 + 91 * day)
    )
    q3 = fingerprint_trace(
        _steady_trace(tmp_path / "q3", iops=1000, lat_us=300, start_ns=1_700_000_000 * 10**9 + 182 * day)
    )
    paths = []
    for name, doc in (("q3", q3), ("q1", q1), ("q2", q2)):  # added out of order on purpose
        p = tmp_path / f"{name}.json"
        p.write_text(json.dumps(doc.to_dict()))
        paths.append(p)
    return paths


def test_trend_orders_by_capture_time_and_separates_device_from_workload(tmp_path, quarters):
    db = tmp_path / "cat.duckdb"
    for p in quarters:
        code, out, err = run_iofp("catalog", "add", str(p), "--service", "order-router", "--catalog", str(db))
        assert code == 0, err
    with Catalog(db) as cat:
        entries, steps = cat.trend("order-router")
    assert [e.source_file.rsplit("/", 1)[-1] for e in entries] == ["q1.json", "q2.json", "q3.json"]
    assert [round(e.iops) for e in entries] == [500, 500, 1000]
    assert [round(e.p99_us) for e in entries] == [100, 300, 300]
    # Q1 -> Q2: latency tripled at the same demand: the device got slower.
    assert steps[0].diff.verdict.startswith("the device got slower")
    # Q2 -> Q3: twice the IOPS at the same latency: the workload got harder.
    assert steps[1].diff.verdict == "the workload got harder"
    assert {c.metric for c in steps[1].diff.flagged} >= {"IOPS", "MB/s"}

    code, out, err = run_iofp("catalog", "trend", "--service", "order-router", "--catalog", str(db))
    assert code == 1, err  # the newest step drifted
    # the numbers as `iofp diff` prints them, the unit in the metric's name (these were "5e+02 -> 1e+03"),
    # with the limit each move had to exceed
    assert "    steady IOPS: 500 -> 1,000 (+100.0%, beyond ±50; harder)" in out
    assert "    steady latency p99 (µs): 100 -> 300 (+200.0%, beyond x1.1; slower)" in out
    # with an SLO the newest holds, the drift is shown but does not fail the review
    trend = ["catalog", "trend", "--service", "order-router", "--catalog", str(db)]
    code, out, err = run_iofp(*trend, "--slo", "p99<=1ms")
    assert code == 0, err
    # one it misses: the step says so, with why (the exit status alone did before)
    code, out, err = run_iofp(*trend, "--slo", "p99<=200us")
    assert code == 1, err
    assert "    SLO 'p99<=200us': A meets it; B misses it: steady: read p99 300 µs > 200 µs" in out
    # at 80 columns a service's name is its table's title, never cut into a column of 3
    for args in (["list"], trend[1:]):
        r = subprocess.run([*IOFP, "catalog", *args, "--catalog", str(db)], capture_output=True, text=True,
                           cwd=REPO, env={**os.environ, "COLUMNS": "80"})  # fmt: skip
        assert "order-router: 3 fingerprint(s)" in r.stdout, r.stdout
        assert max(len(line.rstrip()) for line in r.stdout.splitlines()) <= 80
    code, _, err = run_iofp("catalog", "list", "--service", "nosuch", "--catalog", str(db))
    # a typo in a service's name: the services that are there
    known = "its services: order-router"
    assert (code, err) == (2, f"iofp: no fingerprints for service 'nosuch' in {db}; {known}\n")

    code, out, err = run_iofp(*trend, "--json", "-")
    assert code == 1, err
    doc = json.loads(out)
    assert [s["verdict"].split(":")[0] for s in doc["steps"]] == [
        "the device got slower",
        "the workload got harder",
    ]


def test_same_fingerprint_is_stored_once(tmp_path, quarters):
    db = tmp_path / "cat.duckdb"
    args = ["catalog", "add", str(quarters[0]), "--service", "svc", "--catalog", str(db)]
    assert run_iofp(*args)[0] == 0
    code, _, err = run_iofp(*args)
    assert code == 2
    assert err.strip() == f"iofp: {quarters[0]} is already in the catalog as #1"
    with Catalog(db) as cat:
        assert len(cat.entries(service="svc")) == 1


def test_a_fingerprint_labelled_with_its_service_is_added_under_it(tmp_path, quarters):
    """`--label service=NAME` at capture or fingerprint time names the service: add needs no
    --service then; without either, one line says which to give, before the catalog is touched."""
    db = tmp_path / "cat.duckdb"
    code, _, err = run_iofp("catalog", "add", str(quarters[0]), "--catalog", str(db))
    assert code == 2 and err == (
        f"iofp: {quarters[0]} has no service label: give --service NAME (or fingerprint its trace with "
        "--label service=NAME)\n"
    )
    assert not db.exists()
    doc = json.loads(quarters[0].read_text())
    doc["provenance"]["labels"]["service"] = "order-router"
    quarters[0].write_text(json.dumps(doc))
    code, out, err = run_iofp("catalog", "add", str(quarters[0]), "--catalog", str(db))
    assert code == 0 and f"as #1 of order-router in {db}" in out, err
    code, out, err = run_iofp(
        "catalog", "add", str(quarters[1]), "--service", "order-router", "--catalog", str(db)
    )
    assert code == 0, err
    with Catalog(db) as cat:
        assert [e.service for e in cat.entries()] == ["order-router", "order-router"]


def test_bad_input_is_one_line_exit_2(tmp_path):
    db = tmp_path / "cat.duckdb"
    notfp = tmp_path / "x.json"
    notfp.write_text('{"hello": 1}')
    with Catalog(db) as cat:
        with pytest.raises(Exception, match="not an iofp fingerprint"):
            cat.add(json.loads(notfp.read_text()), "svc", str(notfp))
        with pytest.raises(BadInput, match=r"no fingerprints for service 'nope' in .*; add one with iofp"):
            cat.trend("nope")  # an empty catalog


def test_reading_a_missing_catalog_says_so_and_creates_nothing(tmp_path, quarters):
    db = tmp_path / "nope" / "cat.duckdb"
    want = (f"iofp: {db}: no such catalog; add a fingerprint first: iofp catalog add FP.json --service NAME "
            f"--catalog {db}")  # fmt: skip
    for args in (["list"], ["show", "1"], ["trend", "--service", "svc"]):
        code, out, err = run_iofp("catalog", *args, "--catalog", str(db))
        assert (code, err.strip()) == (2, want)
    assert not (tmp_path / "nope").exists()
    # Once something is added, the same read-only commands open it (without changing it).
    assert run_iofp("catalog", "add", str(quarters[0]), "--service", "svc", "--catalog", str(db))[0] == 0
    before = db.read_bytes()
    code, out, err = run_iofp("catalog", "list", "--catalog", str(db))
    assert code == 0 and "svc" in out and db.read_bytes() == before


def hold_catalog(db) -> subprocess.Popen:
    """Another process with the catalog open for writing (DuckDB locks the file) until its stdin closes."""
    code = (
        "import duckdb, sys\ncon = duckdb.connect(sys.argv[1])\nprint('held', flush=True)\nsys.stdin.read()\n"
    )
    proc = subprocess.Popen(
        [sys.executable, "-c", code, str(db)], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True
    )
    assert proc.stdout is not None and proc.stdout.readline() == "held\n"
    return proc


@pytest.mark.slow  # 3-13 s: waits on the lock
def test_eight_concurrent_adds_all_land(tmp_path, quarters):
    """Eight `catalog add` processes at once: each waits its turn for the file's lock, none fails.
    The wait is long here: eight interpreters starting beside a CI's CPU hog took the last one past
    the default 30 s (what is tested is that none is lost, not how long a turn takes)."""
    db = tmp_path / "cat.duckdb"
    procs = [
        subprocess.Popen(
            [*IOFP, "catalog", "add", str(quarters[i % 3]), "--service", f"svc{i}", "--catalog", str(db)],
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            text=True,
            cwd=REPO,
            env={**os.environ, "IOFP_CATALOG_WAIT": "110s"},
        )
        for i in range(8)
    ]
    results = [(p.wait(timeout=120), p.stderr.read()) for p in procs]
    assert [r for r in results if r[0] != 0] == []
    with Catalog(db, read_only=True) as cat:
        assert sorted(e.service for e in cat.entries()) == [f"svc{i}" for i in range(8)]


@pytest.mark.slow  # waits on the lock
def test_a_busy_catalog_is_waited_for_then_named_with_its_holder(tmp_path, quarters):
    db = tmp_path / "cat.duckdb"
    assert run_iofp("catalog", "add", str(quarters[0]), "--service", "svc", "--catalog", str(db))[0] == 0
    holder = hold_catalog(db)
    try:
        # released after 1 s: `list` waits for it and succeeds
        t0 = time.monotonic()
        lister = subprocess.Popen([*IOFP, "catalog", "list", "--catalog", str(db)], cwd=REPO,
                                  stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)  # fmt: skip
        time.sleep(1.0)
        holder.stdin.close()
        holder.wait(timeout=10)
        out, err = lister.communicate(timeout=60)
        assert lister.returncode == 0, err
        assert "svc" in out and time.monotonic() - t0 >= 1.0
        # held past the wait: one line naming the holder, exit 1, nothing changed
        holder = hold_catalog(db)
        before = db.read_bytes()
        env = {**os.environ, "IOFP_CATALOG_WAIT": "1"}
        add = [*IOFP, "catalog", "add", str(quarters[1]), "--service", "svc", "--catalog", str(db)]
        r = subprocess.run(add, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
        assert r.returncode == 1, r.stderr
        assert r.stderr.startswith(f"iofp: the catalog {db} is busy: pid {holder.pid} ({sys.executable} -c ")
        assert r.stderr.endswith("has held it for over 1 s; run this again once it is done\n")
    finally:
        holder.kill()
        holder.wait()
    assert db.read_bytes() == before


def test_a_bad_catalog_wait_is_one_line_for_the_catalog_commands_only(tmp_path, quarters):
    """$IOFP_CATALOG_WAIT takes a duration like every other time ('10s' broke every command, even
    --version, with a traceback); a value that is none stops only the commands that open a catalog."""
    env = {**os.environ, "IOFP_CATALOG_WAIT": "soon"}
    r = subprocess.run([*IOFP, "--version"], capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert r.returncode == 0 and r.stderr == ""
    add = [
        *IOFP,
        "catalog",
        "add",
        str(quarters[0]),
        "--service",
        "svc",
        "--catalog",
        str(tmp_path / "c.duckdb"),
    ]
    r = subprocess.run(add, capture_output=True, text=True, cwd=REPO, env=env, timeout=60)
    assert r.returncode == 2
    assert (
        r.stderr
        == "iofp: $IOFP_CATALOG_WAIT 'soon' is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h\n"
    )
    r = subprocess.run(add, capture_output=True, text=True, cwd=REPO, env={**env, "IOFP_CATALOG_WAIT": "10s"})
    assert r.returncode == 0, r.stderr


@pytest.mark.slow
@pytest.mark.parametrize("damage", ["foreign", "truncated", "empty"])
def test_a_damaged_catalog_is_one_line_exit_2(tmp_path, quarters, damage):
    db = tmp_path / "cat.duckdb"
    for q in quarters:
        assert run_iofp("catalog", "add", str(q), "--service", "svc", "--catalog", str(db))[0] == 0
    data = db.read_bytes()
    db.write_bytes({"foreign": b"SQLite format 3\0" + data[16:4096], "truncated": data[: len(data) // 2],
                    "empty": b""}[damage])  # fmt: skip
    for args in (
        ["list"],
        ["show", "1"],
        ["trend", "--service", "svc"],
        ["add", str(quarters[0]), "--service", "x"],
    ):
        code, _, err = run_iofp("catalog", *args, "--catalog", str(db))
        assert code == 2 and err.count("\n") == 1 and str(db) in err, (args, err)
        assert "restore it from a copy, or pass --catalog NEW to start another" in err, err


@pytest.mark.parametrize(
    ("steady", "baseline"),
    [(24, 24), (5, 10), (5, 11), (11, 24), (12, 24), (5, None), (None, 24), (None, None), (2**33, 2**34)],
)
def test_the_catalog_picks_the_scope_the_fingerprint_stands_by(tmp_path, steady, baseline):
    """catalog_entries.sql's twin of Fingerprint.typical_scope, on the market-open sample with its
    steady and baseline scopes resized or removed: the same scope in every case."""
    from iofp.fingerprint_doc import load

    fp = load(REPO / "samples/fingerprints/market-open.fp.json")
    for name, windows in (("steady", steady), ("baseline", baseline)):
        if windows is None:
            setattr(fp, name, None)
        else:
            getattr(fp, name).windows = windows
    with Catalog(tmp_path / "c.duckdb") as cat:
        cat.add(fp, "order-router")
        [entry] = cat.entries()
    assert entry.scope == fp.typical_scope()


def test_a_directory_given_as_the_catalog_is_named_with_the_fix(tmp_path, quarters):
    for args in (["list"], ["add", str(quarters[0]), "--service", "svc"]):
        code, _, err = run_iofp("catalog", *args, "--catalog", str(tmp_path))
        fix = f"name the catalog file, e.g. {tmp_path / 'catalog.duckdb'}"
        want = f"iofp: --catalog {tmp_path} is a directory; {fix}\n"
        assert (code, err) == (2, want)
