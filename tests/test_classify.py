"""classify: the shape and bound verdicts of real fingerprints of traces with known sequentiality,
sizes and commit cost, written through the contract and fingerprinted with DuckDB."""

from __future__ import annotations

import numpy as np
import pyarrow as pa
import pytest

from fingerprint.api import fingerprint_trace
from iofp.contract import TraceMeta, TraceWriter
from iofp.fingerprint_doc import Scope

US = 1_000


def write_trace(path, io: dict, sync: dict | None = None, source: str = "capture", seconds: int = 0) -> Scope:
    """The trace written through the contract, fingerprinted; its whole scope."""
    n = len(io["ts_ns"])
    devices = sorted(set(io.get("device", ["d0"])))
    meta = TraceMeta(source=source, devices={d: {} for d in devices}, duration_ns=seconds * 10**9 or None)
    with TraceWriter(path, meta) as w:
        w.write("io", pa.table({"device": ["d0"] * n, **io}))
        if sync is not None:
            w.write("sync", pa.table(sync))
    return fingerprint_trace(path).whole


def stream(n: int, size: int, op: str, start: int = 0, step_ns: int = 100 * US) -> dict:
    """`n` back-to-back (sequential) `size`-byte requests, one every `step_ns`, 8 in flight."""
    return {
        "ts_ns": np.arange(n, dtype=np.int64) * step_ns,
        "offset": start + np.arange(n, dtype=np.int64) * size,
        "size": np.full(n, size), "op": [op] * n, "lat_ns": np.full(n, 50 * US), "inflight": np.full(n, 8),
    }  # fmt: skip


def test_sequential_small_reads_are_a_scan_not_point_reads(tmp_path):
    fp = write_trace(tmp_path / "seq4k", stream(4000, 4096, "read"))
    assert fp.sequential.share > 0.99
    assert fp.shape.name == "small-block sequential scan"
    # the same requests at random offsets are point reads
    rand = stream(4000, 4096, "read")
    rand["offset"] = np.random.default_rng(3).permutation(4000).astype(np.int64) * (1 << 20)
    assert write_trace(tmp_path / "rand4k", rand).shape.name == "OLTP point-read"


def test_sequential_read_and_write_streams_are_not_mixed_oltp(tmp_path):
    """64 KiB sequential reads on one device beside 16 KiB sequential writes on another (2:1):
    99.9% sequential, mean 48 KiB, neither read- nor write-mostly."""
    r, w = stream(2000, 65536, "read"), stream(1000, 16384, "write", step_ns=200 * US)
    io = {k: np.concatenate([np.asarray(r[k]), np.asarray(w[k])]) for k in r}
    io["device"] = ["d0"] * 2000 + ["d1"] * 1000
    fp = write_trace(tmp_path / "streams", io)
    assert fp.sequential.share > 0.99
    assert fp.shape.name == "mixed sequential streams"


def commits(tmp_path, name: str, fsync_ns: int, lat: bool = True) -> Scope:
    """500 commits/s for 10 s: a 4 KiB log write, a flush, and an fdatasync taking `fsync_ns`."""
    n = 5000
    t = np.arange(n, dtype=np.int64) * 2_000_000
    io = {
        "ts_ns": np.concatenate([t, t + 10 * US]),
        "offset": np.concatenate([np.arange(n) * 4096, np.zeros(n)]),
        "size": np.concatenate([np.full(n, 4096), np.zeros(n)]), "op": ["write"] * n + ["flush"] * n,
    }  # fmt: skip
    sync = {"ts_ns": t, "call": ["fdatasync"] * n, "pid": [1] * n}
    if lat:
        io["lat_ns"] = np.concatenate([np.full(n, 20 * US), np.full(n, fsync_ns - 20 * US)])
        sync["lat_ns"] = np.full(n, fsync_ns)
    return write_trace(tmp_path / name, io, sync, "capture" if lat else "import:test", seconds=10)


def test_cheap_commits_are_not_fsync_latency_bound(tmp_path):
    """Flushes are half the I/Os, but 500/s x 40 µs is 2% of the time spent in fsync."""
    b = commits(tmp_path, "fast", 40 * US).bound
    assert b.numbers["commit_busy_share"] == pytest.approx(0.02)
    assert b.verdict == "IOPS-bound"
    assert b.why.endswith(
        "; commits are 50% of requests (500/s) but fsync takes 2% of wall time (mean 40 µs), "
        "under the 20% at which commits set the pace"
    )


def test_slow_commits_are_fsync_latency_bound(tmp_path):
    b = commits(tmp_path, "slow", 1_000 * US).bound  # 500/s x 1 ms: half the time in fsync
    assert b.numbers["commit_busy_share"] == pytest.approx(0.5)
    assert b.verdict == "fsync-latency-bound" and "50% of wall time spent in it" in b.why


def test_without_latency_the_commit_share_stands_in(tmp_path):
    b = commits(tmp_path, "nolat", 0, lat=False).bound
    assert b.numbers["commit_busy_share"] is None
    assert (b.verdict, b.side) == ("fsync-latency-bound", "demand-only")
