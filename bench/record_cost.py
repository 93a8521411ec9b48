"""What `iofp record` costs, as an operator asks it: CPU per I/O all in, and the share of one core at
fixed rates, side by side with `perf record --overwrite` (perf's flight-recorder mode) on the block
tracepoints and a bare timing hash; and the latency it adds to each I/O at QD1.

Rates: fio --rate_iops 5000, 20000 and 50000, 4k random reads (libaio QD8, direct) on a RAM loop; per
round every mode runs once at each rate, the order rotating (identical runs drift +-10%): `none`,
`record` (iofp record with a trigger, its ring on /tmp), `perf` (perf record --overwrite -a on
block_rq_issue and block_rq_complete filtered to the device: an in-kernel ring, nothing written until
it stops), `minimal` (bench/capture_overhead's timing hash: a hash map keyed by request, the
latencies summed, nothing recorded). Per run: the CPU time every task ran over fio's run (busy_ns:
each thread's exact run time, not /proc/stat's tick samples), per I/O; the extra over the same
round's untraced run is the tracer's cost all in (its programs in the workload's context, its
process, the kernel work it causes), and times the rate it is the share of one core. For `record`
also its process's own CPU over the run (its threads' exact run time, schedstat) and, with --prog-stats,
its BPF programs' run time (bpf stats, whose own clock reads add ~70 ns a run: a separate pass),
the issue's sum (programs + process) per run, and what bpf stats add to each run, measured in the
same run (an empty program on block_rq_issue, StatsFloor): the programs' time net of it beside.
QD1: fio psync randread at 2000 IOPS, fio's clat p50/p99 under each mode against untraced (fio's own
figures, labelled so: a latency added to the I/O is what fio sees).

    flock /tmp/iofp-heavy.lock .venv/bin/python -m bench.record_cost --rounds 3 --seconds 10

What the write probes cost the rest of the machine (they look at every write(2) for an O_DSYNC
commit): `--writes N`, each round, N one-byte writes to /dev/null by dd under each mode, dd's own CPU
per write against the same round's untraced dd.

The O_DSYNC writes' cost: mode `record_dsync` (`--dsync-writes`). The data calls': mode
`record_data` (`iofp record --data-calls`, capture's calls table too), with its ratios to `record`
(the default, without them) in the same round.

Where a kernel refuses the typed fd loads: mode `record_probe` (the syscall probes' probe-read
variant) and `record_retry` (the typed variant refused, forced, then the probe-read one compiled
again), with their ratios to `record` in the same round; every `record` mode's start-up time (to
"iofp: recording") is in the summary.

A change's effect: `--base DIR` (a copy of the code before it, e.g. `git archive main | tar -x -C DIR`)
and mode `record_base` beside `record`, alternating in each round; the summary gives the in-round
ratios of the process's CPU and the BPF programs' time per I/O (identical runs drift +-10%).
"""

from __future__ import annotations

import argparse
import contextlib
import glob
import json
import os
import platform
import resource
import shutil
import signal
import statistics
import subprocess
import sys
import time
import uuid
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import ClassVar

from bench.capture_overhead import (
    BPF_STATS,
    MinimalTracer,
    PerfTracer,
    Tracer,
    prog_stats,
    prog_totals,
    wait_cpu_s,
)
from replay.fio import fio_json
from tests import lab

REPO = Path(__file__).resolve().parent.parent
OUT = REPO / "bench" / "out" / "record_cost"
RATES = (5000, 20000, 50000)
QD1_RATE = 2000
WRITES = -1  # a Run's rate for --writes: dd's write(2)s elsewhere on the machine, not fio's reads


@dataclass
class Run:
    mode: str
    round: int
    rate: int  # 0: the QD1 latency run
    iops: float = 0.0
    ios: int = 0
    busy_ns_per_io: float = 0.0
    tracer_ns_per_io: float | None = None  # the tracer's own process, over fio's run
    prog_ns_per_io: float | None = None  # --prog-stats: its BPF programs' run time
    clat_p50_ns: float | None = None
    clat_p99_ns: float | None = None
    lost: int | None = None
    extra: dict = field(default_factory=dict)


class StatsFloor:
    """What bpf stats add to every run they time: an empty program on block_rq_issue, attached after
    the recorder's (a tracepoint runs its programs in attach order, so it runs last, its caches warm:
    the smallest floor, and so the net figure the most conservative), its run time per run over the
    recorder's run. The kernel reads the clock around each run; what one read costs lands in the
    run's time (~60 ns a run on the lab VM, 2026-11-29: as much as bpf_ktime_get_ns)."""

    NAME = "iofp_floor"

    def __init__(self) -> None:
        from bcc import BPF

        self.b = BPF(text=f"int {self.NAME}(struct bpf_raw_tracepoint_args *ctx) {{ return 0; }}")
        self.b.load_func(self.NAME.encode(), BPF.RAW_TRACEPOINT)
        self.at: tuple[int, int] = (0, 0)

    def _totals(self) -> tuple[int, int]:
        p = prog_totals(os.getpid()).get(self.NAME, {})
        return p.get("run_time_ns", 0), p.get("run_cnt", 0)

    def attach(self) -> None:
        self.b.attach_raw_tracepoint(tp=b"block_rq_issue", fn_name=self.NAME.encode())
        self.at = self._totals()

    def detach(self) -> float | None:
        """ns a run since attach (None if it never ran)."""
        ns, runs = self._totals()
        self.b.detach_raw_tracepoint(tp=b"block_rq_issue")
        return (ns - self.at[0]) / (runs - self.at[1]) if runs > self.at[1] else None


class RecordTracer(Tracer):
    name = "record"
    floor: ClassVar[StatsFloor | None] = None  # --prog-stats: bpf stats' own cost a run
    stats = False
    repo = REPO  # the checkout whose iofp runs: `record_base` runs --base's (the code before a change)
    kernel: ClassVar[dict[str, object]] = {}  # KernelOptions fields not the defaults (record_probe, _retry)
    options: ClassVar[tuple[str, ...]] = ()  # more of record's options (record_data: --data-calls)

    def start(self, dev: str, out: Path) -> None:
        self.dir = Path("/tmp") / f"iofp-bench-rec-{uuid.uuid4().hex[:8]}"
        run = ["-m", "cli.app"]
        if self.kernel:  # the capture's KernelOptions() made with these fields (no option says them)
            # the module by its name: `bpf.capture` as an attribute is the function bpf/__init__ exports
            patch = f"c.KernelOptions = functools.partial(k.KernelOptions, **{self.kernel!r}); a.main()"
            imports = "import functools, sys, bpf.loader as k, cli.app as a; c = sys.modules['bpf.capture']; "
            run = ["-c", imports + patch]
        t0 = time.monotonic()
        args = [sys.executable, *run, "record", "-d", dev.removeprefix("/dev/"),
                "-o", str(self.dir), "--history", "10m", "--keep", "2GiB", "--trigger", "read.p99<=100ms",
                "--json", "-", *self.options]  # fmt: skip
        (out / "record.cmdline").write_text(" ".join(args) + "\n")
        self.p = subprocess.Popen(args, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
                                  cwd=self.repo)  # fmt: skip
        assert self.p.stderr is not None
        self.said = []  # what it said before recording (record_retry: the typed variant refused)
        while not (line := self.p.stderr.readline()).startswith("iofp: recording"):
            if not line or len(self.said) > 50:
                said = "".join(self.said)
                raise RuntimeError(f"iofp record did not start: {said}{line}{self.p.stderr.read()}")
            self.said.append(line)
        self.start_s = time.monotonic() - t0  # to "recording": compile, load (twice if refused), attach
        if self.floor is not None:
            self.floor.attach()
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self, run: Run) -> None:  # type: ignore[override]
        run.extra["cpu_in_run_s"] = proc_cpu_s(self.p.pid) - self.cpu0
        run.extra["start_s"] = round(self.start_s, 3)
        run.extra["said"] = [x.strip()[:200] for x in self.said if x.startswith("iofp:")]
        if self.stats:
            run.extra["progs"] = prog_stats(self.p.pid)
        if self.floor is not None:
            run.extra["stats_floor_ns"] = self.floor.detach()
        self.p.send_signal(signal.SIGTERM)
        wait_cpu_s(self.p)
        summary = json.loads(self.p.stdout.read() if self.p.stdout else "{}")
        run.lost = summary.get("lost_events")
        run.extra |= {"io_events": summary.get("io_events"), "ring": summary.get("ring")}
        shutil.rmtree(self.dir, ignore_errors=True)


class PerfOverwriteTracer(PerfTracer):
    """perf's flight-recorder mode: --overwrite keeps the newest events in the kernel's ring buffer,
    written out only when perf stops (or is signalled): what it costs is the kernel side."""

    name = "perf"

    def start(self, dev: str, out: Path) -> None:
        self.data = Path("/dev/shm") / f"iofp-bench-perf-{uuid.uuid4().hex[:8]}.data"
        st = os.stat(dev)
        only = f"dev == {(os.major(st.st_rdev) << 20) | os.minor(st.st_rdev)}"
        args = ["perf", "record", "--overwrite", "-e", "block:block_rq_issue", "--filter", only,
                "-e", "block:block_rq_complete", "--filter", only, "-a", "-o", str(self.data)]  # fmt: skip
        (out / "perf.cmdline").write_text(" ".join(args) + "\n")
        self.p = subprocess.Popen(args, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
        time.sleep(2.0)  # no readiness signal; perf attaches within a fraction of a second
        self.cpu0 = proc_cpu_s(self.p.pid)

    def stop(self, run: Run) -> None:  # type: ignore[override]
        run.extra["cpu_in_run_s"] = proc_cpu_s(self.p.pid) - self.cpu0
        self.p.send_signal(signal.SIGINT)
        wait_cpu_s(self.p)
        self.data.unlink(missing_ok=True)


class HashTracer(MinimalTracer):
    def stop(self, run: Run) -> None:  # type: ignore[override]
        self.p.send_signal(signal.SIGINT)
        self.p.communicate(timeout=60)


class BaseRecordTracer(RecordTracer):
    """`iofp record` from another checkout (--base: the code before a change), beside `record` in the
    same rounds, so that a change's effect is a ratio measured in one run."""

    name = "record_base"


class ProbeRecordTracer(RecordTracer):
    """`iofp record` with the syscall probes' probe-read variant, what runs where a kernel's verifier
    refuses the typed fd loads (bpf/loader.py, load_program): fd_lookup "probe"."""

    name = "record_probe"
    kernel: ClassVar[dict[str, object]] = {"fd_lookup": "probe"}


class RetryRecordTracer(RecordTracer):
    """`iofp record` on a kernel that refuses the typed loads (forced: refuse_typed points them past
    files_struct's end), so that the typed variant is compiled, refused, and the probe-read one
    compiled again: the same probes as record_probe, and the retry's start-up time."""

    name = "record_retry"
    kernel: ClassVar[dict[str, object]] = {"refuse_typed": True}


class DataCallsRecordTracer(RecordTracer):
    """`iofp record --data-calls`: also the application's O_DIRECT and libaio calls (capture's calls
    table), whose io_submit and io_getevents probes run once an I/O here."""

    name = "record_data"
    options = ("--data-calls",)


class DsyncRecordTracer(RecordTracer):
    """`iofp record --dsync-writes`: writes on O_DSYNC files recorded as commits, so every write(2) on
    the machine probed (`--writes` says what that costs others)."""

    name = "record_dsync"
    options = ("--dsync-writes",)


class BlockRecordTracer(RecordTracer):
    """`iofp record --no-syscalls`: the block programs alone (no commits): what the syscall
    tracepoints cost, against `record`, in the same round."""

    name = "record_block"
    options = ("--no-syscalls",)


# modes judged against `record` in the same round: the fd-load fallbacks, and what each option adds
PEERED = ("record_probe", "record_retry", "record_data", "record_block", "record_dsync")
TRACERS = {"none": Tracer, "record": RecordTracer, "record_base": BaseRecordTracer,
           "record_probe": ProbeRecordTracer, "record_retry": RetryRecordTracer,
           "record_data": DataCallsRecordTracer, "record_block": BlockRecordTracer,
           "record_dsync": DsyncRecordTracer,
           "perf": PerfOverwriteTracer, "minimal": HashTracer}  # fmt: skip


def busy_ns() -> int:
    """CPU time run so far by every task alive now (each thread's schedstat: its exact run time, every
    context's: the workload's, the kernel's threads and interrupts they were charged, the tracer's)
    plus this process's reaped children's (fio, once it has exited: getrusage). Not /proc/stat: with
    tick-based accounting (this kernel's) it samples who runs at each tick, and fio's rate limiter,
    ~10,000 short wake-ups a second, read there as 4-37 us an I/O untraced at the same 5-20k rate."""
    ru = resource.getrusage(resource.RUSAGE_CHILDREN)
    return _run_ns("/proc/[0-9]*/task/[0-9]*/schedstat") + round((ru.ru_utime + ru.ru_stime) * 1e9)


def proc_cpu_s(pid: int) -> float:
    """CPU time `pid`'s live threads have run (schedstat: exact), in seconds. Not utime+stime from
    /proc/PID/stat, whose 10 ms ticks are 62 ns an I/O over an 8 s run at 20k: the recorder's own
    ~0.4 us an I/O read as 375 or 500 ns from one run to the next (2026-11-29)."""
    return _run_ns(f"/proc/{pid}/task/[0-9]*/schedstat") / 1e9


def _run_ns(pattern: str) -> int:
    total = 0
    for stat in glob.glob(pattern):
        with contextlib.suppress(OSError, ValueError, IndexError):  # a task that exited meanwhile
            total += int(Path(stat).read_bytes().split()[0])
    return total


def fio_run(dev: str, seconds: int, rate: int, out: Path) -> dict:
    """The rate run (libaio QD8 at `rate`) or, rate 0, the QD1 latency run: fio's figures."""
    shape = ["--ioengine=libaio", "--iodepth=8", f"--rate_iops={rate}"] if rate else \
            ["--ioengine=psync", f"--rate_iops={QD1_RATE}"]  # fmt: skip
    args = ["--name=load", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
            "--time_based", f"--runtime={seconds}", "--norandommap", "--randrepeat=0",
            "--output-format=json", *shape]  # fmt: skip
    r = lab.fio(*args, timeout=None)
    (out / "fio.cmdline").write_text(" ".join(["fio", *args]) + "\n")
    (out / "fio.json").write_text(r.stdout)
    job = fio_json(r.stdout)["jobs"][0]["read"]
    pct = job["clat_ns"].get("percentile", {})
    return {"iops": float(job["iops"]), "ios": int(job["total_ios"]),
            "p50": pct.get("50.000000"), "p99": pct.get("99.000000")}  # fmt: skip


def _traced(mode: str, dev: str, out: Path) -> Tracer:
    """`mode`'s tracer started on `dev`, its files in `out` (made new)."""
    shutil.rmtree(out, ignore_errors=True)
    out.mkdir(parents=True)
    tracer = TRACERS[mode]()
    tracer.start(dev, out)
    return tracer


def one_run(mode: str, rnd: int, rate: int, dev: str, seconds: int) -> Run:
    out = OUT / f"r{rnd}-{rate or 'qd1'}-{mode}"
    tracer = _traced(mode, dev, out)
    run = Run(mode, rnd, rate)
    busy0, t0 = busy_ns(), time.monotonic()
    f = fio_run(dev, seconds, rate, out)
    run.busy_ns_per_io = (busy_ns() - busy0) / max(1, f["ios"])
    run.extra["wall_s"] = time.monotonic() - t0
    tracer.stop(run)  # type: ignore[arg-type]
    run.iops, run.ios, run.clat_p50_ns, run.clat_p99_ns = f["iops"], f["ios"], f["p50"], f["p99"]
    if "cpu_in_run_s" in run.extra:
        run.tracer_ns_per_io = run.extra["cpu_in_run_s"] * 1e9 / max(1, f["ios"])
    if progs := run.extra.get("progs"):
        run.prog_ns_per_io = sum(p["ns"] * p["runs"] for p in progs.values()) / max(1, f["ios"])
        if floor := run.extra.get("stats_floor_ns"):  # the same without bpf stats' clock read a run
            runs = sum(p["runs"] for p in progs.values())
            run.extra["prog_ns_per_io_net"] = run.prog_ns_per_io - floor * runs / max(1, f["ios"])
    (out / "run.json").write_text(json.dumps(asdict(run), indent=2))
    return run


def writes_run(mode: str, rnd: int, dev: str, n: int) -> Run:
    """`n` one-byte write(2)s to /dev/null by dd, a process on no recorded device, under `mode`: what
    the write probes (there for O_DSYNC commits) cost everything else on the machine. dd's own CPU
    (utime+stime from wait4) per write; `iops` holds the writes a second."""
    out = OUT / f"r{rnd}-writes-{mode}"
    tracer = _traced(mode, dev, out)
    run = Run(mode, rnd, WRITES)
    t0 = time.monotonic()
    p = subprocess.Popen(["dd", "if=/dev/zero", "of=/dev/null", "bs=1", f"count={n}", "status=none"])
    _, status, ru = os.wait4(p.pid, 0)
    p.returncode = os.waitstatus_to_exitcode(status)
    wall = time.monotonic() - t0
    tracer.stop(run)  # type: ignore[arg-type]
    if p.returncode != 0:
        raise RuntimeError(f"dd exited {p.returncode}")
    run.ios, run.iops = n, n / wall
    run.extra["dd_ns_per_write"] = (ru.ru_utime + ru.ru_stime) * 1e9 / n
    (out / "run.json").write_text(json.dumps(asdict(run), indent=2))
    return run


def _ratios_to_base(runs: list[Run], rate: int, mode: str = "record", peer: str = "record_base") -> dict:
    """`mode` over `peer` in the same round: process CPU and BPF run time per I/O."""
    by = {(r.mode, r.round): r for r in runs if r.rate == rate}
    out = {}
    to = peer.removeprefix("record_") if peer != "record" else "record"
    pairs = ((f"own_process_ratio_to_{to}", "tracer_ns_per_io"),
             (f"bpf_prog_ratio_to_{to}", "prog_ns_per_io"))  # fmt: skip
    for key, attr in pairs:
        ratios = [getattr(by[mode, n], attr) / getattr(by[peer, n], attr)
                  for m, n in by if m == mode and (peer, n) in by
                  and getattr(by[mode, n], attr) and getattr(by[peer, n], attr)]  # fmt: skip
        if ratios:
            out[key] = {"median": statistics.median(ratios), "each": [round(x, 3) for x in ratios]}
    return out


def summarise(runs: list[Run], modes: list[str]) -> dict:
    out: dict = {}
    for rate in sorted({r.rate for r in runs}):
        base = {r.round: r for r in runs if r.rate == rate and r.mode == "none"}
        if rate == WRITES:
            out |= _writes_summary(runs, modes, base)
            continue
        for m in modes:
            rs = [r for r in runs if r.rate == rate and r.mode == m]
            extra = [r.busy_ns_per_io - base[r.round].busy_ns_per_io for r in rs if r.round in base]
            row = {"iops_median": statistics.median(r.iops for r in rs)}
            if m != "none" and extra:
                row["extra_busy_ns_per_io_median"] = statistics.median(extra)
                row["extra_busy_ns_per_io_range"] = [min(extra), max(extra)]
                row["core_share_pct_median"] = statistics.median(extra) * (rate or QD1_RATE) / 1e7
            if own := [r.tracer_ns_per_io for r in rs if r.tracer_ns_per_io is not None]:
                row["own_process_ns_per_io_median"] = statistics.median(own)
            if progs := [r.prog_ns_per_io for r in rs if r.prog_ns_per_io is not None]:
                row["bpf_prog_ns_per_io_median"] = statistics.median(progs)
            if own and progs:  # the issue's sum: the programs' bpf-stats run time + the process
                sums = [r.prog_ns_per_io + r.tracer_ns_per_io for r in rs
                        if r.prog_ns_per_io is not None and r.tracer_ns_per_io is not None]  # fmt: skip
                row["programs_plus_process_ns_per_io"] = {"median": statistics.median(sums),
                                                          "each": [round(x) for x in sums]}  # fmt: skip
            if floors := [r.extra["stats_floor_ns"] for r in rs if r.extra.get("stats_floor_ns")]:
                row["stats_floor_ns_per_run_median"] = statistics.median(floors)
                net = [r.extra["prog_ns_per_io_net"] for r in rs if "prog_ns_per_io_net" in r.extra]
                row["bpf_prog_ns_per_io_net_median"] = statistics.median(net)
            if starts := [r.extra["start_s"] for r in rs if "start_s" in r.extra]:
                row["start_s_median"] = statistics.median(starts)
            if rate == 0:
                row["clat_p50_ns_median"] = statistics.median(r.clat_p50_ns or 0 for r in rs)
                row["clat_p99_ns_median"] = statistics.median(r.clat_p99_ns or 0 for r in rs)
            row["lost"] = sum(r.lost or 0 for r in rs)
            if m == "record" and "record_base" in modes:  # the change's effect: ratios within each round
                row |= _ratios_to_base(runs, rate)
            # the fallback against the typed loads, the data calls against none: in-round ratios to record
            if m in PEERED and "record" in modes:
                row |= _ratios_to_base(runs, rate, m, "record")
            out[f"{rate or 'qd1'}/{m}"] = row
    return out


def _writes_summary(runs: list[Run], modes: list[str], base: dict[int, Run]) -> dict:
    out = {}
    for m in modes:
        rs = [r for r in runs if r.rate == WRITES and r.mode == m]
        row = {"dd_ns_per_write_median": statistics.median(r.extra["dd_ns_per_write"] for r in rs)}
        if m != "none" and (extra := [r.extra["dd_ns_per_write"] - base[r.round].extra["dd_ns_per_write"]
                                      for r in rs if r.round in base]):  # fmt: skip
            row["extra_ns_per_write_median"] = statistics.median(extra)
            row["extra_ns_per_write_range"] = [min(extra), max(extra)]
        out[f"writes/{m}"] = row
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--seconds", type=int, default=10)
    ap.add_argument("--modes", default="none,record,perf,minimal")
    ap.add_argument("--rates", default=",".join(map(str, RATES)) + ",0", help="IOPS; 0: the QD1 run")
    ap.add_argument("--prog-stats", action="store_true", help="time the recorder's BPF programs")
    ap.add_argument("--base", type=Path, help="a checkout of the code before a change (mode record_base)")
    ap.add_argument("--writes", type=int, default=0, metavar="N",
                    help="also, each round, N one-byte writes by dd elsewhere on the machine under each mode")
    args = ap.parse_args()
    if args.base:
        BaseRecordTracer.repo = args.base.resolve()
    if os.geteuid() != 0:
        sys.exit("bench.record_cost: needs root (loop devices, eBPF)")
    modes, rates = args.modes.split(","), [int(x) for x in args.rates.split(",") if x]
    OUT.mkdir(parents=True, exist_ok=True)
    dev, backing = lab.make_loop(1024, lab.RAM, fill=True, prefix="iofp-bench")
    runs: list[Run] = []
    if args.prog_stats:
        RecordTracer.stats = True  # the subclasses inherit it
        RecordTracer.floor = StatsFloor()
        BPF_STATS.write_text("1")
    try:
        for rnd in range(args.rounds):
            order = modes[rnd % len(modes) :] + modes[: rnd % len(modes)]
            for rate in rates:
                for mode in order:
                    r = one_run(mode, rnd, rate, dev, args.seconds)
                    runs.append(r)
                    print(f"round {rnd} rate {rate or 'qd1':>5} {mode:8s} {r.iops:9.0f} IOPS  busy/io "
                          f"{r.busy_ns_per_io:7.0f} ns  own/io {r.tracer_ns_per_io or 0:6.0f} ns  "
                          f"bpf/io {r.prog_ns_per_io or 0:5.0f} ns  "
                          f"clat p50/p99 {r.clat_p50_ns}/{r.clat_p99_ns}  lost {r.lost}",
                          flush=True)  # fmt: skip
            for mode in (order if args.writes else ()):
                r = writes_run(mode, rnd, dev, args.writes)
                runs.append(r)
                print(f"round {rnd} writes     {mode:8s} {r.iops:9.0f} writes/s  dd cpu/write "
                      f"{r.extra['dd_ns_per_write']:6.0f} ns", flush=True)  # fmt: skip
    finally:
        if args.prog_stats:
            BPF_STATS.write_text("0")
        lab.destroy_loop(dev, backing)
    result = {
        "command": " ".join(["python -m bench.record_cost", *sys.argv[1:]]),
        "host": platform.node(), "kernel": platform.release(), "cpus": os.cpu_count(),
        "summary": summarise(runs, modes), "runs": [asdict(r) for r in runs],
    }  # fmt: skip
    (OUT / "result.json").write_text(json.dumps(result, indent=2))
    print(json.dumps(result["summary"], indent=2))


if __name__ == "__main__":
    main()
