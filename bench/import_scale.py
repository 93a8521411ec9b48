"""Benchmark: import a generated 10-million-line blkparse file; peers: `wc -l` and a plain Python
loop that reads and splits every line (the floor for any line-by-line Python parser).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.import_scale [--lines 10000000] [--reps 2]

The file holds Q, D and C events (3 lines per request) for 4-64 KiB reads and writes on two
devices, up to 8 requests in flight, as blkparse prints them. Every measured run is a child process;
its peak RSS comes from wait4(). Runs alternate.
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import time
from pathlib import Path

PEER_LOOP = (
    "import sys\n"
    "n = 0\n"
    "with open(sys.argv[1]) as f:\n"
    "    for line in f:\n"
    "        n += len(line.split())\n"
    "print(n)\n"
)


def generate(path: Path, lines: int) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    depth = 8
    pending: list[tuple[str, int, str, int]] = []
    seq = 0
    t = 0
    written = 0
    with open(path, "w") as f:
        buf = []
        i = 0
        while written < lines:
            dev = "8,16" if i % 3 else "259,0"
            rw = "R" if i % 10 < 7 else "WS"
            sector = (i * 7919 % 10_000_000) * 8
            nsect = (8, 16, 32, 128)[i % 4]
            t += 10_000
            s = f"{t // 10**9}.{t % 10**9:09d}"
            seq += 1
            head = f"{dev:>5} {i % 2:3d} {seq:8d} {s:>14} {1000 + i % 50:5d}"
            buf.append(f"{head}  Q {rw:>3} {sector} + {nsect} [app]\n")
            seq += 1
            buf.append(f"{head}  D {rw:>3} {sector} + {nsect} [app]\n")
            written += 2
            pending.append((dev, sector, rw, nsect))
            if len(pending) >= depth or written >= lines - 1:
                d, sec, r, ns = pending.pop(0)
                t += 5_000
                s = f"{t // 10**9}.{t % 10**9:09d}"
                seq += 1
                buf.append(f"{d:>5} {i % 2:3d} {seq:8d} {s:>14}     0  C {r:>3} {sec} + {ns} [0]\n")
                written += 1
            i += 1
            if len(buf) >= 100_000:
                f.writelines(buf)
                buf.clear()
        f.writelines(buf)


def measure(cmd: list[str]) -> tuple[float, int]:
    """Wall seconds and peak RSS (KiB) of `cmd` run as a child process."""
    t0 = time.perf_counter()
    p = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE)
    _, status, ru = os.wait4(p.pid, 0)
    wall = time.perf_counter() - t0
    if os.waitstatus_to_exitcode(status) != 0:
        sys.exit(f"{cmd} failed: {p.stderr.read().decode()[-2000:]}")
    return wall, ru.ru_maxrss


def _count_lines(path: Path) -> int:
    with open(path, "rb") as f:
        return sum(chunk.count(b"\n") for chunk in iter(lambda: f.read(1 << 20), b""))


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--lines", type=int, default=10_000_000)
    ap.add_argument("--reps", type=int, default=2)
    ap.add_argument("--file", default="/tmp/iofp-bench/blkparse-10m.txt")
    a = ap.parse_args()
    src = Path(a.file)
    if not src.exists() or _count_lines(src) != a.lines:
        t0 = time.perf_counter()
        generate(src, a.lines)
        print(f"generated {a.lines:,} lines in {time.perf_counter() - t0:.1f} s")
    print(f"{src}: {a.lines:,} lines, {src.stat().st_size / 2**20:,.0f} MiB; cores {os.cpu_count()}")
    out = src.with_suffix(".trace")
    iofp = str(Path(sys.executable).with_name("iofp"))
    runs = {
        "wc -l": ["wc", "-l", str(src)],
        "python split loop": [sys.executable, "-c", PEER_LOOP, str(src)],
        "iofp import": [iofp, "import", "blkparse", str(src), "-o", str(out), "--force"],
    }
    res: dict[str, list[tuple[float, int]]] = {k: [] for k in runs}
    for rep in range(a.reps):
        for name, cmd in runs.items():
            wall, rss = measure(cmd)
            res[name].append((wall, rss))
            print(f"rep {rep + 1} {name:18s} {wall:7.2f} s  {a.lines / wall / 1e6:6.2f} M lines/s  "
                  f"peak RSS {rss / 1024:7.1f} MiB")  # fmt: skip
    best = {k: min(w for w, _ in v) for k, v in res.items()}
    rss = max(r for _, r in res["iofp import"])
    imp = best["iofp import"]
    print(f"best: iofp import {imp:.2f} s ({a.lines / imp / 1e6:.2f} M lines/s), "
          f"{imp / best['python split loop']:.1f}x the Python split loop, "
          f"{imp / best['wc -l']:.0f}x wc -l; import peak RSS {rss / 1024:.0f} MiB")  # fmt: skip


if __name__ == "__main__":
    main()
