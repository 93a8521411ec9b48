"""A stop signal during `iofp replay` stops fio and its jobs first and records the run as partial:
the real `iofp` process, a real fio, a real loop device, signals at several moments."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pytest
from conftest import REPO, needs_fio, needs_root
from helpers import IOFP, write_trace
from lab import destroy_loop, make_loop

pytestmark = [needs_root, needs_fio]


@pytest.fixture(scope="module")
def six_seconds(tmp_path_factory) -> Path:
    """6 s of two processes: 4 KiB writes at 1,000/s and reads at 500/s."""
    n = 9000
    return write_trace(
        tmp_path_factory.mktemp("t") / "six",
        {
            "ts_ns": [i * 666_667 for i in range(n)],
            "offset": [(i * 7919 % 8000) * 4096 for i in range(n)],
            "size": [4096] * n,
            "op": ["read" if i % 3 == 0 else "write" for i in range(n)],
            "pid": [100 if i % 3 == 0 else 200 for i in range(n)],
            "lat_ns": [50_000] * n,
        },
    )


def stat(dev: str) -> list[int]:
    return [int(x) for x in Path(f"/sys/block/{Path(dev).name}/stat").read_text().split()]


def fio_of(out: Path) -> list[int]:
    """Every process still running from this replay (its command line names the results directory)."""
    pids = []
    for p in Path("/proc").iterdir():
        try:
            if p.name.isdigit() and str(out).encode() in (p / "cmdline").read_bytes():
                pids.append(int(p.name))
        except OSError:
            continue
    return pids


def wait_for(path: Path, timeout: float = 120) -> None:
    deadline = time.monotonic() + timeout
    while not path.exists():
        assert time.monotonic() < deadline, f"{path} never appeared"
        time.sleep(0.02)


@pytest.mark.parametrize(
    ("sig", "when", "phase"),
    [
        (signal.SIGTERM, "job.fio", "before fio started"),  # the capture is starting (BPF compile)
        (signal.SIGTERM, "fio.cmd+2s", "while fio ran"),
        (signal.SIGHUP, "fio.cmd+1s", "while fio ran"),
        (signal.SIGINT, "fio.cmd+2s", "while fio ran"),
    ],
)
def test_a_stop_signal_ends_fio_first_and_records_a_partial_run(six_seconds, tmp_path, sig, when, phase):
    dev, backing = make_loop(64)
    out = tmp_path / "r"
    try:
        proc = subprocess.Popen(
            [*IOFP, "replay", "--repeat", "1", str(six_seconds), "--target", dev, "--output", str(out)],
            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),  # as a terminal starts it
        )  # fmt: skip
        name, _, delay = when.partition("+")
        wait_for(out / name)
        time.sleep(float(delay.rstrip("s") or 0))
        proc.send_signal(sig)
        _, err = proc.communicate(timeout=120)
        before = stat(dev)
        time.sleep(2)
        after = stat(dev)
        left = fio_of(out)
    finally:
        destroy_loop(dev, backing)
    assert proc.returncode == 128 + sig, err
    assert left == []  # no fio, no job process of it
    assert before == after  # nothing reached the target after iofp exited
    assert len(err.splitlines()) == 1 and err.startswith(f"iofp: replay stopped by {sig.name} {phase}"), err
    rec = json.loads((out / "results.json").read_text())
    assert rec["status"] == "partial" and rec["interrupted"].startswith(f"{sig.name} {phase}")
    assert rec["fidelity"]["status"] == "not judged"
    if phase == "while fio ran":
        assert rec["fio"]["exit_code"] is not None and rec["measured"]["source"] == "replay capture"
        # fio ran about as long as it was let, not its whole 6 s
        assert rec["measured"]["span_s"] < 5.5
