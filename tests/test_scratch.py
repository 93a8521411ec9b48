"""The scratch directory of a live process is never swept, whatever its command line; a killed one's is."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
from pathlib import Path

from conftest import REPO

from iofp import scratch

HOLD = "from iofp import scratch; print(scratch.directory(), flush=True); import time; time.sleep(60)"


def test_a_live_process_keeps_its_scratch_directory_and_a_killed_ones_is_swept(tmp_path):
    # a benchmark or a Spark worker fingerprints through the library: its command line names neither
    # iofp nor pytest (the script comes on stdin)
    env = {**os.environ, "TMPDIR": str(tmp_path), "PYTHONPATH": str(REPO)}
    pipes = {"stdin": subprocess.PIPE, "stdout": subprocess.PIPE}
    # argv[0] a bare name: the clone's own path may hold "iofp" (/src/iofp/.venv/bin/python)
    proc = subprocess.Popen(["python3", "-"], executable=sys.executable, env=env, text=True, **pipes)
    try:
        proc.stdin.write(HOLD)
        proc.stdin.close()
        held = Path(proc.stdout.readline().strip())
        cmdline = Path(f"/proc/{proc.pid}/cmdline").read_bytes()
        assert held.is_dir() and b"iofp" not in cmdline and b"pytest" not in cmdline
        assert scratch.sweep(tmp_path) == [] and held.is_dir()
        proc.send_signal(signal.SIGKILL)
        proc.wait()
        assert scratch.sweep(tmp_path) == [held] and not held.exists()
    finally:
        proc.kill()
        proc.wait()
