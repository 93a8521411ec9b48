"""`iofp probe` on the lab devices of ../shared/notes/lab-devices.md, repeated: the tables and the knee.

Devices (made here, detached afterwards): ram (a loop over a /dev/shm file), disk (a direct-io loop
over a file on the VM disk, /tmp), throttled (the RAM loop under a blkio cgroup v1 group capping
reads at --throttle IOPS; the probe, and the fio it starts, join the group before fio starts). Each
repeat runs `iofp probe DEV ARGS -o bench/out/probe_lab/DEVICE-R` for every device in turn (the order
alternating), the probe's own command line, so a row can be re-run by hand. Prints, per device, the
first repeat's table as `iofp probe` prints it, then a markdown table of every repeat's knee and cell
figures.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.probe_lab --devices ram,disk --repeat 3 \\
        -- --cells sweep --reads-only --precondition none
"""

from __future__ import annotations

import argparse
import os
import subprocess
import sys
import uuid
from pathlib import Path

from iofp import probe_result as pr

OUT = Path("bench/out/probe_lab")
CGROUP = Path("/sys/fs/cgroup/blkio")


def make_loop(kind: str, size_mib: int) -> tuple[str, Path]:
    where, flags = ("/dev/shm", []) if kind != "disk" else ("/tmp", ["--direct-io=on"])
    backing = Path(where) / f"iofp-bench-probe-{uuid.uuid4().hex[:8]}.img"
    with open(backing, "wb") as f:
        f.truncate(size_mib << 20)
    dev = subprocess.run(
        ["losetup", "-f", "--show", *flags, str(backing)], check=True, capture_output=True, text=True
    ).stdout.strip()
    return dev, backing


def run_probe(dev: str, args: list[str], out: Path, group: Path | None) -> pr.ProbeResult:
    def join() -> None:
        if group is not None:
            (group / "cgroup.procs").write_text(str(os.getpid()))

    cmd = [
        sys.executable,
        "-c",
        "from cli.app import main; main()",
        "probe",
        dev,
        *args,
        "-o",
        str(out),
        "--force",
    ]
    res = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=join)
    (out.parent / f"{out.name}.txt").write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr}")
    return pr.load(out)[1]


def row(device: str, rep: int, res: pr.ProbeResult) -> str:
    knee = res.sweep.knee if res.sweep else None
    cells = []
    for c in sorted(res.cells, key=lambda c: c.cell):
        run = res.run(c.run)
        if run.kind == "commit":
            cap = run.capture
            cells.append(
                f"{c.label}: {cap.commits_per_s:,.0f}/s fsync p50 {cap.fsync_p50_us:,.0f} µs" if cap else ""
            )
        elif run.fio:
            cells.append(f"{c.label}: {run.fio.iops:,.0f} IOPS p99 {run.fio.p99_us:,.0f} µs")
    sweep = " / ".join(f"{p.iodepth}:{p.iops:,.0f}" for p in res.sweep.points) if res.sweep else ""
    k = f"QD{knee.iodepth} ({knee.iops_gain:+.0%} IOPS, p99 {knee.p99_growth:+.0%})" if knee else "none"
    k = k if res.sweep else "(no sweep)"
    return f"| {device} | {rep} | {k} | {sweep} | {'; '.join(cells)} | {res.wall_s:.0f} s |"


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--devices", default="ram,disk,throttled")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--size-mib", type=int, default=1024)
    ap.add_argument("--throttle", type=int, default=3000, help="read IOPS cap of the throttled device")
    ap.add_argument("probe_args", nargs="*", help="passed to iofp probe (after --)")
    a = ap.parse_args()
    OUT.mkdir(parents=True, exist_ok=True)
    devices = a.devices.split(",")
    made: dict[str, tuple[str, Path]] = {}
    group = None
    try:
        for d in devices:
            made[d] = make_loop(d, a.size_mib)
        if "throttled" in devices:
            group = CGROUP / f"iofp-bench-{uuid.uuid4().hex[:8]}"
            group.mkdir()
            majmin = Path(f"/sys/class/block/{Path(made['throttled'][0]).name}/dev").read_text().strip()
            (group / "blkio.throttle.read_iops_device").write_text(f"{majmin} {a.throttle}\n")
        rows, first = [], {}
        for rep in range(a.repeat):
            order = devices if rep % 2 == 0 else devices[::-1]
            for d in order:
                res = run_probe(
                    made[d][0], a.probe_args, OUT / f"{d}-{rep}", group if d == "throttled" else None
                )
                first.setdefault(d, (OUT / f"{d}-{rep}.txt").read_text())
                rows.append((d, rep, row(d, rep, res)))
        for d in devices:
            print(f"### {d}\n```\n{first[d]}```")
        print("| device | repeat | knee | sweep QD:IOPS (fio's) | cells | wall |\n|---|---|---|---|---|---|")
        for _, _, r in sorted(rows):
            print(r)
    finally:
        if group is not None:
            group.rmdir()
        for dev, backing in made.values():
            subprocess.run(["losetup", "-d", dev], check=False)
            backing.unlink(missing_ok=True)


if __name__ == "__main__":
    main()
