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
import subprocess
import sys
from contextlib import ExitStack
from pathlib import Path

from iofp import probe_result as pr
from tests import lab

OUT = Path("bench/out/probe_lab")


def lab_devices(
    stack: ExitStack, kinds: list[str], size_mib: int, throttle: int
) -> tuple[dict[str, str], Path | None]:
    """The lab devices named (ram; disk; throttled: a RAM loop under a blkio group capping its reads at
    `throttle` IOPS), undone by `stack`; and the throttled device's group, if one was asked for. Each
    over a file written whole: on a sparse one the first writes measure the backing filesystem's
    block allocation as the device (bench.verdict_flips, bedb986)."""
    made = {k: stack.enter_context(lab.loop_device(size_mib, lab.DISK if k == "disk" else lab.RAM, fill=True,
                                                   prefix="iofp-bench")) for k in kinds}  # fmt: skip
    if "throttled" not in made:
        return made, None
    return made, stack.enter_context(
        lab.throttled(made["throttled"], read_iops=throttle, prefix="iofp-bench")
    )


def run_probe(dev: str, args: list[str], out: Path, group: Path | None) -> pr.ProbeResult:
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
    res = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=lab.join(group))
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
    with ExitStack() as stack:
        made, group = lab_devices(stack, devices, a.size_mib, a.throttle)
        rows, first = [], {}
        for rep in range(a.repeat):
            order = devices if rep % 2 == 0 else devices[::-1]
            for d in order:
                res = run_probe(
                    made[d], a.probe_args, OUT / f"{d}-{rep}", group if d == "throttled" else None
                )
                first.setdefault(d, (OUT / f"{d}-{rep}.txt").read_text())
                rows.append((d, rep, row(d, rep, res)))
        for d in devices:
            print(f"### {d}\n```\n{first[d]}```")
        print("| device | repeat | knee | sweep QD:IOPS (fio's) | cells | wall |\n|---|---|---|---|---|---|")
        for _, _, r in sorted(rows):
            print(r)


if __name__ == "__main__":
    main()
