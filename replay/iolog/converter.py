"""Trace -> fio iolog (v3, or v2 for --pace absolute) that fio 3.33 replays as written (its iolog.c).

What the log looks like and why:

- Header `fio version 3 iolog`, then `1 TARGET add` and `1 TARGET open`: a line naming a file that
  was never added crashes fio (SIGSEGV), add without open aborts it.
- One line per I/O, `TS TARGET read|write|sync|trim OFFSET LENGTH`, sorted by issue time (ties keep
  the trace's order). TS is µs since the selection's first I/O, **plus 1**: fio gives delay 0 to a
  line whose predecessor has timestamp 0, so a log starting at 0 loses its first gap.
  Each TS is computed from the absolute trace time (not summed gaps), so rounding never drifts.
- Flushes become `sync` (fsync of the target = a cache flush on a block device). Discards become
  `trim` only when the installed fio reads them from an iolog (>= 3.34) and the target is a block
  device; otherwise they are dropped and counted, like everything else the converter drops.
- No comments, blank lines, `wait` or `close`: fio 3.33 rejects the first three, and every rejected
  line swallows its time gap, which is why all filtering happens here and not with fio's
  `replay_skip`/`readonly`. fio closes the file when the job ends.

Offsets and sizes (every change is counted in the report):

- **Folding.** When a fold size is given and the selection does not fit in it, every offset becomes
  `offset mod M` with `M = align_down(fold_size - largest I/O)`, so every folded I/O fits whole and
  the same original offset always lands on the same target offset; sizes are kept. Offsets below M
  are unchanged. Without a fold size nothing is folded (the replay's safety check refuses a target
  that is too small; it never truncates silently).
- **Alignment.** `direct=1` needs offsets and lengths that are multiples of the target's logical
  block size. Offsets are rounded *down* to `align` and sizes *up* to it (default 512: block traces are
  in 512-byte sectors already, so by default nothing changes; `--align 4096` makes a 4Kn-safe log).

With `--pace absolute` (pacing.WaitClock) the log is version 2 instead: `TARGET add`, `TARGET open`, then
`TARGET wait MS 0` before the first I/O of each millisecond and `TARGET read|write|sync|trim OFFSET
LENGTH` lines without timestamps. A v2 `wait` is fio 3.33's only absolute clock (ms since fio started,
iolog.c), so the replay cannot drift; the price is 1 ms resolution. Checked with fio 3.33's null
engine: 300,000 I/Os at 100k IOPS, chunked or not, all issued, wall time = the schedule.

Streaming: rows arrive from DuckDB in issue order in batches; each batch is filtered, mapped and
formatted with Arrow compute kernels and written as one buffer, so memory stays constant.
"""

from __future__ import annotations

import contextlib
import os
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iofp.contract import IO_TABLE, OPS, SYNC_TABLE, Trace, TraceMeta, TraceWriter, check_output_file
from iofp.errors import BadInput
from iofp.output import shell_command
from iofp.sqlfiles import load_sql
from replay.fio import iolog_name
from replay.iolog import pacing as pacemod
from replay.iolog import plan as planmod
from replay.iolog import selection as selmod
from replay.iolog import streams as streammod

HEADER = "fio version 3 iolog\n"
HEADER_V2 = "fio version 2 iolog\n"  # --pace absolute (pacing.WaitClock)
# fio's action per row code (sql/selected_io.sql's opc): contract.OPS, then the two replayed calls
FIO_ACTIONS = ("read", "write", "trim", "sync", "sync", "datasync")
READ, WRITE, DISCARD, FLUSH, SYNC, DATASYNC = range(6)  # FLUSH and up: a sync line
# Where a log written without --target points: a directory no machine has, so fio cannot open the
# file unless told where to write (its --replay_redirect). The trace's device is where it was
# recorded, not where to write: on this machine /dev/vda may be the root disk.
NO_TARGET = "/iofp-no-target"
EXPECTED_ROWS_PER_FILE = 1 << 20
SQL = "replay.iolog.sql"


@dataclass(frozen=True)
class Mapping:
    """How the selection lands on the target."""

    target: str = ""  # the file name written in the log (absolute path); "" = /dev/<the device>
    fold_size: int | None = None  # fold offsets into this many bytes when the selection is larger
    align: int = 512
    time_scale: float = 1.0  # > 1 replays faster (timestamps divided by it)
    trim: bool = False  # emit discards as `trim` (fio >= 3.34, block-device target)

    def check(self) -> None:
        iolog_name(self.target)  # absolute (fio opens it from wherever it runs), one word, short
        if self.align < 512 or self.align & (self.align - 1):
            raise BadInput(f"--align {self.align}: must be a power of two >= 512")
        # 1000x either way: a 1 h trace in 3.6 s, or 1 s of it over 17 min. Beyond that the scaled
        # microseconds lose their meaning: 1e-300 wrapped to -9.2e15 µs, inf put every I/O at t=1.
        if not 1e-3 <= self.time_scale <= 1e3:
            raise BadInput(
                f"--time-scale {self.time_scale:g}: must be from 0.001 to 1000 (2 = twice as fast)"
            )
        if self.fold_size is not None and self.fold_size < self.align:
            raise BadInput(f"--target-size {self.fold_size}: must be at least the alignment ({self.align})")


@dataclass
class ConvertReport:
    target: str
    rows_in: int = 0  # rows in the selected span
    kept: int = 0
    ops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIO_ACTIONS, 0))  # per fio action
    dropped: dict[str, int] = field(default_factory=dict)
    folded: int = 0  # offsets moved by folding
    realigned: int = 0  # offsets rounded down to `align`
    resized: int = 0  # sizes rounded up to `align`
    fold_modulus: int | None = None
    align: int = 512
    time_scale: float = 1.0
    bytes: int = 0  # read + write payload
    max_end: int = 0  # highest byte the log touches on the target
    duration_us: int = 0  # last timestamp - first
    selection: dict[str, Any] = field(default_factory=dict)
    sorted_by: str = "none (already in issue order)"
    stream_mode: str = "single"
    streams: list[dict[str, Any]] = field(default_factory=list)
    pacing: dict[str, Any] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self)

    def summary(self) -> str:
        drops = ", ".join(f"{v} {k.replace('_', ' ')}" for k, v in sorted(self.dropped.items())) or "none"
        ops = ", ".join(f"{v} {k}" for k, v in self.ops.items() if v)
        return (
            f"{self.kept} I/Os ({ops}) over {self.duration_us / 1e6:.3f} s; dropped: {drops}; "
            f"folded {self.folded}, realigned {self.realigned}, resized {self.resized}"
        )


def default_target(stats: selmod.SelectionStats) -> str:
    """The placeholder a log names without --target: NO_TARGET/DEVICE (the device the selection came
    from, when it is one device), which fio cannot open: never a device of this machine."""
    if len(stats.devices) != 1:
        raise BadInput(
            f"the selection spans devices {', '.join(stats.devices)}; pass --device to pick one "
            "or --target to name the file the log should use"
        )
    return f"{NO_TARGET}/{stats.devices[0]}"


def names_no_target(report: ConvertReport) -> bool:
    return report.target.startswith(NO_TARGET + "/")


def fold_modulus(stats: selmod.SelectionStats, mapping: Mapping) -> int | None:
    """The folding modulus, or None when the selection fits (or no fold size was given)."""
    if mapping.fold_size is None:
        return None
    a = mapping.align
    if _align_up(stats.max_end, a) <= mapping.fold_size:
        return None
    m = (mapping.fold_size - _align_up(stats.max_size, a)) // a * a
    if m <= 0:
        raise BadInput(
            f"target size {mapping.fold_size} bytes cannot hold the selection's largest I/O "
            f"({stats.max_size} bytes); use a larger target"
        )
    return m


def stream_path(out: Path, index: int) -> Path:
    """Where stream `index` of a split conversion goes: OUT.iolog -> OUT.<index>.iolog."""
    out = Path(out)
    return out.with_name(f"{out.stem}.{index}{out.suffix or '.iolog'}")


def _align_up(x: int, a: int) -> int:
    return -(-x // a) * a


@dataclass
class Expected:
    """What the log demands, as the target should see it (target offsets, scaled times from 0): the
    reference a replay's capture is compared with (replay/run/fidelity.py), passed on in memory."""

    io: pa.Table  # ts_ns, offset, size, op, inflight, lat_ns, forced: the data I/Os
    calls: pa.Table  # ts_ns, call ('fsync' | 'fdatasync'): one per sync/datasync line


@dataclass
class Conversion:
    report: ConvertReport
    expected: Expected


def convert(
    trace: Trace,
    out: Path,
    sel: selmod.Selection,
    mapping: Mapping,
    *,
    force: bool = False,
    streams: str | None = "single",
    engine: str = "auto",
    pacing: pacemod.Pacing | None = None,
) -> ConvertReport:
    """Resolve `sel` on `trace` (plan.py) and write it as fio iologs (`write`); `iofp iolog`'s one call."""
    plan = planmod.resolve(trace, sel, streams=streams, engine=engine)
    try:
        return write(plan, out, mapping, force=force, pacing=pacing).report
    finally:
        plan.close()


def write(
    plan: planmod.Plan,
    out: Path,
    mapping: Mapping,
    *,
    force: bool = False,
    pacing: pacemod.Pacing | None = None,
    expected_dir: Path | None = None,
) -> Conversion:
    """Write the plan's selection as a fio iolog at `out` (atomically), one per stream when there are
    several (`stream_path(out, i)`; `report.streams` says which file holds what). `pacing` compensates
    fio's per-I/O overhead per stream engine (pacing.py). With `expected_dir`, the demanded I/Os are
    also kept there as an iofp trace, for a person to re-examine (the fidelity check gets them in memory).
    """
    out = Path(out)
    paths = [stream_path(out, s.index) for s in plan.streams.streams] if plan.streams.split else [out]
    for p in paths:
        check_output_file(p, force=force)
    if not mapping.target:
        mapping = replace(mapping, target=default_target(plan.stats))
    mapping.check()
    pacing = pacing or pacemod.Pacing()
    tmps = [p.with_name(f".{p.name}.tmp") for p in paths]
    try:
        out.parent.mkdir(parents=True, exist_ok=True)  # as every artifact's writer does (atomic_write_bytes)
        try:
            conv = _attempt(plan, mapping, tmps, pacing, ordered=False)
        except selmod.NotInIssueOrder:
            conv = _attempt(plan, mapping, tmps, pacing, ordered=True)
            conv.report.sorted_by = "duckdb"
        for t, p in zip(tmps, paths, strict=True):
            os.replace(t, p)
    except BaseException as e:
        for t in tmps:
            t.unlink(missing_ok=True)
        if isinstance(e, OSError) and e.filename is not None:  # the path, not the trace: one line
            raise BadInput(f"cannot write {out}: {e.strerror}") from None
        raise
    for st, p in zip(conv.report.streams, paths, strict=True):
        st["iolog"] = str(p)
    if expected_dir is not None:
        _write_expected(expected_dir, conv.expected, plan, mapping)
    return conv


def _attempt(
    plan: planmod.Plan, mapping: Mapping, tmps: list[Path], pacing: pacemod.Pacing, *, ordered: bool
) -> Conversion:
    stats = plan.stats
    report = ConvertReport(
        target=mapping.target, align=mapping.align, time_scale=mapping.time_scale, selection=stats.to_dict()
    )
    report.fold_modulus = fold_modulus(stats, mapping)
    report.pacing = pacing.to_dict()
    report.sorted_by = "duckdb" if plan.trace.has(SYNC_TABLE) else report.sorted_by
    exp_io: list[pa.Table] = []
    exp_calls: list[pa.Table] = []
    with contextlib.ExitStack() as stack:
        files = [stack.enter_context(open(t, "wb", buffering=1 << 22)) for t in tmps]
        for f in files:
            f.write(_header(mapping.target, pacing.log_version))
        pacers = [pacing.pacer(st.engine) for st in plan.streams.streams]
        conv = _BatchConverter(
            mapping, report, first_ns=stats.first_ns or 0, reads_only=plan.selection.reads_only
        )
        for batch in plan.batches(ordered=ordered):
            blobs, exp = conv.convert(batch, plan.streams, pacers)
            for f, blob in zip(files, blobs, strict=True):
                if blob:
                    f.write(blob)
            if exp is not None:
                exp_io.append(exp[0])
                exp_calls.append(exp[1])
    report.streams = [
        st.to_dict() | {"kept": conv.kept.get(i, 0), "log_last_us": conv.last_us.get(i, 0)}
        for i, st in enumerate(plan.streams.streams)
    ]
    report.stream_mode = plan.streams.mode
    expected = Expected(
        pa.concat_tables(exp_io) if exp_io else _EXPECTED_IO.empty_table(),
        pa.concat_tables(exp_calls) if exp_calls else _EXPECTED_CALLS.empty_table(),
    )
    return Conversion(report, expected)


HEADER_LINES = 3  # what _header writes before the first I/O line: the version, `add`, `open`


def _header(target: str, version: int) -> bytes:
    if version == 2:
        return f"{HEADER_V2}{target} add\n{target} open\n".encode()
    return f"{HEADER}1 {target} add\n1 {target} open\n".encode()


class _BatchConverter:
    """Filters, maps and formats one Arrow batch at a time (all vectorised)."""

    def __init__(self, mapping: Mapping, report: ConvertReport, *, first_ns: int, reads_only: bool) -> None:
        self.m = mapping
        self.r = report
        self.first_ns = first_ns
        self.reads_only = reads_only
        self.actions = pa.array(FIO_ACTIONS)
        self.contract_ops = pa.array(OPS)
        self.target = pa.scalar(mapping.target)
        self.kept: dict[int, int] = {}  # per stream
        self.last_us: dict[int, int] = {}  # per stream: its last log timestamp

    def _drop(self, reason: str, mask: np.ndarray, keep: np.ndarray) -> None:
        n = int(np.count_nonzero(mask & keep))
        if n:
            self.r.dropped[reason] = self.r.dropped.get(reason, 0) + n
            keep &= ~mask

    def _filter(self, batch: pa.RecordBatch) -> pa.RecordBatch:
        """Drop (and count) what fio cannot replay or the selection leaves out."""
        self.r.rows_in += batch.num_rows
        opc = batch.column("opc").to_numpy(zero_copy_only=False)
        size = batch.column("size").to_numpy(zero_copy_only=False)
        keep = np.ones(batch.num_rows, dtype=bool)
        self._drop("unknown_op", opc < 0, keep)
        if self.reads_only:
            self._drop("not_read", opc != READ, keep)
        if not self.m.trim:
            self._drop("discard_unsupported", opc == DISCARD, keep)
        self._drop("zero_size", (opc < FLUSH) & (size <= 0), keep)
        return batch if keep.all() else batch.take(pa.array(np.flatnonzero(keep)))

    def _map(self, opc: np.ndarray, off: np.ndarray, size: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Fold and align the data I/Os' offsets and sizes (syncs are 0 0), counting every change."""
        r, a = self.r, self.m.align
        data = opc < FLUSH
        if r.fold_modulus is not None:
            big = data & (off >= r.fold_modulus)
            r.folded += int(np.count_nonzero(big))
            off = np.where(big, off % r.fold_modulus, off)
        rem = off % a
        r.realigned += int(np.count_nonzero(data & (rem != 0)))
        up = (-size) % a
        r.resized += int(np.count_nonzero(data & (up != 0)))
        return np.where(data, off - rem, 0), np.where(data, size + up, 0)

    def convert(
        self,
        batch: pa.RecordBatch,
        plan: streammod.StreamPlan,
        pacers: list[pacemod.Pacer | pacemod.WaitClock],
    ) -> tuple[list[bytes], tuple[pa.Table, pa.Table] | None]:
        batch = self._filter(batch)
        if batch.num_rows == 0:
            return [b""] * len(pacers), None
        r = self.r
        opc = batch.column("opc").to_numpy(zero_copy_only=False)
        off, size = self._map(
            opc,
            batch.column("offset").to_numpy(zero_copy_only=False).astype(np.int64),
            batch.column("size").to_numpy(zero_copy_only=False).astype(np.int64),
        )
        ts = batch.column("ts_ns").to_numpy(zero_copy_only=False)
        if not r.kept:
            # A write its sync call forced is replayed at the call's start (selected_io.sql), which can
            # precede the selection's first I/O (selection_stats' first_ns): the clock starts at the
            # earliest row, or the log's first lines carry a negative time (fio reads it as unsigned).
            self.first_ns = min(self.first_ns, int(ts[0]))
        rel = ts - self.first_ns
        sched = rel if self.m.time_scale == 1.0 else np.floor(rel / self.m.time_scale).astype(np.int64)
        r.kept += len(opc)
        counts = np.bincount(opc, minlength=len(FIO_ACTIONS))
        for i, name in enumerate(FIO_ACTIONS):
            r.ops[name] += int(counts[i])
        rw = (opc == READ) | (opc == WRITE)
        r.bytes += int(size[rw].sum())
        if (opc < FLUSH).any():
            r.max_end = max(r.max_end, int((off + size)[opc < FLUSH].max()))
        r.duration_us = int(sched[-1]) // 1000
        commit = batch.column("commit").to_numpy(zero_copy_only=False)
        route = plan.route(batch.column("pid"), commit)
        blobs = [
            self._stream(i, pacer, route, plan.split, sched, opc, off, size) for i, pacer in enumerate(pacers)
        ]
        return blobs, self._expected(batch, sched, opc, off, size, commit)

    def _stream(
        self,
        i: int,
        pacer: pacemod.Pacer | pacemod.WaitClock,
        route: np.ndarray,
        split: bool,
        sched: np.ndarray,
        opc: np.ndarray,
        off: np.ndarray,
        size: np.ndarray,
    ) -> bytes:
        """Stream i's lines of this batch."""
        idx = np.flatnonzero(route == i) if split else None
        if idx is not None and len(idx) == 0:
            return b""

        def pick(x: np.ndarray) -> np.ndarray:
            return x if idx is None else x[idx]

        if isinstance(pacer, pacemod.WaitClock):
            ms, new = pacer.waits(pick(sched))
            self.kept[i] = self.kept.get(i, 0) + len(ms)
            self.last_us[i] = int(ms[-1]) * 1000
            return self._format_v2(ms, new, pick(opc), pick(off), pick(size))
        ts_us = pacer.log_us(pick(sched), pick(opc) >= FLUSH)
        self.kept[i] = self.kept.get(i, 0) + len(ts_us)
        self.last_us[i] = int(ts_us[-1])
        return self._format(ts_us, pick(opc), pick(off), pick(size))

    def _expected(
        self,
        batch: pa.RecordBatch,
        sched: np.ndarray,
        opc: np.ndarray,
        off: np.ndarray,
        size: np.ndarray,
        commit: np.ndarray,
    ) -> tuple[pa.Table, pa.Table]:
        """The batch as the target should see it: its data I/Os, and a call per sync line."""
        data = np.flatnonzero(opc < FLUSH)
        io = pa.table(
            {
                "ts_ns": pa.array(sched[data]),
                "offset": pa.array(off[data]),
                "size": pa.array(size[data].astype(np.int32)),
                "op": self.contract_ops.take(pa.array(opc[data])),
                "inflight": batch.column("inflight").take(pa.array(data)),
                "lat_ns": batch.column("lat_ns").take(pa.array(data)),
                "forced": pa.array(commit[data] & (opc[data] == WRITE)),
            }
        )
        syncs = np.flatnonzero(opc >= FLUSH)
        calls = pa.table(
            {
                "ts_ns": pa.array(sched[syncs]),
                "call": pa.array(np.where(opc[syncs] == DATASYNC, "fdatasync", "fsync")),
            }
        )
        return io, calls

    def _format(self, ts_us: np.ndarray, opc: np.ndarray, off: np.ndarray, size: np.ndarray) -> bytes:
        sz_s = pc.cast(pa.array(size), pa.string())
        lines = pc.binary_join_element_wise(
            pc.cast(pa.array(ts_us), pa.string()),
            self.target,
            self.actions.take(pa.array(opc)),
            pc.cast(pa.array(off), pa.string()),
            pc.binary_join_element_wise(sz_s, "\n", ""),
            " ",
        )
        return _joined(lines)

    def _format_v2(
        self, ms: np.ndarray, new: np.ndarray, opc: np.ndarray, off: np.ndarray, size: np.ndarray
    ) -> bytes:
        """v2 lines `TARGET read|write|sync|trim OFFSET LENGTH`, each ms opened by `TARGET wait MS 0`."""
        sz_s = pc.cast(pa.array(size), pa.string())
        ios = pc.binary_join_element_wise(
            self.target,
            self.actions.take(pa.array(opc)),
            pc.cast(pa.array(off), pa.string()),
            pc.binary_join_element_wise(sz_s, "\n", ""),
            " ",
        )
        waits = pc.binary_join_element_wise(
            self.target, "wait", pc.cast(pa.array(ms[new]), pa.string()), "0\n", " "
        )
        n, k = len(ios), len(waits)
        pos = np.arange(n) + np.cumsum(new)  # an I/O's line: after every wait up to and including its own
        order = np.empty(n + k, dtype=np.int64)
        order[pos] = np.arange(n)
        order[pos[new] - 1] = n + np.arange(k)  # a wait right before the I/O that opens its millisecond
        return _joined(pa.concat_arrays([ios, waits]).take(pa.array(order)))


def _joined(lines: pa.Array) -> bytes:
    """The concatenated bytes of a string array (its data buffer between the first and last offset)."""
    offsets = lines.buffers()[1]
    o = np.frombuffer(offsets, dtype=np.int32, count=len(lines) + 1, offset=lines.offset * 4)
    return lines.buffers()[2].to_pybytes()[o[0] : o[-1]]


_EXPECTED_IO = pa.schema(
    [("ts_ns", pa.int64()), ("offset", pa.int64()), ("size", pa.int32()), ("op", pa.string()),
     ("inflight", pa.int32()), ("lat_ns", pa.int64()), ("forced", pa.bool_())]
)  # fmt: skip
_EXPECTED_CALLS = pa.schema([("ts_ns", pa.int64()), ("call", pa.string())])


def _write_expected(root: Path, expected: Expected, plan: planmod.Plan, mapping: Mapping) -> None:
    """Keep the demanded I/Os and calls as an iofp trace (an artifact of the run, not read back)."""
    meta = TraceMeta(
        source="replay-expected",
        devices={Path(mapping.target).name: {}},
        filters={"selection": asdict(plan.selection), "mapping": asdict(mapping)},
        labels=dict(plan.trace.meta.labels),
        extra={
            "original": {
                "root": plan.trace.where, "source": plan.trace.meta.source, "host": plan.trace.meta.host
            }
        },
    )  # fmt: skip
    io = expected.io.drop_columns(["forced"])
    dev = pa.DictionaryArray.from_arrays(
        pa.array(np.zeros(io.num_rows, dtype=np.int32)), [Path(mapping.target).name]
    )
    with TraceWriter(root, meta, force=True) as w:
        for chunk in io.append_column("device", dev).to_batches(EXPECTED_ROWS_PER_FILE):
            w.write("io", chunk)
        w.write("sync", expected.calls)


def cli_mapping(
    target: str | None,
    target_size: int | None,
    align: int | None,
    time_scale: float,
    streams: str,
    pace: str,
) -> tuple[Mapping, pacemod.Pacing]:
    """`iofp iolog`'s options as a mapping and a pacing (no target to calibrate on: no --pace auto)."""
    from replay.fio import installed

    if streams not in streammod.MODES:
        raise BadInput(f"--streams {streams}: choose one of {', '.join(streammod.MODES)}")
    spec = pacemod.PaceSpec.parse(pace)
    if spec.mode == "auto":
        raise BadInput(
            "--pace auto calibrates on the target and needs `iofp replay`; pass off, absolute or e.g. 20us"
        )
    mapping = Mapping(
        target=target or "",
        fold_size=target_size,
        align=512 if align is None else align,  # 0 is rejected, not taken for the default
        time_scale=time_scale,
        trim=installed().iolog_trim,
    )
    engines = ("libaio", "psync", "io_uring", "pvsync2")
    return mapping, pacemod.Pacing(mode=spec.mode, overhead_ns=dict.fromkeys(engines, spec.overhead_ns))


def fio_command(report: ConvertReport) -> str:
    """The fio command line that replays the written logs as iofp replay would (one job per log)."""
    words = ["fio", "--direct=1"]
    if names_no_target(report):  # the user's scratch device, for the placeholder the log names
        words.append("--replay_redirect=/dev/sdX")
    for i, s in enumerate(report.streams):
        words += [f"--name=s{i}", f"--ioengine={s['engine']}", f"--iodepth={s['iodepth']}"]
        words += [] if s["direct"] else ["--direct=0"]
        words.append(f"--read_iolog={s['iolog']}")
    return shell_command(*words)


def expected_of(trace: Trace) -> Expected:
    """A trace taken as the demand, for comparing two traces (e.g. an original with a capture of its
    replay by another tool): its data I/Os, and its sync calls (fsync family from the sync table;
    without one, each block flush as an fsync)."""
    from iofp import duck

    con = duck.connect()
    try:
        trace.relation(con, IO_TABLE).create_view("io")
        trace.relation(con, SYNC_TABLE).create_view("sync")
        io = con.sql(load_sql(SQL, "expected_io")).to_arrow_table()
        calls = duck.query(con, SQL, "expected_calls", {"from_sync": trace.has(SYNC_TABLE)})
    finally:
        con.close()
    return Expected(io.cast(_EXPECTED_IO), pa.Table.from_pylist(calls, schema=_EXPECTED_CALLS))
