"""Benchmark: fingerprint a generated 50-million-row trace; peer: a plain DuckDB scan of it.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.fingerprint_scale [--rows 50000000] [--reps 2]
        [--load quiet,hog] [--tree before=/tmp/old-tree]

The trace is generated straight into Parquet through the contract's TraceWriter, 4 M rows per
file: ~100k IOPS for ~500 s on two devices, 70% reads, 4-64 KiB sizes, 30% sequential, log-normal
latency, in-flight 1-32, sync/FUA flags on writes. Each measured run is a child process, so its
peak RSS (ru_maxrss from wait4) is its own; fingerprint and peer alternate. `--load hog` runs
them beside a busy loop on every CPU (the tests' cpu_hogs), so the ratio to the scan is judged
against a scan as busy as the fingerprint; `--tree LABEL=DIR` also times the fingerprint of another
checkout (e.g. `git archive` of the code before a change), alternating with this one in each rep.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import time
from collections.abc import Iterator
from contextlib import contextmanager
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


def child(cmd: list[str], cwd: str | None = None) -> tuple[float, int, str, float]:
    """Run `cmd` in a child process (in `cwd`: its tree is the code run); wall seconds, its peak RSS
    in KiB (it prints it), stdout, and its CPU seconds (user + system: the work done, which a busy
    host inflates far less than the wall time)."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t0 = time.perf_counter()
    p = subprocess.run(cmd, capture_output=True, text=True, cwd=cwd)
    wall = time.perf_counter() - t0
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = after.ru_utime + after.ru_stime - before.ru_utime - before.ru_stime
    if p.returncode != 0:
        sys.exit(f"{cmd} failed: {p.stderr[-2000:]}")
    rss = int(p.stdout.strip().splitlines()[-1].split()[-1])
    return wall, rss, p.stdout, cpu


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


@contextmanager
def hogs(on: bool) -> Iterator[None]:
    """A busy loop on every CPU while `on` (as tests/helpers.py's cpu_hogs)."""
    busy = [sys.executable, "-c", "while True: pass"]
    procs = [subprocess.Popen(busy) for _ in range(os.cpu_count() or 1)] if on else []
    try:
        yield
    finally:
        for h in procs:
            h.kill()
            h.wait()


def measure(root: Path, rows: int, reps: int, loads: list[str], trees: dict[str, str]) -> None:
    """Each rep, under each load: the peer scan, then every tree's fingerprint; the best of each, and
    each tree's ratio to the scan measured under the same load."""
    res: dict[tuple[str, str], list[tuple[float, int, float]]] = {}
    me = [sys.executable, "-m", "bench.fingerprint_scale", "--trace", str(root), "--child"]
    for rep in range(reps):
        for load in loads:
            with hogs(load == "hog"):
                for what, tree in [("peer", None), *trees.items()]:
                    cwd = tree or trees.get("this")
                    mode = "peer" if what == "peer" else "fingerprint"
                    wall, rss, _, cpu = child([*me, mode], cwd=cwd)
                    res.setdefault((load, what), []).append((wall, rss, cpu))
                    print(f"rep {rep + 1} {load:5s} {what:11s} {wall:7.2f} s (CPU {cpu:6.2f} s)  "
                          f"{rows / wall / 1e6:6.2f} M rows/s  peak RSS {rss / 2**20:5.2f} GiB",
                          flush=True)  # fmt: skip
    for load in loads:
        peer = min(w for w, _, _ in res[(load, "peer")])
        peer_cpu = min(c for _, _, c in res[(load, "peer")])
        for what in trees:
            fp = min(w for w, _, _ in res[(load, what)])
            cpu = min(c for _, _, c in res[(load, what)])
            rss = max(r for _, r, _ in res[(load, what)])
            print(f"best {load}: {what} {fp:.2f} s ({rows / fp / 1e6:.2f} M rows/s), peer scan {peer:.2f} s; "
                  f"ratio {fp / peer:.1f}x; CPU {cpu:.2f} s, {cpu / peer_cpu:.1f}x the scan's; "
                  f"peak RSS {rss / 2**20:.2f} GiB")  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=50_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--trace", default="/tmp/iofp-bench/fp50m")
    ap.add_argument("--load", default="quiet", help="comma-separated: quiet, hog (a busy loop per CPU)")
    ap.add_argument("--tree", action="append", default=[], help="LABEL=DIR: also time DIR's code")
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
    loads = a.load.split(",")
    if not set(loads) <= {"quiet", "hog"}:
        sys.exit(f"--load {a.load}: use quiet, hog or quiet,hog")
    trees = {"this": str(Path(__file__).resolve().parents[1])}
    trees.update(t.split("=", 1) for t in a.tree)
    measure(root, a.rows, a.reps, loads, trees)


if __name__ == "__main__":
    main()
