"""The round trip of `iofp fio-job`: fingerprint -> job -> fio on a lab device under `iofp capture` ->
fingerprint of the capture -> `iofp diff --tolerances` against the original.

    sudo .venv/bin/python -m bench.fiojob_roundtrip FP.json --regime whole --runtime 60s --out DIR

Everything runs through the real commands (the installed `iofp`, real fio, a real eBPF capture of a
loop device over a /dev/shm file made for the run and removed after it). Every raw artifact stays in
DIR: the job file, fio's command line, stdout, stderr and exit code, the capture, its fingerprint
and the check's JSON. tests/test_fiojob_roundtrip.py runs it for every sample and shared trace.
"""

from __future__ import annotations

import argparse
import json
import signal
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iofp import host_evidence
from tests import lab

IOFP = str(Path(sys.executable).with_name("iofp"))
CAPTURE_READY_S = 60  # a capture compiles and attaches in ~3 s here; a loaded machine takes longer
# The metrics a replay meets only by keeping the job's rate: a host that could not run fio on time
# misses them (fewer I/Os, fewer commits, fewer blocks touched, a flatter peak) whatever the job says.
# The shape (read share, sizes, sequential share) does not depend on the rate.
RATE_KEYS = frozenset({"iops", "mbps", "flushes", "commits", "footprint", "peak_mean_1s"})


@dataclass
class RoundTrip:
    out: Path
    job: Path
    fio_exit: int
    check: dict[str, Any]  # the tolerance check (iofp diff --json's "tolerance")
    diff_exit: int
    verdict: str  # "reproduced", "not reproduced: ..." or "inconclusive: the host ..."


def round_trip(
    fp: Path, regime: str, runtime: str, out: Path, extra: tuple[str, ...] = (), nice: int = 0
) -> RoundTrip:
    """`nice`: fio's niceness; below 0 keeps a busy machine's other work from bunching its paced
    streams (which raises the sequential share the device sees)."""
    out.mkdir(parents=True, exist_ok=True)
    job = out / "job.fio"
    _run([IOFP, "fio-job", str(fp), "--regime", regime, "--runtime", runtime, "-o", str(job), "--force",
          *extra], out / "fio-job")  # fmt: skip
    region = int(next(x for x in job.read_text().splitlines() if x.startswith("size=")).split("=")[1])
    with lab.loop_device(-(-region // (1 << 20)) + 64, lab.RAM, prefix="h-fiojob") as dev:
        host = host_evidence.Sampler(Path(dev).name)
        with host:
            fio_exit = captured_fio(dev, job, out, nice)
    assert host.evidence is not None
    (out / "host.json").write_text(json.dumps(host.evidence.to_dict(), indent=1) + "\n")
    lab_fp = out / "lab.fp.json"
    _run([IOFP, "fingerprint", str(out / "lab"), "--json", str(lab_fp), "--force"], out / "fingerprint")
    diff = [IOFP, "diff", str(fp), str(lab_fp), "--tolerances", f"regime={regime}", "--json", "-"]
    code = _run(diff, out / "diff", ok=(0, 1))
    check = json.loads((out / "diff.stdout").read_text())["tolerance"]
    (out / "check.json").write_text(json.dumps(check, indent=1) + "\n")
    verdict = judge(check, host.evidence)
    (out / "verdict.txt").write_text(verdict + "\n")
    return RoundTrip(out, job, fio_exit, check, code, verdict)


def judge(check: dict[str, Any], ev: host_evidence.HostEvidence | None) -> str:
    """The round trip's verdict: a miss of a rate-bound metric while the host limited the run says
    nothing of the job (fio could not keep its rate), so it is inconclusive, naming the host's state."""
    missed = [r["key"] for r in check["rows"] if r["status"] == "FAIL"]
    if not missed:
        return "reproduced"
    lim = host_evidence.limit(ev)
    if lim.who == "host" and set(missed) & RATE_KEYS:
        return f"inconclusive: {lim.why}; missed {', '.join(missed)}; rerun on a quiet host"
    return f"not reproduced: missed {', '.join(missed)}"


def captured_fio(dev: str, job: Path, out: Path, nice: int = 0) -> int:
    """fio on `dev` while `iofp capture` records it: the capture is ready before fio starts and is
    stopped with SIGINT (its Ctrl-C) after fio exits, every file complete."""
    name = Path(dev).name
    with open(out / "capture.stdout", "w") as cap_out, open(out / "capture.stderr", "w") as cap_err:
        cap = subprocess.Popen(
            [IOFP, "capture", "--device", name, "-o", str(out / "lab"), "--force"],
            stdout=cap_out,
            stderr=cap_err,
        )
        return _fio_under(cap, dev, job, out, nice)


def _fio_under(cap: subprocess.Popen, dev: str, job: Path, out: Path, nice: int = 0) -> int:
    try:
        deadline = time.monotonic() + CAPTURE_READY_S
        while "recording" not in (out / "capture.stderr").read_text():
            if cap.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(f"capture did not start: {(out / 'capture.stderr').read_text()}")
            time.sleep(0.1)
        shown = (f"nice -n {nice} " if nice else "") + f"fio --output-format=json {job}"
        (out / "fio.cmd").write_text(f"DEV={dev} {shown}\n")
        fio = lab.fio("--output-format=json", job, env={"DEV": dev}, nice=nice, timeout=None, check=False)
        (out / "fio.stdout").write_text(fio.stdout)
        (out / "fio.stderr").write_text(fio.stderr)
        (out / "fio.exit").write_text(f"{fio.returncode}\n")
    finally:
        cap.send_signal(signal.SIGINT)
        cap.wait(timeout=120)
    return fio.returncode


def _run(cmd: list[str], stem: Path, ok: tuple[int, ...] = (0,)) -> int:
    p = subprocess.run(cmd, capture_output=True, text=True)
    stem.with_suffix(".stdout").write_text(p.stdout)
    stem.with_suffix(".stderr").write_text(p.stderr)
    if p.returncode not in ok:
        raise RuntimeError(f"{' '.join(cmd)} exited {p.returncode}: {p.stderr.strip()}")
    return p.returncode


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("fp", type=Path)
    ap.add_argument("--regime", default="whole")
    ap.add_argument("--runtime", default="60s")
    ap.add_argument("--out", type=Path, required=True)
    ap.add_argument("--nice", type=int, default=0, help="fio's niceness (the test runs it at -10)")
    ap.add_argument("--streams", default="single", help="fio-job's --streams: single or pid")
    a = ap.parse_args()
    t0 = time.monotonic()
    rt = round_trip(a.fp, a.regime, a.runtime, a.out, extra=("--streams", a.streams), nice=a.nice)
    for r in rt.check["rows"]:
        print(f"{r['metric']:<26} {r['original']!s:>22} {r['run']!s:>22} {r['status']}")
    print(f"passed: {rt.check['passed']} (fio exit {rt.fio_exit}); {time.monotonic() - t0:.0f} s")


if __name__ == "__main__":
    main()
