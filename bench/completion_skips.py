"""Completions the kernel does not hand to iofp's program, counted against a tracefs witness.

4k random reads at QD32 on a loop device (`--backing disk`: a VM-disk file read with direct I/O,
where the skips show; `shm`: RAM) are captured by `iofp capture` (in this process) while a private
tracefs instance (trace_clock mono) records every block_rq_issue and block_rq_complete. With
kernel.bpf_stats_enabled on, each iofp program's run count is read just before the capture stops.

Per run: iofp's lost_completions; the runs of its completion program vs its issue program (each
loop read is also a read of the backing device, and both programs run for every device); the loop
device's issues and completions in tracefs; and when, after the first row, the rows without a
latency were issued (the skips come in bursts).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.completion_skips --runs 4 --backing disk
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import uuid
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq

from bench.capture_overhead import BACKINGS, BPF_STATS, make_loop, prog_stats
from iofp.contract import open_trace

TRACEFS = Path("/sys/kernel/tracing")
OUT = Path(__file__).resolve().parent / "out" / "completion_skips"


def one_run(dev: str, seconds: int, out: Path) -> dict:
    from bpf import CaptureOptions, start_capture

    name = dev.removeprefix("/dev/")
    major = os.major(os.stat(dev).st_rdev)
    minor = os.minor(os.stat(dev).st_rdev)
    inst = TRACEFS / "instances" / f"iofp-skips-{uuid.uuid4().hex[:8]}"
    inst.mkdir()
    events = [inst / "events" / "block" / e / "enable" for e in ("block_rq_issue", "block_rq_complete")]
    try:
        (inst / "buffer_size_kb").write_text("65536")
        (inst / "trace_clock").write_text("mono")
        for e in events:
            e.write_text("1")
        with start_capture(CaptureOptions(output=out, devices=[name], force=True)) as bg:
            fio = ["fio", "--name=r", f"--filename={dev}", "--direct=1", "--rw=randread", "--bs=4k",
                   "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={seconds}",
                   "--output=/dev/null"]  # fmt: skip
            subprocess.run(fio, check=True)
            runs = {k: v["runs"] for k, v in prog_stats(os.getpid()).items() if k.startswith("iofp_rq")}
            summary = bg.stop()
        (inst / "tracing_on").write_text("0")
        mark = f": {major},{minor} "
        issues = completes = 0
        with open(inst / "trace") as f:
            for line in f:
                if mark in line:
                    issues += "block_rq_issue" in line
                    completes += "block_rq_complete" in line
    finally:
        for e in events:
            e.write_text("0")
        inst.rmdir()
    io = pa.concat_tables(pq.read_table(f) for f in open_trace(out).files["io"])
    t0 = pa.compute.min(io.column("ts_ns")).as_py()
    no_lat = io.filter(pa.compute.is_null(io.column("lat_ns"))).column("ts_ns").to_pylist()
    shutil.rmtree(out, ignore_errors=True)
    return {
        "lost_completions": summary.loss.get("lost_completions", 0),
        "lost_recursion": summary.loss.get("lost_recursion", 0),
        "program_runs": runs,
        "tracefs_loop_issues": issues,
        "tracefs_loop_completes": completes,
        "rows_without_latency_ms": sorted(round((t - t0) / 1e6, 3) for t in no_lat),
    }


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--runs", type=int, default=4)
    ap.add_argument("--seconds", type=int, default=6)
    ap.add_argument("--backing", choices=sorted(BACKINGS), default="disk")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.completion_skips: needs root (loop devices, eBPF, tracefs)")
    OUT.mkdir(parents=True, exist_ok=True)
    dev, backing = make_loop(1024, args.backing)
    results = []
    BPF_STATS.write_text("1")
    try:
        for i in range(args.runs):
            r = one_run(dev, args.seconds, OUT / f"trace-{i}")
            results.append(r)
            print(json.dumps(r | {"rows_without_latency_ms": r["rows_without_latency_ms"][:20]}), flush=True)
    finally:
        BPF_STATS.write_text("0")
        subprocess.run(["losetup", "-d", dev], check=False)
        backing.unlink(missing_ok=True)
    result = {"command": " ".join(["python -m bench.completion_skips", *sys.argv[1:]]), "runs": results}
    (OUT / "result.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
