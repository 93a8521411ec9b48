"""Benchmark: how `iofp diff` judges a re-run of the same job (it must not call it a change) and a
real change of device (it must), quiet and beside CPU hogs; under the diff's rule, and under the
rule it replaced (latency percentiles against 3 batch spreads in µs), on the same captures.

    sudo flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.diff_same_job [--runs 4] [--disk 2] \\
        [--hogs] [--window 100ms] [--keep DIR | --from DIR] [--disk-dir D]

Captures samples/workloads/order-router-15s.fio `--runs` times on fresh RAM loop devices and `--disk`
times on direct-io loop devices over a file on the VM disk (with --hogs, each capture beside a busy
loop on every CPU), fingerprints each (at --window, or the default rule), and diffs every pair. Per
pair and regime it prints the verdict (flagged figures, "inconclusive", or no change), the typical
latency's resolution (the p50 move it resolves), and the worst latency move as a share of its
limit; then the same under the old rule. Each capture's host evidence is listed first: where a side's
host was busy, a flagged regime reads "inconclusive, host busy". --keep saves the traces; --from
judges saved ones again (no capture). Needs root and fio.
"""

from __future__ import annotations

import argparse
import copy
import itertools
import math
import shutil
import tempfile
from pathlib import Path

from bpf import CaptureOptions, start_capture
from fingerprint import diff as diffmod
from fingerprint.api import fingerprint_trace
from fingerprint.frame import Options
from iofp.fingerprint_doc import Fingerprint
from iofp.host_evidence import HostEvidence
from iofp.host_evidence import limit as host_limit
from iofp.values import parse_duration_ns
from tests import lab

REPO = Path(__file__).resolve().parent.parent
JOB = REPO / "samples" / "workloads" / "order-router-15s.fio"


def capture(where: Path, name: str, backing_dir: str, direct_io: bool, prefix: str) -> Path:
    kind = lab.DISK if direct_io else lab.RAM
    # written whole: a sparse file's first writes are its filesystem's block allocations (bedb986)
    with lab.loop_device(256, kind, fill=True, where=Path(backing_dir), prefix=prefix.rstrip("-")) as dev:
        opts = CaptureOptions(output=where / name, devices=[dev.removeprefix("/dev/")])
        with start_capture(opts):
            lab.fio(JOB, env={"DEV": dev}, timeout=None)
    return where / name


def old_rule(fp: Fingerprint) -> Fingerprint:
    """`fp` as the rule before judged it: without the log-scale noise, a latency percentile is judged
    against 3 batch spreads in its unit."""
    fp = copy.deepcopy(fp)
    for s in fp.scopes():
        if s.noise is not None:
            s.noise.sd_log = None
    return fp


def verdicts(a: Fingerprint, b: Fingerprint) -> list[str]:
    """Per regime (spike first): its verdict in a word, the typical latency's resolution, and the
    worst latency move over its limit."""
    out = []
    r = diffmod.diff(a, b)
    for d in r.scopes:
        worst = max((_share_of_limit(c) for c in d.changes if c.kind == "service"), default=0.0)
        if d.flagged and r.host_busy:
            word = "inconclusive, host busy (" + ",".join(c.metric.split(" (")[0] for c in d.flagged) + ")"
        elif d.flagged:
            word = "FLAGGED " + ",".join(c.metric.split(" (")[0] for c in d.flagged)
        elif d.inconclusive:
            word = "inconclusive"
        else:
            word = "no change"
        res = "-" if d.resolves is None else f"±{d.resolves:.0%}"
        out.append(f"{d.scope}: {word} (p50 {res}, worst {worst:.2f})")
    return out


def _share_of_limit(c: diffmod.Change) -> float:
    if c.limit is None or c.a is None or c.b is None or c.a <= 0 or c.b <= 0:
        return 0.0
    if c.limit_ratio is not None:
        return abs(math.log(c.b / c.a)) / math.log(c.limit_ratio)
    return abs(c.b - c.a) / c.limit


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4, help="captures on RAM loop devices")
    ap.add_argument("--disk", type=int, default=2, help="captures on disk loop devices")
    ap.add_argument("--hogs", action="store_true", help="capture beside a busy loop on every CPU")
    ap.add_argument("--window", help="fingerprint at this --window (default: the default rule)")
    ap.add_argument("--keep", type=Path, help="keep the traces here")
    ap.add_argument("--from", dest="source", type=Path, help="judge traces --keep kept here (no capture)")
    ap.add_argument("--disk-dir", default="/var/tmp", help="where the disk loops' files go (on disk)")
    ap.add_argument("--prefix", default="iofp-bench-", help="backing file name prefix")
    a = ap.parse_args()
    opts = Options(window_ns=parse_duration_ns(a.window, "--window") if a.window else None)
    with tempfile.TemporaryDirectory(prefix="iofp-bench-diff-") as tmp:
        if a.source:
            ram, disk = sorted(a.source.glob("ram*")), sorted(a.source.glob("disk*"))
        else:
            where = Path(tmp)
            with lab.cpu_hogs(None if a.hogs else 0):
                ram = [capture(where, f"ram{i}", "/dev/shm", False, a.prefix) for i in range(a.runs)]
                disk = [capture(where, f"disk{i}", a.disk_dir, True, a.prefix) for i in range(a.disk)]
        if a.keep and not a.source:
            a.keep.mkdir(parents=True, exist_ok=True)
            for t in ram + disk:
                shutil.copytree(t, a.keep / t.name, dirs_exist_ok=True)
        fps = {t.name: fingerprint_trace(t, opts) for t in ram + disk}
    names = [t.name for t in ram], [t.name for t in disk]
    pairs = [*itertools.combinations(names[0], 2), *itertools.combinations(names[1], 2)]
    pairs += [(r.name, disk[0].name) for r in ram] if disk else []
    print(f"# {'beside CPU hogs' if a.hogs else 'quiet'}; window {a.window or 'default'}")
    for name, fp in fps.items():
        ev = HostEvidence.from_dict(fp.provenance.extra.get("host"))
        lim = None if ev is None else host_limit(ev)
        print(f"{name}: host " + ("not recorded" if lim is None else f"{lim.who}: {lim.why}"))
    for x, y in pairs:
        print(f"{x}-{y}: " + "; ".join(verdicts(fps[x], fps[y])))
        old = verdicts(old_rule(fps[x]), old_rule(fps[y]))
        print(f"{'':>{len(x) + len(y) + 1}}  old rule: " + "; ".join(old))


if __name__ == "__main__":
    main()
