"""`iofp fio-job`: a plain fio job file that reproduces a fingerprint's demand, from the fingerprint alone.

`plan(fp, opts) -> FioJob` reads a checked `Fingerprint` and decides the fio jobs: one stream per op
(a read stream and a write stream: their counts, hence the mix, are then exact rather than drawn at
random), a commit stream of its own when the writes per commit are not a whole number, a burst
second when the 1 s peak/mean says the load is bursty, and per-phase streams for `--regime phases`.
`render(job)` writes the fio syntax (replay/fiojob/text.py). Only statistics travel: no offset,
process, device, host or label of the trace goes into the file, and what fio cannot express is
listed, the fingerprint's figure beside the job's, never faked.
"""

from __future__ import annotations

import hashlib
import json
import math
from dataclasses import dataclass, field

from iofp.errors import BadInput
from iofp.fingerprint_doc import Fingerprint, Scope
from replay.fiojob.demand import Demand, SizeSplit, demand, fit_region, zipf_theta

REGIMES = ("whole", "steady", "baseline", "spike", "phases")
STREAMS = ("single", "pid")
BURSTY = 1.25  # a 1 s peak/mean above this gets a burst second (the tolerance on it is 25%)
SIZE_SE_MAX = 0.0167  # a third of the 5% tolerance on the mean size
THINK_MAX = 50  # streams slower than this are paced by count (think time), not by bytes
LITTLE_US = 100  # without in-flight counts, the depth that sustains the rate at 100 µs per I/O
# The deepest queue a job asks for: a fingerprint comes from elsewhere, and an in-flight p99 of 1e12
# made fio try to set up that many I/O units (probe --like clamps its depths the same way).
MAX_IODEPTH = 4096


@dataclass(kw_only=True)
class JobOptions:
    regime: str = "whole"
    runtime_s: float = 60.0
    size_bytes: int | None = None
    streams: str = "single"


@dataclass
class Stream:
    """One fio job section."""

    name: str
    op: str  # read or write
    rate: float  # I/Os per second
    sizes: SizeSplit
    iodepth: int
    fdatasync: int | None = None
    seq: float = 0.0  # the share of its I/Os issued sequentially (fio's 100 - percentage_random)
    start_s: float = 0.0
    runtime_s: float = 0.0
    why: str = ""


@dataclass
class Gap:
    """A statistic fio cannot express (or not fully): the fingerprint's figure and the job's."""

    what: str
    fingerprint: str
    job: str


@dataclass
class FioJob:
    digest: str
    version: int
    tool_version: str
    regime: str
    runtime_s: float
    region_bytes: int
    theta: float | None
    streams: list[Stream]
    gaps: list[Gap] = field(default_factory=list)
    notes: list[str] = field(default_factory=list)


def digest(fp: Fingerprint) -> str:
    """The fingerprint's sha256, as the catalog computes it (the document's canonical JSON)."""
    return hashlib.sha256(json.dumps(fp.to_dict(), sort_keys=True).encode()).hexdigest()


def plan(fp: Fingerprint, opts: JobOptions) -> FioJob:
    """Decide the job's streams for `opts.regime` of `fp`; BadInput for a regime it does not have."""
    check_options(fp, opts)
    region = opts.size_bytes or _region(fp)
    job = FioJob(
        digest=digest(fp),
        version=fp.fingerprint_version,
        tool_version=fp.provenance.fingerprint_tool_version,
        regime=opts.regime,
        runtime_s=opts.runtime_s,
        region_bytes=region,
        theta=None,
        streams=[],
    )
    if opts.regime == "phases":
        _phases(fp, opts, job)
    else:
        d = demand(fp, _scope(fp, opts.regime))
        job.streams = _phase_streams(fp, d, opts, job, "", 0.0, opts.runtime_s, bursts=True)
    _region_and_skew(fp, opts, job)
    _sampling_note(job)
    _common_gaps(fp, opts, job)
    job.gaps = list({(g.what, g.fingerprint, g.job): g for g in job.gaps}.values())  # phases repeat calm's
    return job


def check_options(fp: Fingerprint, opts: JobOptions) -> None:
    if opts.regime not in REGIMES:
        raise BadInput(f"--regime {opts.regime}: choose one of {', '.join(REGIMES)}")
    if opts.streams not in STREAMS:
        raise BadInput(f"--streams {opts.streams}: choose single or pid")
    if opts.runtime_s < 1:
        raise BadInput(f"--runtime {opts.runtime_s:g}s: give at least 1s")
    if opts.size_bytes is not None and opts.size_bytes < 1 << 20:
        raise BadInput(f"--size {opts.size_bytes}: give at least 1MiB of the target to spread I/O over")
    if opts.regime == "phases":
        _scope(fp, "spike")
        if fp.steady is None and fp.baseline is None:
            raise BadInput("this fingerprint has no steady state or baseline to put around its spike")
    else:
        _scope(fp, opts.regime)
    if opts.streams == "pid" and not fp.whole.top_processes:
        raise BadInput(
            "this fingerprint has no per-process streams (an imported trace records no submitter); "
            "use --streams single"
        )
    if fp.whole.footprint is None and opts.size_bytes is None:
        raise BadInput("this fingerprint has no footprint to size the job's region; pass --size BYTES")


def _scope(fp: Fingerprint, name: str) -> Scope:
    scope = getattr(fp, name)
    if scope is None or scope.ios == 0:
        why = {
            "steady": "no window met the steady-state rule",
            "spike": "it found no spike",
            "baseline": "every window is in a spike",
        }.get(name, "it has no such scope")
        alt = " (try --regime baseline)" if name == "steady" and fp.baseline else ""
        raise BadInput(f"this fingerprint has no {name} regime: {why}{alt}")
    return scope


def _region(fp: Fingerprint) -> int:
    """The span the job's I/Os are spread over: the trace's footprint (distinct 4 KiB blocks
    touched), from offset 0 of the target: the size travels, where it lay does not."""
    fpr = fp.whole.footprint
    assert fpr is not None
    return max(1 << 20, fpr.bytes)


def _phases(fp: Fingerprint, opts: JobOptions, job: FioJob) -> None:
    """Steady, then the spike's shape for the rank-1 spike's length, then steady again, so the
    transition travels. A spike longer than a third of --runtime is shortened to it, and said so."""
    calm_scope = fp.steady or fp.baseline
    assert calm_scope is not None and fp.spike is not None
    calm, spike = demand(fp, calm_scope), demand(fp, fp.spike)
    length = fp.regimes.spikes[0].duration_s if fp.regimes.spikes else fp.spike.seconds
    t = opts.runtime_s
    d = min(length, t / 3)
    if d < length:
        job.gaps.append(Gap("spike length", f"{length:g} s (spike #1)", f"{d:g} s (a third of --runtime)"))
    before = math.floor((t - d) / 2)
    job.notes.append(
        f"phases: {calm_scope.name} 0-{before:g} s, spike {before:g}-{before + d:g} s, "
        f"{calm_scope.name} {before + d:g}-{t:g} s"
    )
    job.streams = [
        *_phase_streams(fp, calm, opts, job, "calm1-", 0.0, before, bursts=False),
        *_phase_streams(fp, spike, opts, job, "spike-", before, d, bursts=False),
        *_phase_streams(fp, calm, opts, job, "calm2-", before + d, t - before - d, bursts=False),
    ]


def _phase_streams(
    fp: Fingerprint,
    d: Demand,
    opts: JobOptions,
    job: FioJob,
    prefix: str,
    start: float,
    length: float,
    *,
    bursts: bool,
) -> list[Stream]:
    groups = _groups(fp, d, opts)
    streams: list[Stream] = []
    for label, r, w, c, seq in groups:
        mine = _group_streams(d, job, prefix + label, r, w, c)
        for st in mine if seq is not None else ():
            st.seq = seq  # the process's own sequentiality: a WAL writer stays an append
        streams += mine
    if all(seq is not None for *_, seq in groups):
        _interleaved(d, streams, job)
    else:
        _sequential(d, streams, job)
    if bursts:
        burst = _burst(d, streams, length, job, prefix)
        _sequential(d, burst, job, quiet=True)  # the burst's own I/Os keep the scope's share too
        streams += burst
    for s in streams:
        s.start_s += start
        s.runtime_s = s.runtime_s or length
    return streams


Group = tuple[str, float, float, float, float | None]


def _groups(fp: Fingerprint, d: Demand, opts: JobOptions) -> list[Group]:
    """(label, reads/s, writes/s, commits/s, sequential share) per submitter: one group for --streams
    single (its sequential share then fitted to the device's); with --streams pid one per top process
    (named p1, p2, ... by rank: never the trace's process names), each with its own commits (its sync
    calls, where the fingerprint counts them per process) and its own sequentiality, and the rest as
    one more."""
    if opts.streams == "single":
        return [("", d.read_iops, d.write_iops, d.commits_per_s, None)]
    scope = _scope(fp, d.scope)
    out: list[Group] = []
    rest_r, rest_w, rest_c = d.read_iops, d.write_iops, d.commits_per_s
    flushes = sum(p.flushes for p in scope.top_processes) or 1
    procs = scope.top_processes
    calls = d.commit_source == "fsync-family calls" and all(p.sync_calls is not None for p in procs)
    own = all(p.sequential_share is not None for p in procs)
    for i, p in enumerate(scope.top_processes, 1):
        r, w = p.reads / d.seconds, p.writes / d.seconds
        if calls:
            c = (p.sync_calls or 0) / d.seconds
        else:
            c = d.commits_per_s * p.flushes / flushes if p.flushes else 0.0
        out.append((f"p{i}-", r, w, c, p.sequential_share))
        rest_r, rest_w, rest_c = rest_r - r, rest_w - w, rest_c - c
    if rest_r + rest_w > 0.01 * (d.iops or 1):  # the smaller processes: the device's share stands for theirs
        rest = (d.seq_share or 0.0) if own else None
        out.append(("rest-", max(0.0, rest_r), max(0.0, rest_w), max(0.0, rest_c), rest))
    return out


def _group_streams(d: Demand, job: FioJob, label: str, r: float, w: float, c: float) -> list[Stream]:
    """A group's read stream, and its writes with their commits: fdatasync every k writes when
    writes/commits is (within 5%) a whole k; else a commit stream of its own (a write and an
    fdatasync each, as a log writer does) beside the other writes."""
    qd = _depth(d)
    out = []
    if r > 0 and d.read_sizes:
        out.append(Stream(f"{label}read", "read", r, d.read_sizes, qd))
    if w <= 0 or d.write_sizes is None:
        if c > 0:  # e.g. a kernel worker's flushes: fio syncs only after its own writes
            job.gaps.append(Gap(f"{label or 'the '}commits without writes", f"{c:,.1f}/s", "none"))
        return out
    if c <= 0:
        return [*out, Stream(f"{label}write", "write", w, d.write_sizes, qd)]
    k = w / c
    if k < 1.05:
        if k < 0.95:
            job.gaps.append(
                Gap(
                    "commits without a write",
                    f"{c:,.1f} commits/s over {w:,.1f} writes/s",
                    f"{w:,.1f} commits/s: fio syncs after writes only",
                )
            )
        return [*out, Stream(f"{label}write", "write", w, d.write_sizes, 1, fdatasync=1, why="commit stream")]
    if abs(k - round(k)) <= 0.05 * k:
        return [*out, Stream(f"{label}write", "write", w, d.write_sizes, 1, fdatasync=round(k))]
    commit = Stream(f"{label}commit", "write", c, d.write_sizes, 1, fdatasync=1, why="commit stream")
    return [*out, commit, Stream(f"{label}write", "write", w - c, d.write_sizes, qd)]


def _depth(d: Demand) -> int:
    if d.iodepth is not None:
        return min(MAX_IODEPTH, max(1, d.iodepth))
    return min(MAX_IODEPTH, max(1, math.ceil(d.iops * LITTLE_US / 1e6)))


def _burst(d: Demand, streams: list[Stream], length: float, job: FioJob, prefix: str) -> list[Stream]:
    """A burst second for a bursty scope: its 1 s peak/mean P at mean m over T s is one second
    holding P x m I/Os, B = (P - 1) m T / (T - 1) of them above the other streams, which give up
    B / T per second so the mean holds. Needs T > P; commit streams keep their rate."""
    p = d.peak_to_mean_1s
    if p is None or p <= BURSTY or d.iops <= 0:
        return []
    t, m = length, d.iops
    plain = [s for s in streams if s.fdatasync is None]
    b = (p - 1) * m * t / (t - 1) if t > 1 else 0.0
    room = sum(s.rate for s in plain) * t
    if t < p + 1 or not plain or b > room:
        need = math.ceil(p + 1)
        job.gaps.append(
            Gap(
                "peak/mean IOPS at 1 s",
                f"{p:.2f}",
                f"~1.0 (a {t:g} s run holds at most {t:g}x: give --runtime {need}s or more)",
            )
        )
        return []
    share = {s.name: s.rate / sum(x.rate for x in plain) for s in plain}
    out = []
    for s in plain:
        n = b * share[s.name]
        s.rate -= n / t
        if n >= 1:
            out.append(
                Stream(
                    f"{prefix}burst-{s.op}",
                    s.op,
                    n / 0.2,
                    s.sizes,
                    max(s.iodepth, 4),
                    start_s=math.floor(t / 2) + 0.3,
                    runtime_s=0.2,
                    why=f"the burst second: {n:,.0f} I/Os in 200 ms",
                )
            )
    job.notes.append(
        f"burstiness: the scope's 1 s peak/mean {p:.2f} ({d.peak_ios_1s:,} I/Os in its busiest second, "
        f"{m:,.1f}/s mean) is played as one burst second at {math.floor(t / 2)} s; the other streams "
        "give up its I/Os so the mean holds"
    )
    return out


def _sequential(d: Demand, streams: list[Stream], job: FioJob, *, quiet: bool = False) -> None:
    """Each stream's sequential share, so that the device sees the scope's. fio issues a stream's
    sequential I/O after that stream's previous one; on the device it is sequential only when no
    other stream's I/O came between, which for evenly paced streams happens to a share
    max(0, 1 - (others' rate) / (its rate)) of its I/Os. Each op's share is aimed at first, then
    the scope's overall share is topped up on the streams that can carry it."""
    total = sum(s.rate for s in streams)
    if not total or d.seq_share is None:
        return
    alone = {s.name: max(0.0, 1 - (total - s.rate) / s.rate) for s in streams}
    want = {"read": d.seq_read_share or 0.0, "write": d.seq_write_share or 0.0}
    for s in streams:
        s.seq = min(1.0, want[s.op] / alone[s.name]) if alone[s.name] > 0 else 0.0
    got = sum(s.rate * s.seq * alone[s.name] for s in streams) / total
    for s in sorted(streams, key=lambda s: -alone[s.name]):
        short = d.seq_share - got
        if short <= 0.001 or alone[s.name] <= 0:
            break
        extra = min(1.0 - s.seq, short * total / (s.rate * alone[s.name]))
        s.seq += extra
        got += s.rate * extra * alone[s.name] / total
    if quiet:
        return
    if abs(got - d.seq_share) > 0.01:
        job.gaps.append(Gap(f"sequential share ({d.scope})", f"{d.seq_share:.1%}", f"{got:.1%} expected"))
    for op in ("read", "write"):
        mine = [s for s in streams if s.op == op]
        rate = sum(s.rate for s in mine)
        op_got = sum(s.rate * s.seq * alone[s.name] for s in mine) / rate if rate else 0.0
        if rate and abs(op_got - want[op]) > 0.05:
            job.gaps.append(
                Gap(
                    f"sequential {op}s ({d.scope})",
                    f"{want[op]:.1%} of {op}s",
                    f"{op_got:.1%} expected: the streams interleave on the device",
                )
            )


def _interleaved(d: Demand, streams: list[Stream], job: FioJob) -> None:
    """Streams that keep their processes' own sequentiality: what the device then sees of them
    interleaved (as _sequential estimates it), said when it is not the fingerprint's."""
    total = sum(s.rate for s in streams)
    if not total or d.seq_share is None:
        return
    alone = {s.name: max(0.0, 1 - (total - s.rate) / s.rate) if s.rate else 0.0 for s in streams}
    got = sum(s.rate * s.seq * alone[s.name] for s in streams) / total
    if abs(got - d.seq_share) > 0.01:
        job.gaps.append(Gap(f"sequential share per device ({d.scope})", f"{d.seq_share:.1%}",
                            f"{got:.1%} expected: each stream keeps its process's own sequentiality, and "
                            "the device sees the streams interleaved as fio paces them"))  # fmt: skip


def _stream_gaps(fp: Fingerprint, scope: Scope, d: Demand, opts: JobOptions, job: FioJob) -> None:
    """What one stream for every process loses (--streams single): a process's own sequential run,
    when the device saw it cut by the others; and concurrent commit streams, which one stream
    serializes (each commit then waits for the one before: harsher than the trace)."""
    if opts.streams != "single":
        return
    procs = [(i, p) for i, p in enumerate(scope.top_processes, 1) if p.ios or p.sync_calls]
    seqs = [(i, p.sequential_share) for i, p in procs if p.sequential_share is not None and p.ios]
    device = d.seq_share or 0.0
    if any(v >= 0.5 and v - device > 0.05 for _, v in seqs):
        job.gaps.append(Gap("sequential per process", ", ".join(f"p{i} {v:.1%}" for i, v in seqs),
                            f"one stream, {device:.1%} sequential as the device saw them interleaved: "
                            "--streams pid keeps each process's own"))  # fmt: skip
    committers = [(i, (p.sync_calls or 0) / d.seconds) for i, p in procs if p.sync_calls]
    if len(committers) >= 2:
        rates = ", ".join(f"p{i} {c:,.1f}/s" for i, c in committers)
        total = sum(c for _, c in committers)
        job.gaps.append(Gap("concurrent commit streams", f"{len(committers)} processes committing ({rates})",
                            f"one serial stream at {total:,.1f}/s, each commit waiting for the one before "
                            "(harsher than the trace): --streams pid keeps them concurrent"))  # fmt: skip


def _region_and_skew(fp: Fingerprint, opts: JobOptions, job: FioJob) -> None:
    """The region the random offsets are drawn from and their zipf skew. The footprint is blocks
    touched, and random I/O revisits blocks: the region is widened until the job's own touches reach
    the trace's footprint (fit_region), unless --size fixes it. A run of fewer touches than the
    footprint cannot reach it at all: the region is then the footprint, and said so."""
    fpr = fp.whole.footprint
    hot = fpr.hot_1pct_io_share if fpr else None
    seq = sum(s.rate * s.runtime_s * s.seq * _touches(s) for s in job.streams)
    rand = sum(s.rate * s.runtime_s * (1 - s.seq) * _touches(s) for s in job.streams)
    if opts.size_bytes is not None or fpr is None:
        job.theta = zipf_theta(hot, job.region_bytes // 4096) if hot else None
    elif seq + rand < 1.1 * fpr.blocks_4k:
        job.theta = zipf_theta(hot, fpr.blocks_4k) if hot else None
        ios = sum(s.rate * s.runtime_s for s in job.streams)
        job.gaps.append(
            Gap(
                "footprint (distinct 4 KiB blocks)",
                f"{fpr.blocks_4k:,} over {fp.whole.ios:,} I/Os",
                f"at most {int(seq + rand):,}: its ~{ios:,.0f} I/Os touch fewer blocks than the trace's "
                "(the region is the trace's footprint; a longer --runtime touches more)",
            )
        )
    else:
        blocks, job.theta = fit_region(fpr.blocks_4k, seq, rand, hot)
        job.region_bytes = blocks * 4096
        job.notes.append(
            f"footprint: the trace touched {fpr.blocks_4k:,} distinct 4 KiB blocks; the job's "
            f"{seq + rand:,.0f} block touches reach as many in a region of {blocks:,} blocks"
        )
    if hot is not None:
        dist = f"zipf:{job.theta}" if job.theta else "uniform"
        job.notes.append(
            f"skew: the hottest 1% of 4 KiB blocks took {hot:.1%} of I/Os; random offsets {dist}"
        )


def _touches(s: Stream) -> float:
    """4 KiB blocks one I/O of the stream touches, on average (a 512-byte I/O touches one)."""
    return sum(p * max(1, math.ceil(b / 4096)) for b, p in s.sizes.parts) / 100


def sampling_error(job: FioJob) -> tuple[float, float]:
    """(I/Os the job issues, the relative standard error of its mean size): fio draws each I/O's size
    from the bssplit at random, so a short run of a wide size mix misses the mean by chance."""
    n = s1 = s2 = 0.0
    for s in job.streams:
        k = s.rate * s.runtime_s
        n += k
        s1 += k * sum(b * p for b, p in s.sizes.parts) / 100
        s2 += k * sum(b * b * p for b, p in s.sizes.parts) / 100
    if n <= 0 or s1 <= 0:
        return n, 0.0
    mean = s1 / n
    return n, math.sqrt(max(0.0, s2 / n - mean * mean) / n) / mean


def _sampling_note(job: FioJob) -> None:
    n, se = sampling_error(job)
    if se <= SIZE_SE_MAX:
        return
    need = math.ceil(job.runtime_s * (se / SIZE_SE_MAX) ** 2)
    job.gaps.append(
        Gap(
            "mean size over a short run",
            "sizes drawn at random from the bssplit",
            f"{se:.1%} sampling error (1 sd) over ~{n:,.0f} I/Os: give --runtime {need}s "
            f"or more for {SIZE_SE_MAX:.1%}",
        )
    )


def _common_gaps(fp: Fingerprint, opts: JobOptions, job: FioJob) -> None:
    d = demand(fp, _scope(fp, "whole" if opts.regime == "phases" else opts.regime))
    if d.iodepth is None:
        job.gaps.append(
            Gap(
                "in-flight distribution",
                "not in the fingerprint (no in-flight counts)",
                f"iodepth for each stream's rate at {LITTLE_US} µs per I/O (Little's law)",
            )
        )
    else:
        job.gaps.append(
            Gap(
                "in-flight distribution",
                f"mean {'-' if d.inflight_mean is None else f'{d.inflight_mean:.2f}'}, p99 {d.iodepth}",
                f"iodepth {_depth(d)} caps it; the rest is the device's answer"
                + (f" (clamped to {MAX_IODEPTH})" if d.iodepth > MAX_IODEPTH else ""),
            )
        )
    scope = _scope(fp, d.scope)
    cv = scope.interarrival.cv
    if cv is not None:
        job.gaps.append(Gap("inter-arrival CV", f"{cv:.2f}", "streams paced evenly (fio's rate)"))
    for w in ("10ms", "100ms"):
        b = scope.burstiness.get(w)
        if b and b.peak_to_mean:
            job.gaps.append(Gap(f"peak/mean IOPS at {w}", f"{b.peak_to_mean:.2f}", "not shaped (1 s only)"))
    if d.discard_iops:
        job.gaps.append(Gap("discards", f"{d.discard_iops:,.2f}/s", "none (not written: trims destroy data)"))
    if opts.streams == "pid":
        job.notes.append("streams: one per top submitter, named p1, p2, ... by rank (no process names), each "
                         "with its own commits and its own sequentiality")  # fmt: skip
    _stream_gaps(fp, scope, d, opts, job)
