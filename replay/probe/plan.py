"""What a probe will run: its options (checked before any I/O) and its fio runs, each a job file.

The runs, in order (each a plain fio job: direct=1, offsets from 0 to the probed size):

- precondition (--precondition fill: one sequential pass of 128KiB writes over the probed span;
  snia: two, SNIA PTS's 2x capacity), so that reads do not hit never-written blocks (a sparse file
  or a thin volume answers those without touching the medium);
- cell 1 and its sweep: random reads of the read size at each queue depth (libaio), the production
  depths and the --qd list together, each depth run once, shallowest first;
- cell 4: random reads at 80% of the most IOPS cell 1 reached (rate_iops, fio's default linear
  rate: its rate_process=poisson overshot here by 7% at 60,000 IOPS and 9% at 129,100, which would
  be ~87% load), at the depth that reached it: filled in once those runs are done;
- cell 2: sequential 1MiB reads at QD 8, then sequential 1MiB writes at QD 8 (unless --reads-only);
- cell 3: commits: sequential writes of the write size, each followed by an fdatasync (psync), by
  each commit concurrency's number of jobs, each in its own slice of the span.

Every time-based run logs fio's IOPS per tenth of its runtime, for the steady-state check.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

from iofp import __version__
from iofp.errors import BadInput
from iofp.probe_result import Workload
from iofp.values import parse_duration_ns
from replay.fio import JobFile

CELLS = ("randread", "sweep", "seq", "commit", "tail")
DEFAULT_QD = (1, 2, 4, 8, 16, 32, 64, 128)
QUICK_QD = (1, 4, 16, 64)
MAX_QD = 65536
DEFAULT_RUNTIME_NS = 10 * 10**9
QUICK_RUNTIME_NS = 3 * 10**9
MIN_RUNTIME_NS, MAX_RUNTIME_NS = 10**9, 3600 * 10**9
PRECONDITION_PASSES = {"none": 0, "fill": 1, "snia": 2}
SEQ_BS, SEQ_QD = 1 << 20, 8
PRECONDITION_BS, PRECONDITION_QD = 128 << 10, 32
TAIL_LOAD = 0.8
LOG_WINDOWS = 10  # fio's IOPS log interval: a tenth of the runtime
MIN_PROBED = 16 << 20  # two seq-runs' worth of 1MiB I/Os in flight, and room for the commit slices
NEW_FILE_SIZE = 1 << 30


def parse_qd(text: str) -> list[int]:
    """'1,2,4,32' -> [1, 2, 4, 32] (sorted, each once); BadInput naming the bad item."""
    out = set()
    for item in text.split(","):
        if not item.strip().isdigit() or not 1 <= int(item) <= MAX_QD:
            raise BadInput(f"--qd {text!r}: {item.strip()!r} is not a queue depth; use e.g. --qd 1,4,16,64")
        out.add(int(item))
    return sorted(out)


def parse_cells(text: str) -> tuple[str, ...]:
    names = tuple(c.strip() for c in text.split(","))
    for c in names:
        if c not in CELLS:
            raise BadInput(f"--cells {text!r}: no cell {c!r}; choose from {','.join(CELLS)}")
    if "tail" in names and not {"randread", "sweep"} & set(names):
        raise BadInput(
            "--cells tail runs at 80% of cell 1's max IOPS; add randread or sweep, e.g. --cells randread,tail"
        )
    return tuple(c for c in CELLS if c in names)


def parse_runtime_ns(text: str) -> int:
    ns = parse_duration_ns(text, "--runtime")
    if not MIN_RUNTIME_NS <= ns <= MAX_RUNTIME_NS or ns % 10**6:
        raise BadInput(f"--runtime {text}: use whole milliseconds from 1s to 1h, e.g. --runtime 10s")
    return ns


def parse_precondition(text: str) -> str:
    if text not in PRECONDITION_PASSES:
        raise BadInput(f"--precondition {text}: choose one of {', '.join(PRECONDITION_PASSES)}")
    return text


@dataclass(kw_only=True)
class ProbeOptions:
    target: Path
    output: Path
    cells: tuple[str, ...] = CELLS
    qd: list[int] | None = None  # None: DEFAULT_QD, or QUICK_QD with quick
    runtime_ns: int | None = None  # None: DEFAULT_RUNTIME_NS, or QUICK_RUNTIME_NS with quick
    quick: bool = False
    reads_only: bool = False
    precondition: str = "none"
    size: int | None = None  # bytes of the target to use; None: all of it
    labels: dict[str, str] = field(default_factory=dict)
    allow_destructive: bool = False
    force: bool = False

    @property
    def depths(self) -> list[int]:
        return self.qd or list(QUICK_QD if self.quick else DEFAULT_QD)

    @property
    def runtime_s(self) -> float:
        return (self.runtime_ns or (QUICK_RUNTIME_NS if self.quick else DEFAULT_RUNTIME_NS)) / 1e9

    @property
    def writes(self) -> bool:
        """Whether any run writes: seq writes, commits, preconditioning."""
        seq_writes = "seq" in self.cells and not self.reads_only
        commits = "commit" in self.cells and not self.reads_only
        return seq_writes or commits or self.precondition != "none"

    def check(self) -> None:
        if self.reads_only and self.precondition != "none":
            raise BadInput("--precondition writes the target; drop it or drop --reads-only")
        if self.size is not None and self.size < MIN_PROBED:
            raise BadInput(f"--size {self.size}: probe at least {MIN_PROBED >> 20}MiB")


@dataclass
class RunSpec:
    kind: str  # iofp.probe_result.KINDS
    rw: str
    block_size: int
    iodepth: int
    jobs: int = 1
    engine: str = "libaio"
    rate_iops: int | None = None
    runtime_s: float | None = None  # None: not time-based
    loops: int = 1
    fdatasync: bool = False
    cell: int | None = None  # the table cell it stands for; None for preconditioning
    label: str = ""
    sweep: bool = False
    name: str = ""  # "NN-kind-...", set by plan()

    def job_file(self, target: str, probed: int) -> str:
        """The fio job of this run on `target`, offsets in [0, probed)."""
        f = JobFile().comment(f"written by iofp {__version__} for `iofp probe`: {self.label or self.kind}")
        f.section("global").path("filename", target)
        f.set("direct", 1).set("group_reporting", 1).set("lat_percentiles", 1)
        f.section(self.name).set("ioengine", self.engine).set("rw", self.rw).set("bs", self.block_size)
        f.set("iodepth", self.iodepth)
        if self.jobs > 1:  # each committer in its own slice
            slice_bytes = probed // self.jobs // self.block_size * self.block_size
            f.set("numjobs", self.jobs).set("size", slice_bytes).set("offset_increment", slice_bytes)
        else:
            f.set("size", probed)
        if self.rw.startswith("rand"):
            f.set("norandommap", 1)
        if self.fdatasync:
            f.set("fdatasync", 1)
        if self.rate_iops is not None:
            f.set("rate_iops", self.rate_iops)
        if self.runtime_s is None:
            f.set("loops", self.loops)
        else:
            ms = round(self.runtime_s * 1000)
            f.set("time_based", 1).set("runtime", f"{ms}ms").set("write_iops_log", "iops")
            f.set("log_avg_msec", ms // LOG_WINDOWS)
        return f.text()


def size_text(n: int) -> str:
    for unit, shift in (("GiB", 30), ("MiB", 20), ("KiB", 10)):
        if n >= 1 << shift and n % (1 << shift) == 0:
            return f"{n >> shift}{unit}"
    return f"{n}B"


def plan(opts: ProbeOptions, w: Workload) -> list[RunSpec]:
    """Every run of the probe, in order, named; the tail's rate and depth are filled in later."""
    runs: list[RunSpec] = []
    passes = PRECONDITION_PASSES[opts.precondition]
    if passes:
        label = f"precondition: {passes} sequential 128KiB write pass(es)"
        runs.append(
            RunSpec("precondition", "write", PRECONDITION_BS, PRECONDITION_QD, loops=passes, label=label)
        )
    t = opts.runtime_s
    prod = set(w.read_iodepths) if "randread" in opts.cells else set()
    swept = set(opts.depths) if "sweep" in opts.cells else set()
    rs = size_text(w.read_size)
    for qd in sorted(prod | swept):
        runs.append(RunSpec("randread", "randread", w.read_size, qd, runtime_s=t, sweep=qd in swept,
                            cell=1 if qd in prod else None, label=f"rand read {rs} QD{qd}"))  # fmt: skip
    if "tail" in opts.cells:
        runs.append(RunSpec("tail", "randread", w.read_size, 1, runtime_s=t, cell=4,
                            label=f"rand read {rs} {TAIL_LOAD:.0%}"))  # fmt: skip
    if "seq" in opts.cells:
        sq = f"{size_text(SEQ_BS)} QD{SEQ_QD}"
        runs.append(RunSpec("seq-read", "read", SEQ_BS, SEQ_QD, runtime_s=t, cell=2, label=f"seq read {sq}"))
        if not opts.reads_only:
            runs.append(
                RunSpec("seq-write", "write", SEQ_BS, SEQ_QD, runtime_s=t, cell=2, label=f"seq write {sq}")
            )
    if "commit" in opts.cells and not opts.reads_only:
        ws = size_text(w.write_size)
        for n in w.commit_jobs:
            runs.append(RunSpec("commit", "write", w.write_size, 1, jobs=n, engine="psync", runtime_s=t,
                                fdatasync=True, cell=3, label=f"commit {ws}+fdatasync x{n}"))  # fmt: skip
    for i, r in enumerate(runs, 1):
        r.name = f"{i:02d}-{r.kind}" + (f"-qd{r.iodepth}" if r.kind == "randread" else "")
        r.name += f"-x{r.jobs}" if r.kind == "commit" else ""
    return runs
