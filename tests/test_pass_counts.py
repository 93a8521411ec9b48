"""fingerprint/pass_counts.py against the queries it stands for: the tables of each process's counts and
of the latency buckets per (window, --between flag), and of the latency value counts per (regime
class, --between flag, op), counted in numpy batch by batch, are the rows process_counts.sql,
latency_buckets.sql and value_counts.sql make from the same rows (null, zero, negative and long
latencies, rows without a pid, pids too far apart for an array, every op and none, command names);
the bucket of a latency whose 50 ln(lat) lies near a half is DuckDB's; each scope's flush gaps and
their percentiles are those of a window over the scope's flush points and quantile_disc. The
fingerprints themselves are held by tests/test_fingerprint_reference.py."""

from __future__ import annotations

from types import SimpleNamespace

import duckdb
import numpy as np
import pyarrow as pa
import pytest

from fingerprint import pass_counts
from iofp.contract import OPS

N = 20_000


def rows(rng: np.random.Generator) -> pa.Table:
    ts = np.sort(rng.integers(0, 10_000_000, N)).astype(np.int64)  # ties among them
    lat = rng.lognormal(11.5, 2.0, N).astype(np.int64)
    lat[rng.random(N) < 0.01] = 0
    lat[rng.random(N) < 0.01] = -5
    near = rng.random(N) < 0.02  # latencies whose 50 ln(lat) is a half and a hair: ~e^((k + 0.5) / 50)
    lat[near] = np.round(np.exp((rng.integers(300, 800, near.sum()) + 0.5) / 50)).astype(np.int64)
    pid = rng.choice(np.array([7, 8, 9, 4_000_000], np.int64), N)
    op = rng.choice(np.array([*OPS, None], object), N, p=[0.4, 0.3, 0.1, 0.15, 0.05])
    return pa.table({
        "ts_ns": ts,
        "lat_ns": pa.array(lat, mask=rng.random(N) < 0.02),
        "device": rng.choice(np.array(["sda", "sdb"]), N),
        "size": rng.choice(np.array([0, 4096, 65536], np.int32), N),
        "op": pa.array(op, pa.string()),
        "pid": pa.array(pid, pa.int32(), mask=rng.random(N) < 0.05),
        "comm": pa.array(np.where(pid == 8, None, "c" + pid.astype(str)), pa.string()),
    })  # fmt: skip


def table(con: duckdb.DuckDBPyConnection, name: str) -> list[tuple]:
    return sorted(con.execute(f"SELECT * FROM {name}").fetchall(), key=repr)


@pytest.mark.parametrize("between", [None, (2_000_000, 5_500_000)])
@pytest.mark.parametrize(("near", "limit"), [(pass_counts.NEAR, pass_counts.VALUE_LIMIT), (0.05, 100_000)])
@pytest.mark.parametrize("device", [None, "sdb"])
def test_the_pass_counts_are_the_queries_rows(between, near, limit, device, monkeypatch):
    monkeypatch.setattr(pass_counts, "NEAR", near)  # 0.05: a tenth of the latencies bucketed by DuckDB
    monkeypatch.setattr(pass_counts, "VALUE_LIMIT", limit)  # 100 µs: most latencies counted by DuckDB
    rng = np.random.default_rng(5)
    io = rows(rng)
    con = duckdb.connect()
    con.register("io", io)
    lo, hi = between or (None, None)
    f = SimpleNamespace(t0=0, window_ns=1_000_000, lo=lo, hi=hi, options=SimpleNamespace(device=device),
                        classes=rng.integers(0, 4, 10).astype(np.uint8))  # fmt: skip
    pass_counts.fallback(con, f)  # type: ignore[arg-type]
    want = {t: table(con, t) for t in ("fp_procs", "fp_lat_buckets", "fp_values")}
    assert len(want["fp_procs"]) > 30 and len(want["fp_lat_buckets"]) > 1000 and len(want["fp_values"]) > 5000
    big = io.filter(pa.compute.greater_equal(io["lat_ns"], limit)).num_rows
    assert 50 < big < N / 2
    counts = pass_counts.Counts(f)  # type: ignore[arg-type]
    sel = io if device is None else io.filter(pa.compute.equal(io["device"], device))
    o = np.array([0 if v is None else OPS.index(v) + 1 for v in sel["op"].to_pylist()], np.uint8)
    pid = sel["pid"]
    for i in range(0, len(sel), 997):
        s = slice(i, i + 997)
        counts.add(sel["ts_ns"].to_numpy()[s], pid.fill_null(0).to_numpy()[s],
                   pid.is_valid().to_numpy(zero_copy_only=False)[s], sel["size"].to_numpy()[s], o[s],
                   sel["lat_ns"].fill_null(0).to_numpy()[s],
                   sel["lat_ns"].is_valid().to_numpy(zero_copy_only=False)[s],
                   np.zeros(len(o[s]), bool))  # fmt: skip
    assert sum(len(p["lat"]) for p in counts.near) > (100 if near > 0.01 else -1)
    counts.tables(con)
    assert {t: table(con, t) for t in want} == want


def test_a_latency_near_a_half_is_bucketed_as_duckdb_rounds_it():
    """The 50 integers below 10^7 whose 50 ln(lat) lies closest to a half: their buckets are DuckDB's."""
    lat = np.arange(1, 10_000_000, dtype=np.int64)
    y = np.log(lat.astype(np.float64)) * 50
    closest = lat[np.argsort(np.abs(y - np.floor(y) - 0.5))[:50]]
    con = duckdb.connect()
    want = [r[0] for r in con.execute("SELECT round(ln(v) * 50)::INTEGER FROM unnest($v) t(v)",
                                      {"v": closest.tolist()}).fetchall()]  # fmt: skip
    f = SimpleNamespace(t0=0, window_ns=1 << 40, lo=None, hi=None, options=SimpleNamespace(device=None),
                        classes=np.zeros(1, np.uint8))  # fmt: skip
    counts = pass_counts.Counts(f)  # type: ignore[arg-type]
    n = len(closest)
    counts.add(np.arange(n, dtype=np.int64), np.zeros(n, np.int64), np.zeros(n, bool), np.zeros(n, np.int32),
               np.ones(n, np.uint8), closest, np.ones(n, bool), np.zeros(n, bool))  # fmt: skip
    empty = {"pid": pa.int32(), "comm": pa.string(), "device": pa.string(), "ts_ns": pa.int64(),
             "lat_ns": pa.int64(), "op": pa.string()}  # fmt: skip
    con.register("io", pa.table({c: pa.array([], t) for c, t in empty.items()}))
    counts.tables(con)
    got = dict(con.execute("SELECT lb, n FROM fp_lat_buckets").fetchall())
    assert got == {lb: want.count(lb) for lb in want}


def test_the_flush_gaps_are_a_window_over_each_scopes_points():
    rng = np.random.default_rng(11)
    classes = rng.integers(0, 4, 100).astype(np.uint8)
    f = SimpleNamespace(t0=0, window_ns=1000, lo=20_000, hi=60_000, classes=classes)
    scope_map = pa.table({"rg": pa.array([0, 1, 2, 3, 0, 1, 2, 3, 1, 1, 2, 3], pa.uint8()),
                          "btw": [False] * 4 + [True] * 4 + [False, True, True, True],
                          "scope": ["whole"] * 8 + ["steady"] * 2 + ["spike", "spike"]})  # fmt: skip
    counts = pass_counts.Counts(f)  # type: ignore[arg-type]
    ts = np.sort(rng.integers(0, 100_000, 30_000))  # ties among them
    point = rng.random(len(ts)) < 0.3
    for i in range(0, len(ts), 1009):
        s = slice(i, i + 1009)
        n = len(ts[s])
        no = np.zeros(n, bool)
        counts.add(ts[s], np.zeros(n, np.int64), no, np.zeros(n, np.int32), np.ones(n, np.uint8),
                   np.zeros(n, np.int64), no, point[s])  # fmt: skip
    got = counts.flush_gaps(scope_map)
    w = ts // f.window_ns
    part = f.classes[w].astype(int) * 2 + ((ts >= f.lo) & (ts <= f.hi))
    con = duckdb.connect()
    con.register("pts", pa.table({"ts": ts[point], "part": part[point]}))
    want = {}
    for scope in ("whole", "steady", "spike"):
        codes = [int(r["rg"]) * 2 + int(r["btw"]) for r in scope_map.to_pylist() if r["scope"] == scope]
        n, p50, p99 = con.execute(
            "SELECT count(gap), quantile_disc(gap, 0.5), quantile_disc(gap, 0.99) FROM (SELECT ts - lag(ts) "
            "OVER (ORDER BY ts) AS gap FROM pts WHERE list_contains($c, part)) WHERE gap IS NOT NULL",
            {"c": codes},
        ).fetchall()[0]
        want[scope] = {"gaps": n, "p50_ns": p50, "p99_ns": p99}
    assert got == want and all(v["gaps"] > 1000 for v in got.values())
