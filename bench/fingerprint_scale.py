"""Benchmark: fingerprint a generated 50-million-row trace; peer: a plain DuckDB scan of it.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.fingerprint_scale [--rows 50000000] [--reps 2]

The trace is generated straight into Parquet through the contract's TraceWriter, 4 M rows per
file: ~100k IOPS for ~500 s on two devices, 70% reads, 4-64 KiB sizes, 30% sequential, log-normal
latency, in-flight 1-32, sync/FUA flags on writes. Each measured run is a child process, so its
peak RSS (ru_maxrss from wait4) is its own; fingerprint and peer alternate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from iofp.contract import TraceMeta, TraceWriter, open_trace

CHUNK = 4_000_000
IOPS = 100_000


def generate(root: Path, rows: int, seed: int = 1) -> None:
    rng = np.random.default_rng(seed)
    meta = TraceMeta(source="import:synthetic-bench", devices={"nvme0n1": {}, "nvme1n1": {}})
    t = 0.0
    with TraceWriter(root, meta, force=True) as w:
        for start in range(0, rows, CHUNK):
            n = min(CHUNK, rows - start)
            gaps = rng.exponential(1e9 / IOPS, n)
            ts = (t + np.cumsum(gaps)).astype(np.int64)
            t = float(ts[-1])
            size = rng.choice(np.array([4096, 8192, 16384, 65536], np.int32), n, p=[0.6, 0.2, 0.1, 0.1])
            off = rng.integers(0, 1 << 26, n, dtype=np.int64) * 4096
            seq = rng.random(n) < 0.3
            prev_end = np.roll(off + size, 1)
            off = np.where(seq, prev_end, off)
            is_read = rng.random(n) < 0.7
            w.write("io", pa.table({
                "ts_ns": ts,
                "lat_ns": rng.lognormal(11.5, 0.6, n).astype(np.int64),
                "device": pa.DictionaryArray.from_arrays(
                    pa.array(rng.integers(0, 2, n, dtype=np.int32)), pa.array(["nvme0n1", "nvme1n1"])),
                "offset": off, "size": size,
                "op": pa.DictionaryArray.from_arrays(
                    pa.array(np.where(is_read, 0, 1).astype(np.int8)), pa.array(["read", "write"])),
                "sync": ~is_read & (rng.random(n) < 0.5),
                "fua": ~is_read & (rng.random(n) < 0.05),
                "inflight": rng.integers(1, 33, n, dtype=np.int32),
                "pid": rng.integers(100, 110, n, dtype=np.int32),
            }))  # fmt: skip


def child(cmd: list[str]) -> tuple[float, int, str]:
    """Run `cmd` in a child process; wall seconds, its peak RSS in KiB (it prints it), stdout."""
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True)
    wall = time.perf_counter() - t0
    if p.returncode != 0:
        sys.exit(f"{cmd} failed: {p.stderr[-2000:]}")
    rss = int(p.stdout.strip().splitlines()[-1].split()[-1])
    return wall, rss, p.stdout


def run_fingerprint(trace: str) -> None:
    import resource

    from fingerprint.api import fingerprint_trace

    fp = fingerprint_trace(trace)
    print(fp.whole.requests, fp.regimes.steady.windows, fp.regimes.spikes_total)
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def run_peer(trace: str) -> None:
    import resource

    from iofp.duck import connect

    t = open_trace(trace)
    con = connect()
    r = con.execute(
        'SELECT count(*), avg(size), avg(lat_ns), max(ts_ns), sum("offset") FROM read_parquet(?)',
        [[str(p) for p in t.files["io"]]],
    ).fetchall()
    print(r)
    print("maxrss_kib", resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--trace", default="/tmp/iofp-bench/fp50m")
    ap.add_argument("--child", choices=("fingerprint", "peer"))
    a = ap.parse_args()
    if a.child == "fingerprint":
        return run_fingerprint(a.trace)
    if a.child == "peer":
        return run_peer(a.trace)
    root = Path(a.trace)
    if not (root / "trace.json").exists() or open_trace(root).num_rows() != a.rows:
        t0 = time.perf_counter()
        generate(root, a.rows)
        print(f"generated {a.rows:,} rows in {time.perf_counter() - t0:.1f} s")
    size = sum(p.stat().st_size for p in root.rglob("*.parquet"))
    print(f"trace {root}: {a.rows:,} rows, {size / 2**20:,.0f} MiB of Parquet; cores {os.cpu_count()}")
    me = [sys.executable, "-m", "bench.fingerprint_scale", "--trace", str(root), "--child"]
    res: dict[str, list[tuple[float, int]]] = {"peer": [], "fingerprint": []}
    for rep in range(a.reps):
        for what in ("peer", "fingerprint"):
            wall, rss, _ = child([*me, what])
            res[what].append((wall, rss))
            print(f"rep {rep + 1} {what:11s} {wall:7.2f} s  {a.rows / wall / 1e6:6.2f} M rows/s  "
                  f"peak RSS {rss / 2**20:5.2f} GiB")  # fmt: skip
    fp = min(w for w, _ in res["fingerprint"])
    peer = min(w for w, _ in res["peer"])
    rss = max(r for _, r in res["fingerprint"])
    print(f"best: fingerprint {fp:.2f} s ({a.rows / fp / 1e6:.2f} M rows/s), peer scan {peer:.2f} s; "
          f"ratio {fp / peer:.1f}x; fingerprint peak RSS {rss / 2**20:.2f} GiB")  # fmt: skip


if __name__ == "__main__":
    main()
