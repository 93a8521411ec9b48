"""Inputs that would cost without bound, refused in one line (exit 2) before the work: timestamps 80
years apart, a Parquet footer declaring 1e9 rows, JSON nested a million levels deep, a 169 MB
fingerprint. Each command runs as a process of its own, under a watch of its time, peak memory and
the scratch space it leaves: refused within seconds, in well under 1 GB, leaving nothing.
"""

from __future__ import annotations

import json
import os
import resource
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import REPO, is_root
from helpers import IOFP, run_iofp, write_trace
from hostile import declare_rows, declare_ts_max

from iofp import scratch
from iofp.contract import MANIFEST, TraceMeta, TraceWriter
from iofp.sqlfiles import load_sql

pytestmark = pytest.mark.slow  # each case runs every reader as a process of its own: ~1 min in all

YEAR_NS = 365 * 24 * 3600 * 10**9
SAMPLE_FP = REPO / "samples" / "fingerprints" / "market-open.fp.json"

# A child's peak memory, measured in a process of its own (RUSAGE_CHILDREN is the largest child's).
_PEAK = (
    "import resource, subprocess, sys; r = subprocess.run(sys.argv[1:]); "
    "print(resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss, r.returncode, file=sys.stderr)"
)


def bounded(*args: object, env: dict | None = None, timeout: float = 60) -> tuple[int, str, float, int]:
    """`iofp ARGS` in a process of its own: (exit status, stderr's first line, seconds, peak RSS MiB)."""
    t0 = time.monotonic()
    r = subprocess.run(
        [sys.executable, "-c", _PEAK, *IOFP, *map(str, args)],
        cwd=REPO,
        capture_output=True,
        text=True,
        timeout=timeout,
        env={**os.environ, **(env or {})},
    )
    took = time.monotonic() - t0
    *lines, last = r.stderr.rstrip("\n").split("\n")
    peak_kib, code = (int(x) for x in last.split())
    return code, "\n".join(lines) + "\n" if lines else "", took, peak_kib >> 10


def assert_refused_fast(res: tuple[int, str, float, int], *words: str) -> None:
    code, err, took, peak = res
    assert code == 2, err
    assert err.startswith("iofp: ") and err.count("\n") == 1, err
    for w in words:
        assert w in err, err
    assert took < 20, f"{took:.1f} s to refuse"  # a CLI start is ~1-3 s here, busy or not
    assert peak < 600, f"{peak} MiB to refuse"


def readers(trace: Path, out: Path) -> list[list[object]]:
    cmds: list[list[object]] = [
        ["fingerprint", trace, "--json", out / "fp.json"],
        ["report", trace, "-o", out / "r.html"],
        ["iolog", trace, "-o", out / "x.iolog", "--target", "/dev/shm/iofp-never.dat"],
    ]
    if is_root() and shutil.which("fio"):
        cmds.append(
            ["replay", trace, "--target", "/dev/shm/iofp-never.dat", "-o", out / "r", "--no-fidelity"]
        )
    return cmds


def test_timestamps_eighty_years_apart_are_refused_before_any_work(tmp_path):
    trace = write_trace(
        tmp_path / "t",
        {
            "ts_ns": [0, 1, 2, 80 * YEAR_NS, 80 * YEAR_NS + 1, 80 * YEAR_NS + 2],
            "offset": [0] * 6,
            "size": [4096] * 6,
            "op": ["read"] * 6,
        },
    )
    for args in readers(trace, tmp_path / "out"):
        assert_refused_fast(
            bounded(*args), f"{trace}: 80 years from its first I/O to its last", "IOFP_MAX_SPAN"
        )
    assert not (tmp_path / "out").exists() and not Path("/dev/shm/iofp-never.dat").exists()
    # the limit is stated, and raised for a trace that truly is that long: 40 days, and --window 1h
    days = 40 * 24 * 3600 * 10**9
    long = write_trace(
        tmp_path / "long", {"ts_ns": [0, days], "offset": [0, 0], "size": [512, 512], "op": ["read"] * 2}
    )
    args = ("fingerprint", long, "--json", tmp_path / "fp.json", "--window", "1h")
    assert_refused_fast(bounded(*args), "40.0 days from its first I/O to its last")
    code, err, _, _ = bounded(*args, env={"IOFP_MAX_SPAN": "60d"})
    assert code == 0, err


def test_a_fio_iolog_eighty_years_long_is_not_imported(tmp_path):
    src = tmp_path / "vendor.iolog"
    far = 80 * YEAR_NS // 1000
    src.write_text(
        f"fio version 3 iolog\n0 sdb add\n0 sdb open\n1 sdb read 0 4096\n{far} sdb read 0 4096\n"
        f"{far + 1} sdb close\n"
    )
    assert_refused_fast(
        bounded("import", "fio-iolog", src, "-o", tmp_path / "t"), "80 years", "IOFP_MAX_SPAN"
    )
    assert not (tmp_path / "t").exists()


def test_a_manifest_claiming_eighty_years_is_refused(tmp_path):
    trace = write_trace(
        tmp_path / "t", {"ts_ns": [0, 1], "offset": [0, 0], "size": [512, 512], "op": ["read", "read"]}
    )
    doc = json.loads((trace / MANIFEST).read_text())
    (trace / MANIFEST).write_text(json.dumps({**doc, "duration_ns": 80 * YEAR_NS}))
    assert_refused_fast(bounded("fingerprint", trace, "--json", tmp_path / "fp.json"), "capture window")


def test_a_footer_that_hides_its_rows_span_is_refused(tmp_path):
    """The fingerprint takes the first and last arrival from the io files' footers (ts_ns's
    statistics) rather than read every time: a footer that says 2 ns where the rows run 80 years (or
    ends a second early) would have the windows, rates and counts placed by it, the rows past it
    uncounted or out of range. The per-window table's own first and last times are checked against
    them before anything is sized by the span."""
    cols = {"ts_ns": [0, 1, 2, 80 * YEAR_NS], "offset": [0] * 4, "size": [4096] * 4, "op": ["read"] * 4}
    trace = write_trace(tmp_path / "t", cols)
    part = next((trace / "io").glob("part-*.parquet"))
    declare_ts_max(part, 2)
    assert pq.ParquetFile(part).metadata.row_group(0).column(0).statistics.max == 2
    res = bounded("fingerprint", trace, "--json", tmp_path / "out" / "fp.json")
    assert_refused_fast(res, f"from 0 to 2 ns, but its rows run from 0 to {80 * YEAR_NS}", "changed after")
    assert not (tmp_path / "out").exists()
    second = 10**9
    cols["ts_ns"] = [0, second, 2 * second, 3 * second]
    early = write_trace(tmp_path / "early", cols)
    declare_ts_max(next((early / "io").glob("part-*.parquet")), 2 * second)
    assert_refused_fast(bounded("fingerprint", early, "--json", tmp_path / "fp.json"), "changed after")
    true = write_trace(tmp_path / "true", cols)  # the same rows, their footer as written
    code, err, _, _ = bounded("fingerprint", true, "--json", tmp_path / "fp.json")
    assert code == 0, err


def test_a_parquet_footer_declaring_a_billion_rows_is_refused_before_a_row_is_read(tmp_path):
    """44 MB of Parquet declaring 1e9 rows spilled 10 GB to /tmp in 4 minutes, and left it there
    after SIGTERM and kill -9. The footer is checked first: refused in seconds, nothing spilled."""
    trace = write_trace(
        tmp_path / "t",
        {"ts_ns": list(range(1000)), "offset": [0] * 1000, "size": [4096] * 1000, "op": ["read"] * 1000},
    )
    part = next((trace / "io").glob("part-*.parquet"))
    declare_rows(part, 10**9)
    assert pq.ParquetFile(part).metadata.num_rows == 10**9
    tmp = tmp_path / "tmp"  # where a spill would go
    tmp.mkdir()
    for args in readers(trace, tmp_path / "out"):
        assert_refused_fast(
            bounded(*args, env={"TMPDIR": str(tmp)}), f"{trace}: 1,000,000,000 rows", "IOFP_MAX_ROWS"
        )
    assert list(tmp.iterdir()) == []


@pytest.mark.parametrize("column", ["device", "op", "comm", "rwbs"])
def test_a_string_column_holding_a_huge_value_is_refused_from_the_footer(column, tmp_path):
    """A 30 KB file of 4 rows held a 400 MB device name: refusing the name took 2.5 GB, reading the
    column first (a comm or rwbs that big went on into the fingerprint). The footer says how much
    text each column chunk decodes to: refused from it, in the memory of a CLI start."""
    n, bomb = 4, "x" * (256 << 20)
    rows = {"ts_ns": list(range(n)), "offset": [0] * n, "size": [4096] * n, "op": ["read"] * n,
            "pid": [7] * n, "comm": ["db"] * n, "rwbs": ["R"] * n}  # fmt: skip
    rows[column] = [bomb, *rows.get(column, ["loop9"] * n)[1:]]
    trace = write_trace(tmp_path / "t", rows)
    del rows, bomb
    part = next((trace / "io").glob("part-*.parquet"))
    assert part.stat().st_size < 1 << 20  # it compresses to nothing
    cmds = readers(trace, tmp_path / "out") if column == "device" else readers(trace, tmp_path / "out")[:1]
    for args in cmds:
        assert_refused_fast(bounded(*args), f"{part}: column {column} holds ", "at most 255 bytes")


def deep(n: int) -> str:
    return "[" * n + "]" * n


@pytest.mark.parametrize("depth", [100, 1_000_000])
def test_json_nested_deep_is_one_line_in_every_reader(depth, tmp_path):
    """A RecursionError traceback in 9 commands."""
    bad = tmp_path / "deep.json"
    bad.write_text('{"fingerprint_version": 2, "x": ' + deep(depth) + "}")
    results = tmp_path / "res"
    results.mkdir()
    for record in ("results.json", "headroom.json", "probe.json"):
        (results / record).write_text('{"kind": "x", "v": ' + deep(depth) + "}")
    trace = write_trace(
        tmp_path / "t", {"ts_ns": [0, 1], "offset": [0, 0], "size": [512, 512], "op": ["read", "read"]}
    )
    (trace / MANIFEST).write_text('{"schema_version": 1, "extra": ' + deep(depth) + "}")
    cat = tmp_path / "c.duckdb"
    commands = [
        ["diff", bad, SAMPLE_FP],
        ["fio-job", bad, "-o", tmp_path / "j.fio"],
        ["catalog", "add", bad, "--service", "s", "--catalog", cat],
        ["compare", results],
        ["report", results, "-o", tmp_path / "r.html"],
        ["fingerprint", trace, "--json", tmp_path / "f"],
    ]
    for args in commands:
        assert_refused_fast(bounded(*args), "nested deeper than 64 levels")


def test_a_169_mb_fingerprint_is_refused_before_it_is_parsed(tmp_path):
    doc = json.loads(SAMPLE_FP.read_text())
    doc["provenance"]["extra"]["pad"] = "x" * (169 << 20)
    big = tmp_path / "big.fp.json"
    big.write_text(json.dumps(doc))
    mib = big.stat().st_size / (1 << 20)  # 169 MiB of padding and the sample's own size
    cat = tmp_path / "c.duckdb"
    for args in (
        ["diff", SAMPLE_FP, big],
        ["fio-job", big, "-o", tmp_path / "j.fio"],
        ["catalog", "add", big, "--service", "s", "--catalog", cat],
    ):
        assert_refused_fast(bounded(*args), f"{mib:.1f} MiB, larger than any fingerprint iofp reads (16 MiB)")
    assert not cat.exists()


def test_one_huge_entry_never_stops_the_catalog_and_rm_removes_it(tmp_path):
    """One 169 MB fingerprint in the catalog (stored by an iofp without the limit) made `catalog list`
    and `trend` fail for every service, with no `catalog rm`."""
    import duckdb

    cat = tmp_path / "c.duckdb"
    assert run_iofp("catalog", "add", str(SAMPLE_FP), "--service", "a", "--catalog", str(cat))[0] == 0
    doc = json.loads(SAMPLE_FP.read_text())
    doc["provenance"]["extra"]["pad"] = "x" * (169 << 20)
    con = duckdb.connect(str(cat))
    params = {
        "service": "b",
        "added_us": 0,
        "captured_us": None,
        "source_file": "big.json",
        "digest": "d",
        "doc": json.dumps(doc),
    }
    con.execute(load_sql("fingerprint.sql", "catalog_insert"), params)
    con.close()
    code, out, err = run_iofp("catalog", "list", "--catalog", str(cat))
    assert code == 0 and "a: 1 fingerprint(s)" in out and "b: 1 fingerprint(s)" in out, err
    assert run_iofp("catalog", "trend", "--service", "a", "--catalog", str(cat))[0] == 0
    assert run_iofp("catalog", "trend", "--service", "b", "--catalog", str(cat))[0] == 0  # one entry: no diff
    code, _, err = run_iofp("catalog", "show", "2", "--catalog", str(cat))
    assert (code, err) == (
        2,
        f"iofp: catalog entry #2: {len(params['doc']) / (1 << 20):.1f} MiB, larger than any fingerprint "
        "iofp reads (16 MiB); remove it: iofp catalog rm 2\n",
    )
    code, out, err = run_iofp("catalog", "rm", "2", "--catalog", str(cat))
    assert (code, out) == (0, f"Removed #2 (big.json) of b from {cat}.\n"), err
    code, out, _ = run_iofp("catalog", "list", "--catalog", str(cat))
    assert code == 0 and "b: " not in out


def spilling_fingerprint(tmp_path: Path) -> tuple[Path, dict]:
    """A trace whose fingerprint spills to scratch under a small DuckDB memory limit: its rows lie
    newest first (as an import of records in completion order can), so the arrival order is not
    the files' and the fingerprint sorts every row (fingerprint/arrival.py falls back to
    arrival_order.sql), where rows in time order are counted in one pass that never spills."""
    n = 3_000_000
    rows = {
        "ts_ns": pa.array(range((n - 1) * 1000, -1, -1000), pa.int64()),
        "lat_ns": pa.array([50_000] * n, pa.int64()),
        "device": pa.array(["d"] * n),
        "offset": pa.array(range(0, n * 4096, 4096), pa.int64()),
        "size": pa.array([4096] * n, pa.int32()),
        "op": pa.array(["read", "write"] * (n // 2)),
    }
    with TraceWriter(tmp_path / "big", TraceMeta(source="test")) as w:
        w.write("io", pa.table(rows))
    return tmp_path / "big", {
        "IOFP_DUCKDB_MEMORY": "60MB",
        "IOFP_DUCKDB_THREADS": "1",
        "TMPDIR": str(tmp_path),
    }


@pytest.mark.slow
@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGKILL])
def test_the_scratch_space_is_gone_after_a_stop_signal_or_the_next_run(sig, tmp_path):
    """DuckDB's spill was left in /tmp after SIGTERM and kill -9. SIGTERM now unwinds (the scratch
    directory is removed on the way out); after SIGKILL, the next iofp removes what was left."""
    trace, env = spilling_fingerprint(tmp_path)
    proc = subprocess.Popen(
        [*IOFP, "fingerprint", str(trace), "--json", str(tmp_path / "fp.json")],
        cwd=REPO,
        env={**os.environ, **env},
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        deadline = time.monotonic() + 120
        while not list(tmp_path.glob(f"{scratch.PREFIX}{proc.pid}-*/duckdb-*/*")):
            assert time.monotonic() < deadline and proc.poll() is None, "it never spilled"
            time.sleep(0.05)
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=60)
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    left = list(tmp_path.glob(f"{scratch.PREFIX}*"))
    if sig == signal.SIGTERM:
        assert proc.returncode == 128 + sig, err
        assert err.startswith("iofp: stopped by SIGTERM") and err.count("\n") == 1, err
        assert left == []
        return
    assert left, "SIGKILL leaves the scratch directory (nothing can run)"
    code = subprocess.run(
        [*IOFP, "fingerprint", str(REPO / "samples/traces/commit-heavy"), "--json", "-"],
        cwd=REPO,
        env={**os.environ, **env},
        capture_output=True,
    ).returncode
    assert code == 0
    assert list(tmp_path.glob(f"{scratch.PREFIX}*")) == []


@pytest.mark.slow
def test_a_query_past_its_spill_limit_is_one_line(tmp_path):
    trace, env = spilling_fingerprint(tmp_path)
    code, err, _, _ = bounded(
        "fingerprint",
        trace,
        "--json",
        tmp_path / "fp.json",
        env={**env, "IOFP_DUCKDB_TEMP": "1MB"},
        timeout=300,
    )
    assert code == 1, err
    assert err.startswith("iofp: the query needed more than iofp lets DuckDB use") and err.count("\n") == 1, (
        err
    )
    assert not (tmp_path / "fp.json").exists()
    assert resource.getrusage(resource.RUSAGE_SELF).ru_maxrss > 0


def test_one_unreadable_object_never_stops_a_catalog_in_a_store_and_rm_removes_it(tmp_path):
    """A catalog in an object store is read from every document in its lake, which anyone who can
    write the lake adds to: one 17 MiB "fingerprint" (or one nested deep) made `catalog list`,
    `trend` and `rm` fail for every service."""
    from s3server import BUCKET, s3_server

    from iofp import objstore

    doc = json.loads(SAMPLE_FP.read_text())
    doc["provenance"]["extra"]["pad"] = "x" * (17 << 20)
    (tmp_path / "s3").mkdir()
    with s3_server(tmp_path / "s3"):
        cat = f"s3://{BUCKET}/lake"
        assert run_iofp("catalog", "add", SAMPLE_FP, "--service", "a", "--catalog", cat)[0] == 0
        for service, body in (("big", json.dumps(doc).encode()), ("deep", b"[" * 100_000)):
            key = f"lake/host=h/service={service}/date=2026-01-01/fingerprint.json"
            objstore.put_bytes(objstore.Url(BUCKET, key), body)
        code, out, err = run_iofp("catalog", "list", "--catalog", cat)
        assert code == 0 and all(f"{s}: 1 fingerprint(s)" in out for s in ("a", "big", "deep")), err
        for service in ("a", "big", "deep"):  # one entry each: nothing to diff, nothing read
            assert run_iofp("catalog", "trend", "--service", service, "--catalog", cat)[0] == 0
        big = f"s3://{BUCKET}/lake/host=h/service=big/date=2026-01-01/fingerprint.json"
        code, _, err = run_iofp("catalog", "show", "1", "--catalog", cat)
        why = f"{len(json.dumps(doc)) / (1 << 20):.1f} MiB, larger than any fingerprint iofp reads (16 MiB)"
        assert (code, err) == (2, f"iofp: catalog entry #1 ({big}) cannot be read: {why}; remove it: iofp "
                                  "catalog rm 1\n")  # fmt: skip
        code, out, err = run_iofp("catalog", "rm", "1", "--catalog", cat)
        assert (code, out) == (0, f"Removed #1 ({big}) of big from {cat}.\n"), err
        code, out, _ = run_iofp("catalog", "list", "--catalog", cat)
        assert code == 0 and "big: " not in out and "deep: 1" in out
