"""`iofp doctor`: exit 0 only when capture can work; otherwise name what is missing and how to fix it."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path

import pytest
from conftest import REPO, is_root
from helpers import IOFP

from bpf.doctor import Check, capture_ready, check_raw_tracepoint, doctor_checks


def test_doctor_says_ready_and_exits_0_where_capture_works() -> None:
    if not is_root():
        pytest.skip("needs root (capture needs it, so doctor says not ready)")
    r = subprocess.run([*IOFP, "doctor"], capture_output=True, text=True, cwd=REPO, timeout=120)
    assert r.returncode == 0, r.stdout
    lines = r.stdout.splitlines()
    assert lines[-1] == "capture: ready"
    for name in ("privileges", "tracefs", "BTF", "raw tracepoint block_rq_issue", "bcc compile", "fio"):
        assert any(line.startswith("ok   ") and f" {name}:" in line for line in lines), name


def test_doctor_json_lists_every_check() -> None:
    if not is_root():
        pytest.skip("needs root")
    r = subprocess.run(
        [*IOFP, "doctor", "--json", "-"], capture_output=True, text=True, cwd=REPO, timeout=120
    )
    report = json.loads(r.stdout)
    assert report["ready"] is (r.returncode == 0)
    names = {c["name"] for c in report["checks"]}
    expected = {
        "privileges", "tracefs", "BTF", "overlayfs syncs", "bcc", "kernel headers", "bcc compile", "fio",
    }  # fmt: skip
    assert expected <= names


def test_doctor_exits_3_and_says_how_to_fix_when_not_root() -> None:
    if not is_root() or shutil.which("setpriv") is None:
        pytest.skip("needs root and setpriv (util-linux) to drop to an unprivileged user")
    r = subprocess.run(
        ["setpriv", "--reuid=65534", "--regid=65534", "--clear-groups", *IOFP, "doctor"],
        capture_output=True, text=True, cwd=REPO, timeout=120,
    )  # fmt: skip
    assert r.returncode == 3
    lines = r.stdout.splitlines()
    assert "FAIL privileges: not root and no CAP_BPF+CAP_PERFMON" in lines
    assert any(line.strip().startswith("fix (any): run it as root") for line in lines)
    assert lines[-1] == "capture: NOT ready (fix the FAIL lines above)"
    # tracefs is root-only: what it cannot read, it does not call missing from the kernel
    syscalls = next(line for line in lines if " syscall tracepoints:" in line)
    assert "cannot tell" in syscalls and "CONFIG_FTRACE_SYSCALLS" not in r.stdout


def test_a_tracepoint_the_kernel_lacks_is_reported_missing() -> None:
    c = check_raw_tracepoint("block_no_such_event")
    assert c.as_tuple() == (False, "not in this kernel")


def test_optional_checks_do_not_block_capture() -> None:
    checks = [Check("a", True, ""), Check("fio", False, "missing", required=False)]
    assert capture_ready(checks)
    assert not capture_ready([*checks, Check("BTF", False, "missing")])


def test_doctor_checks_are_probed_not_version_gated() -> None:
    if not is_root():
        pytest.skip("needs root")
    by_name = {c.name: c for c in doctor_checks(mount=True)}
    # block_io_start exists from v6.5 (5a80bd075f3b). The check reads BTF; tracefs lists the kernel's
    # events independently, so the two must agree on this kernel whatever its version string says.
    in_tracefs = Path("/sys/kernel/tracing/events/block/block_io_start").is_dir()
    assert by_name["raw tracepoint block_io_start"].ok is in_tracefs
    assert by_name["raw tracepoint block_rq_issue"].ok is True
