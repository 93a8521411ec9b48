"""fingerprint/arrival.py's one pass against what it stands for: the rows come out in the order the
sorting queries give them (time, device, offset, size) though the sample captures' files overlap in
time and the batches cut runs of equal times; rows out of order beyond the hold-back are refused, and
the fingerprint then comes from the sorting queries, unchanged; the per-window sums of squares are
exact where a gap's square passes 2^62. The figures themselves are held by
tests/test_fingerprint_reference.py."""

from __future__ import annotations

import json
import time
from pathlib import Path
from types import SimpleNamespace

import duckdb
import numpy as np
import pytest
from conftest import REPO
from test_fingerprint_reference import differences, figures, synthetic

from fingerprint import arrival, device_order
from fingerprint.api import fingerprint_trace
from iofp.contract import OPS, open_trace
from iofp.sqlfiles import load_sql

SAMPLES = REPO / "samples"
KEYS = ("ts_ns", "dev", "offset", "size")


def stream(trace: Path, batch: int) -> tuple[duckdb.DuckDBPyConnection, dict, object]:
    con = duckdb.connect()
    con.read_parquet([str(p) for p in open_trace(trace).files["io"]]).create_view("io")
    devices = [r[0] for r in con.sql("SELECT DISTINCT device::VARCHAR FROM io ORDER BY 1").fetchall()]
    params = {"devices": devices, "device": None, "ops": list(OPS)}
    reader = con.sql(load_sql("fingerprint.sql", "io_stream"), params=params).to_arrow_reader(batch)
    return con, params, reader


@pytest.fixture(scope="module")
def synthetic_trace(tmp_path_factory) -> Path:
    return synthetic(tmp_path_factory.mktemp("syn") / "t")


@pytest.mark.parametrize("name", ["commit-heavy", "market-open", "synthetic"])
def test_the_rows_come_in_the_sorting_queries_order(name, synthetic_trace, monkeypatch):
    """In batches of 997 rows with 500 held back: file overlaps merged, equal times in order."""
    monkeypatch.setattr(arrival, "HOLD", 500)
    trace = synthetic_trace if name == "synthetic" else SAMPLES / "traces" / name
    con, params, reader = stream(trace, 997)
    got = [np.concatenate(c) for c in zip(*[b[:4] for b in arrival.batches(reader)], strict=True)]
    q = load_sql("fingerprint.sql", "io_stream")
    want = con.execute(f'SELECT ts_ns, dev, "offset", size FROM ({q}\n) ORDER BY ALL', params).fetchnumpy()
    raw = con.execute(q, params).fetchnumpy()["ts_ns"]
    ties = int((np.diff(np.sort(raw)) == 0).sum())
    if name == "synthetic":
        assert ties > 100  # equal times, cut by the batches
    else:
        assert (np.diff(raw) < 0).any()  # files that overlap in time: the merge is needed
    for k, col in zip(KEYS, got, strict=True):
        assert (col == want[k]).all(), k


def test_rows_out_of_order_beyond_the_hold_back_fall_back_to_the_sorting_queries(monkeypatch):
    monkeypatch.setattr(arrival, "HOLD", 1)
    _, _, reader = stream(SAMPLES / "traces" / "commit-heavy", 4096)
    with pytest.raises(arrival.Unsorted):
        list(arrival.batches(reader))
    ref = json.loads((SAMPLES / "fingerprints" / "commit-heavy.fp.json").read_text())
    ref.pop("provenance")
    assert differences(ref, figures(fingerprint_trace(SAMPLES / "traces" / "commit-heavy"))) == []


@pytest.mark.parametrize("name", ["commit-heavy", "market-open-q2", "mysql-1and1"])
def test_the_samples_figures_do_not_depend_on_the_batches_read(name, monkeypatch):
    monkeypatch.setattr(arrival, "HOLD", 500)
    monkeypatch.setattr(device_order, "BATCH", 997)
    ref = json.loads((SAMPLES / "fingerprints" / f"{name}.fp.json").read_text())
    ref.pop("provenance")
    assert differences(ref, figures(fingerprint_trace(SAMPLES / "traces" / name))) == []


@pytest.mark.parametrize("long", [True, False])
def test_the_sums_per_window_are_exact_past_2_to_the_62(long):
    """With gaps past 2^31 (their squares in Python's integers) and without (a batch's squares summed
    at once)."""
    rng = np.random.default_rng(7)
    gap = rng.integers(0, 1 << 20, 5000)
    if long:
        gap[rng.integers(0, 5000, 40)] = rng.integers(1 << 31, 1 << 40, 40)  # a square past 2^62
    ts = np.cumsum(gap).astype(np.int64)
    window = 1 << 36
    f = SimpleNamespace(t0=int(ts[0]), window_ns=window, lo=int(ts[1000]), hi=int(ts[3000]),
                        classes=np.zeros((int(ts[-1] - ts[0]) // window) + 1, np.uint8))  # fmt: skip
    a = arrival.Arrival(f)  # type: ignore[arg-type]
    for i in range(0, len(ts), 777):
        s = slice(i, i + 777)
        a.add(ts[s], np.zeros(len(ts[s]), np.int64), np.full(len(ts[s]), 4096, np.int32))
    want: dict[tuple[int, int], list[int]] = {}
    for i in range(1, len(ts)):
        t, g = int(ts[i]), int(ts[i]) - int(ts[i - 1])
        key = ((t - f.t0) // window, int(f.lo <= t <= f.hi))
        n = want.setdefault(key, [0, 0, 0])
        n[0], n[1], n[2] = n[0] + 1, n[1] + g, n[2] + g * g
    assert any(v[2] >= 1 << 63 for v in want.values()) == long
    for (w, btw), (n, total, sumsq) in want.items():
        hh, hl, ll = (int(v) for v in a.sq[:, w, btw])
        got = (hh << 32) + (hl << 17) + ll + a.big.get((w, btw), 0)
        assert (int(a.n[w, btw]), int(a.total[w, btw]), got) == (n, total, sumsq)


class Failing(arrival.Beside):
    def add(self, *cols: np.ndarray) -> None:
        raise ValueError("the first thread's batch")


class Slow(arrival.Beside):
    def add(self, *cols: np.ndarray) -> None:
        time.sleep(0.2)  # still at work when the first thread's close raises


def test_a_thread_that_raises_leaves_no_other_thread_unjoined():
    threads = [Failing("failing"), Slow("slow")]
    for b in threads:
        b.todo.put([np.zeros(1)])
    with pytest.raises(ValueError, match="first thread"):
        arrival.close(threads)
    assert not any(b.thread.is_alive() for b in threads)
