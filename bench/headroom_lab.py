"""`iofp headroom` on the lab devices of ../shared/notes/lab-devices.md, repeated: the spread of the
headroom factor and how long a sweep takes.

Devices (made here, detached afterwards): ram (a loop over a /dev/shm file), disk (a direct-io loop
over a file on the VM disk, /tmp), throttled (a RAM loop under a blkio cgroup v1 group capping reads at
--throttle IOPS; iofp, and the fio it starts, join the group first). Each repeat runs `iofp headroom TRACE
--target DEV ARGS --label device=DEVICE-loop -o bench/out/headroom_lab/DEVICE-R` for every device in
turn (the order alternating), the command's own line, so a row can be re-run by hand. Prints the first
repeat's output per device, then a markdown table of every repeat: factor, where it failed and why,
steps run, wall time, and the time per step beyond fio's demanded span.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.headroom_lab samples/traces/commit-heavy \\
        --devices ram,disk --repeat 3 -- --between 5 8 --slo 'p99<=2ms,commit.p99<=1ms'
"""

from __future__ import annotations

import argparse
import json
import sys
from contextlib import ExitStack
from pathlib import Path

from bench.probe_lab import lab_devices
from iofp import headroom_result as hr
from tests import lab

OUT = Path("bench/out/headroom_lab")


def run(
    trace: str, dev: str, args: list[str], out: Path, group: Path | None
) -> tuple[hr.HeadroomResult, str]:
    import subprocess

    label = f"device={out.name.rsplit('-', 1)[0]}-loop"
    cmd = [sys.executable, "-c", "from cli.app import main; main()", "headroom", trace, "--target", dev,
           *args, "--label", label, "-o", str(out), "--force"]  # fmt: skip
    res = subprocess.run(cmd, capture_output=True, text=True, preexec_fn=lab.join(group))
    (out.parent / f"{out.name}.txt").write_text(res.stdout + res.stderr)
    if res.returncode != 0:
        raise SystemExit(f"{' '.join(cmd)}: exit {res.returncode}\n{res.stderr}")
    return hr.load(out)[1], res.stdout


def row(name: str, r: int, res: hr.HeadroomResult) -> str:
    h = res.headroom
    ran = [s for s in res.steps if s.dir]
    fio_span = sum(res.demand["span_s"] / s.scale for s in ran)
    per_step = (res.wall_s - fio_span) / len(ran) if ran else 0
    fail = next((s for s in res.steps if h and s.scale == h.failed_at), None)
    why = (fail.saturation or "slo") if fail else "-"
    factor, failed, bound = (h.factor, h.failed_at, h.bound) if h else (None, None, "-")
    return (
        f"| {name} | {r} | {factor or '-'} | {failed or '-'} | {bound} ({why}) | {len(ran)} "
        f"| {res.wall_s:.0f} s | {fio_span:.1f} s | {per_step:.1f} s |"
    )


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("trace")
    ap.add_argument("--devices", default="ram,disk")
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--throttle", type=int, default=3000)
    argv = sys.argv[1:]
    cut = argv.index("--") if "--" in argv else len(argv)  # after `--`: iofp headroom's own options
    a = ap.parse_args(argv[:cut])
    args = argv[cut + 1 :]
    names = a.devices.split(",")
    with ExitStack() as stack:
        made, group = lab_devices(stack, names, 256, a.throttle)
        rows = []
        for r in range(a.repeat):
            for name in names if r % 2 == 0 else names[::-1]:
                out = OUT / f"{name}-{r}"
                out.parent.mkdir(parents=True, exist_ok=True)
                res, text = run(a.trace, made[name], args, out, group if name == "throttled" else None)
                if r == 0:
                    print(f"## {name}\n{text}")
                rows.append(row(name, r, res))
                print(rows[-1], flush=True)
        print("| device | repeat | factor | failed at | bound (whose) | steps | wall | fio span | per step |")
        print("|---|---|---|---|---|---|---|---|---|")
        print("\n".join(sorted(rows)))
        print(json.dumps({"args": args, "trace": a.trace}))


if __name__ == "__main__":
    main()
