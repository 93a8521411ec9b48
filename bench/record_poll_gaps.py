"""The poller's longest wait between two drains of the kernel's ring buffer, under CPU hogs: `iofp
capture` (its Parquet writer a thread of the same process, at SCHED_IDLE: while the hogs starve it, it
can hold the interpreter's lock the poller needs) against `iofp record` (no such thread: each second's
records go to the ring in the polling thread itself, at normal priority; encoding runs in processes
of their own). A CI run of tests/test_capture_stress.py lost 4 s of events (lost_io_ringbuf 51,021)
under three hogs: a drain that waits longer than the ring buffer (32 MiB, ~0.5 M requests) holds.

Per round each mode once, alternating: the stress test's load (4k random reads at QD32 and 4k random
writes with fsync=1, together, on a RAM loop) for --seconds beside --hogs busy loops; the drain times
are taken by wrapping the loader's consume() (a bench may look inside). Per run: the longest and the
99th-percentile gap, the events lost, and the requests recorded against /sys/block.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.record_poll_gaps --rounds 4 --hogs 3
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import platform
import statistics
import subprocess
import sys
import threading
import time
import uuid
from pathlib import Path

import bpf.loader
from bpf import CaptureOptions, start_capture
from record import RecordOptions, read_summary, record
from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "record_poll_gaps"
_drains: list[float] = []
_stopped: list[float] = []  # when the capture began to stop: the drains after it are the last ones
_consume, _stop = bpf.loader.KernelCapture.consume, bpf.loader.KernelCapture.stop


def _timed_consume(self: bpf.loader.KernelCapture) -> None:
    _drains.append(time.monotonic())
    _consume(self)


def _timed_stop(self: bpf.loader.KernelCapture) -> int:
    """Detaching the ~20 syscall tracepoints takes a second or more beside the hogs; no event comes
    then (the block probes go first): that wait is not the poller's."""
    _stopped.append(time.monotonic())
    return _stop(self)


bpf.loader.KernelCapture.consume = _timed_consume  # type: ignore[method-assign]
bpf.loader.KernelCapture.stop = _timed_stop  # type: ignore[method-assign]


def load(dev: str, seconds: int) -> list[subprocess.Popen[str]]:
    common = ["--direct=1", "--ioengine=libaio", "--time_based", f"--runtime={seconds}", f"--filename={dev}"]
    return [lab.start_fio("--name=rr", "--rw=randread", "--bs=4k", "--iodepth=32", "--size=256m", *common),
            lab.start_fio("--name=ws", "--rw=randwrite", "--bs=4k", "--iodepth=1", "--fsync=1",
                          "--offset=256m", "--size=128m", *common)]  # fmt: skip


def stat(dev: str) -> int:
    s = [int(x) for x in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]
    return s[0] + s[4] + s[15]


def run_capture(dev: str, seconds: int, scratch: Path) -> dict:
    opts = CaptureOptions(output=scratch / "t", devices=[Path(dev).name], rotate_s=1.0)
    with start_capture(opts) as bg:
        jobs = load(dev, seconds)
        for j in jobs:
            j.wait()
        s = bg.stop()
    return {"recorded": s.io_events + s.counts["completed_unissued"], "lost": s.lost_events}


def run_record(dev: str, seconds: int, scratch: Path) -> dict:
    stop = threading.Event()
    ready = threading.Event()

    def drive() -> None:
        ready.wait(120)
        jobs = load(dev, seconds)
        for j in jobs:
            j.wait()
        time.sleep(1.2)
        stop.set()

    threading.Thread(target=drive, daemon=True).start()
    s = record(RecordOptions(output=scratch / "r", devices=[Path(dev).name], history_ns=60 * 10**9,
                             after_ns=0), stop, ready=ready)  # fmt: skip
    # the summary counts the empty flush barriers as writes, as /sys/block does
    rows = read_summary(scratch / "r").to_pylist()
    recorded = sum(r["count"] for r in rows if r["op"] in ("read", "write", "flush"))
    return {"recorded": recorded, "lost": s.lost_events}


MODES = {"capture": run_capture, "record": run_record}


def one(mode: str, rnd: int, hogs: int, seconds: int) -> dict:
    dev, backing = lab.make_loop(512, lab.RAM, prefix="iofp-bench")
    scratch = Path("/tmp") / f"iofp-bench-gaps-{uuid.uuid4().hex[:8]}"
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(hogs)]
    try:
        _drains.clear()
        _stopped.clear()
        before = stat(dev)
        res = MODES[mode](dev, seconds, scratch)
        done = stat(dev) - before
    finally:
        for b in busy:
            b.kill()
            b.wait()
        lab.destroy_loop(dev, backing)
        subprocess.run(["rm", "-rf", str(scratch)], check=False)
    polling = [t for t in _drains if t < _stopped[-1]]
    gaps = sorted(b - a for a, b in itertools.pairwise(polling))
    return {"mode": mode, "round": rnd, "gap_max_s": round(gaps[-1], 3),
            "gap_p99_s": round(gaps[int(len(gaps) * 0.99)], 3), "drains": len(_drains),
            "gaps_over_0.5s": sum(g > 0.5 for g in gaps), "lost": res["lost"],
            "recorded": res["recorded"], "block_layer": done}  # fmt: skip


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=4)
    ap.add_argument("--hogs", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=8)
    ap.add_argument("--modes", default="capture,record")
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.record_poll_gaps: needs root (loop devices, eBPF)")
    OUT.mkdir(parents=True, exist_ok=True)
    modes, runs = args.modes.split(","), []
    for rnd in range(args.rounds):
        for mode in modes[rnd % 2 :] + modes[: rnd % 2]:
            r = one(mode, rnd, args.hogs, args.seconds)
            runs.append(r)
            print(json.dumps(r), flush=True)
    summary = {}
    for m in modes:
        rs = [r for r in runs if r["mode"] == m]
        summary[m] = {"gap_max_s": [r["gap_max_s"] for r in rs],
                      "gap_p99_s_median": statistics.median(r["gap_p99_s"] for r in rs),
                      "lost": [r["lost"] for r in rs],
                      "recorded_vs_block_layer": [r["recorded"] - r["block_layer"] for r in rs]}  # fmt: skip
    result = {"command": " ".join(["python -m bench.record_poll_gaps", *sys.argv[1:]]),
              "host": platform.node(), "kernel": platform.release(), "summary": summary,
              "runs": runs}  # fmt: skip
    (OUT / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
