"""The host's evidence over a run (iofp/host_evidence.py): the kernel's counters read as iostat and the
PSI docs define them, and the sampler over real runs: a fio job of known I/Os on a RAM loop counted
exactly, and CPU hogs seen as pressure and busy CPUs."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest
from conftest import needs_fio, needs_root
from lab import destroy_loop, fio, make_loop

from iofp import host_evidence as he

PSI = """some avg10=1.23 avg60=0.50 avg300=0.10 total=12345
full avg10=0.00 avg60=0.00 avg300=0.00 total=678
"""
STAT = """cpu  10 0 0 0 0 0 0 0 0 0
cpu0 100 5 50 800 40 2 3 7 11 0
cpu1 1 0 1 90 0 0 0 0 0 0
intr 1 2 3
"""
# reads, merges, sectors, ticks; writes x4; in_flight io_ticks time_in_queue; discards x4; flushes x2
BLOCK = "10 0 80 5 20 0 160 9 3 700 1500 4 0 8 1 6 2"


def test_the_counters_are_read_as_the_kernel_documents_them():
    assert he.psi_totals(PSI) == {"some": 12345, "full": 678}
    # busy = user + nice + system + irq + softirq; steal apart; iowait is idle; guest already in user
    assert he.cpu_times(STAT) == {"cpu0": (160, 7, 160 + 7 + 800 + 40), "cpu1": (2, 0, 92)}
    want = {"ios": 10 + 20 + 4 + 6, "inflight": 3, "io_ticks_ms": 700, "queue_ms": 1500}
    assert he.block_stat(BLOCK) == want
    assert he.block_stat("1 2 3 4 5 6 7 8 0 9 10")["ios"] == 6  # an old kernel's 11 fields


def sample(t: float, psi: int, busy: int, idle: int, ticks: int, queue: int, inflight: int) -> he._Sample:
    cpus = {"cpu0": (busy, 0, busy + idle), "cpu1": (busy // 2, busy // 4, busy + idle)}
    blk = {"loop9": {"ios": int(t * 100), "inflight": inflight, "io_ticks_ms": ticks, "queue_ms": queue}}
    return he._Sample(t, psi, {"some": psi // 10, "full": 0}, cpus, blk)


def test_a_run_is_summarized_as_shares_of_its_wall_time():
    # 2 s: CPU pressure 0.5 s in all, 0.45 s of it in the second second; the device busy 1.5 s
    samples = [
        sample(0.0, 0, 0, 0, 0, 0, 0),
        sample(1.0, 50_000, 100, 100, 500, 800, 2),
        sample(2.0, 500_000, 200, 200, 1500, 3000, 4),
    ]
    ev = he.summarize(samples, {"loop9": "target"})
    assert ev.wall_s == 2.0 and ev.samples == 3 and ev.cpus == 2
    assert ev.cpu_pressure == pytest.approx(0.25) and ev.cpu_pressure_peak == pytest.approx(0.45)
    assert ev.io_pressure == pytest.approx(0.025)
    assert ev.cpu_busy == [0.5, 0.25] and ev.cpu_steal == [0.0, 0.125]
    assert ev.cpu_idle == pytest.approx(1 - (0.5 + 0.25 + 0.125) / 2)
    (d,) = ev.devices
    assert (d.name, d.role, d.util, d.aqu_sz, d.inflight_mean, d.inflight_max, d.ios) == (
        "loop9", "target", 0.75, 1.5, 2.0, 4, 200,
    )  # fmt: skip


def test_a_stored_record_reads_back_and_an_old_result_has_none():
    ev = he.summarize([sample(0, 0, 0, 0, 0, 0, 0), sample(1, 10, 1, 1, 10, 10, 1)], {"loop9": "target"})
    ev.fio_cpu = he.fio_cpu({"jobs": [{"usr_cpu": 12.5, "sys_cpu": 30.0}, {"usr_cpu": 1, "sys_cpu": 2}]})
    assert ev.fio_cpu == {"usr": 13.5, "sys": 32.0, "source": "fio's own report"}
    assert he.HostEvidence.from_dict(ev.to_dict() | {"a later key": 1}) == ev
    assert he.HostEvidence.from_dict(None) is None and he.HostEvidence.from_dict({}) is None


@needs_root
@needs_fio
def test_the_sampler_counts_a_fio_jobs_ios_on_the_device_and_sees_cpu_hogs(tmp_path):
    """2,000 direct 4 KiB reads at QD1 on a RAM loop: the target's count is fio's, its queue never
    held more than one; beside two hogs per CPU, a task always waited on each."""
    dev, backing = make_loop(16)
    name = dev.rsplit("/", 1)[1]
    job = ["--name=r", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
           "--ioengine=psync", "--number_ios=2000", "--size=16m", "--output-format=json"]  # fmt: skip
    try:
        with he.Sampler(name) as s:
            fio(*job)
        quiet = s.evidence
        # two loops pinned to each CPU: unpinned, the kernel's autogroup balances the test's session
        # against another session's hog (CI's `nice -n 5 yes`) as equals, and it put all four of the
        # test's loops on one CPU beside that hog on the other: pressure 51-55%, not >80%
        pinned = "import os, sys; os.sched_setaffinity(0, {int(sys.argv[1])})\nwhile True: pass"
        cpus = sorted(os.sched_getaffinity(0))
        hogs = [subprocess.Popen([sys.executable, "-c", pinned, str(c)]) for c in cpus for _ in (1, 2)]
        try:
            with he.Sampler(name, interval_s=0.05) as s:
                subprocess.run(["sleep", "1.5"], check=True)
        finally:
            for h in hogs:
                h.kill()
                h.wait()
        busy = s.evidence
    finally:
        destroy_loop(dev, backing)
    target = quiet.device()
    assert target is not None and target.name == name and quiet.device("backing") is None  # /dev/shm
    assert target.ios == 2000 and target.inflight_max is not None and target.inflight_max <= 1
    assert 0 < target.util <= 1 and target.queue_size and target.queue_size > 1
    assert quiet.samples >= 3 and len(quiet.cpu_busy) == quiet.cpus
    # two busy loops per CPU: on every CPU one of them is always runnable and waiting (PSI's system
    # figure is the CPUs' average: n + 1 loops on n CPUs read 53% here)
    assert busy.cpu_pressure is not None and busy.cpu_pressure > 0.8, busy
    assert busy.cpu_pressure_peak >= busy.cpu_pressure - 0.05
    assert min(busy.cpu_busy) > 0.8 and busy.cpu_idle < 0.2 and busy.device().ios == 0, busy


def evidence(pressure: float, busy: list[float], util: float | None, *, steal: float = 0.0,
             inflight_max: int = 1) -> he.HostEvidence:  # fmt: skip
    devices = (
        [] if util is None else [he.DeviceLoad("loop9", "target", util, 0.5, 0.4, inflight_max, 128, 10)]
    )
    return he.HostEvidence(
        2.0, 20, len(busy), pressure, pressure, 0.0, 0.0, busy, [steal] * len(busy), devices
    )


def test_the_device_is_named_only_when_it_was_busy_while_the_host_had_cpu_to_spare():
    # the case: the host's tasks waited for a CPU; the device sat idle most of the run
    lim = he.limit(evidence(0.31, [0.9, 0.8], 0.4))
    assert (lim.who, lim.why) == ("host", "the host's CPU was busy (pressure 31%, 15% idle); the device was "
                                          "idle 60% of the run")  # fmt: skip
    assert he.limit(evidence(0.02, [1.0, 0.99], 0.9)).who == "host"  # no CPU to spare
    assert "the hypervisor took 20% of a CPU" in he.limit(evidence(0.0, [0.2, 0.2], 0.9, steal=0.2)).why
    lim = he.limit(evidence(0.03, [0.3, 0.2], 0.92))
    assert (lim.who, lim.why) == ("device", "the device was busy 92% of the run (aqu-sz 0.5) while the host "
                                            "had CPU to spare (pressure 3%, 75% idle)")  # fmt: skip
    assert he.limit(evidence(0.03, [0.3, 0.2], 0.5, inflight_max=128)).why.startswith(
        "the device was busy 50% of the run (aqu-sz 0.5, its queue full (128 of 128))"
    )
    lim = he.limit(evidence(0.03, [0.3, 0.2], 0.4))
    assert (lim.who, lim.why) == ("neither", "neither the device (busy 40% of the run) nor the host's CPU "
                                             "(pressure 3%, 75% idle) was saturated")  # fmt: skip
    assert he.limit(None).who == "unknown"


def test_a_latency_miss_says_whose_it_is_from_the_host_evidence():
    """A quiet run's 1x step that missed its p99 with nothing saturated over the run: the device's own
    tail when no second of it had the CPU busy; the device's or the host's when one second did."""
    assert he.whose_miss(evidence(0.03, [0.3, 0.2], 0.92)).startswith("the device's: the device was busy 92%")
    calm = evidence(0.03, [0.3, 0.2], 0.4)
    neither = "neither the device (busy 40% of the run) nor the host's CPU (pressure 3%, 75% idle) was " \
              "saturated"  # fmt: skip
    own = f"the device's: {neither}, at most 3% over any second: the tail is the device's own"
    assert he.whose_miss(calm) == own
    calm.cpu_pressure_peak = 0.35
    either = f"the device's or the host's: {neither} over the run, but the CPU pressure reached 35% over"
    assert he.whose_miss(calm).startswith(either)
    assert he.whose_miss(evidence(0.31, [0.9, 0.8], 0.4)) is None and he.whose_miss(None) is None
