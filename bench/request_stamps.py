"""Can a capture read a request's times from the request itself instead of pairing in a map?

bcc's biolatpcts computes each latency in one block_rq_complete program, from the request's own
`io_start_time_ns`. That stamp exists only when the queue keeps I/O statistics (QUEUE_FLAG_STATS,
which wbt and iolatency turn on), and since v6.9 it comes from a time cached in the submitting
task's plug. For a loop device over /dev/shm, with wbt as the device came (`wbt_lat_usec` as read)
and turned on by writing it (`--wbt-usec`), and for three submission patterns (libaio one request per
io_submit, io_uring batches of 16 in one plug, psync QD1), bench/request_stamps.bpf.c compares on
every request: the clock at block_rq_issue with `io_start_time_ns`, and the clock at block_io_start
with `start_time_ns` (the queue time iofp reads). Prints, per case, how many requests carried each
stamp and the error's distribution in log2 buckets (ns).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.request_stamps
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path

from bench.capture_overhead import make_loop
from tests import lab

HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "request_stamps"
SUBMITS = {
    "libaio QD32 (a plug per request)": ["--ioengine=libaio", "--iodepth=32", "--rw=randread"],
    "io_uring QD32, batches of 16": ["--ioengine=io_uring", "--iodepth=32", "--iodepth_batch_submit=16",
                                     "--rw=randread"],
    "psync QD1 writes": ["--ioengine=psync", "--rw=randwrite"],
}  # fmt: skip
COUNTS = ("issued", "io_start_time_ns unset", "io_start_time_ns after the clock", "start_time_ns unset",
          "issued before the program")  # fmt: skip


def load(kdev: int):  # -> bcc.BPF
    from bcc import BPF

    from bpf.btf import kernel_btf

    btf = kernel_btf()
    offs = {
        "OFF_RQ_Q": btf.member("request", "q")[0],
        "OFF_RQ_IO_START": btf.member("request", "io_start_time_ns")[0],
        "OFF_RQ_START": btf.member("request", "start_time_ns")[0],
        "OFF_Q_DISK": btf.member("request_queue", "disk")[0],
        "OFF_DISK_MAJOR": btf.member("gendisk", "major")[0],
        "KDEV": kdev,
    }
    return BPF(src_file=str(HERE / "request_stamps.bpf.c").encode(),
               cflags=[f"-D{k}={v}" for k, v in offs.items()])  # fmt: skip


def buckets(hist) -> dict[str, int]:  # -> {"lo-hi": count}
    items = sorted((k.value, v.value) for k, v in hist.items() if v.value)
    return {f"{1 << k >> 1}-{(1 << k) - 1}": n for k, n in items}


def one(dev: str, kdev: int, args: list[str], seconds: int) -> dict:
    b = load(kdev)
    lab.fio("--name=s", f"--filename={dev}", "--bs=4k", "--direct=1", "--time_based",
            f"--runtime={seconds}", "--norandommap", "--randrepeat=0", "--output=/dev/null",
            *args, timeout=None)  # fmt: skip
    counts = {name: b["counts"][i].value for i, name in enumerate(COUNTS)}
    out = {
        "counts": counts,
        "issue minus io_start_time_ns": buckets(b["issue_late"]),
        "entry minus start_time_ns (stamp earlier)": buckets(b["entry_early"]),
        "start_time_ns minus entry (stamp later)": buckets(b["entry_late"]),
    }
    b.cleanup()
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--seconds", type=int, default=3)
    ap.add_argument(
        "--wbt-usec", type=int, default=2000, help="wbt latency target written for the second pass"
    )
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.request_stamps: needs root (loop devices, eBPF)")
    dev, backing = make_loop(256)
    name = dev.removeprefix("/dev/")
    st = os.stat(dev)
    kdev = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
    wbt = Path(f"/sys/block/{name}/queue/wbt_lat_usec")
    result = {"device": f"{dev} over {backing}", "kernel": os.uname().release, "cases": {}}
    try:
        for setting in (None, args.wbt_usec):
            if setting is not None:
                wbt.write_text(str(setting))
            label = f"wbt_lat_usec {wbt.read_text().strip()}" + (
                " (as the device came)" if setting is None else " (written)"
            )
            for what, fio_args in SUBMITS.items():
                r = one(dev, kdev, fio_args, args.seconds)
                result["cases"][f"{label}; {what}"] = r
                print(f"{label}; {what}", json.dumps(r), flush=True)
    finally:
        lab.destroy_loop(dev, backing)
    OUT.mkdir(parents=True, exist_ok=True)
    (OUT / "result.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
