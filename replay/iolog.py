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
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field, replace
from pathlib import Path
from typing import Any

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from iofp.contract import OPS, Trace, TraceMeta, TraceWriter, check_output_file
from iofp.errors import BadInput
from replay import pacing as pacemod
from replay import selection as selmod
from replay import streams as streammod

HEADER = "fio version 3 iolog\n"
HEADER_V2 = "fio version 2 iolog\n"  # --pace absolute (pacing.WaitClock)
FIO_ACTIONS = ("read", "write", "trim", "sync")  # indexed like contract.OPS
READ, WRITE, DISCARD, FLUSH = range(4)
MAX_NAME = 256  # fio parses names with %256s
EXPECTED_ROWS_PER_FILE = 1 << 20


@dataclass(frozen=True)
class Mapping:
    """How the selection lands on the target."""

    target: str = ""  # the file name written in the log (absolute path); "" = /dev/<the device>
    fold_size: int | None = None  # fold offsets into this many bytes when the selection is larger
    align: int = 512
    time_scale: float = 1.0  # > 1 replays faster (timestamps divided by it)
    trim: bool = False  # emit discards as `trim` (fio >= 3.34, block-device target)

    def check(self) -> None:
        if not self.target.startswith("/") or any(c.isspace() for c in self.target):
            raise BadInput(f"{self.target!r}: fio iologs need an absolute path without whitespace; rename it")
        if len(self.target) > MAX_NAME:
            raise BadInput(f"{self.target[:40]}...: fio reads at most {MAX_NAME} characters of a file name")
        if self.align < 512 or self.align & (self.align - 1):
            raise BadInput(f"--align {self.align}: must be a power of two >= 512")
        if not self.time_scale > 0:
            raise BadInput(f"--time-scale {self.time_scale:g}: must be > 0 (2 = twice as fast)")
        if self.fold_size is not None and self.fold_size < self.align:
            raise BadInput(f"--target-size {self.fold_size}: must be at least the alignment ({self.align})")


@dataclass
class ConvertReport:
    target: str
    rows_in: int = 0  # rows in the selected span
    kept: int = 0
    ops: dict[str, int] = field(default_factory=lambda: dict.fromkeys(FIO_ACTIONS, 0))
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
    """The device the selection came from, when it is one device (the log must name a file)."""
    if len(stats.devices) != 1:
        raise BadInput(
            f"the selection spans devices {', '.join(stats.devices)}; pass --device to pick one "
            "or --target to name the file the log should use"
        )
    return f"/dev/{stats.devices[0]}"


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


def convert(
    trace: Trace,
    out: Path,
    sel: selmod.Selection,
    mapping: Mapping,
    *,
    force: bool = False,
    expected: Path | None = None,
    streams: str | None = "single",
    engine: str = "libaio",
    pacing: pacemod.Pacing | None = None,
) -> ConvertReport:
    """Write the selection of `trace` as a fio v3 iolog at `out` (atomically).

    With `streams` "pid" (or None: "pid" when the selection has more than one pid) and more than one
    stream, stream i goes to `stream_path(out, i)` instead (see streams.py); `report.streams` says which
    file holds which pids. `pacing` compensates fio's per-I/O overhead per stream engine (pacing.py).
    With `expected`, also write the I/Os exactly as the log demands them (target offsets, scaled
    times from 0) as an iofp trace: the reference a replay's capture is compared with.
    """
    out = Path(out)
    con = selmod.connect(trace)
    try:
        stats = selmod.resolve(con, trace, sel)
        plan = streammod.plan(con, sel, stats, streams, engine)
        paths = [stream_path(out, s.index) for s in plan.streams] if plan.split else [out]
        for p in paths:
            check_output_file(p, force=force)
        if not mapping.target:
            mapping = replace(mapping, target=default_target(stats))
        mapping.check()
        pacing = pacing or pacemod.Pacing()
        tmps = [p.with_name(f".{p.name}.tmp") for p in paths]

        def attempt(batches: Iterator[pa.RecordBatch], force_expected: bool) -> ConvertReport:
            report = ConvertReport(
                target=mapping.target,
                align=mapping.align,
                time_scale=mapping.time_scale,
                selection=stats.to_dict(),
            )
            report.fold_modulus = fold_modulus(stats, mapping)
            report.pacing = pacing.to_dict()
            writer = (
                _expected_writer(expected, trace, sel, mapping, force=force_expected) if expected else None
            )
            with contextlib.ExitStack() as stack:
                files = [stack.enter_context(open(t, "wb", buffering=1 << 22)) for t in tmps]
                for f in files:
                    if pacing.log_version == 2:
                        f.write(f"{HEADER_V2}{mapping.target} add\n{mapping.target} open\n".encode())
                    else:
                        f.write(HEADER.encode())
                        f.write(f"1 {mapping.target} add\n1 {mapping.target} open\n".encode())
                pacers = [pacing.pacer(st.engine) for st in plan.streams]
                conv = _BatchConverter(
                    mapping, report, first_ns=stats.first_ns or 0, reads_only=sel.reads_only
                )
                for batch in batches:
                    blobs, exp = conv.convert(batch, plan, pacers)
                    for f, blob in zip(files, blobs, strict=True):
                        if blob:
                            f.write(blob)
                    if writer is not None and exp is not None:
                        writer.add(exp)
            if writer is not None:
                writer.close()
            report.streams = [
                st.to_dict()
                | {"iolog": str(p), "kept": conv.kept.get(i, 0), "log_last_us": conv.last_us.get(i, 0)}
                for i, (st, p) in enumerate(zip(plan.streams, paths, strict=True))
            ]
            report.stream_mode = plan.mode
            return report

        try:
            # Traces in issue order (imports) stream straight from their files in constant memory;
            # a capture (rows in completion order) is sorted by DuckDB, which spills past 256 MB.
            try:
                report = attempt(selmod.file_order_batches(trace, sel, stats), force)
            except selmod.NotInIssueOrder:
                report = attempt(selmod.ordered_batches(con, sel, stats), True)
                report.sorted_by = "duckdb"
            for t, p in zip(tmps, paths, strict=True):
                os.replace(t, p)
        except BaseException:
            for t in tmps:
                t.unlink(missing_ok=True)
            raise
        return report
    finally:
        con.close()


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

    def convert(
        self,
        batch: pa.RecordBatch,
        plan: streammod.StreamPlan,
        pacers: list[pacemod.Pacer | pacemod.WaitClock],
    ) -> tuple[list[bytes], pa.Table | None]:
        r, m = self.r, self.m
        n = batch.num_rows
        r.rows_in += n
        opc = batch.column("opc").to_numpy(zero_copy_only=False)
        size = batch.column("size").to_numpy(zero_copy_only=False).astype(np.int64)
        keep = np.ones(n, dtype=bool)
        self._drop("unknown_op", opc < 0, keep)
        if self.reads_only:
            self._drop("not_read", opc != READ, keep)
        if not m.trim:
            self._drop("discard_unsupported", opc == DISCARD, keep)
        self._drop("zero_size", (opc != FLUSH) & (size <= 0), keep)
        if not keep.all():
            idx = np.flatnonzero(keep)
            batch = batch.take(pa.array(idx))
            opc, size = opc[idx], size[idx]
        if batch.num_rows == 0:
            return [b""] * len(pacers), None
        ts = batch.column("ts_ns").to_numpy(zero_copy_only=False)
        off = batch.column("offset").to_numpy(zero_copy_only=False).astype(np.int64)
        flush = opc == FLUSH
        data = ~flush
        a = m.align
        if r.fold_modulus is not None:
            big = data & (off >= r.fold_modulus)
            r.folded += int(np.count_nonzero(big))
            off = np.where(big, off % r.fold_modulus, off)
        rem = off % a
        r.realigned += int(np.count_nonzero(data & (rem != 0)))
        off = off - rem
        up = (-size) % a
        r.resized += int(np.count_nonzero(data & (up != 0)))
        size = size + up
        off = np.where(flush, 0, off)
        size = np.where(flush, 0, size)

        rel = ts - self.first_ns
        rel_sched = rel if m.time_scale == 1.0 else np.floor(rel / m.time_scale).astype(np.int64)

        r.kept += len(opc)
        counts = np.bincount(opc, minlength=4)
        for i, name in enumerate(FIO_ACTIONS):
            r.ops[name] += int(counts[i])
        r.bytes += int(size[(opc == READ) | (opc == WRITE)].sum())
        if data.any():
            r.max_end = max(r.max_end, int((off + size)[data].max()))
        r.duration_us = int(rel_sched[-1]) // 1000

        opc_arr = pa.array(opc)
        route = plan.route(batch.column("pid"))
        blobs: list[bytes] = []
        for i, pacer in enumerate(pacers):
            idx = np.flatnonzero(route == i) if plan.split else None
            if idx is not None and len(idx) == 0:
                blobs.append(b"")
                continue
            pick = (lambda x: x) if idx is None else (lambda x, ix=idx: x[ix])
            if isinstance(pacer, pacemod.WaitClock):
                ms, new = pacer.waits(pick(rel_sched))
                self.kept[i] = self.kept.get(i, 0) + len(ms)
                self.last_us[i] = int(ms[-1]) * 1000
                blobs.append(self._format_v2(ms, new, pick(opc), pick(off), pick(size)))
                continue
            ts_us = pacer.log_us(pick(rel_sched), pick(flush))
            self.kept[i] = self.kept.get(i, 0) + len(ts_us)
            self.last_us[i] = int(ts_us[-1])
            blobs.append(self._format(ts_us, pick(opc), pick(off), pick(size)))
        expected = pa.table(
            {
                "ts_ns": pa.array(rel_sched),
                "offset": pa.array(off),
                "size": pa.array(size.astype(np.int32)),
                "op": self.contract_ops.take(opc_arr),
                "inflight": batch.column("inflight"),
                "lat_ns": batch.column("lat_ns"),
            }
        )
        return blobs, expected

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


class _ExpectedWriter:
    """Buffers expected rows into large Parquet files through the contract's TraceWriter."""

    def __init__(self, writer: TraceWriter, device: str) -> None:
        self.w = writer
        self.device = device
        self.pending: list[pa.Table] = []
        self.rows = 0

    def add(self, tbl: pa.Table) -> None:
        self.pending.append(tbl)
        self.rows += tbl.num_rows
        if self.rows >= EXPECTED_ROWS_PER_FILE:
            self.flush()

    def flush(self) -> None:
        if not self.pending:
            return
        tbl = pa.concat_tables(self.pending)
        dev = pa.DictionaryArray.from_arrays(pa.array(np.zeros(tbl.num_rows, dtype=np.int32)), [self.device])
        self.w.write("io", tbl.append_column("device", dev))
        self.pending, self.rows = [], 0

    def close(self) -> None:
        self.flush()
        self.w.close()


def _expected_writer(
    root: Path, trace: Trace, sel: selmod.Selection, mapping: Mapping, *, force: bool
) -> _ExpectedWriter:
    meta = TraceMeta(
        source="replay-expected",
        devices={Path(mapping.target).name: {}},
        filters={"selection": asdict(sel), "mapping": asdict(mapping)},
        labels=dict(trace.meta.labels),
        extra={"original": {"root": str(trace.root), "source": trace.meta.source, "host": trace.meta.host}},
    )
    return _ExpectedWriter(TraceWriter(root, meta, force=force), Path(mapping.target).name)
