"""Conversion rate of `iofp iolog` (trace -> fio v3 iolog) for 10 M rows, against a peer.

Peer: writing the same rows (ts, op, offset, size) as plain CSV with pyarrow's C++ CSV writer, read
from the same trace the same way. Both run in fresh child processes, alternated and repeated; each
child reports its wall time and peak RSS. Run under the heavy-benchmark lock:

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.iolog_convert --rows 10000000 --repeat 3
"""

from __future__ import annotations

import argparse
import json
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import numpy as np
import pyarrow as pa

from iofp.contract import TraceMeta, TraceWriter, open_trace

BATCH = 1_000_000


def generate(root: Path, rows: int) -> None:
    """A synthetic capture-like trace: 50k IOPS, 70/25/5 read/write/flush, 4-64 KiB, 100 GiB span."""
    rng = np.random.default_rng(42)
    t = 0
    with TraceWriter(root, TraceMeta(source="bench"), force=True) as w:
        for start in range(0, rows, BATCH):
            n = min(BATCH, rows - start)
            gaps = rng.exponential(20_000, n).astype(np.int64)
            ts = t + np.cumsum(gaps)
            t = int(ts[-1])
            opc = rng.choice(np.array([0, 1, 3], dtype=np.int8), n, p=[0.7, 0.25, 0.05])
            size = rng.choice(np.array([4096, 8192, 16384, 65536], dtype=np.int32), n)
            off = rng.integers(0, (100 << 30) // 4096, n, dtype=np.int64) * 4096
            flush = opc == 3
            ops = pa.array(np.array(["read", "write", "discard", "flush"])[opc])
            w.write(
                "io",
                pa.table(
                    {
                        "ts_ns": ts,
                        "device": pa.array(["nvme0n1"] * n),
                        "offset": np.where(flush, 0, off),
                        "size": np.where(flush, 0, size).astype(np.int32),
                        "op": ops,
                        "inflight": rng.integers(1, 32, n, dtype=np.int32),
                    }
                ),
            )


def run_iofp(trace: Path, out: Path) -> None:
    from replay import iolog
    from replay.iolog import Selection

    iolog.convert(
        open_trace(trace), out, Selection(), iolog.Mapping("/dev/nvme9n1", fold_size=1 << 30), force=True
    )


def run_csv(trace: Path, out: Path) -> None:
    import pyarrow.csv as csv

    t = open_trace(trace)
    cols = ["ts_ns", "op", "offset", "size"]
    with csv.CSVWriter(str(out), pa.schema([t_field for t_field in _fields(cols)])) as w:
        for b in t.batches(columns=cols):
            w.write_batch(
                pa.RecordBatch.from_arrays(
                    [b.column(c).cast(f.type) for c, f in zip(cols, _fields(cols), strict=True)], names=cols
                )
            )


def _fields(cols: list[str]) -> list[pa.Field]:
    types = {"ts_ns": pa.int64(), "op": pa.string(), "offset": pa.int64(), "size": pa.int32()}
    return [pa.field(c, types[c]) for c in cols]


def child(kind: str, trace: Path, out: Path) -> None:
    t0 = time.perf_counter()
    (run_iofp if kind == "iofp" else run_csv)(trace, out)
    wall = time.perf_counter() - t0
    rss = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    print(json.dumps({"kind": kind, "wall_s": wall, "maxrss_kb": rss, "bytes": out.stat().st_size}))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rows", type=int, default=10_000_000)
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--child", nargs=3, metavar=("KIND", "TRACE", "OUT"))
    a = ap.parse_args()
    if a.child:
        return child(a.child[0], Path(a.child[1]), Path(a.child[2]))
    with tempfile.TemporaryDirectory(dir="/tmp", prefix="iofp-bench-") as d:
        d = Path(d)
        t0 = time.perf_counter()
        generate(d / "trace", a.rows)
        print(f"generated {a.rows:,} rows in {time.perf_counter() - t0:.1f} s", file=sys.stderr)
        res: dict[str, list[dict]] = {"iofp": [], "csv": []}
        for _ in range(a.repeat):
            for kind in ("iofp", "csv"):
                out = d / f"out.{kind}"
                cmd = [
                    sys.executable,
                    "-m",
                    "bench.iolog_convert",
                    "--child",
                    kind,
                    str(d / "trace"),
                    str(out),
                ]
                p = subprocess.run(cmd, capture_output=True, text=True, check=True)
                r = json.loads(p.stdout.strip().splitlines()[-1])
                res[kind].append(r)
                print(json.dumps(r), file=sys.stderr)
                out.unlink()
        med = {k: statistics.median(x["wall_s"] for x in v) for k, v in res.items()}
        rss = {k: max(x["maxrss_kb"] for x in v) for k, v in res.items()}
        print(f"rows: {a.rows:,}; repeats: {a.repeat} (alternating, medians)")
        for k in ("iofp", "csv"):
            rate = a.rows / med[k] / 1e6
            print(f"{k:5s}: {med[k]:.2f} s = {rate:.2f} M rows/s; peak RSS {rss[k] / 1024:.0f} MiB")
        print(f"ratio iofp/csv time: {med['iofp'] / med['csv']:.2f}")


if __name__ == "__main__":
    main()
