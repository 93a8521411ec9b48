"""Every fio run iofp makes: its raw artifacts kept, its JSON parsed, and a stop that stops it all.

`launch()` is the one way to run fio (a replay, a probe run, the headroom ceiling, the pacing
calibration; the version is read once, iofp/fioversion.py). In the run's directory it keeps:

    job.fio         the job file (`write_job`, when the run has one)
    NAME.cmd        the exact command line        NAME.stdout   fio's stdout (JSON, maybe after notes)
    NAME.stderr     fio's stderr                  NAME.json     the JSON, non-JSON lines trimmed
    NAME.rc         fio's exit status

(NAME is "fio" unless the caller names the run.) fio's output is trimmed to its JSON here and
nowhere else (`fio_json`).

fio runs in a session (process group) of its own, so that stopping it reaches every job process it
forked, not only its parent: on any exception (Interrupted, KeyboardInterrupt) the whole group gets
SIGTERM (fio stops its jobs and reports), then SIGKILL if it has not gone within STOP_GRACE_S, and
any job process left after its parent is killed outright. fio is also started under
`setpriv --pdeathsig TERM`, so that it is told to stop even if iofp itself is killed with SIGKILL.
"""

from __future__ import annotations

import contextlib
import json
import os
import shlex
import shutil
import signal
import subprocess
import time
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from iofp import terminal
from iofp.host_evidence import HostEvidence, Sampler, fio_cpu
from replay.fio import interrupt
from replay.fio.capabilities import installed

STOP_GRACE_S = 5.0
GONE_WAIT_S = 10.0
JOB = "job.fio"


@dataclass(frozen=True)
class Progress:
    """What a progress bar shows while fio runs: `ios` I/Os over `demanded_s` onto `target`."""

    ios: int
    demanded_s: float
    target: Path


@dataclass(frozen=True)
class FioRun:
    """One finished fio run: its command line, exit status and JSON (None when it printed none), and
    what the host was doing while it ran (when the caller asked for it: `launch(watch=...)`)."""

    cmd: list[str]
    rc: int
    doc: dict[str, Any] | None
    evidence: HostEvidence | None = None


def write_job(out: Path, text: str) -> str:
    """Write a run's job file into its directory (before anything else runs); its path for `args`."""
    path = out / JOB
    path.write_text(text)
    return str(path)


def command(args: Sequence[str]) -> list[str]:
    """fio's command line: JSON output, then `args` (options and/or a job file)."""
    cmd = [installed().path, "--output-format=json", *args]
    setpriv = shutil.which("setpriv")
    return [setpriv, "--pdeathsig", "TERM", *cmd] if setpriv else cmd


def launch(
    out: Path,
    args: Sequence[str],
    *,
    name: str = "fio",
    progress: Progress | None = None,
    timeout_s: float | None = None,
    watch: str | bool | None = False,
    fds: Sequence[int] = (),
) -> FioRun:
    """Run fio with `args` (options, and the job file `write_job` wrote) in `out`, its working
    directory, keeping every raw artifact there. A run past `timeout_s` is stopped (its status then negative);
    an exception (a stop signal) stops fio's whole group, keeps what it printed, and goes on up.
    `watch`: sample the host (and this block device, by kernel name; None for none) while fio runs,
    into `FioRun.evidence` (iofp/host_evidence.py); False (the default): do not. `fds`: descriptors
    fio inherits (a held target, which its job names as /dev/fd/N)."""
    cmd = command(args)
    (out / f"{name}.cmd").write_text(shlex.join(cmd) + "\n")
    proc: subprocess.Popen | None = None
    sampler = None if watch is False else Sampler(watch or None)
    with open(out / f"{name}.stdout", "wb") as so, open(out / f"{name}.stderr", "wb") as se:
        try:
            with interrupt.deferred():  # a stop signal finds `proc` set, never a fio it cannot name
                proc = subprocess.Popen(cmd, stdout=so, stderr=se, cwd=out, start_new_session=True,
                                        pass_fds=tuple(fds))  # fmt: skip
                if sampler is not None:
                    sampler.start()
            if progress is not None:
                _wait_with_progress(proc, progress)
            rc = _wait(proc, timeout_s)
        except BaseException:
            if proc is not None:
                stop(proc)
                with interrupt.deferred():
                    _keep(out, name, proc.returncode)
            raise
        finally:
            if sampler is not None and proc is not None:
                sampler.stop()
    doc = _keep(out, name, rc)
    evidence = sampler.evidence if sampler is not None else None
    if evidence is not None and doc is not None:
        evidence.fio_cpu = fio_cpu(doc)
    return FioRun(cmd, rc, doc, evidence)


def _wait(proc: subprocess.Popen, timeout_s: float | None) -> int:
    try:
        return proc.wait(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        stop(proc)
        return proc.returncode


def _keep(out: Path, name: str, rc: int) -> dict[str, Any] | None:
    """Write the exit status and the trimmed JSON beside fio's raw output; return the JSON."""
    (out / f"{name}.rc").write_text(f"{rc}\n")
    doc = fio_json((out / f"{name}.stdout").read_text(errors="replace"))
    if doc is not None:
        (out / f"{name}.json").write_text(json.dumps(doc, indent=2))
    return doc


def fio_json(text: str) -> dict[str, Any] | None:
    """fio's JSON output, ignoring anything fio printed around it (notes and warnings go to stdout
    too): the one place fio's output is trimmed."""
    start, end = text.find("{"), text.rfind("}")
    if start < 0 or end < start:
        return None
    try:
        return json.loads(text[start : end + 1])
    except ValueError:
        return None


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


def _wait_with_progress(proc: subprocess.Popen, p: Progress) -> None:
    from rich.progress import BarColumn, TextColumn, TimeElapsedColumn
    from rich.progress import Progress as Bar

    console = terminal.console(stderr=True)  # its bar on the raw stream, its text inert
    cols = (
        TextColumn("{task.description}"),
        BarColumn(),
        TextColumn("{task.percentage:>3.0f}%"),
        TimeElapsedColumn(),
    )
    with Bar(*cols, console=console, transient=True, disable=not console.is_terminal) as bar:
        task = bar.add_task(f"replaying {p.ios} I/Os onto {p.target}", total=max(p.demanded_s, 1e-3))
        start = time.monotonic()
        while proc.poll() is None:
            bar.update(task, completed=min(time.monotonic() - start, p.demanded_s))
            time.sleep(0.1)
        bar.update(task, completed=p.demanded_s)
