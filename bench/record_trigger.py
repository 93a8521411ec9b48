"""How soon `iofp record` acts on a trigger, and how soon the incident is on disk: from the end of the
window that missed the SLO to the trigger firing (the decision), to the history before it encoded into
the incident's Parquet files, and to the incident complete (trace.json) once `--after` has passed.

The load: 5000 direct 4 KiB random reads a second (libaio QD4: the history an incident carries) and
300 buffered writes a second each with fsync (a commit), in a blkio group whose write limit drops to 5
IOPS for 4 s every --every seconds (each step a commit-latency step, tests/test_record.py's); the
trigger commit.p99<=100ms (one window), --after 5s, --cooldown 0, --history as given; beside --hogs
busy loops. The times come from each incident's trace.json (extra.incident: window_end_ns, fired_ns,
history_encoded_ns, closed_ns, complete_ns, all wall clock).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.record_trigger --steps 5 --history 2m
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import signal
import statistics
import subprocess
import sys
import time
import uuid
from pathlib import Path

from iofp.contract import open_trace
from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "record_trigger"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--steps", type=int, default=5)
    ap.add_argument("--every", type=int, default=40, help="seconds between steps")
    ap.add_argument("--history", default="2m")
    ap.add_argument("--hogs", type=int, default=0)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.record_trigger: needs root (loop devices, eBPF, cgroups)")
    OUT.mkdir(parents=True, exist_ok=True)
    rec_dir = Path("/tmp") / f"iofp-bench-trigger-{uuid.uuid4().hex[:8]}"
    seconds = args.every * (args.steps + 1) + 30
    incomplete: list[dict] = []
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        with lab.loop_device(512) as dev, lab.throttled(dev) as group:
            rec = subprocess.Popen(
                [sys.executable, "-m", "cli.app", "record", "-d", Path(dev).name, "-o", str(rec_dir),
                 "--history", args.history, "--after", "5s", "--cooldown", "0", "--max-incidents", "100",
                 "--trigger", "commit.p99<=100ms", "--json", "-"],
                cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                preexec_fn=lambda: os.nice(-10))  # fmt: skip
            assert rec.stderr is not None and rec.stderr.readline().startswith("iofp: recording")
            timed = ("--time_based", f"--runtime={seconds}", "--bs=4k")
            loads = [lab.start_fio("--name=reads", f"--filename={dev}", "--rw=randread", "--direct=1",
                                   "--ioengine=libaio", "--iodepth=4", "--rate_iops=5000", "--offset=256m",
                                   "--size=256m", *timed, preexec_fn=lab.join(None, lab.MEASURE_NICE)),
                     lab.start_fio("--name=commits", f"--filename={dev}", "--rw=randwrite", "--direct=0",
                                   "--ioengine=psync", "--fsync=1", "--rate_iops=300", "--size=128m", *timed,
                                   preexec_fn=lab.join(group, lab.MEASURE_NICE))]  # fmt: skip
            for _ in range(args.steps):
                time.sleep(args.every - 4)
                lab.limit(group, dev, write_iops=5)
                time.sleep(4)
                lab.limit(group, dev, write_iops=0)
            for load in loads:
                load.wait()
            rec.send_signal(signal.SIGTERM)
            out, err = rec.communicate(timeout=600)
        incidents, incomplete = [], []
        for p in sorted((rec_dir / "incidents").iterdir()):
            if not (p / "trace.json").exists():  # its encoder failed: kept, with the recorder's stderr
                incomplete.append({"name": p.name, "doc": json.loads((p / "incident.json").read_text()),
                                   "files": sorted(str(f.relative_to(p)) for f in p.rglob("*"))[:50]})
                continue
            t = open_trace(p)
            x = t.meta.extra["incident"]
            end = x["window_end_ns"]
            incidents.append({
                "name": p.name, "rows": t.num_rows("io"), "history_segments": x["history_segments"],
                "decision_ms": (x["fired_ns"] - end) / 1e6,
                "history_encoded_ms": (x.get("history_encoded_ns", end) - end) / 1e6,
                "complete_after_close_ms": (x["complete_ns"] - x["closed_ns"]) / 1e6,
                "complete_ms": (x["complete_ns"] - end) / 1e6, "cut": x.get("cut"),
                "bytes": sum(f.stat().st_size for f in p.rglob("*.parquet")),
            })  # fmt: skip
    finally:
        for b in busy:
            b.kill()
            b.wait()
        if not incomplete:
            subprocess.run(["rm", "-rf", str(rec_dir)], check=False)

    def med(k: str) -> float:
        return statistics.median(i[k] for i in incidents)

    result = {
        "command": " ".join(["python -m bench.record_trigger", *sys.argv[1:]]), "host": platform.node(),
        "kernel": platform.release(), "hogs": args.hogs, "steps": args.steps, "incidents": incidents,
        "median": {k: med(k) for k in ("decision_ms", "history_encoded_ms", "complete_after_close_ms",
                                       "complete_ms", "rows")} if incidents else {},
        "summary": json.loads(out), "incomplete": incomplete, "kept": str(rec_dir) if incomplete else None,
        "stderr": err[-3000:],
    }  # fmt: skip
    (OUT / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("incidents", "median", "incomplete", "kept")}, indent=2))
    if incomplete:
        print(err, file=sys.stderr)


if __name__ == "__main__":
    main()
