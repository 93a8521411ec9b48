import json

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from iofp.contract import (
    IO_SCHEMA,
    MANIFEST,
    META_KEY,
    SCHEMA_VERSION,
    TraceMeta,
    TraceWriter,
    open_trace,
)
from iofp.errors import BadInput, SchemaMismatch


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
