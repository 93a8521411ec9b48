"""`iofp record` over a long steady load: how often its trigger fires with no step in the load (the
false-trigger rate), and its per-second summary against exact oracles: the counts of every second
summed against /sys/block over the whole run, and each minute's p99 against the exact nearest-rank
p99 of a full trace of the same minutes (an `iofp capture` running beside it for --capture-minutes).

The load is tests/test_record.py's, without its step: 300 buffered 4 KiB writes a second each with
fsync (a commit) and 2000 direct 4 KiB random reads a second (QD1), both at lab.MEASURE_NICE, beside
--hogs busy loops, on a RAM loop; the trigger is the test's: commit.p99<=100ms held for 2 s.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.record_steady --minutes 30 --capture-minutes 10
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import shutil
import signal
import subprocess
import sys
import time
import uuid
from pathlib import Path

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iofp.contract import open_trace
from record import SUMMARY, histogram, read_summary
from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "record_steady"
TRIGGER = ("--trigger", "commit.p99<=100ms", "--for", "2s")


def stat(dev: str) -> list[int]:
    return [int(x) for x in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]


def start(args: list[str], ready: str) -> subprocess.Popen[str]:
    p = subprocess.Popen([sys.executable, "-m", "cli.app", *args], cwd=REPO, stdout=subprocess.PIPE,
                         stderr=subprocess.PIPE, text=True, preexec_fn=lambda: os.nice(-10))  # fmt: skip
    assert p.stderr is not None
    line = p.stderr.readline()
    if not line.startswith(ready):
        raise RuntimeError(f"{args[0]} did not start: {line}{p.stderr.read()}")
    return p


def stopped(p: subprocess.Popen[str]) -> tuple[dict, str]:
    p.send_signal(signal.SIGTERM)
    out, err = p.communicate(timeout=600)
    return json.loads(out), err


def minute_p99s(rec: Path, trace: Path) -> list[dict]:
    """Each whole minute the capture covered: the summary's p99 (histogram) and the exact one, for the
    reads and the commits, by the second each completed."""
    t = open_trace(trace)
    origin = t.meta.capture_start_ns
    io = pa.Table.from_batches(list(t.batches("io", ["ts_ns", "lat_ns", "op"])))
    sync = pa.Table.from_batches(list(t.batches("sync", ["ts_ns", "lat_ns"])))
    done = {"read": None, "commit": None}
    reads = io.filter(pc.equal(io["op"], "read"))
    for op, tbl in (("read", reads), ("commit", sync)):
        lat = tbl["lat_ns"].to_numpy()
        done[op] = ((origin + tbl["ts_ns"].to_numpy() + lat) // 10**9, lat)
    rows = read_summary(rec).to_pylist()
    first, last = int(done["read"][0].min()) + 1, int(done["read"][0].max())
    out = []
    for lo in range(first // 60 * 60 + 60, last - 59, 60):
        for op in ("read", "commit"):
            sec, lat = done[op]
            exact = histogram.exact(lat[(sec >= lo) & (sec < lo + 60)], "p99")
            hist = np.zeros(histogram.NBINS, np.int64)
            for r in rows:
                if r["op"] == op and lo <= r["t"] < lo + 60:
                    np.add.at(hist, r["bins"], r["bin_counts"])
            idx = np.flatnonzero(hist)
            got = histogram.percentile(idx, hist[idx], "p99")
            err = abs(got - exact)
            out.append({"minute": lo, "op": op, "exact_p99_ns": exact, "summary_p99_ns": got,
                        "rel_error": err / exact, "within": err <= exact * histogram.ERROR})  # fmt: skip
    return out


def window_p99s(rec: Path) -> dict:
    """The trigger's margin: each one-second window's commit p99 from the summary's histograms, and how
    many times a tighter `commit.p99<=X` held for 2 s (two windows in a row above X) would have fired on
    the same steady load."""
    per: dict[int, np.ndarray] = {}
    for r in read_summary(rec).to_pylist():
        if r["op"] == "commit" and r["bin_counts"]:
            h = per.setdefault(r["t"], np.zeros(histogram.NBINS, np.int64))
            np.add.at(h, r["bins"], r["bin_counts"])
    p99 = {}
    for t in sorted(per):
        idx = np.flatnonzero(per[t])
        p99[t] = histogram.percentile(idx, per[t][idx], "p99")
    vals = np.array(list(p99.values()), float)
    tighter = {}
    for ms in (5, 10, 20, 50, 100):
        over = [t for t in p99 if p99[t] > ms * 1e6]
        held = sum(1 for t in over if p99.get(t - 1, 0) > ms * 1e6)
        tighter[f"commit.p99<={ms}ms"] = {"windows_over": len(over), "held_2s": held}
    dist = {f"p{q}": float(np.percentile(vals, q)) / 1e6 for q in (50, 99, 100)} if len(vals) else {}
    return {"windows_with_commits": len(p99), "commit_p99_ms": dist, "tighter_triggers": tighter}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--capture-minutes", type=float, default=10)
    ap.add_argument("--hogs", type=int, default=2)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.record_steady: needs root (loop devices, eBPF)")
    OUT.mkdir(parents=True, exist_ok=True)
    scratch = Path("/tmp") / f"iofp-bench-steady-{uuid.uuid4().hex[:8]}"
    rec_dir, trace = scratch / "rec", scratch / "capture"
    seconds = int(args.minutes * 60)
    busy = [subprocess.Popen([sys.executable, "-c", "while True: pass"]) for _ in range(args.hogs)]
    try:
        with lab.loop_device(512) as dev:
            s0 = stat(dev)
            rec = start(["record", "-d", Path(dev).name, "-o", str(rec_dir), "--history", "2m",
                         "--after", "10s", "--json", "-", *TRIGGER], "iofp: recording")  # fmt: skip
            cap = start(["capture", "-d", Path(dev).name, "-o", str(trace), "--json", "-"], "iofp: recording")
            nice = lab.join(None, lab.MEASURE_NICE)
            timed = ("--time_based", f"--runtime={seconds}", "--ioengine=psync", "--bs=4k")
            loads = [lab.start_fio("--name=commits", f"--filename={dev}", "--rw=randwrite", "--direct=0",
                                   "--fsync=1", "--rate_iops=300", "--size=128m", *timed, preexec_fn=nice),
                     lab.start_fio("--name=reads", f"--filename={dev}", "--rw=randread", "--direct=1",
                                   "--rate_iops=2000", "--offset=256m", "--size=256m", *timed,
                                   preexec_fn=nice)]  # fmt: skip
            time.sleep(args.capture_minutes * 60)
            cap_summary, _ = stopped(cap)
            for load in loads:
                load.wait()
            time.sleep(2)
            rec_summary, rec_err = stopped(rec)
            s1 = stat(dev)
        rows = read_summary(rec_dir).to_pylist()
        counts = {op: sum(r["count"] for r in rows if r["op"] == op) for op in ("read", "write", "flush")}
        block = {"read": s1[0] - s0[0], "write": s1[4] - s0[4], "flush": s1[15] - s0[15]}
        incidents = sorted(p.name for p in (rec_dir / "incidents").glob("*"))
        minutes = minute_p99s(rec_dir, trace)
        try:  # a figure beside the run's own: never lose the 30 minutes to it
            margin = window_p99s(rec_dir)
        except Exception as e:
            margin = {"error": repr(e)}
        result = {
            "command": " ".join(["python -m bench.record_steady", *sys.argv[1:]]),
            "host": platform.node(), "kernel": platform.release(), "seconds": seconds, "hogs": args.hogs,
            "trigger": " ".join(TRIGGER),
            "false_triggers": len(incidents), "incidents": incidents, "suppressed": rec_summary["suppressed"],
            "summary_counts": counts, "block_layer": block, "exact": counts == block,
            "summary_seconds": rec_summary["seconds"], "late": rec_summary["late"],
            "lost": rec_summary["lost_events"], "capture_rows": cap_summary["io_events"],
            "window_commit_p99": margin,
            "p99_minutes": minutes, "p99_all_within_error": all(m["within"] for m in minutes),
            "p99_worst_rel_error": max((m["rel_error"] for m in minutes), default=None),
            "stderr": rec_err[-2000:],
        }  # fmt: skip
    finally:
        if (rec_dir / SUMMARY).is_dir():  # tiny: kept so that the window figures can be recomputed
            shutil.rmtree(OUT / SUMMARY, ignore_errors=True)
            try:  # as the figures beside it: never lose the run's result to the copy
                shutil.copytree(rec_dir / SUMMARY, OUT / SUMMARY)
            except OSError as e:
                print(f"record_steady: the summary was not kept: {e}", file=sys.stderr)
        for b in busy:
            b.kill()
            b.wait()
        subprocess.run(["rm", "-rf", str(scratch)], check=False)
    (OUT / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: v for k, v in result.items() if k not in ("p99_minutes", "stderr")}, indent=2))


if __name__ == "__main__":
    main()
