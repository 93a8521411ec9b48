"""Benchmark: how close `iofp diff` comes to flagging a re-run of the same job (which it must not),
and how far past its limits a real change of device goes (which it must flag).

    sudo flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.diff_same_job [--runs 4] [--disk-dir D]

Captures samples/workloads/order-router-15s.fio `--runs` times on fresh RAM loop devices and twice
on direct-io loop devices over a file on the VM disk, fingerprints each, and diffs every pair. For
each pair it prints the largest |B - A| / limit over the judged figures (flagged above 1) under the
diff's rule, and under the rule it replaced for latency percentiles (4 standard errors instead of
3 batch spreads), which shows what the test in tests/test_diff.py would catch. Needs root and fio.
"""

from __future__ import annotations

import argparse
import itertools
import tempfile
from pathlib import Path

from bpf import CaptureOptions, start_capture
from fingerprint import diff as diffmod
from fingerprint.api import fingerprint_trace
from iofp.fingerprint_doc import Fingerprint
from tests import lab

REPO = Path(__file__).resolve().parent.parent
JOB = REPO / "samples" / "workloads" / "order-router-15s.fio"


def capture(where: Path, name: str, backing_dir: str, direct_io: bool, prefix: str) -> Fingerprint:
    kind = lab.DISK if direct_io else lab.RAM
    with lab.loop_device(256, kind, where=Path(backing_dir), prefix=prefix.rstrip("-")) as dev:
        opts = CaptureOptions(output=where / name, devices=[dev.removeprefix("/dev/")])
        with start_capture(opts):
            lab.fio(JOB, env={"DEV": dev}, timeout=None)
    return fingerprint_trace(where / name)


def worst(a: Fingerprint, b: Fingerprint) -> tuple[float, str, int]:
    """The largest |B - A| / limit over the judged figures, which figure, and how many were flagged."""
    r = diffmod.diff(a, b)
    best, what = 0.0, "-"
    for d in (r.like, r.spike):
        for c in d.changes if d else []:
            if c.limit and c.abs_change is not None and abs(c.abs_change) / c.limit > best:
                best, what = abs(c.abs_change) / c.limit, f"{d.scope} {c.metric}"
    return best, what, len(r.flagged)


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--runs", type=int, default=4, help="captures on RAM loop devices")
    ap.add_argument("--disk-dir", default="/var/tmp", help="where the disk loops' files go (on disk)")
    ap.add_argument("--prefix", default="iofp-bench-", help="backing file name prefix")
    a = ap.parse_args()
    with tempfile.TemporaryDirectory(prefix="iofp-bench-diff-") as tmp:
        where = Path(tmp)
        ram = [capture(where, f"ram{i}", "/dev/shm", False, a.prefix) for i in range(a.runs)]
        disk = [capture(where, f"disk{i}", a.disk_dir, True, a.prefix) for i in range(2)]
        rows = [("ram", "ram", x, y) for x, y in itertools.combinations(ram, 2)]
        rows += [("disk", "disk", *disk), *(("ram", "disk", x, disk[0]) for x in ram)]
        print("pair       worst ratio (rule)  flagged  figure            worst ratio (4 se for percentiles)")
        for ka, kb, x, y in rows:
            ratio, what, n = worst(x, y)
            spread, diffmod.Z_SPREAD = diffmod.Z_SPREAD, 0.0  # percentiles by their standard error instead
            saved = diffmod.Metric.by_spread
            diffmod.Metric.by_spread = property(lambda m: False)  # type: ignore[method-assign,assignment]
            old, _, _ = worst(x, y)
            diffmod.Metric.by_spread, diffmod.Z_SPREAD = saved, spread  # type: ignore[method-assign]
            print(f"{ka:>4}-{kb:<5}  {ratio:9.2f}  {n:7d}  {what:30.30}  {old:9.2f}")


if __name__ == "__main__":
    main()
