"""Benchmark: what opening a trace costs now that every file is checked (iofp/filecheck.py); peer: a
plain DuckDB scan of the same files (count, avg size, avg latency, max time, sum offset).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.trace_open [--rows 10000000] [--reps 3]

Two copies of one generated trace (bench.fingerprint_scale's generator): as TraceWriter writes it
(statistics on every column: an import) and rewritten with the capture's Parquet options
(statistics on ts_ns and device only: the checks must read offset, size and lat_ns). Runs alternate
within one process, files warm in the page cache.
"""

from __future__ import annotations

import argparse
import statistics
import time
from pathlib import Path

import pyarrow.parquet as pq

from bench.fingerprint_scale import generate
from bpf.capture import PARQUET_OPTIONS
from iofp.contract import PARQUET_DEFAULTS, open_trace
from iofp.duck import connect

PEER = 'SELECT count(*), avg(size), avg(lat_ns), max(ts_ns), sum("offset") FROM read_parquet(?)'


def as_captured(src: Path, dst: Path) -> None:
    """`src` rewritten file by file with the options the capture writes with."""
    for p in sorted(src.rglob("*")):
        q = dst / p.relative_to(src)
        if p.is_dir():
            q.mkdir(parents=True, exist_ok=True)
        elif p.suffix == ".parquet":
            opts = {**PARQUET_DEFAULTS, **PARQUET_OPTIONS[p.parent.name]}
            pq.write_table(pq.read_table(p), q, **opts)
        else:
            q.write_bytes(p.read_bytes())


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--trace", default="/tmp/iofp-bench/open10m")
    a = ap.parse_args()
    imported, captured = Path(a.trace), Path(a.trace + "-capture")
    if not (imported / "trace.json").exists() or open_trace(imported).num_rows() != a.rows:
        generate(imported, a.rows)
    if not (captured / "trace.json").exists() or open_trace(captured).num_rows() != a.rows:
        as_captured(imported, captured)
    con = connect()
    times: dict[str, list[float]] = {}
    for rep in range(a.reps):
        for name, root in (("imported", imported), ("captured", captured)):
            t0 = time.perf_counter()
            trace = open_trace(root)
            t1 = time.perf_counter()
            con.execute(PEER, [[str(p) for p in trace.files["io"]]]).fetchall()
            t2 = time.perf_counter()
            times.setdefault(f"open {name}", []).append(t1 - t0)
            times.setdefault(f"peer {name}", []).append(t2 - t1)
            print(f"rep {rep + 1} {name}: open_trace {t1 - t0:.3f} s, peer scan {t2 - t1:.3f} s")
    for k, v in times.items():
        print(f"median {k}: {statistics.median(v):.3f} s over {a.rows:,} rows")


if __name__ == "__main__":
    main()
