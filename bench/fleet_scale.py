"""Benchmark: `iofp fleet`'s run time against the number of traces, and what each Spark task costs
beyond the fingerprint itself.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.fleet_scale [--sizes 100,400,1600]

For each size N, a lake of N generated host-day traces (bench.fleet_lake: ~500 requests and ~15
fdatasyncs each, one service, sqrt(N) hosts x sqrt(N) days) is shipped into a moto S3 server
process on a loopback port (the tests' server, tests/s3server.py), then fingerprinted by
fleet.run_fleet on one Spark session, started and warmed once before the first size (its start is
reported apart). The peer, in the same run: the same task function (fleet.job.fingerprint_task:
fetch, fingerprint, write beside) called serially in this process over the first 100 traces, with
no Spark. Per-task overhead = wall x workers / N - the tasks' own mean time (each task times itself).
"""

from __future__ import annotations

import argparse
import json
import math
import statistics
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "tests"))  # the tests' S3 server process (moto's), one way to run it

from s3server import BUCKET, s3_server  # noqa: E402

from bench.fleet_lake import dates_from, fill_lake  # noqa: E402
from fleet import find_traces, fingerprint_task, run_fleet, spark_session  # noqa: E402
from iofp import objstore  # noqa: E402


def lake_of(n: int, spool: Path) -> objstore.Url:
    side = math.isqrt(n)
    assert side * side == n, "sizes are squares: hosts x days"
    lake = objstore.Url(BUCKET, f"scale-{n}")
    fill_lake(lake, ["orders"], side, dates_from("2026-01-05", side), spool=spool, rate=50, seconds=10)
    return lake


def measure(n: int, spark: object, workers: int, spool: Path) -> dict[str, float]:
    t0 = time.perf_counter()
    lake = lake_of(n, spool)
    fill_s = time.perf_counter() - t0
    t0 = time.perf_counter()
    rows = run_fleet(lake, spark=spark)
    wall = time.perf_counter() - t0
    assert len(rows) == n and all(r["status"] == "made" for r in rows), "every trace fingerprinted"
    task = statistics.mean(r["seconds"] for r in rows)
    return {"traces": n, "fill_s": fill_s, "wall_s": wall, "per_trace_s": wall / n, "task_mean_s": task,
            "overhead_per_task_s": wall * workers / n - task}  # fmt: skip


def serial_peer(n: int) -> float:
    """Seconds per trace of the same task, serially here, no Spark (redoing the fingerprints)."""
    tasks = find_traces(objstore.Url(BUCKET, f"scale-{n}"), force=True)[:100]
    t0 = time.perf_counter()
    for t in tasks:
        fingerprint_task(t)
    return (time.perf_counter() - t0) / len(tasks)


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--sizes", default="100,400,1600")
    ap.add_argument("--master", default="local[2]")
    ap.add_argument("--json", type=Path)
    args = ap.parse_args()
    sizes = [int(s) for s in args.sizes.split(",")]
    workers = int(args.master[6:].split(",")[0].rstrip("]")) if args.master.startswith("local[") else 0
    with tempfile.TemporaryDirectory(prefix="iofp-fleet-bench-") as tmp, s3_server(Path(tmp)):
        t0 = time.perf_counter()
        spark = spark_session(args.master)
        spark.sparkContext.parallelize(range(workers * 2), workers * 2).map(lambda x: x).collect()
        start_s = time.perf_counter() - t0
        results = [measure(n, spark, workers, Path(tmp) / "spool") for n in sizes]
        spark.stop()
        peer = serial_peer(sizes[0])
    print(f"Spark session start and warm-up: {start_s:.1f} s ({args.master})")
    print(f"{'traces':>7} {'fill s':>8} {'fleet s':>8} {'s/trace':>8} {'task s':>8} {'overhead s':>10}")
    for r in results:
        print(f"{r['traces']:>7} {r['fill_s']:>8.1f} {r['wall_s']:>8.1f} {r['per_trace_s']:>8.3f} "
              f"{r['task_mean_s']:>8.3f} {r['overhead_per_task_s']:>10.3f}")  # fmt: skip
    base = results[0]["per_trace_s"]
    ratios = ", ".join(f"{r['per_trace_s'] / base:.2f}x" for r in results)
    print(f"s/trace against the smallest size: {ratios}")
    print(f"peer: the same task serially, no Spark: {peer:.3f} s/trace; fleet at {sizes[-1]}: "
          f"{results[-1]['per_trace_s']:.3f} s/trace ({peer / results[-1]['per_trace_s']:.2f}x faster)")
    if args.json:
        args.json.write_text(json.dumps({"start_s": start_s, "sizes": results, "serial_s": peer}, indent=1))


if __name__ == "__main__":
    main()
