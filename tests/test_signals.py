"""Signals at every moment (iofp/signals.py): `--force` leaves the trace it replaces exactly as it
was, or a complete new trace in its place; never neither, never a half trace without trace.json.

Each moment is reached by watching the real process (its files, its BPF descriptors), not by
sleeping: "start" (before iofp has even imported its modules), "set aside" (the old trace just moved
into .iofp-replaced), "mid-run" (the first new file written), "final write" (the last file being
written), and for capture "loaded" (probes compiled and loaded, not attached: the moment before
"recording") and "recording".
"""

from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from conftest import REPO, needs_root
from helpers import IOFP, write_trace

from iofp.contract import MANIFEST, REPLACED, open_trace

ROWS = 600_000  # two files of the import's 512 Ki-row chunks: the second one is the final write


def start(*args: str) -> subprocess.Popen[str]:
    """`iofp ARGS` with the default disposition of every stop signal, as a terminal gives it (a
    background CI step may have passed SIGINT down ignored)."""

    def defaults() -> None:
        for s in (signal.SIGINT, signal.SIGTERM, signal.SIGHUP):
            signal.signal(s, signal.SIG_DFL)

    return subprocess.Popen(
        [*IOFP, *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
        preexec_fn=defaults,
    )  # fmt: skip


def wait_for(proc: subprocess.Popen[str], ready: Callable[[], bool], what: str, timeout: float = 60) -> None:
    deadline = time.monotonic() + timeout
    while not ready():
        assert proc.poll() is None, f"iofp ended ({proc.returncode}) before {what}: {proc.stderr.read()}"
        assert time.monotonic() < deadline, f"no {what} after {timeout} s"
        time.sleep(0.001)


def snapshot(root: Path) -> dict[str, bytes]:
    return {str(p.relative_to(root)): p.read_bytes() for p in sorted(root.rglob("*")) if p.is_file()}


def old_trace(root: Path) -> dict[str, bytes]:
    write_trace(root, {"ts_ns": [0, 1000, 2000], "offset": [0, 4096, 8192], "size": [4096] * 3,
                       "op": ["read", "write", "read"]})  # fmt: skip
    return snapshot(root)


def outcome(root: Path, before: dict[str, bytes], rc: int, sig: int) -> str:
    """'old' (exactly as it was; iofp said it stopped) or 'new' (complete, exit 0); asserts one holds."""
    assert not (root / REPLACED).exists()
    if snapshot(root) == before:
        assert rc in (-sig, 128 + sig), rc
        return "old"
    assert rc == 0 and (root / MANIFEST).exists()
    return "new"


# --------------------------------------------------------------------------------------------
# import


@pytest.fixture(scope="module")
def disksim_input(tmp_path_factory: pytest.TempPathFactory) -> Path:
    path = tmp_path_factory.mktemp("in") / "big.trace"
    with open(path, "w") as f:
        f.writelines(f"{i * 100_000} 0 {i * 8} 8 {i % 2}\n" for i in range(ROWS))
    return path


def _exists(*paths: Path) -> Callable[[], bool]:
    return lambda: any(p.exists() for p in paths)


def _first_new_file(out: Path) -> Callable[[], bool]:
    """The new trace's first file (the old trace's own io/ has gone into .iofp-replaced by then)."""
    return lambda: (out / REPLACED / "io").exists() and (out / "io" / "part-000001.parquet").exists()


@pytest.mark.slow  # a signal at every moment (20 s)
@pytest.mark.parametrize(
    ("moment", "sig"),
    [
        ("start", signal.SIGTERM),
        ("set aside", signal.SIGTERM),
        ("mid-run", signal.SIGINT),
        ("mid-run", signal.SIGTERM),
        ("mid-run", signal.SIGHUP),
        ("final write", signal.SIGTERM),
    ],
)
def test_import_force_keeps_the_old_trace_or_writes_a_whole_new_one(tmp_path, disksim_input, moment, sig):
    out = tmp_path / "t"
    before = old_trace(out)
    proc = start("import", "disksim", str(disksim_input), "-o", str(out), "--force")
    if moment != "start":
        io = out / "io"
        ready = {
            "set aside": _exists(out / REPLACED),
            "mid-run": _first_new_file(out),
            "final write": _exists(io / ".part-000002.parquet.tmp", io / "part-000002.parquet"),
        }[moment]
        wait_for(proc, ready, moment)
    proc.send_signal(sig)
    _, stderr = proc.communicate(timeout=120)
    got = outcome(out, before, proc.returncode, sig)
    if moment in ("set aside", "mid-run"):
        assert got == "old"
        assert stderr == (
            f"iofp: stopped by {signal.Signals(sig).name}: import of {out} abandoned, nothing written; "
            f"{out} holds the trace it was to replace, as it was\n"
        )
    elif moment == "start":
        assert got == "old"
    else:  # the last look at the flag is after the last line: either is right, and whole
        assert got == "old" or open_trace(out).num_rows() == ROWS


@pytest.mark.slow
def test_a_killed_import_is_said_incomplete_and_its_set_aside_trace_is_never_deleted(tmp_path, disksim_input):
    out = tmp_path / "t"
    before = old_trace(out)
    proc = start("import", "disksim", str(disksim_input), "-o", str(out), "--force")
    wait_for(proc, _first_new_file(out), "the first file")
    proc.kill()
    proc.wait()
    aside = out / REPLACED
    kept = snapshot(aside)
    assert {k: v for k, v in kept.items() if k != ".iofp-owner"} == before
    # read, but said to be incomplete (fingerprint, report, replay all open it through the contract)
    r = subprocess.run([*IOFP, "fingerprint", str(out)], capture_output=True, text=True, cwd=REPO)
    assert r.returncode == 0, r.stderr
    assert r.stderr == (
        f"iofp: warning: {out} has no {MANIFEST}: the capture or import that wrote it did not finish; "
        f"it may be incomplete (the trace it was replacing is kept in {aside})\n"
    )
    # a later --force, even one that would fail, refuses rather than delete what it did not set aside
    for args in (["import", "disksim", str(disksim_input)], ["import", "msr", str(disksim_input)]):
        r = subprocess.run(
            [*IOFP, *args, "-o", str(out), "--force"], capture_output=True, text=True, cwd=REPO
        )
        assert r.returncode == 2
        assert r.stderr.startswith(
            f"iofp: {aside} holds the trace an unfinished run by iofp (pid {proc.pid}, "
        )
        assert snapshot(aside) == kept


# --------------------------------------------------------------------------------------------
# capture


def _fds(pid: int) -> list[str]:
    out = []
    for fd in Path(f"/proc/{pid}/fd").iterdir():
        try:
            out.append(os.readlink(fd))
        except OSError:
            continue
    return out


def _loaded_not_attached(pid: int) -> Callable[[], bool]:
    """The probes are compiled and loaded into the kernel (its maps exist), none attached yet."""

    def check() -> bool:
        fds = _fds(pid)
        return any(f == "anon_inode:bpf-map" for f in fds) and not any(
            f == "anon_inode:bpf_link" for f in fds
        )

    return check


def _recording(pid: int) -> Callable[[], bool]:
    return lambda: sum(f == "anon_inode:bpf_link" for f in _fds(pid)) >= 5  # its five block probes


def _write(dev: str, count: int) -> None:
    subprocess.run(["dd", "if=/dev/zero", f"of={dev}", "bs=4k", f"count={count}", "oflag=direct"],
                   check=True, capture_output=True)  # fmt: skip


@needs_root
@pytest.mark.parametrize(
    ("moment", "sig"),
    [
        ("start", signal.SIGTERM),
        ("loaded", signal.SIGINT),
        ("loaded", signal.SIGTERM),
        ("loaded", signal.SIGHUP),
        ("recording", signal.SIGTERM),
        ("final write", signal.SIGINT),
    ],
)
def test_capture_force_keeps_the_old_trace_or_writes_a_whole_new_one(tmp_path, loop_device, moment, sig):
    out = tmp_path / "t"
    before = old_trace(out)
    name = loop_device.removeprefix("/dev/")
    proc = start("capture", "--device", name, "-o", str(out), "--force", "--rotate", "1h", "--no-syscalls")
    writes = 0
    if moment == "loaded":
        wait_for(proc, _loaded_not_attached(proc.pid), "the probes loaded")
    elif moment != "start":
        wait_for(proc, _recording(proc.pid), "recording")
        writes = 20_000
        _write(loop_device, writes)
    proc.send_signal(sig)
    if moment == "final write":  # more signals while it converts and writes what it holds, until
        sent = 1  # trace.json, its last file, is in place (a signal after the command ends ends it)
        while proc.poll() is None and not (out / MANIFEST).exists():
            time.sleep(0.005)
            proc.send_signal(sig)
            sent += 1
        assert sent > 2
    _, stderr = proc.communicate(timeout=120)
    got = outcome(out, before, proc.returncode, sig)
    if moment == "loaded":
        assert got == "old"
        assert stderr == (
            f"iofp: stopped by {signal.Signals(sig).name}: the capture had not begun recording; nothing was "
            f"written; the trace in {out} is as it was\n"
        )
    elif moment == "start":
        assert got == "old"
    else:
        assert got == "new", stderr
        trace = open_trace(out)
        writes_seen = sum(b.num_rows for b in trace.batches(columns=["op"]))
        assert writes_seen >= writes and trace.meta.extra["end"] == "stopped"
