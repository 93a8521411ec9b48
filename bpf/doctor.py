"""`iofp doctor`'s checks: what this machine can do, tested rather than guessed from a kernel version.

Each check returns a `Check` (ok, detail, fix). `iofp doctor` prints them all; the loader calls
`require_capture()` before it compiles anything, so a missing piece is reported as one line naming
the fix, not as a bcc traceback.
"""

from __future__ import annotations

import os
import platform
import subprocess
from dataclasses import dataclass, field
from pathlib import Path

from bpf.btf import VMLINUX_BTF, BTFError, kernel_btf
from bpf.loader import KERNEL_FIELDS
from iofp.errors import MissingCapability
from iofp.fioversion import fio_version

TRACEFS = Path("/sys/kernel/tracing")

# The raw tracepoints the capture attaches. block_io_start (v6.5, 5a80bd075f3b) is optional:
# without it block_rq_insert gives the queue time and submitter.
REQUIRED_TPS = ("block_rq_issue", "block_rq_complete", "block_rq_requeue", "block_rq_merge")
OPTIONAL_TPS = ("block_io_start", "block_rq_insert")
# the syscalls capture.bpf.c traces: the fsync family, and the writes that may be O_DSYNC commits
SYNC_TPS = ("fsync", "fdatasync", "sync_file_range", "syncfs", "sync", "msync")
# the writes that may be O_DSYNC commits, and the reads and writes that are O_DIRECT data calls
WRITE_TPS = ("write", "pwrite64", "writev", "pwritev", "pwritev2")
READ_TPS = ("read", "pread64", "readv", "preadv", "preadv2")
# libaio's submit and reap (absent from a kernel built without CONFIG_AIO: then no aio data calls)
AIO_TPS = ("io_submit", "io_getevents", "io_pgetevents")

CAP_SYS_ADMIN, CAP_PERFMON, CAP_BPF = 21, 38, 39


@dataclass
class Check:
    name: str
    ok: bool
    detail: str
    fix: dict[str, str] = field(default_factory=dict)  # distro family -> command
    required: bool = True  # capture cannot work without it

    def as_tuple(self) -> tuple[bool, str]:
        return self.ok, self.detail


def _effective_caps() -> int:
    try:
        for line in Path("/proc/self/status").read_text().splitlines():
            if line.startswith("CapEff:"):
                return int(line.split()[1], 16)
    except OSError:
        pass
    return 0


def check_privileges() -> Check:
    caps = _effective_caps()
    has = lambda c: bool(caps >> c & 1)  # noqa: E731
    if os.geteuid() == 0 or has(CAP_SYS_ADMIN) or (has(CAP_BPF) and has(CAP_PERFMON)):
        who = "root" if os.geteuid() == 0 else "CAP_BPF+CAP_PERFMON" if has(CAP_BPF) else "CAP_SYS_ADMIN"
        return Check("privileges", True, who)
    fix = "run it as root: sudo iofp capture ... (or grant CAP_BPF, CAP_PERFMON and CAP_SYS_RESOURCE)"
    return Check("privileges", False, "not root and no CAP_BPF+CAP_PERFMON", {"any": fix})


def _is_dir(p: Path) -> bool:
    try:
        return p.is_dir()
    except OSError:  # e.g. tracefs is root-only: not usable by us either way
        return False


def check_tracefs(mount: bool = False) -> Check:
    fix = {"any": f"mount -t tracefs nodev {TRACEFS}"}
    if _is_dir(TRACEFS / "events"):
        return Check("tracefs", True, f"mounted at {TRACEFS}")
    if mount and os.geteuid() == 0:
        r = subprocess.run(["mount", "-t", "tracefs", "nodev", str(TRACEFS)], capture_output=True, text=True)
        if r.returncode == 0 and _is_dir(TRACEFS / "events"):
            return Check("tracefs", True, f"was not mounted; mounted it at {TRACEFS}")
        return Check("tracefs", False, f"could not mount it: {r.stderr.strip() or 'mount failed'}", fix)
    if os.geteuid() != 0 and TRACEFS.is_dir():
        return Check("tracefs", False, f"{TRACEFS} is not readable without root", {"any": "run as root"})
    return Check("tracefs", False, f"not mounted at {TRACEFS}", fix)


def check_btf() -> Check:
    fix = {
        "debian": "install a kernel built with CONFIG_DEBUG_INFO_BTF=y (apt install linux-image-amd64)",
        "ubuntu": "install a kernel built with CONFIG_DEBUG_INFO_BTF=y (apt install linux-generic)",
        "rhel": "use a RHEL >= 8.2 kernel (BTF is built in): dnf install kernel",
    }
    if not VMLINUX_BTF.exists():
        return Check("BTF", False, f"{VMLINUX_BTF} is missing", fix)
    if not os.access(VMLINUX_BTF, os.R_OK):
        return Check("BTF", False, f"{VMLINUX_BTF} is not readable (needs root)", {"any": "run as root"})
    try:
        btf = kernel_btf()
        for struct_name, member, _size in KERNEL_FIELDS.values():
            btf.member(struct_name, member)
    except BTFError as e:
        return Check("BTF", False, str(e), fix)
    return Check("BTF", True, f"{VMLINUX_BTF}: all {len(KERNEL_FIELDS)} kernel fields the probes read found")


def check_raw_tracepoint(name: str, required: bool = True) -> Check:
    """A raw tracepoint exists iff the kernel has its btf_trace_<name> typedef."""
    try:
        ok = kernel_btf().has_typedef(f"btf_trace_{name}")
    except BTFError as e:
        return Check(f"raw tracepoint {name}", False, str(e), required=required)
    detail = "available" if ok else "not in this kernel"
    return Check(f"raw tracepoint {name}", ok, detail, required=required)


def check_syscall_tracepoints() -> Check:
    if not _is_dir(TRACEFS / "events"):  # unmounted or root-only: absence says nothing about the kernel
        detail = f"cannot tell: {TRACEFS}/events is not readable (not root, or tracefs not mounted)"
        return Check("syscall tracepoints", False, detail, {"any": "run as root"}, required=False)
    missing = [
        f"sys_{d}_{c}"
        for c in (*SYNC_TPS, *WRITE_TPS, *READ_TPS)
        for d in ("enter", "exit")
        if not _is_dir(TRACEFS / "events" / "syscalls" / f"sys_{d}_{c}")
    ]
    fix = {"any": "a kernel with CONFIG_FTRACE_SYSCALLS=y; or capture with syscalls off"}
    if missing:
        return Check("syscall tracepoints", False, f"missing {', '.join(missing)}", fix, required=False)
    detail = f"{len(SYNC_TPS)} fsync-family calls, {len(WRITE_TPS)} writes, {len(READ_TPS)} reads"
    if not all(aio_tracepoints()):
        detail += "; no libaio tracepoints (CONFIG_AIO off): libaio's data calls are not recorded"
    return Check("syscall tracepoints", True, detail, required=False)


def aio_tracepoints() -> list[bool]:
    """Whether each of libaio's syscall tracepoints the capture uses exists (both ends of each)."""
    events = TRACEFS / "events" / "syscalls"
    return [_is_dir(events / f"sys_{d}_{c}") for c in AIO_TPS for d in ("enter", "exit")]


def check_overlay() -> Check:
    """With --device, a container's syncs (files on overlayfs) are attributed through overlayfs's
    BTF; without it they count as on another device."""
    from bpf.loader import overlay_cflags

    if overlay_cflags():
        return Check("overlayfs syncs", True, "attributed to the disk under the upper layer", required=False)
    detail = "no overlayfs BTF (module not loaded?): with --device, container syncs count as elsewhere"
    fix = {"any": "modprobe overlay (before the capture)"}
    return Check("overlayfs syncs", False, detail, fix, required=False)


def check_bcc() -> Check:
    fix = {
        "debian": "apt install python3-bpfcc",
        "ubuntu": "apt install python3-bpfcc",
        "rhel": "dnf install python3-bcc",
    }
    try:
        import bcc
    except ImportError as e:
        return Check("bcc", False, f"cannot import bcc ({e}); the venv needs --system-site-packages", fix)
    return Check("bcc", True, f"python bcc at {Path(bcc.__file__).parent}")


def check_headers() -> Check:
    rel = platform.release()
    build = Path("/lib/modules") / rel / "build"
    fix = {
        "debian": f"apt install linux-headers-{rel} (or linux-headers-amd64 + symlinks: scripts/setup.sh)",
        "ubuntu": f"apt install linux-headers-{rel}",
        "rhel": f"dnf install kernel-devel-{rel}",
    }
    if (build / "include").is_dir():
        return Check("kernel headers", True, f"{build} -> {build.resolve()}")
    return Check("kernel headers", False, f"{build}/include is missing (bcc compiles against it)", fix)


def check_compile() -> Check:
    """Compile and load the real capture program (not attached)."""
    try:
        from bpf.loader import test_compile

        test_compile()
    except Exception as e:  # any failure here is the answer
        msg = str(e).strip().splitlines()
        return Check("bcc compile", False, msg[-1] if msg else type(e).__name__)
    return Check("bcc compile", True, "capture.bpf.c compiles and passes the verifier")


def check_fio() -> Check:
    fix = {"debian": "apt install fio", "ubuntu": "apt install fio", "rhel": "dnf install fio"}
    try:
        v = fio_version()
    except (OSError, subprocess.TimeoutExpired) as e:
        return Check("fio", False, f"fio --version failed ({e})", fix, required=False)
    if v is None:
        return Check("fio", False, "not installed (needed for replay and the tests)", fix, required=False)
    return Check("fio", v.numeric >= (3, 0), v.text or "unknown version", fix, required=False)


def doctor_checks(mount: bool = True) -> list[Check]:
    checks = [check_privileges(), check_tracefs(mount=mount), check_btf()]
    checks += [check_raw_tracepoint(tp) for tp in REQUIRED_TPS]
    io_start = check_raw_tracepoint("block_io_start", required=False)
    if not io_start.ok:
        io_start.detail += "; block_rq_insert stands in for queue time and submitter"
    checks.append(io_start)
    checks += [check_syscall_tracepoints(), check_overlay(), check_bcc(), check_headers()]
    prereqs_ok = all(c.ok for c in checks if c.required)
    skipped = Check("bcc compile", False, "skipped: fix the above first")
    checks.append(check_compile() if prereqs_ok else skipped)
    checks.append(check_fio())
    return checks


def capture_ready(checks: list[Check]) -> bool:
    return all(c.ok for c in checks if c.required)


def require_privileges() -> None:
    c = check_privileges()
    if not c.ok:
        raise MissingCapability(f"iofp capture needs root for eBPF: {c.fix['any']}")


def require_capture() -> None:
    """Raise MissingCapability naming the first missing piece (cheap checks only; no compile)."""
    require_privileges()
    checks = [check_tracefs(mount=True), check_btf(), check_bcc(), check_headers()]
    checks += [check_raw_tracepoint(tp) for tp in REQUIRED_TPS]
    for c in checks:
        if not c.ok:
            fix = next(iter(c.fix.values()), "see `iofp doctor`")
            raise MissingCapability(f"{c.name}: {c.detail}; fix: {fix} (run `iofp doctor` for details)")
