"""Which block completions BPF programs never see, and in whose context the kernel ran them.

4k random reads at QD32 (libaio, direct) on a loop device (`--backing disk`: a VM-disk file read
with direct I/O, whose completions all run on the CPU that takes the disk's interrupt; `shm`: RAM)
while four observers watch the device's block_rq_complete:
- a private tracefs instance (trace_clock mono), the oracle, which also records in whose context
  (the current task, interrupted by the softirq) each completion ran;
- an independent raw-tracepoint BPF program that only counts (bench/completion_witness.bpf.c);
- `iofp capture` (in this process), with its own tracefs witness of PID 1's threads
  (bpf/witness.py): its program's unseen completions and how many it recovered;
- the per-program recursion_misses the kernel reports for both BPF objects, read after detach.
Per run: the shortfall of each BPF observer against the oracle, and the oracle's completions that
ran in the context of PID 1's threads (the VM agent): on this VM the two are equal in every run.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.completion_skips --runs 4 --backing disk
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import uuid
from collections import Counter
from pathlib import Path

from bench.capture_overhead import BACKINGS, make_loop
from tests import lab

TRACEFS = Path("/sys/kernel/tracing")
HERE = Path(__file__).resolve().parent
OUT = HERE / "out" / "completion_skips"
LINE = re.compile(r"^\s*(.+)-(\d+)\s+\[\d+\]\s+\S+\s+[\d.]+: block_rq_complete: (\d+),(\d+) ")


def independent_witness(kdev: int):  # -> bcc.BPF
    from bcc import BPF

    from bpf.btf import kernel_btf
    from bpf.loader import field_defines

    fields = {
        "OFF_RQ_Q": ("request", "q", 8),
        "OFF_Q_DISK": ("request_queue", "disk", 8),
        "OFF_DISK_MAJOR": ("gendisk", "major", 4),
    }
    flags = [*field_defines(kernel_btf(), fields), f"-DKDEV={kdev}"]
    return BPF(src_file=str(HERE / "completion_witness.bpf.c").encode(), cflags=flags)


def oracle_contexts(trace: Path, kdev: int) -> Counter:
    """Completions of the device in the tracefs text, by the thread id of the context they ran in."""
    by_tid: Counter = Counter()
    with open(trace) as f:
        for line in f:
            if (m := LINE.match(line)) and (int(m[3]) << 20 | int(m[4])) == kdev:
                by_tid[int(m[2])] += 1
    return by_tid


def comm(tid: int) -> str:
    try:
        return Path(f"/proc/{tid}/comm").read_text().strip()
    except OSError:
        return f"tid {tid} (gone)"


def one_run(dev: str, seconds: int, out: Path) -> dict:
    from bpf import CaptureOptions, start_capture
    from bpf.btf import kernel_btf
    from bpf.loader import prog_info_layout, recursion_misses

    st = os.stat(dev)
    kdev = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
    inst = TRACEFS / "instances" / f"iofp-skips-{uuid.uuid4().hex[:8]}"
    inst.mkdir()
    event = inst / "events" / "block" / "block_rq_complete"
    try:
        (inst / "buffer_size_kb").write_text("131072")
        (inst / "trace_clock").write_text("mono")
        (event / "filter").write_text(f"dev == {kdev}")
        (event / "enable").write_text("1")
        witness = independent_witness(kdev)
        fio = ["--name=r", f"--filename={dev}", "--direct=1", "--rw=randread", "--bs=4k",
               "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={seconds}",
               "--norandommap", "--output=/dev/null"]  # fmt: skip
        with start_capture(CaptureOptions(output=out, devices=[dev.removeprefix("/dev/")], force=True)) as bg:
            lab.fio(*fio, timeout=None)
            summary = bg.stop()
        witness_seen = int(witness["seen"][witness["seen"].Key(0)].value)
        witness.detach_raw_tracepoint(tp=b"block_rq_complete")
        progs = [fn.fd for fn in witness.funcs.values()]
        witness_recursion = recursion_misses(progs, prog_info_layout(kernel_btf()))
        witness.cleanup()
        (event / "enable").write_text("0")
        by_tid = oracle_contexts(inst / "trace", kdev)
    finally:
        event.joinpath("enable").write_text("0")
        inst.rmdir()
    shutil.rmtree(out, ignore_errors=True)
    agent = {int(t.name) for t in Path("/proc/1/task").iterdir()}
    comms: Counter = Counter()
    for tid, n in by_tid.items():
        comms[comm(tid)] += n
    total = sum(by_tid.values())
    return {
        "oracle_completions": total,
        "oracle_in_pid1_threads_context": sum(n for tid, n in by_tid.items() if tid in agent),
        "independent_bpf_shortfall": total - witness_seen,
        "independent_bpf_recursion_misses": witness_recursion,
        "iofp_rows": summary.io_events,
        "iofp_unseen_completions": summary.counts.get("unseen_completions", 0),
        "iofp_recovered_completions": summary.counts.get("recovered_completions", 0),
        "iofp_lost_completions": summary.loss.get("lost_completions", 0),
        "iofp_lost_recursion": summary.loss.get("lost_recursion", 0),
        "oracle_contexts_top": comms.most_common(6),
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
    try:
        for i in range(args.runs):
            r = one_run(dev, args.seconds, OUT / f"trace-{i}")
            results.append(r)
            print(json.dumps(r), flush=True)
    finally:
        lab.destroy_loop(dev, backing)
    result = {"command": " ".join(["python -m bench.completion_skips", *sys.argv[1:]]), "runs": results}
    (OUT / "result.json").write_text(json.dumps(result, indent=2))


if __name__ == "__main__":
    main()
