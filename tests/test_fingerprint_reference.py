"""The figures hold when the way they are computed changes: the fingerprints of the samples, the
shared traces and a synthetic trace equal references made before (counts and percentiles exactly,
every other number within 1e-9 relative: a mean or a spread summed in another order).

The sample traces are compared with their stored fingerprints (samples/fingerprints, exact for the
current code); the other cases with tests/data/fingerprint_reference.json.gz (made on main at commit
4eb747a, before the fingerprint's queries were restructured for speed; remade for fingerprint v3,
whose IOPS-bound `why` says whether the device keeps up, every other figure equal; remade on main at
3bec81b to hold the reader's figures too, spike1, peak_start_s, share_per_process, hot windows: none
of the earlier figures moved). A figure added to the document is no change; a figure missing or
moved is. To remake the references after a deliberate change of figures: IOFP_WRITE_REFERENCES=1
pytest tests/test_fingerprint_reference.py.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import re
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pytest
from conftest import REPO
from helpers import shared_trace

from fingerprint import arrival, device_order
from fingerprint.api import fingerprint_trace
from fingerprint.frame import Options
from iofp import fingerprint_doc as doc
from iofp.contract import TraceMeta, TraceWriter

REFERENCE = REPO / "tests" / "data" / "fingerprint_reference.json.gz"
SAMPLES = REPO / "samples"
# A percentile is a value of the data: equal or wrong. Names end in p50, p99, p99_9, median...
PERCENTILE = re.compile(r"(^|_)(p\d+(_\d+)?|median)(_|$)")
REL = 1e-9


def figures(fp: doc.Fingerprint) -> dict[str, Any]:
    """The document without its provenance (host, versions, paths: not figures)."""
    out = json.loads(doc.dumps(fp))
    out.pop("provenance")
    return out


def differences(ref: Any, got: Any, path: str = "") -> list[str]:
    """Where `got` departs from `ref`: a figure of the reference missing or changed (keys `got` adds
    are new figures, not changes)."""
    if isinstance(ref, dict):
        if not isinstance(got, dict):
            return [f"{path}: {ref!r} -> {got!r}"]
        return [d for k, v in ref.items() for d in (
            differences(v, got[k], f"{path}.{k}") if k in got else [f"{path}.{k}: missing"])]  # fmt: skip
    if isinstance(ref, list):
        if not isinstance(got, list) or len(got) != len(ref):
            return [f"{path}: {ref!r} -> {got!r}"]
        pairs = enumerate(zip(ref, got, strict=True))
        return [d for i, (a, b) in pairs for d in differences(a, b, f"{path}[{i}]")]
    exact = not isinstance(ref, float) or PERCENTILE.search(path.rsplit(".", 1)[-1])
    if isinstance(ref, float) and isinstance(got, int | float) and not isinstance(got, bool):
        same = ref == got or (not exact and math.isclose(ref, got, rel_tol=REL, abs_tol=0.0))
    else:
        same = type(ref) is type(got) and ref == got
    return [] if same else [f"{path}: {ref!r} -> {got!r}"]


def synthetic(root: Path) -> Path:
    """120 k requests over ~1.3 s on three devices, from an integer hash (no RNG: the same rows on
    every numpy): reads, writes, flushes and discards, 512 B to 1 MiB (some crossing many 64-block
    chunks), 30% sequential, ties in time, a burst (a spike), 13 processes (the top 10 are listed),
    sync/FUA/preflush flags, some unknown latencies, and fsync-family calls."""
    n = 120_000
    i = np.arange(n, dtype=np.uint64)

    def h(k: int) -> np.ndarray:  # splitmix64 of (row, k)
        z = i * np.uint64(0x9E3779B97F4A7C15) + np.uint64(k * 0x632BE59BD9B4E5F)
        z = (z ^ (z >> np.uint64(30))) * np.uint64(0xBF58476D1CE4E5B9)
        z = (z ^ (z >> np.uint64(27))) * np.uint64(0x94D049BB133111EB)
        return (z ^ (z >> np.uint64(31))) % np.uint64(1 << 62)

    burst = (i >= 60_000) & (i < 75_000)
    gap = np.where(burst, 1 + h(0) % 4_000, 1 + h(0) % 20_000) * (h(1) % 97 != 0)  # some ties
    ts = np.cumsum(gap).astype(np.int64)
    r = h(2) % 100
    op = np.select([r < 60, r < 90, r < 97], [0, 1, 3], 2).astype(np.int8)  # read, write, flush, discard
    sizes = np.array([512, 4096, 8192, 16384, 65536, 131072, 1 << 20], np.int64)
    size = np.where(op == 3, 0, sizes[(h(3) % 7).astype(np.int64)])
    off = (h(4) % (1 << 22)).astype(np.int64) * 512
    off = np.where(h(5) % 10 < 3, np.roll(off + size, 1), off)
    lat = (5_000 + h(6) % 300_000 + (h(7) % 100 == 0) * (h(8) % 50_000_000)).astype(np.int64)
    write = op == 1
    pid = (100 + h(9) % 13).astype(np.int32)
    io = pa.table({
        "ts_ns": ts,
        "lat_ns": pa.array(lat, mask=(h(10) % 200 == 0)),
        "device": pa.DictionaryArray.from_arrays(
            pa.array(np.array([0, 0, 1, 1, 2])[(h(11) % 5).astype(np.int64)].astype(np.int32)),
            pa.array(["sda", "sdb", "nvme0n1"])),
        "offset": off, "size": size.astype(np.int32),
        "op": pa.DictionaryArray.from_arrays(pa.array(op), pa.array(["read", "write", "discard", "flush"])),
        "sync": write & (h(12) % 2 == 0), "fua": write & (h(13) % 20 == 0),
        "preflush": write & (h(14) % 50 == 0),
        "pid": pid, "comm": pa.array([f"proc{p}" for p in pid.tolist()]),
        "inflight": (1 + h(15) % 32).astype(np.int32),
    })  # fmt: skip
    k = np.arange(0, n, 60)
    sync = pa.table({
        "ts_ns": ts[k] + 500, "lat_ns": (20_000 + h(16)[k] % 2_000_000).astype(np.int64),
        "call": pa.DictionaryArray.from_arrays(pa.array((h(17)[k] % 2).astype(np.int8)),
                                               pa.array(["fsync", "fdatasync"])),
        "pid": pid[k],
    })  # fmt: skip
    meta = TraceMeta(source="import:synthetic-test", devices={"sda": {}, "sdb": {}, "nvme0n1": {}})
    with TraceWriter(root, meta) as w:
        for a in range(0, n, 50_000):
            w.write("io", io.slice(a, 50_000))
        w.write("sync", sync)
    return root


SAMPLE_CASES = ["commit-heavy", "market-open", "market-open-q2", "mysql-1and1"]
# case -> (trace, options): the scopes a --between span adds, a device filter, a --window
CASES: dict[str, tuple[str, Options]] = {
    "market-open --between 12 18": ("market-open", Options(between=("12", "18"))),
    "mysql-1and1 --between 1500 2000 --window 10s": (
        "mysql-1and1",
        Options(10**10, between=("1500", "2000")),
    ),
    "tpcc": ("tpcc", Options()),
    "tpcc --device 3": ("tpcc", Options(device="3")),
    "synthetic": ("synthetic", Options()),
    "synthetic --between 0.4 0.9": ("synthetic", Options(between=("0.4", "0.9"))),
    "synthetic --device sdb --window 50ms": ("synthetic", Options(50_000_000, device="sdb")),
}


SLOW_TRACES = {"tpcc"}  # a shared trace imported first


@pytest.fixture(scope="module")
def synthetic_trace(tmp_path_factory) -> Path:
    return synthetic(tmp_path_factory.mktemp("syn") / "t")


def trace_of(name: str, request: pytest.FixtureRequest, tmp_path_factory) -> Path:
    if name == "synthetic":
        return request.getfixturevalue("synthetic_trace")
    if name in SLOW_TRACES:
        return shared_trace(name, tmp_path_factory)
    return SAMPLES / "traces" / name


def reference_cases() -> dict[str, Any]:
    return json.loads(gzip.decompress(REFERENCE.read_bytes())) if REFERENCE.exists() else {}


@pytest.mark.parametrize("name", SAMPLE_CASES)
def test_sample_fingerprints_are_unchanged(name):
    ref = json.loads((SAMPLES / "fingerprints" / f"{name}.fp.json").read_text())
    ref.pop("provenance")
    assert differences(ref, figures(fingerprint_trace(SAMPLES / "traces" / name))) == []


@pytest.mark.slow  # imports the shared trace
def test_the_shared_mysql_trace_imported_is_the_sample(tmp_path_factory):
    ref = json.loads((SAMPLES / "fingerprints" / "mysql-1and1.fp.json").read_text())
    ref.pop("provenance")
    got = figures(fingerprint_trace(shared_trace("mysql", tmp_path_factory)))
    assert differences(ref, got) == []


@pytest.mark.parametrize(
    "case",
    [pytest.param(c, marks=pytest.mark.slow) if t in SLOW_TRACES else c for c, (t, _) in CASES.items()],
)
def test_fingerprints_equal_the_references(case, request, tmp_path_factory):
    name, opt = CASES[case]
    got = figures(fingerprint_trace(trace_of(name, request, tmp_path_factory), opt))
    refs = reference_cases()
    if os.environ.get("IOFP_WRITE_REFERENCES"):
        REFERENCE.parent.mkdir(exist_ok=True)
        refs[case] = got
        REFERENCE.write_bytes(gzip.compress(json.dumps(refs, sort_keys=True).encode(), mtime=0))
        pytest.skip(f"wrote {case} to {REFERENCE}")
    assert case in refs, f"{REFERENCE} holds no {case!r}: make it on main with IOFP_WRITE_REFERENCES=1"
    assert differences(refs[case], got) == []


@pytest.mark.parametrize("case", ["synthetic --between 0.4 0.9", "synthetic --device sdb --window 50ms"])
def test_the_orders_do_not_depend_on_the_batches_read(case, request, tmp_path_factory, monkeypatch):
    """fingerprint/arrival.py reads the rows in Arrow batches, holding the last rows back for the next
    batch, and device_order.py carries each device's and process's last request into the next: in
    batches of 997 rows (a prime: runs, ties and processes cut at every place), 500 held back, the
    figures are still the references'."""
    monkeypatch.setattr(device_order, "BATCH", 997)
    monkeypatch.setattr(arrival, "HOLD", 500)
    name, opt = CASES[case]
    got = figures(fingerprint_trace(trace_of(name, request, tmp_path_factory), opt))
    assert differences(reference_cases()[case], got) == []


def test_the_comparison_finds_a_changed_figure():
    ref = {"whole": {"ios": 10, "latency": {"all": {"p99_us": 120.0, "mean_us": 80.0}}}}
    same = {"whole": {"ios": 10, "latency": {"all": {"p99_us": 120.0, "mean_us": 80.0 * (1 + 1e-12)}}}}
    assert differences(ref, same) == []
    moved = {"whole": {"ios": 10, "latency": {"all": {"p99_us": 120.0 * (1 + 1e-12), "mean_us": 80.0}}}}
    assert differences(ref, moved) == [f".whole.latency.all.p99_us: 120.0 -> {120.0 * (1 + 1e-12)!r}"]
    assert differences(ref, {"whole": {"ios": 11, "latency": {}}}) == [
        ".whole.ios: 10 -> 11", ".whole.latency.all: missing"]  # fmt: skip
    assert differences({"a": 1.0}, {"a": 1.0 + 1e-8}) != []
