import json
import subprocess
import sys
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import needs_root

from iofp.contract import (
    IO_SCHEMA,
    MANIFEST,
    META_KEY,
    REPLACED,
    RESERVE,
    SCHEMA_VERSION,
    TraceMeta,
    TraceWriter,
    atomic_write_bytes,
    check_output_file,
    open_trace,
)
from iofp.errors import BadInput, OutputFailed, SchemaMismatch


def _rows(n: int) -> pa.Table:
    return pa.table(
        {
            "ts_ns": pa.array(range(0, n * 1000, 1000), pa.int64()),
            "device": pa.array(["loop0"] * n),
            "offset": pa.array([i * 4096 for i in range(n)], pa.int64()),
            "size": pa.array([4096] * n, pa.int32()),
            "op": pa.array(["read", "write"] * (n // 2)),
        }
    )


def test_roundtrip_fills_missing_columns_with_nulls(tmp_path):
    with TraceWriter(tmp_path / "t", TraceMeta(source="import:test")) as w:
        w.write("io", _rows(10))
        w.write("io", _rows(4))
    t = open_trace(tmp_path / "t")
    assert t.num_rows() == 14
    assert t.meta.source == "import:test"
    got = pq.read_table(t.files["io"][0])
    assert got.schema.names == IO_SCHEMA.names
    assert got.column("lat_ns").null_count == 10
    assert json.loads((tmp_path / "t" / MANIFEST).read_text())["schema_version"] == SCHEMA_VERSION


def test_refuses_to_overwrite_without_force(tmp_path):
    with TraceWriter(tmp_path / "t", TraceMeta()) as w:
        w.write("io", _rows(2))
    with pytest.raises(BadInput, match="pass --force"):
        TraceWriter(tmp_path / "t", TraceMeta())
    assert open_trace(tmp_path / "t").num_rows() == 2


def _trace(root, n: int) -> None:
    with TraceWriter(root, TraceMeta(source=f"import:{n}")) as w:
        w.write("io", _rows(n))


def test_a_failed_overwrite_leaves_the_previous_trace_as_it_was(tmp_path):
    _trace(tmp_path / "t", 6)
    before = sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*"))
    with pytest.raises(RuntimeError), TraceWriter(tmp_path / "t", TraceMeta(), force=True) as w:
        w.write("io", _rows(2))
        w.write("io", _rows(2))
        raise RuntimeError("the importer met a bad record")
    assert sorted(p.relative_to(tmp_path) for p in tmp_path.rglob("*")) == before
    t = open_trace(tmp_path / "t")
    assert (t.num_rows(), t.meta.source) == (6, "import:6")


def test_a_completed_overwrite_replaces_the_trace_and_drops_the_old_one(tmp_path):
    _trace(tmp_path / "t", 6)
    (tmp_path / "t" / "notes.txt").write_text("the user's own file stays")
    with TraceWriter(tmp_path / "t", TraceMeta(source="import:new"), force=True) as w:
        w.write("io", _rows(2))
    t = open_trace(tmp_path / "t")
    assert (t.num_rows(), t.meta.source, len(t.files["io"])) == (2, "import:new", 1)
    assert not (tmp_path / "t" / REPLACED).exists()
    assert (tmp_path / "t" / "notes.txt").exists()


def test_a_failed_import_with_force_keeps_the_trace_it_was_to_replace(tmp_path):
    _trace(tmp_path / "t", 6)
    bad = tmp_path / "bad.csv"
    bad.write_text("128166372003061629,src1,0,Read,7014609920,24576,41286\ngarbage line\n")
    args = [sys.executable, "-m", "cli.app", "import", "msr", str(bad), "-o", str(tmp_path / "t"), "--force"]
    r = subprocess.run(args, capture_output=True, text=True)
    assert r.returncode == 2 and r.stderr.strip().endswith("fix or remove that line"), r.stderr
    assert open_trace(tmp_path / "t").num_rows() == 6
    assert not (tmp_path / "t" / REPLACED).exists()


@pytest.mark.parametrize("damage", ["truncated", "empty"])
def test_a_damaged_file_is_named_when_the_trace_is_opened(tmp_path, damage):
    with TraceWriter(tmp_path / "t", TraceMeta()) as w:
        w.write("io", _rows(4))
        second = w.write("io", _rows(4))
    data = second.read_bytes()
    second.write_bytes(data[: len(data) // 2] if damage == "truncated" else b"")
    with pytest.raises(BadInput, match=r"part-000002\.parquet: not a readable Parquet file"):
        open_trace(tmp_path / "t")


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("file", "is a file, not a trace directory"),
        ("/proc/iofp-test", "cannot write the trace to /proc/iofp-test"),
    ],
)
def test_an_output_that_cannot_be_a_trace_is_refused_before_anything_is_written(tmp_path, where, message):
    root = tmp_path / "f" if where == "file" else Path(where)
    if where == "file":
        root.write_text("not a directory")
    with pytest.raises(BadInput, match=message):
        TraceWriter(root, TraceMeta(), force=True)
    assert where != "file" or root.read_text() == "not a directory"


@pytest.mark.parametrize(
    ("where", "message"),
    [
        ("dir", "is a directory; name a file to write"),
        ("exists", "already exists; pass --force to overwrite it"),
        ("/proc/iofp-test.json", "cannot write /proc/iofp-test.json: /proc is not a writable directory"),
        # Refused even with --force: the output is replaced whole (a temp file renamed over it), which
        # turned the machine's /dev/null into a regular file once.
        ("/dev/null", "/dev/null is not a regular file \\(a device or a pipe\\); name a file to write"),
    ],
)
def test_an_output_file_that_cannot_be_written_is_refused_up_front(tmp_path, where, message):
    path = {"dir": tmp_path, "exists": tmp_path / "fp.json"}.get(where, Path(where))
    if where == "exists":
        path.write_text("{}")
    with pytest.raises(BadInput, match=message):
        check_output_file(path, force=where != "exists")
    check_output_file(tmp_path / "new" / "fp.json", force=False)  # a new file in a new directory is fine


def test_a_write_that_fails_anyway_is_one_line_and_leaves_no_temp_file(tmp_path):
    with pytest.raises(BadInput, match=f"cannot write {tmp_path}: Is a directory"):
        atomic_write_bytes(tmp_path, b"x")  # the rename onto a directory fails
    assert [p.name for p in tmp_path.iterdir()] == []


def test_fingerprint_refuses_an_unwritable_json_before_computing(tmp_path):
    _trace(tmp_path / "t", 6)
    args = [sys.executable, "-m", "cli.app", "fingerprint", str(tmp_path / "t"), "--json", "/proc/fp.json"]
    r = subprocess.run(args, capture_output=True, text=True)
    assert (r.returncode, r.stdout) == (2, "")  # nothing printed: it stopped before the fingerprint
    assert r.stderr == "iofp: cannot write /proc/fp.json: /proc is not a writable directory\n"


def test_newer_schema_is_refused(tmp_path):
    meta = TraceMeta()
    meta.schema_version = SCHEMA_VERSION + 1
    tbl = _rows(2).replace_schema_metadata({META_KEY: meta.to_json().encode()})
    pq.write_table(tbl, tmp_path / "x.parquet")
    with pytest.raises(SchemaMismatch, match=f"schema v{SCHEMA_VERSION + 1}; this iofp"):
        open_trace(tmp_path / "x.parquet")


def test_killed_capture_without_manifest_is_readable(tmp_path):
    w = TraceWriter(tmp_path / "t", TraceMeta(loss={"lost_events": 7}))
    w.write("io", _rows(6))  # no close(): as after SIGKILL
    t = open_trace(tmp_path / "t")
    assert t.num_rows() == 6 and t.meta.lost_events == 7


@needs_root
def test_a_trace_stopped_by_a_full_disk_still_gets_its_manifest(tmp_path):
    """The room kept for trace.json: a writer that filled its disk (a capture whose spool took the last
    blocks) still writes how it ended, and a finished trace keeps no reserve."""
    small = tmp_path / "small"
    small.mkdir()
    subprocess.run(["mount", "-t", "tmpfs", "-o", "size=256k", "tmpfs", str(small)], check=True)
    try:
        w = TraceWriter(small / "t", TraceMeta(source="import:test"))
        assert (small / "t" / RESERVE).stat().st_blocks * 512 >= 64 << 10  # allocated, not sparse
        with pytest.raises(OSError), (small / "filler").open("wb") as f:  # every other block taken
            for _ in range(1000):
                f.write(b"x" * 4096)
                f.flush()
        with pytest.raises(OutputFailed, match="No space left on device"):
            w.write("io", _rows(2))
        w.meta.extra["end"] = "write failed"
        w.write_manifest()
        assert open_trace(small / "t").meta.extra["end"] == "write failed"
        assert not (small / "t" / RESERVE).exists()
    finally:
        subprocess.run(["umount", str(small)], check=True)
    with TraceWriter(tmp_path / "done", TraceMeta(source="import:test")) as w:
        w.write("io", _rows(2))
    assert not (tmp_path / "done" / RESERVE).exists()
