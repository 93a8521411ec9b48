"""What `iofp capture` costs the workload it watches, side by side with the peers that run here.

4k random reads at QD32 (libaio, direct) on a loop device over a /dev/shm file (the fastest device on
the machine, so the tracer's per-event cost shows most). For each round the modes run back to back in
a rotating order (identical runs drift +-10%): no tracing, `iofp capture`, `perf record` on the two
block tracepoints, and a bpftrace one-line-per-event script; `empty` (not by default) attaches
programs that return at once to iofp's tracepoints: the floor of attaching at all; `minimal` (not by
default) only times each request in the kernel (a hash of issue times keyed by request pointer, the
latencies summed), the floor of any tracer that records latency; `clock` (not by default) only
reads the clock at issue and at completion (no map): what the two timestamps cost; `join` (not by
default) appends a record per event to per-CPU batches and shares nothing between CPUs (the kernel
side of issue records joined offline, bench/join_records.bpf.c). biosnoop-bpfcc
and blktrace are tried once and their failure recorded (kprobes and debugfs are refused here).

Per run: fio IOPS, fio's I/O count, the /sys/block stat delta, the events the tracer recorded, the
losses it reports, and its CPU (utime+stime after it was ready, from /proc and wait4) per event;
every CPU's busy time (/proc/stat) and fio's own CPU, per I/O, over fio's run. `iofp_nospool` (not
by default) is `iofp capture --spool 0`, which encodes each interval as it ends, during the peak.
`--rate N` runs fio at N IOPS instead of flat out: the workload then does the same work in every
mode, and the busy CPU per I/O is the cost (less noisy than IOPS on a shared VM).
`--workload psync-randwrite` runs 4k random writes with one pwrite64 each instead, which also pays
for the syscall programs that look at every write for O_DSYNC. `--backing disk` puts the loop
device's file on the VM's disk with direct I/O: a device whose requests cost what real ones do.

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.capture_overhead --rounds 5 --seconds 10
    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.capture_overhead --workload psync-randwrite \
        --modes none,iofp,iofp_nosys,perf --rounds 3 --seconds 6
    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.capture_overhead --backing disk \
        --modes none,iofp,perf
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import platform
import re
import shutil
import signal
import statistics
import subprocess
import sys
import threading
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path

from replay.fio import fio_json
from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "capture_overhead"
CLK_TCK = os.sysconf("SC_CLK_TCK")
BPF_STATS = Path("/proc/sys/kernel/bpf_stats_enabled")  # 1: the kernel times every program run


@dataclass
class Run:
    mode: str
    round: int
    iops: float = 0.0
    fio_ios: int = 0
    stat_ios: int = 0
    events: int | None = None  # requests the tracer recorded (iofp: rows; perf/bpftrace: complete events)
    lost: int | None = None
    tracer_cpu_s: float | None = None
    busy_ns_per_io: float | None = None  # every CPU's busy time (/proc/stat) over fio's run, per I/O
    tracer_ns_per_io_in_run: float | None = None  # the tracer process's CPU while fio ran, per I/O
    fio_cpu_ns_per_io: float | None = None  # fio's own CPU (usr + sys) per I/O
    note: str = ""
    extra: dict = field(default_factory=dict)

    @property
    def cpu_us_per_event(self) -> float | None:
        if self.tracer_cpu_s is None or not self.events:
            return None
        return self.tracer_cpu_s / self.events * 1e6


# ---- device ------------------------------------------------------------------------------------


# Where the loop device's data lives. shm: RAM, the fastest device here, where a tracer's per-request
# cost shows most. disk: a file on the VM's disk read with direct I/O (--direct-io=on), so every
# request costs what a real device's does (~68k 4k random reads/s at QD32 here, fio ~43% of a CPU).
BACKINGS = {"shm": lab.RAM, "disk": lab.DISK}


def make_loop(size_mib: int, backing_kind: str = "shm") -> tuple[str, Path]:
    # written out, not sparse: a read of a hole costs the disk nothing
    return lab.make_loop(size_mib, BACKINGS[backing_kind], fill=True, prefix="iofp-bench")


@dataclass(frozen=True)
class Workload:
    fio_args: tuple[str, ...]
    direction: str  # fio JSON section and /sys/block stat counter: "read" (field 0) or "write" (field 4)
    what: str


# randread: the device's full rate, where a tracer's per-request cost shows most. psync-randwrite: one
# pwrite64 per I/O, so it also pays for the syscall programs that look for O_DSYNC writes.
WORKLOADS = {
    "randread": Workload(("--rw=randread", "--iodepth=32", "--ioengine=libaio"), "read",
                         "fio 4k randread QD32 libaio direct"),
    "psync-randwrite": Workload(("--rw=randwrite", "--ioengine=psync"), "write",
                                "fio 4k randwrite psync (a pwrite64 per I/O) direct"),
}  # fmt: skip


def completed(name: str, direction: str) -> int:
    return int(Path(f"/sys/block/{name}/stat").read_text().split()[0 if direction == "read" else 4])


def proc_cpu_s(pid: int) -> float:
    fields = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / CLK_TCK  # utime, stime (fields 14, 15)


def wait_cpu_s(p: subprocess.Popen, timeout: float = 120) -> float:
    """Reap the process and return its total CPU (it must have exited or be exiting)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pid, _status, ru = os.wait4(p.pid, os.WNOHANG)
        if pid:
            p.returncode = os.waitstatus_to_exitcode(_status)
            return ru.ru_utime + ru.ru_stime
        time.sleep(0.05)
    p.kill()
    _, _status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(_status)
    return ru.ru_utime + ru.ru_stime


def busy_ticks() -> int:
    """Busy ticks of all CPUs so far (/proc/stat: user, nice, system, irq, softirq; not idle, iowait
    or steal): whatever runs, the workload, the kernel's tracing programs, the tracer's process."""
    u, n, s, _idle, _iow, irq, sirq = (int(x) for x in Path("/proc/stat").read_text().split()[1:8])
    return u + n + s + irq + sirq


def fio(dev: str, seconds: int, out: Path, wl: Workload, rate: int = 0) -> dict:
    args = ["--name=load", f"--filename={dev}", "--bs=4k", *wl.fio_args, "--direct=1",
            "--time_based", f"--runtime={seconds}", "--norandommap", "--randrepeat=0",
            "--output-format=json", *([f"--rate_iops={rate}"] if rate else [])]  # fmt: skip
    r = lab.fio(*args, timeout=None, check=False)
    (out / "fio.cmdline").write_text(" ".join(["fio", *args]) + "\n")
    (out / "fio.stdout").write_text(r.stdout)
    (out / "fio.stderr").write_text(r.stderr)
    (out / "fio.exit_code").write_text(f"{r.returncode}\n")
    if r.returncode != 0:
        raise RuntimeError(f"fio failed: {r.stderr.strip()}")
    j = fio_json(r.stdout)["jobs"][0]
    job = j[wl.direction]
    # fio's own thread: where the submit-side programs and the syscall tracepoints' slow path run
    cpu_ns = (j["usr_cpu"] + j["sys_cpu"]) / 100 * j["job_runtime"] * 1e6
    return {
        "iops": float(job["iops"]),
        "ios": int(job["total_ios"]),
        "fio_cpu_ns_per_io": cpu_ns / max(1, int(job["total_ios"])),
    }


# ---- tracers -----------------------------------------------------------------------------------


class Tracer:
    name = "none"

    def start(self, dev: str, out: Path) -> None: ...

    def stop(self, run: Run) -> None: ...


class IofpTracer(Tracer):
    name = "iofp"
    extra_args: tuple[str, ...] = ()
    prog_stats = False  # --prog-stats: the kernel's run time per program (kernel.bpf_stats_enabled)

    def start(self, dev: str, out: Path) -> None:
        self.out = out / "trace"
        args = [sys.executable, "-m", "cli.app", "capture", "--device", dev.removeprefix("/dev/"),
                "-o", str(self.out), "--json", "-", "--force", *self.extra_args]  # fmt: skip
        (out / "iofp.cmdline").write_text(" ".join(args) + "\n")
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO)
        deadline = time.monotonic() + 60
        # ready when its five raw tracepoints are attached (one bpf_link each)
        while (
            sum(1 for fd in Path(f"/proc/{self.p.pid}/fd").iterdir() if _link(fd) == "anon_inode:bpf_link")
            < 5
        ):
            if self.p.poll() is not None or time.monotonic() > deadline:
                raise RuntimeError(
                    f"iofp capture did not start: {self.p.stderr.read() if self.p.stderr else ''}"
                )
            time.sleep(0.05)
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self, run: Run) -> None:
        if self.prog_stats:
            run.extra["prog_ns_per_run"] = prog_stats(self.p.pid)
        run.extra["cpu_in_run_s"] = proc_cpu_s(self.p.pid) - self.cpu0  # before the last interval
        self.p.send_signal(signal.SIGINT)
        run.tracer_cpu_s = wait_cpu_s(self.p) - self.cpu0  # after readiness: excludes the compile
        stdout = self.p.stdout.read() if self.p.stdout else ""
        stderr = self.p.stderr.read() if self.p.stderr else ""
        summary = json.loads(stdout)
        run.events, run.lost = summary["io_events"], summary["lost_events"]
        run.extra |= {"unmatched": summary["unmatched"], "files": summary["files"], "stderr": stderr.strip()}
        shutil.rmtree(self.out, ignore_errors=True)


class IofpNoSpoolTracer(IofpTracer):
    """iofp encoding every interval as it ends (--spool 0, the capture before the spool): what
    encoding during the peak costs."""

    name = "iofp_nospool"
    extra_args = ("--spool", "0")


class IofpNoWitnessTracer(IofpTracer):
    """iofp without the tracefs witness (--witness off): what a second handler on block_rq_complete
    costs (completions the kernel hides from BPF then stay without latency, counted)."""

    name = "iofp_nowitness"
    extra_args = ("--witness", "off")


class IofpNoSyscallsTracer(IofpTracer):
    """iofp without the fsync-family syscall tracepoints: attaching any syscall tracepoint sends
    every syscall of every task through the tracing slow path, which this mode isolates."""

    name = "iofp_nosys"
    extra_args = ("--no-syscalls",)


def prog_stats(pid: int) -> dict[str, dict[str, float]]:
    """ns per run and runs of each BPF program `pid` holds. With bpf_stats on, the kernel reads the
    clock around every run (~70 ns here): not for IOPS runs."""
    return {name: {"ns": round(p["run_time_ns"] / p["run_cnt"], 1), "runs": p["run_cnt"]}
            for name, p in prog_totals(pid).items() if p["run_cnt"]}  # fmt: skip


def prog_totals(pid: int) -> dict[str, dict[str, int]]:
    """run_time_ns and run_cnt of each BPF program `pid` holds (found by the prog_id of its fds)."""
    ids = set()
    for info in Path(f"/proc/{pid}/fdinfo").iterdir():
        with contextlib.suppress(OSError):
            ids |= {int(x) for x in re.findall(r"^prog_id:\s*(\d+)", info.read_text(), re.M)}
    progs = json.loads(subprocess.run(["bpftool", "prog", "show", "-j"], check=True,
                                      capture_output=True, text=True).stdout)  # fmt: skip
    return {pr["name"]: {"run_time_ns": pr.get("run_time_ns", 0), "run_cnt": pr.get("run_cnt", 0)}
            for pr in progs if pr["id"] in ids}  # fmt: skip


def _link(fd: Path) -> str:
    try:
        return os.readlink(fd)
    except OSError:
        return ""


class PerfTracer(Tracer):
    name = "perf"

    def start(self, dev: str, out: Path) -> None:
        self.data = Path("/dev/shm") / f"iofp-bench-perf-{uuid.uuid4().hex[:8]}.data"
        st = os.stat(dev)
        only = f"dev == {(os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)}"  # this device, like the others
        args = ["perf", "record", "-e", "block:block_rq_issue", "--filter", only,
                "-e", "block:block_rq_complete", "--filter", only, "-a", "-o", str(self.data)]  # fmt: skip
        (out / "perf.cmdline").write_text(" ".join(args) + "\n")
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)  # perf has no readiness signal; it attaches within a fraction of a second
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self, run: Run) -> None:
        self.p.send_signal(signal.SIGINT)
        cpu = wait_cpu_s(self.p)
        run.tracer_cpu_s = cpu - self.cpu0
        stderr = self.p.stderr.read() if self.p.stderr else ""
        stats = subprocess.run(
            ["perf", "report", "--stats", "-i", str(self.data)], capture_output=True, text=True
        )
        m = re.search(r"SAMPLE events:\s+(\d+)", stats.stdout)
        lost = re.search(r"LOST events:\s+(\d+)", stats.stdout)
        # issue + complete per request
        run.events = int(m.group(1)) // 2 if m else None
        # the number of PERF_RECORD_LOST records, each standing for one or more dropped samples: a
        # lower bound, and 0 does not mean nothing was missed (compare `events` with the stat count)
        run.lost = int(lost.group(1)) if lost else 0
        run.extra = {"stderr": stderr.strip().splitlines()[-1:] if stderr else []}
        self.data.unlink(missing_ok=True)


class BpftraceTracer(Tracer):
    name = "bpftrace"

    def start(self, dev: str, out: Path) -> None:
        st = os.stat(dev)
        kdev = (os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)
        prog = (
            f"tracepoint:block:block_rq_issue /args->dev == {kdev}/ "
            '{ printf("I %d %d %d\\n", args->sector, args->nr_sector, nsecs); } '
            f"tracepoint:block:block_rq_complete /args->dev == {kdev}/ "
            '{ printf("C %d %d %d\\n", args->sector, args->nr_sector, nsecs); }'
        )
        (out / "bpftrace.cmdline").write_text(f"bpftrace -e '{prog}'\n")
        self.p = subprocess.Popen(["bpftrace", "-e", prog], stdout=subprocess.PIPE, stderr=subprocess.PIPE)
        self.lines = {"I": 0, "C": 0}
        first = self.p.stdout.readline() if self.p.stdout else b""  # "Attaching 2 probes..."
        self.header = first.decode().strip()
        self.reader = threading.Thread(target=self._count, daemon=True)
        self.reader.start()
        self.cpu0 = proc_cpu_s(self.p.pid)

    def _count(self) -> None:
        assert self.p.stdout is not None
        for line in self.p.stdout:
            k = line[:1].decode()
            if k in self.lines:
                self.lines[k] += 1

    def stop(self, run: Run) -> None:
        self.p.send_signal(signal.SIGINT)
        cpu = wait_cpu_s(self.p)
        self.reader.join(timeout=30)
        run.tracer_cpu_s = cpu - self.cpu0
        run.events = self.lines["C"]
        stderr = self.p.stderr.read().decode() if self.p.stderr else ""
        lost = re.findall(r"Lost (\d+) events", stderr)
        run.lost = sum(int(x) for x in lost)
        run.extra = {"issues": self.lines["I"], "header": self.header}


# The floor: programs that return at once on the tracepoints iofp attaches (what attaching costs
# before any work is done). No events are recorded; only the IOPS are of interest.
_EMPTY_PROGRAMS = """
import signal, sys
from bcc import BPF
tps = sys.argv[1:]
src = "".join(f"RAW_TRACEPOINT_PROBE({tp}) {{ return 0; }}\\n" for tp in tps)
b = BPF(text=src)
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
print("ready", flush=True)
signal.sigwait({signal.SIGINT})
"""


class EmptyProgramsTracer(Tracer):
    name = "empty"

    def start(self, dev: str, out: Path) -> None:
        from bpf.btf import kernel_btf
        from bpf.loader import block_probes, has_io_start

        tps = [tp for tp, _ in block_probes(has_io_start(kernel_btf()))]
        args = [sys.executable, "-c", _EMPTY_PROGRAMS, *tps]
        (out / "empty.cmdline").write_text(" ".join(tps) + "\n")
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        if self.p.stdout.readline().strip() != "ready":
            raise RuntimeError(
                f"empty programs did not attach: {self.p.stderr.read() if self.p.stderr else ''}"
            )

    def stop(self, run: Run) -> None:
        if IofpTracer.prog_stats:
            run.extra["prog_ns_per_run"] = prog_stats(self.p.pid)
        self.p.send_signal(signal.SIGINT)
        self.p.wait(timeout=60)


# The least a tracer that times every request can do: the issue time in a hash keyed by the request
# pointer (what biosnoop does, on raw tracepoints), and at completion the latency summed per CPU.
# Nothing leaves the kernel, so no user space runs; iofp's cost above this is its records.
_MINIMAL_PROGRAM = r"""
BPF_HASH(start, u64, u64, 65536);
BPF_PERCPU_ARRAY(lat, u64, 2);
RAW_TRACEPOINT_PROBE(block_rq_issue) {
    u64 rq = ctx->args[0], now = bpf_ktime_get_ns();
    start.update(&rq, &now);
    return 0;
}
RAW_TRACEPOINT_PROBE(block_rq_complete) {
    u64 rq = ctx->args[0];
    u64 *t = start.lookup(&rq);
    if (!t)
        return 0;
    u64 d = bpf_ktime_get_ns() - *t;
    start.delete(&rq);
    u32 k = 0;
    u64 *sum = lat.lookup(&k);
    if (sum)
        *sum += d;
    k = 1;
    u64 *n = lat.lookup(&k);
    if (n)
        *n += 1;
    return 0;
}
"""

_MINIMAL = """
import signal, sys
from bcc import BPF
b = BPF(text=sys.argv[1])
signal.pthread_sigmask(signal.SIG_BLOCK, {signal.SIGINT})
print("ready", flush=True)
signal.sigwait({signal.SIGINT})
lat = b["lat"]
print(lat.sum(0).value, lat.sum(1).value, flush=True)
"""


# Lower still: a clock read on issue and on completion and nothing else (no map, so the two cannot
# even be paired into a latency). What two timestamps per request cost by themselves here.
_CLOCK_PROGRAM = r"""
BPF_PERCPU_ARRAY(lat, u64, 2);
static __always_inline void tick(bool done) {
    u64 now = bpf_ktime_get_ns();
    u32 k = 0;
    u64 *sum = lat.lookup(&k);
    if (sum)
        *sum += done ? now : -now; /* the sum of completion minus issue times */
    k = 1;
    u64 *n = lat.lookup(&k);
    if (n && done)
        *n += 1;
}
RAW_TRACEPOINT_PROBE(block_rq_issue) { tick(false); return 0; }
RAW_TRACEPOINT_PROBE(block_rq_complete) { tick(true); return 0; }
"""


class MinimalTracer(Tracer):
    """`minimal`: _MINIMAL_PROGRAM, its completion count as the events."""

    name = "minimal"
    program = _MINIMAL_PROGRAM

    def start(self, dev: str, out: Path) -> None:
        (out / f"{self.name}.bpf.c").write_text(self.program)
        args = [sys.executable, "-c", _MINIMAL, self.program]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        if self.p.stdout.readline().strip() != "ready":
            err = self.p.stderr.read() if self.p.stderr else ""
            raise RuntimeError(f"{self.name} program did not load: {err}")

    def stop(self, run: Run) -> None:
        if IofpTracer.prog_stats:
            run.extra["prog_ns_per_run"] = prog_stats(self.p.pid)
        self.p.send_signal(signal.SIGINT)
        out, _ = self.p.communicate(timeout=60)
        _lat_sum, completions = (int(x) for x in out.split())
        run.events = completions  # every device's: compare with the stat delta only on an idle machine


class ClockTracer(MinimalTracer):
    """`clock`: _CLOCK_PROGRAM, two clock reads per request and nothing else."""

    name = "clock"
    program = _CLOCK_PROGRAM


# `join`: bench/join_records.bpf.c, a record per event into per-CPU batches and nothing shared (the
# kernel side of issue records joined offline); user space copies the batches out every 100 ms, as
# iofp's poller does, and counts the records (a third of them, as the events: start, issue, done).
_JOIN = """
import ctypes, signal, sys, threading
from bcc import BPF
b = BPF(src_file=sys.argv[1].encode(), cflags=sys.argv[2:])
sink = bytearray(64 << 20)
state = {"used": 0, "records": 0}
def on_batch(_ctx, data, size):
    n = ctypes.c_uint32.from_address(data).value
    used = state["used"]
    if used + size > len(sink):
        used = 0
    ctypes.memmove((ctypes.c_char * size).from_buffer(sink, used), data, size)
    state["used"] = used + size
    state["records"] += n
b["events"].open_ring_buffer(on_batch)
stop = threading.Event()
signal.signal(signal.SIGINT, lambda *_: stop.set())
print("ready", flush=True)
while not stop.wait(0.1):
    b.ring_buffer_consume()
b.ring_buffer_consume()
print(0, state["records"] // 3, flush=True)
"""


class JoinTracer(MinimalTracer):
    """`join`: bench/join_records.bpf.c with a copying consumer; a third of its records as events
    (approximate: the last partial batch of each CPU is not sent, and a flush has no start)."""

    name = "join"

    def start(self, dev: str, out: Path) -> None:
        from bpf.loader import KernelOptions, cflags

        src = REPO / "bench" / "join_records.bpf.c"
        flags = [f for f in cflags(KernelOptions(syscalls=False)) if f.startswith("-DIOFP_")]
        flags += ["-DJOIN_BATCH=64", f"-DJOIN_RINGBUF_PAGES={(32 << 20) // os.sysconf('SC_PAGE_SIZE')}"]
        args = [sys.executable, "-c", _JOIN, str(src), *flags]
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
        assert self.p.stdout is not None
        if self.p.stdout.readline().strip() != "ready":
            err = self.p.stderr.read() if self.p.stderr else ""
            raise RuntimeError(f"{self.name} program did not load: {err}")
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self, run: Run) -> None:
        run.extra["cpu_in_run_s"] = proc_cpu_s(self.p.pid) - self.cpu0
        super().stop(run)


def try_unrunnable(dev: str) -> dict[str, str]:
    """biosnoop-bpfcc and blktrace: run each briefly and keep why they fail here."""
    out = {}
    for name, args in (
        ("biosnoop-bpfcc", ["biosnoop-bpfcc"]),
        ("blktrace", ["blktrace", "-d", dev, "-o", "-", "-w", "2"]),
    ):
        if shutil.which(args[0]) is None:
            out[name] = f"{args[0]} is not installed"
            continue
        try:
            r = subprocess.run(args, capture_output=True, text=True, timeout=10)
            text = (r.stderr or r.stdout).strip().splitlines()
            out[name] = f"exit {r.returncode}: {text[-1] if text else ''}"
        except subprocess.TimeoutExpired:
            out[name] = "ran (did not fail within 10 s)"
    return out


# ---- main --------------------------------------------------------------------------------------

TRACERS: dict[str, type[Tracer]] = {
    "none": Tracer,
    "iofp": IofpTracer,
    "iofp_nosys": IofpNoSyscallsTracer,
    "iofp_nospool": IofpNoSpoolTracer,
    "iofp_nowitness": IofpNoWitnessTracer,
    "perf": PerfTracer,
    "bpftrace": BpftraceTracer,
    "empty": EmptyProgramsTracer,
    "join": JoinTracer,
    "minimal": MinimalTracer,
    "clock": ClockTracer,
}


def one_run(mode: str, rnd: int, dev: str, seconds: int, wl: Workload, rate: int = 0) -> Run:
    name = dev.removeprefix("/dev/")
    out = OUT / f"r{rnd}-{mode}"
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tracer = TRACERS[mode]()
    run = Run(mode, rnd)
    before = completed(name, wl.direction)
    tracer.start(dev, out)
    busy0 = busy_ticks()
    f = fio(dev, seconds, out, wl, rate)
    run.busy_ns_per_io = (busy_ticks() - busy0) / CLK_TCK * 1e9 / max(1, f["ios"])
    run.fio_cpu_ns_per_io = f["fio_cpu_ns_per_io"]
    tracer.stop(run)
    if "cpu_in_run_s" in run.extra:
        run.tracer_ns_per_io_in_run = run.extra["cpu_in_run_s"] * 1e9 / max(1, f["ios"])
    run.stat_ios = completed(name, wl.direction) - before
    run.iops, run.fio_ios = f["iops"], f["ios"]
    (out / "run.json").write_text(json.dumps(asdict(run), indent=2))
    return run


def summarise(runs: list[Run], modes: list[str]) -> dict:
    base = {r.round: r.iops for r in runs if r.mode == "none"}
    busy = {r.round: r.busy_ns_per_io for r in runs if r.mode == "none"}
    out = {}
    for m in modes:
        rs = [r for r in runs if r.mode == m]
        ratios = [r.iops / base[r.round] for r in rs if r.round in base]
        cpu = [r.cpu_us_per_event for r in rs if r.cpu_us_per_event is not None]
        # the CPU each I/O took, against the same round's untraced run (what --rate measures)
        busy_ratios = [r.busy_ns_per_io / busy[r.round] for r in rs if busy.get(r.round) and r.busy_ns_per_io]
        # --prog-stats: the kernel's time in the tracer's programs per I/O the workload did (each run
        # includes the statistics' own clock reads, ~70 ns: compare modes, not absolute values)
        kns = [
            sum(p["ns"] * p["runs"] for k, p in st.items() if "sys" not in k and "flush" not in k) / r.fio_ios
            for r in rs
            if (st := r.extra.get("prog_ns_per_run")) and r.fio_ios
        ]
        out[m] = {
            "iops_median": statistics.median(r.iops for r in rs),
            "iops_ratio_median": statistics.median(ratios) if ratios else None,
            "overhead_pct_median": (1 - statistics.median(ratios)) * 100 if ratios else None,
            "overhead_pct_range": [(1 - max(ratios)) * 100, (1 - min(ratios)) * 100] if ratios else None,
            "busy_ns_per_io_median": statistics.median(r.busy_ns_per_io for r in rs if r.busy_ns_per_io),
            "fio_cpu_ns_per_io_median": statistics.median(r.fio_cpu_ns_per_io or 0 for r in rs),
            "tracer_ns_per_io_in_run_median": statistics.median(r.tracer_ns_per_io_in_run or 0 for r in rs),
            "cpu_overhead_pct_median": (statistics.median(busy_ratios) - 1) * 100 if busy_ratios else None,
            "cpu_overhead_pct_range": [(min(busy_ratios) - 1) * 100, (max(busy_ratios) - 1) * 100]
            if busy_ratios
            else None,
            "events_vs_stat": [(r.events, r.stat_ios, r.fio_ios) for r in rs],
            "lost_total": sum(r.lost or 0 for r in rs),
            "missing_vs_stat_total": sum(r.stat_ios - r.events for r in rs if r.events is not None),
            "tracer_cpu_us_per_event_median": statistics.median(cpu) if cpu else None,
            "kernel_ns_per_io_median": statistics.median(kns) if kns else None,
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--modes", default="none,iofp,perf,iofp_nosys,bpftrace")
    ap.add_argument("--workload", choices=sorted(WORKLOADS), default="randread")
    ap.add_argument(
        "--backing", choices=sorted(BACKINGS), default="shm", help="the loop device's file: RAM or disk"
    )
    ap.add_argument(
        "--rate",
        type=int,
        default=0,
        help="fio at this many IOPS instead of flat out: compare the busy CPU per I/O (less noisy "
        "than IOPS on a shared VM); 0: flat out",
    )
    ap.add_argument(
        "--prog-stats",
        action="store_true",
        help="record each iofp program's kernel time per run (adds the stats' own cost)",
    )
    args = ap.parse_args()
    if os.geteuid() != 0:
        sys.exit("bench.capture_overhead: needs root (loop devices, eBPF)")
    modes = args.modes.split(",")
    wl = WORKLOADS[args.workload]
    OUT.mkdir(parents=True, exist_ok=True)
    dev, backing = make_loop(1024, args.backing)
    runs: list[Run] = []
    if args.prog_stats:
        IofpTracer.prog_stats = True
        BPF_STATS.write_text("1")
    try:
        unrunnable = try_unrunnable(dev)
        for rnd in range(args.rounds):
            order = modes[rnd % len(modes) :] + modes[: rnd % len(modes)]  # rotate: no mode always first
            for mode in order:
                r = one_run(mode, rnd, dev, args.seconds, wl, args.rate)
                runs.append(r)
                cpu = r.cpu_us_per_event
                print(
                    f"round {rnd} {mode:9s} {r.iops:10.0f} IOPS  fio {r.fio_ios}  stat {r.stat_ios}  "
                    f"events {r.events}  lost {r.lost}  cpu/event {'-' if cpu is None else f'{cpu:.2f} us'}  "
                    f"busy/io {r.busy_ns_per_io:.0f} ns  fio/io {r.fio_cpu_ns_per_io:.0f} ns  "
                    f"tracer/io in run {r.tracer_ns_per_io_in_run or 0:.0f} ns",
                    flush=True,
                )
                if stats := r.extra.get("prog_ns_per_run"):
                    print("   ", "  ".join(f"{k} {v['ns']:.0f} ns" for k, v in stats.items()))
    finally:
        if args.prog_stats:
            BPF_STATS.write_text("0")
        lab.destroy_loop(dev, backing)
    result = {
        "command": " ".join(["python -m bench.capture_overhead", *sys.argv[1:]]),
        "host": platform.node(),
        "kernel": platform.release(),
        "cpus": os.cpu_count(),
        "device": f"loop over a 1 GiB file in {lab.WHERE[BACKINGS[args.backing]]}"
        + (" (--direct-io=on)" if args.backing == "disk" else ""),
        "workload": f"{wl.what}, {args.seconds}s per run" + (f", at {args.rate} IOPS" if args.rate else ""),
        "unrunnable": unrunnable,
        "summary": summarise(runs, modes),
        "runs": [asdict(r) | {"cpu_us_per_event": r.cpu_us_per_event} for r in runs],
    }
    (OUT / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps({k: result[k] for k in ("unrunnable", "summary")}, indent=2))


if __name__ == "__main__":
    main()
