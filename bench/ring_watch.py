"""A full-rate `iofp capture`'s ring buffer watched from another process, beside CPU hogs, alternating
source trees (issue 29): the records it lost, how full the ring got, the longest time the consumer
position stood still while the producer moved, and whether the consumer position was ever seen to
go back (a write of it in two steps, which the kernel's reserve, reading it without a lock, believes).

The capture and load are tests/test_capture_cli.py's memory test's (`iofp capture --rotate 1h
--buffer 4MiB`; fio 4k randread QD32 libaio on a 256 MiB RAM loop), run from each --tree in turn
with its own interpreter path (`python -m cli.app`, cwd and PYTHONPATH the tree), beside --hogs
`yes > /dev/null` at nice 0. The watcher maps the ring's consumer and producer pages read-only
(BPF_MAP_GET_FD_BY_ID of the capture's ringbuf map) and reads both every ~5 ms from fio's start.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.ring_watch --tree main=DIR --tree new=. --rounds 3

(2026-11-29: 6 runs, 12 s each, took 171 s of the lock: about a run per 28 s beside two hogs.)
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import itertools
import json
import mmap
import os
import signal
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path

from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "ring_watch"
RINGBUF = 27  # BPF_MAP_TYPE_RINGBUF
_libc = ctypes.CDLL(None, use_errno=True)


def ring_map(pid: int) -> tuple[int, int] | None:
    """(map id, bytes) of the process's ring buffer map, from /proc/PID/fdinfo; None if it has none."""
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            if os.readlink(fd) != "anon_inode:bpf-map":
                continue
            lines = Path(f"/proc/{pid}/fdinfo/{fd.name}").read_text().splitlines()
            info = dict(x.split(":\t", 1) for x in lines if ":\t" in x)
        except OSError:
            continue
        if int(info.get("map_type", -1)) == RINGBUF:
            return int(info["map_id"]), int(info["max_entries"])
    return None


class RingWatch(threading.Thread):
    """Samples (monotonic s, producer_pos, consumer_pos) of a ring map every ~5 ms until stopped."""

    def __init__(self, map_id: int) -> None:
        super().__init__(daemon=True)
        attr = ctypes.create_string_buffer(struct.pack("<III", map_id, 0, 0), 128)
        fd = _libc.syscall(321, 14, attr, 128)  # bpf(BPF_MAP_GET_FD_BY_ID), x86_64
        if fd < 0:
            raise OSError(ctypes.get_errno(), f"BPF_MAP_GET_FD_BY_ID {map_id}")
        try:
            page = mmap.PAGESIZE
            self._cons = mmap.mmap(fd, page, mmap.MAP_SHARED, mmap.PROT_READ, offset=0)
            self._prod = mmap.mmap(fd, page, mmap.MAP_SHARED, mmap.PROT_READ, offset=page)
        finally:
            os.close(fd)  # the mappings hold the map
        self.samples: list[tuple[float, int, int]] = []
        self.done = threading.Event()

    def run(self) -> None:
        prod, cons = memoryview(self._prod).cast("Q"), memoryview(self._cons).cast("Q")
        while not self.done.is_set():
            self.samples.append((time.monotonic(), prod[0], cons[0]))
            time.sleep(0.005)
        prod.release()
        cons.release()


def summarize(samples: list[tuple[float, int, int]], size: int) -> dict:
    """Peak fill, producer rate, the longest stills of the consumer position with records waiting (to
    the sample that saw it move), and how often it was seen lower than the sample before."""
    stills, i = [], 0
    while i < len(samples) - 1:
        j = i
        while j + 1 < len(samples) and samples[j + 1][2] == samples[i][2]:
            j += 1
        # from the first sample with records waiting (not the idle time before) to the consumer's move
        waiting = [t for t, p, c in samples[i : j + 1] if p > c]
        if waiting and j + 1 < len(samples):
            stills.append(samples[j + 1][0] - waiting[0])
        i = j + 1
    (t0, p0, _), (t1, p1, _) = samples[0], samples[-1]
    rate = (p1 - p0) / (t1 - t0) if t1 > t0 else 0.0
    return {
        "samples": len(samples),
        "peak_fill_pct": round(100 * max(p - c for _, p, c in samples) / size, 1),
        "rate_mb_s": round(rate / 1e6, 1),
        "ring_s": round(size / rate, 2) if rate else None,
        "longest_stills_ms": [round(s * 1e3) for s in sorted(stills, reverse=True)[:3]],
        "consumer_went_back": sum(b[2] < a[2] for a, b in itertools.pairwise(samples)),
    }


def _links(pid: int) -> int:
    n = 0
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        with contextlib.suppress(OSError):
            n += os.readlink(fd) == "anon_inode:bpf_link"
    return n


def one(name: str, tree: Path, dev: str, seconds: int, out: Path) -> dict:
    cap = subprocess.Popen(
        [sys.executable, "-m", "cli.app", "capture", "--device", Path(dev).name, "-o", str(out),
         "--rotate", "1h", "--buffer", "4MiB", "--json", "-"],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=tree,
        env=os.environ | {"PYTHONPATH": str(tree)},
    )  # fmt: skip
    t0 = time.monotonic()
    while _links(cap.pid) < 5:  # its five block probes attached
        if cap.poll() is not None or time.monotonic() - t0 > 60:
            cap.kill()
            return {"tree": name, "error": (cap.communicate()[1] or "")[-300:]}
        time.sleep(0.05)
    started = time.monotonic() - t0
    found = ring_map(cap.pid)
    watch = RingWatch(found[0]) if found else None
    if watch:
        watch.start()
    fio = lab.fio("--name=full", f"--filename={dev}", "--direct=1", "--rw=randread", "--bs=4k",
                  "--iodepth=32", "--ioengine=libaio", "--time_based", f"--runtime={seconds}",
                  "--norandommap", "--output-format=json", check=False)  # fmt: skip
    cap.send_signal(signal.SIGINT)
    stdout, stderr = cap.communicate(timeout=120)
    if watch:
        watch.done.set()
        watch.join()
    subprocess.run(["rm", "-rf", str(out)], check=False)
    try:
        summary = json.loads(stdout)
    except ValueError:
        return {"tree": name, "error": stderr[-300:]}
    iops = json.loads(fio.stdout)["jobs"][0]["read"]["iops"]
    lost = {k: v for k, v in summary["loss"].items() if k.startswith("lost") and v}
    res = {"tree": name, "start_s": round(started, 1), "fio_iops": round(iops),
           "io_events": summary["io_events"], "lost": lost}  # fmt: skip
    if watch and found:
        res |= summarize(watch.samples, found[1])
    return res


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--tree", action="append", required=True, help="NAME=DIR, a source tree to run from")
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=12)
    ap.add_argument("--hogs", type=int, default=2)
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.ring_watch: needs root (loop devices, eBPF)")
    trees = [(n, Path(d).resolve()) for n, _, d in (t.partition("=") for t in args.tree)]
    OUT.mkdir(parents=True, exist_ok=True)
    dev, backing = lab.make_loop(256)
    hogs = [subprocess.Popen(["yes"], stdout=subprocess.DEVNULL) for _ in range(args.hogs)]
    runs = []
    try:
        for rnd in range(args.rounds):
            for name, tree in trees:
                out = Path(f"/dev/shm/iofp-ring-watch-{os.getpid()}")
                r = {"round": rnd} | one(name, tree, dev, args.seconds, out)
                print(json.dumps(r), flush=True)
                runs.append(r)
    finally:
        for h in hogs:
            h.kill()
            h.wait()
        lab.destroy_loop(dev, backing)
    path = OUT / f"{time.strftime('%Y%m%d-%H%M%S')}.json"
    path.write_text(json.dumps({"hogs": args.hogs, "seconds": args.seconds, "runs": runs}, indent=1))
    print(f"Wrote {path}")


if __name__ == "__main__":
    main()
