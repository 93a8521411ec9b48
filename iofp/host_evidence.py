"""What the host was doing while a run measured a device: the evidence a verdict needs before it
names the device (issue 26 §1). Typed and versioned; imports no stage.

A replay, a probe run or a headroom step that misses a rate or a latency is the device's limit only
if the device was the thing that was busy. On a shared machine it often is not: other work took the
CPU that fio, the loop device's worker or the capture needed, and a device that sat idle half the
run gets the blame. The record holds, over the run (the sampler's window):

* CPU pressure (`/proc/pressure/cpu`, `io`: Documentation/accounting/psi.rst): the `total`
  microseconds stalled, as a share of the run (`some`: at least one runnable task waited for a CPU;
  for io, `some` and `full`), and the highest share over any PEAK_WINDOW_S of it;
* CPU busy and steal per CPU (`/proc/stat`: user+nice+system+irq+softirq, and steal, over all time
  of that CPU; iowait counts as idle);
* each device's load (`/sys/block/DEV/stat`, Documentation/block/stat.rst): io_ticks as a share of
  the run (iostat's %util), time_in_queue over the run (iostat's aqu-sz), the in-flight count sampled
  every SAMPLE_S (mean, max) against the queue's size (`queue/nr_requests`), and the requests
  completed; for a loop device, the device its backing file lives on as well;
* fio's own CPU use (usr/sys, from its JSON: fio's report, labelled so) and the replay's issue
  lateness (the fidelity figures), set by the stage that has them.

`limit()` reads the record: the device set the limit when it was busy (or its queue full) while the
host had CPU to spare; the host did when tasks waited for a CPU. A verdict about the device is
stated only in the first case.
"""

from __future__ import annotations

import os
import threading
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

VERSION = 1
SAMPLE_S = 0.1  # in-flight and pressure sampled this often
PEAK_WINDOW_S = 1.0  # the peak shares are over windows this long
MAX_SAMPLES = 200_000  # ~5.5 h at SAMPLE_S; beyond it, every other sample is dropped (the peaks coarsen)
# The host limited a run when its tasks waited for a CPU this share of the run (PSI cpu some, the
# CPUs' average), had less than HOST_IDLE of its CPUs' time to spare, or lost HOST_STEAL to the
# hypervisor. Measured (BENCHMARKS.md, bench.verdict_flips): a replay's own share on this 2-core VM
# was 13% with other sessions' work beside it, where the device kept its rate; beside two CPU hogs
# 27-51% with no CPU idle; RAM-loop steps that missed at 1x with the device idle 94-96% of the run
# had 19-32%.
HOST_PRESSURE = 0.10
HOST_IDLE = 0.05
HOST_STEAL = 0.10
DEVICE_BUSY = 0.8  # the device set the limit: in flight this share of the run (iostat's %util)
PROC = Path("/proc")
SYS_BLOCK = Path("/sys/class/block")


@dataclass
class DeviceLoad:
    """One block device over the run, as iostat would show it."""

    name: str
    role: str  # "target" | "backing" (the device a loop device's file lives on)
    util: float | None  # share of the run with I/O in flight (io_ticks)
    aqu_sz: float | None  # mean requests queued or in flight (time_in_queue / the run)
    inflight_mean: float | None  # sampled every SAMPLE_S
    inflight_max: int | None
    queue_size: int | None  # queue/nr_requests: what "its queue full" is measured against
    ios: int = 0  # reads, writes, discards and flushes completed during the run


@dataclass
class HostEvidence:
    wall_s: float
    samples: int
    cpus: int
    cpu_pressure: float | None  # PSI cpu `some`: share of the run some task waited for a CPU
    cpu_pressure_peak: float | None  # the highest share over any PEAK_WINDOW_S
    io_pressure: float | None  # PSI io `some`
    io_pressure_full: float | None  # PSI io `full`: every non-idle task waited for I/O
    cpu_busy: list[float] = field(default_factory=list)  # per CPU, share of its time not idle
    cpu_steal: list[float] = field(default_factory=list)  # per CPU, share taken by the hypervisor
    devices: list[DeviceLoad] = field(default_factory=list)
    fio_cpu: dict[str, Any] | None = None  # usr, sys (% of one CPU, summed over jobs), source
    lateness: dict[str, Any] | None = None  # p50_ns, p99_ns, growth_ns, source
    interval_s: float = SAMPLE_S
    version: int = VERSION

    @property
    def cpu_idle(self) -> float | None:
        """The share of all CPUs' time nobody used: what the host had to spare."""
        if not self.cpu_busy:
            return None
        return max(0.0, 1 - (sum(self.cpu_busy) + sum(self.cpu_steal)) / len(self.cpu_busy))

    def device(self, role: str = "target") -> DeviceLoad | None:
        return next((d for d in self.devices if d.role == role), None)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_dict(cls, d: dict[str, Any] | None) -> HostEvidence | None:
        """Read a stored record; None for a result written before there was one."""
        if not d:
            return None
        known = {k: v for k, v in d.items() if k in cls.__dataclass_fields__}
        fields = DeviceLoad.__dataclass_fields__
        devices = d.get("devices") or []
        known["devices"] = [DeviceLoad(**{k: v for k, v in x.items() if k in fields}) for x in devices]
        return cls(**known)


@dataclass
class Limit:
    """Whose limit a run met, from its evidence: "device" (it was busy, or its queue full, while the
    host had CPU to spare), "host" (tasks waited for a CPU, none was idle, or the hypervisor took
    it), "neither" (nothing was saturated) or "unknown" (no evidence: a result from before iofp
    recorded it)."""

    who: str
    why: str


def limit(ev: HostEvidence | None) -> Limit:
    """Whose limit the run met (the rule in this module's docstring)."""
    if ev is None:
        return Limit("unknown", "the host was not recorded (a result written before iofp recorded it)")
    pressure, idle = ev.cpu_pressure or 0.0, ev.cpu_idle
    steal = max(ev.cpu_steal, default=0.0)
    dev = ev.device()
    util = None if dev is None else max((d.util or 0.0) for d in ev.devices)
    full = dev is not None and bool(dev.queue_size) and (dev.inflight_max or 0) >= (dev.queue_size or 0)
    cpu = f"pressure {pressure:.0%}" + (f", {idle:.0%} idle" if idle is not None else "")
    if pressure >= HOST_PRESSURE or (idle is not None and idle < HOST_IDLE) or steal >= HOST_STEAL:
        taken = f", the hypervisor took {steal:.0%} of a CPU" if steal >= HOST_STEAL else ""
        device = "" if util is None else f"; the device was idle {1 - util:.0%} of the run"
        return Limit("host", f"the host's CPU was busy ({cpu}{taken}){device}")
    if util is not None and (util >= DEVICE_BUSY or full):
        assert dev is not None
        queue = f", its queue full ({dev.inflight_max} of {dev.queue_size})" if full else ""
        what = f"the device was busy {util:.0%} of the run (aqu-sz {dev.aqu_sz or 0:.1f}{queue})"
        return Limit("device", f"{what} while the host had CPU to spare ({cpu})")
    busy = "" if util is None else f"the device (busy {util:.0%} of the run) nor "
    return Limit("neither", f"neither {busy}the host's CPU ({cpu}) was saturated")


def whose_miss(ev: HostEvidence | None) -> str | None:
    """Whose a latency miss is, from a run's evidence when the host did not limit it over the run (None:
    no evidence): the device's when it was busy or nothing was; "the device's or the host's" when no
    resource was saturated over the run but the CPU was busy for a second at a time (its peak pressure
    at least HOST_PRESSURE): a p99 is the slowest 1% of requests, and a second of stalls makes it."""
    lim = limit(ev)
    if ev is None or lim.who in ("unknown", "host"):
        return None
    if lim.who == "device":
        return f"the device's: {lim.why}"
    peak = ev.cpu_pressure_peak
    if peak is not None and peak >= HOST_PRESSURE:
        return (
            f"the device's or the host's: {lim.why} over the run, but the CPU pressure reached {peak:.0%} "
            "over a second of it: a tail this short may be the host's stalls; rerun on a quiet host"
        )
    most = "" if peak is None else f", at most {peak:.0%} over any second"
    return f"the device's: {lim.why}{most}: the tail is the device's own"


# ---- reading the kernel's counters -------------------------------------------------------------


def psi_totals(text: str) -> dict[str, int]:
    """`some avg10=.. total=N` lines -> {"some": N, "full": M} (microseconds stalled)."""
    out = {}
    for line in text.splitlines():
        kind, *pairs = line.split()
        vals = dict(p.split("=", 1) for p in pairs if "=" in p)
        if "total" in vals:
            out[kind] = int(vals["total"])
    return out


def cpu_times(text: str) -> dict[str, tuple[int, int, int]]:
    """/proc/stat -> {"cpu0": (busy, steal, total), ...} in clock ticks (the per-CPU lines only).

    Fields: user nice system idle iowait irq softirq steal (guest time is already in user)."""
    out = {}
    for line in text.splitlines():
        name, *vals = line.split()
        if not name.startswith("cpu") or name == "cpu":
            continue
        user, nice, system, idle, iowait, irq, softirq, steal = (int(v) for v in (vals + ["0"] * 8)[:8])
        busy = user + nice + system + irq + softirq
        out[name] = (busy, steal, busy + steal + idle + iowait)
    return out


def block_stat(text: str) -> dict[str, int]:
    """/sys/block/DEV/stat -> the fields this record uses (Documentation/block/stat.rst)."""
    v = [int(x) for x in text.split()] + [0] * 17
    return {"ios": v[0] + v[4] + v[11] + v[15], "inflight": v[8], "io_ticks_ms": v[9], "queue_ms": v[10]}


def backing_device(name: str) -> str | None:
    """The whole disk a loop device's backing file lives on (`vda` for a file on /dev/vda1)."""
    backing = SYS_BLOCK / name / "loop" / "backing_file"
    try:
        st = os.stat(backing.read_text().strip())
        dev = Path(f"/sys/dev/block/{os.major(st.st_dev)}:{os.minor(st.st_dev)}").resolve()
    except (OSError, ValueError):
        return None
    if not (dev / "stat").is_file():
        return None  # tmpfs, overlay: no block device under the file
    return dev.parent.name if (dev / "partition").is_file() else dev.name


def _read(path: Path) -> str | None:
    try:
        return path.read_text()
    except OSError:
        return None


def _queue_size(name: str) -> int | None:
    text = _read(SYS_BLOCK / name / "queue" / "nr_requests")
    return int(text) if text and text.strip().isdigit() else None


# ---- the sampler ---------------------------------------------------------------------------------


@dataclass
class _Sample:
    t: float
    psi_cpu: int | None
    psi_io: dict[str, int]
    cpus: dict[str, tuple[int, int, int]]
    blocks: dict[str, dict[str, int]]


class Sampler:
    """Samples the host and `device` (a kernel name, or None for a file target) from `start()` to
    `stop()`, in a thread of its own (four small files read every SAMPLE_S: ~0.1 ms each time).

        with Sampler("loop3") as s:
            run_fio()
        evidence = s.evidence
    """

    def __init__(self, device: str | None, interval_s: float = SAMPLE_S) -> None:
        self.interval_s = interval_s
        self.roles = {}
        if device and (SYS_BLOCK / device / "stat").is_file():
            self.roles[device] = "target"
            if (backing := backing_device(device)) and backing != device:
                self.roles[backing] = "backing"
        self.samples: list[_Sample] = []
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.evidence: HostEvidence | None = None

    def __enter__(self) -> Sampler:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    def start(self) -> None:
        self.samples = [self._sample()]
        self._thread = threading.Thread(target=self._loop, name="iofp-host-evidence", daemon=True)
        self._thread.start()

    def stop(self) -> HostEvidence:
        self._stop.set()
        if self._thread is not None:
            self._thread.join()
        self.samples.append(self._sample())
        self.evidence = summarize(self.samples, self.roles, self.interval_s)
        return self.evidence

    def _loop(self) -> None:
        while not self._stop.wait(self.interval_s):
            self.samples.append(self._sample())
            if len(self.samples) > MAX_SAMPLES:
                self.samples = self.samples[::2]

    def _sample(self) -> _Sample:
        cpu = _read(PROC / "pressure" / "cpu")
        io = _read(PROC / "pressure" / "io")
        blocks = {}
        for name in self.roles:
            if (text := _read(SYS_BLOCK / name / "stat")) is not None:
                blocks[name] = block_stat(text)
        return _Sample(
            t=time.monotonic(),
            psi_cpu=psi_totals(cpu).get("some") if cpu else None,
            psi_io=psi_totals(io) if io else {},
            cpus=cpu_times(_read(PROC / "stat") or ""),
            blocks=blocks,
        )


def summarize(samples: list[_Sample], roles: dict[str, str], interval_s: float = SAMPLE_S) -> HostEvidence:
    """The record of a run from its samples (the first and last bound it)."""
    a, b = samples[0], samples[-1]
    wall = max(b.t - a.t, 1e-9)

    def share(x: int | None, y: int | None) -> float | None:
        return None if x is None or y is None else max(0.0, (y - x) / 1e6 / wall)

    busy, steal = [], []
    for name in sorted(b.cpus, key=lambda n: int(n[3:])):
        if name in a.cpus:
            d = [y - x for x, y in zip(a.cpus[name], b.cpus[name], strict=True)]
            busy.append(d[0] / d[2] if d[2] > 0 else 0.0)
            steal.append(d[1] / d[2] if d[2] > 0 else 0.0)
    return HostEvidence(
        wall_s=round(wall, 3),
        samples=len(samples),
        cpus=len(b.cpus),
        cpu_pressure=share(a.psi_cpu, b.psi_cpu),
        cpu_pressure_peak=_peak(samples),
        io_pressure=share(a.psi_io.get("some"), b.psi_io.get("some")),
        io_pressure_full=share(a.psi_io.get("full"), b.psi_io.get("full")),
        cpu_busy=[round(x, 4) for x in busy],
        cpu_steal=[round(x, 4) for x in steal],
        devices=[_device_load(samples, name, role, wall) for name, role in roles.items() if name in b.blocks],
        interval_s=interval_s,
    )


def _device_load(samples: list[_Sample], name: str, role: str, wall: float) -> DeviceLoad:
    seen = [s.blocks[name] for s in samples if name in s.blocks]
    a, b = seen[0], seen[-1]
    inflight = [s["inflight"] for s in seen]
    return DeviceLoad(
        name=name,
        role=role,
        util=min(1.0, (b["io_ticks_ms"] - a["io_ticks_ms"]) / 1e3 / wall),
        aqu_sz=round((b["queue_ms"] - a["queue_ms"]) / 1e3 / wall, 3),
        inflight_mean=round(sum(inflight) / len(inflight), 3),
        inflight_max=max(inflight),
        queue_size=_queue_size(name),
        ios=b["ios"] - a["ios"],
    )


def _peak(samples: list[_Sample]) -> float | None:
    """The highest CPU pressure share over any PEAK_WINDOW_S of the run (the whole run if shorter)."""
    pts = [(s.t, s.psi_cpu) for s in samples if s.psi_cpu is not None]
    if len(pts) < 2:
        return None
    best, j = 0.0, 0
    for i in range(1, len(pts)):
        while j < i - 1 and pts[i][0] - pts[j + 1][0] >= PEAK_WINDOW_S:
            j += 1
        dt = pts[i][0] - pts[j][0]
        if dt >= min(PEAK_WINDOW_S, pts[-1][0] - pts[0][0]) and dt > 0:
            best = max(best, (pts[i][1] - pts[j][1]) / 1e6 / dt)
    return round(min(best, 1.0), 4)


# ---- what the stages add -------------------------------------------------------------------------


def fio_cpu(fio_json: dict[str, Any]) -> dict[str, Any] | None:
    """fio's own usr/sys CPU (percent of one CPU, summed over its jobs), labelled as fio's report."""
    jobs = fio_json.get("jobs") or []
    if not jobs:
        return None
    return {
        "usr": round(sum(float(j.get("usr_cpu") or 0) for j in jobs), 2),
        "sys": round(sum(float(j.get("sys_cpu") or 0) for j in jobs), 2),
        "source": "fio's own report",
    }
