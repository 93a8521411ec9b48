"""Running fio: its raw outputs straight to files, a progress bar, and a stop that stops it all.

fio runs in a session (process group) of its own, so that stopping it reaches every job process it
forked, not only its parent: on any exception (Interrupted, KeyboardInterrupt) the whole group gets
SIGTERM (fio stops its jobs and reports), then SIGKILL if it has not gone within STOP_GRACE_S, and
any job process left after its parent is killed outright. fio is also started under
`setpriv --pdeathsig TERM`, so that it is told to stop even if iofp itself is killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import os
import shlex
import shutil
import signal
import subprocess
import time
from pathlib import Path

from replay import interrupt

STOP_GRACE_S = 5.0
GONE_WAIT_S = 10.0


def command(fio: str, job_path: Path) -> list[str]:
    cmd = [fio, "--output-format=json", str(job_path)]
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *cmd] if setpriv else cmd


def run(cmd: list[str], out: Path, n: int, demanded_s: float, progress: bool, target: Path) -> int:
    """Run fio with its raw outputs going straight to files, showing a progress bar meanwhile."""
    (out / "fio.cmd").write_text(shlex.join(cmd) + "\n")
    proc: subprocess.Popen | None = None
    with open(out / "fio.stdout", "wb") as so, open(out / "fio.stderr", "wb") as se:
        try:
            with interrupt.deferred():  # a stop signal finds `proc` set, never a fio it cannot name
                proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=out, start_new_session=True)
            if progress:
                _wait_with_progress(proc, n, demanded_s, target)
            rc = proc.wait()
        except BaseException:
            if proc is not None:
                stop(proc)
                (out / "fio.rc").write_text(f"{proc.returncode}\n")
            raise
    (out / "fio.rc").write_text(f"{rc}\n")
    return rc


def stop(proc: subprocess.Popen) -> None:
    """Stop fio's whole process group and wait until none of it is left."""
    pgid = proc.pid  # start_new_session: the group is led by fio's own pid
    _signal_group(pgid, signal.SIGTERM)
    try:
        proc.wait(timeout=STOP_GRACE_S)
    except subprocess.TimeoutExpired:
        _signal_group(pgid, signal.SIGKILL)
        proc.wait()
    # Job processes a killed parent left behind; a zombie counts as alive to kill(), but writes
    # nothing, so the wait is bounded.
    deadline = time.monotonic() + GONE_WAIT_S
    while _group_alive(pgid) and time.monotonic() < deadline:
        _signal_group(pgid, signal.SIGKILL)
        time.sleep(0.05)


def _signal_group(pgid: int, sig: int) -> None:
    with contextlib.suppress(ProcessLookupError):
        os.killpg(pgid, sig)


def _group_alive(pgid: int) -> bool:
    try:
        os.killpg(pgid, 0)
    except ProcessLookupError:
        return False
    return True


def _wait_with_progress(proc: subprocess.Popen, n: int, demanded_s: float, target: Path) -> None:
    from rich.console import Console
    from rich.progress import BarColumn, Progress, TextColumn, TimeElapsedColumn

    console = Console(stderr=True)
    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Progress(*cols, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(f"replaying {n} I/Os onto {target}", total=max(demanded_s, 1e-3))
        start = time.monotonic()
        while proc.poll() is None:
            bar.update(task, completed=min(time.monotonic() - start, demanded_s))
            time.sleep(0.1)
        bar.update(task, completed=demanded_s)
