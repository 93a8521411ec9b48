"""Capture's public hook for a recorder (bpf.IntervalSink, `CaptureOptions(sink=...)`): every request
handed over once, interval by interval, on wall-clock seconds, and an interval encoded by
`encode_interval` into the trace's tables; a compressed spool gives back what it was given."""

from __future__ import annotations

import threading
import time
from pathlib import Path

import lab
import numpy as np
import pytest
from conftest import needs_fio, needs_root
from helpers import raw_io, raw_sync

from bpf import CaptureOptions, Spool, capture, encode_interval, segment_extra, segments
from bpf.btf import kernel_btf
from bpf.record import DATA_CALL_BASE, InflightFixes, ReqBits, split_calls
from iofp.contract import CALLS_SCHEMA, DATA_CALLS, IO_SCHEMA, SYNC_SCHEMA

NO_CALL = 0xFFFFFFFF  # IOFP_NO_CALL (bpf/capture.bpf.c): a reap slot whose iocb was not tracked


class Sink:
    def __init__(self) -> None:
        self.intervals: list[tuple[np.ndarray, np.ndarray, int, float, bool]] = []

    def start(self, t0_ns, bits, names, meta) -> None:
        self.t0, self.bits, self.names, self.meta = t0_ns, bits, names, meta

    def put(self, item, upto_ns: int, *, last: bool = False) -> None:
        io, sync, _, _ = item
        self.intervals.append((io.copy(), sync.copy(), upto_ns, time.time(), last))


@needs_root
@needs_fio
def test_a_sink_gets_every_request_once_on_wall_clock_seconds(tmp_path: Path, loop_device: str) -> None:
    name = loop_device.removeprefix("/dev/")
    sink, stop, ready = Sink(), threading.Event(), threading.Event()
    done: dict = {}
    opts = CaptureOptions(output=tmp_path / "unused", devices=[name], sink=sink)
    th = threading.Thread(target=lambda: done.update(s=capture(opts, stop, ready=ready)))
    th.start()
    ready.wait(120)
    stat0 = Path(f"/sys/block/{name}/stat").read_text().split()
    lab.fio("--name=w", f"--filename={loop_device}", "--rw=randwrite", "--bs=4k", "--direct=1",
            "--ioengine=psync", "--number_ios=3000", "--fsync=100", "--rate_iops=1000", "--size=64m",
            "--output=/dev/null")  # fmt: skip
    time.sleep(1.2)
    stop.set()
    th.join(120)
    stat1 = Path(f"/sys/block/{name}/stat").read_text().split()
    writes, flushes = int(stat1[4]) - int(stat0[4]), int(stat1[15]) - int(stat0[15])
    io = np.concatenate([i[0] for i in sink.intervals])
    summary = done["s"]
    # the syscall records hold the fsync calls and the data calls (one pwrite64 per O_DIRECT write)
    commits, calls = split_calls(np.concatenate([i[1] for i in sink.intervals]))
    syncs = len(commits)
    assert len(calls) == 3000 and set(calls["call"] - DATA_CALL_BASE) == {DATA_CALLS.index("pwrite64")}
    assert writes == 3000 + summary.counts["completed_unissued"] and flushes == syncs >= 29
    assert len(io) == summary.io_events == 3000 + flushes and summary.files == 0
    assert not (tmp_path / "unused").exists()  # a sink: no trace written
    # every interval handed over after the one before, the last one marked; rotations on the second
    uptos = [i[2] for i in sink.intervals]
    assert uptos == sorted(uptos) and [i[4] for i in sink.intervals] == [False] * (len(uptos) - 1) + [True]
    assert sink.meta.capture_start_ns is not None
    # the middle of the run on an idle-ish test machine: most hand-overs within 0.3 s of a second
    offsets = [i[3] % 1 for i in sink.intervals[1:-1]]
    assert sum(o < 0.3 for o in offsets) >= len(offsets) // 2, offsets
    enc = encode_interval((io, np.concatenate([i[1] for i in sink.intervals]), ({}, {}), InflightFixes()),
                          sink.t0, sink.bits, sink.names)  # fmt: skip
    assert enc.io.schema.equals(IO_SCHEMA) and enc.io.num_rows == 3000 + flushes and enc.before_t0 == 0
    assert enc.sync.schema.equals(SYNC_SCHEMA) and enc.sync.num_rows == syncs
    assert enc.calls.schema.equals(CALLS_SCHEMA) and enc.calls.num_rows == 3000
    assert enc.calls["device"].to_pylist() == [name] * 3000


@pytest.fixture(scope="module")
def bits() -> ReqBits:
    return ReqBits.from_btf(kernel_btf())


def test_a_compressed_spool_gives_back_what_it_was_given(tmp_path: Path) -> None:
    sp = Spool(tmp_path, 0, compress=True)
    sp.dir.mkdir()
    io = raw_io(np.arange(5000) * 1000 + 10**12, [20_000] * 5000, ["read", "write"] * 2500)
    sync = raw_sync([10**12 + 5], [70_000])
    fixes = InflightFixes({5: np.array([1, 2])}, ((5, 3, 4),))
    seg = sp.put((io, sync, ({"lost_io_ringbuf": 0}, {"completed_unissued": 2}), fixes), {"start_ns": 7})
    back = sp.read(seg)
    assert (back[0] == io).all() and (back[1] == sync).all()
    assert back[2] == ({"lost_io_ringbuf": 0}, {"completed_unissued": 2}) and back[3].unseen == ((5, 3, 4),)
    assert segment_extra(seg) == {"start_ns": 7}
    assert sum(f.stat().st_size for f in seg.iterdir()) < io.nbytes / 3  # ~4x smaller
    # a spool taken over (a restarted recorder) numbers its segments after those there
    again = Spool(tmp_path, 0, compress=True)
    assert again.put((io[:1], sync[:0], ({}, {}), InflightFixes())).name == "000002"
    assert [s.name for s in segments(tmp_path)] == ["000001", "000002"]


def test_an_interval_encoded_from_a_later_origin_leaves_out_and_counts_what_came_before(bits) -> None:
    io = raw_io([100, 200, 300], [10, 10, 10], ["read", "write", "flush"])
    sync = raw_sync([150, 250], [5, 5])
    enc = encode_interval((io, sync, ({}, {}), InflightFixes()), 200, bits, {})
    assert enc.io["ts_ns"].to_pylist() == [0, 100] and enc.sync["ts_ns"].to_pylist() == [50]
    assert enc.before_t0 == 2


def test_a_reaps_untracked_slots_are_neither_rows_nor_counted_before_the_origin(bits) -> None:
    """Any process's io_getevents on the machine sends its reap's slots; those whose iocb no captured
    io_submit tracked are marked IOFP_NO_CALL with whatever time the slot held (0 mostly). A recorder
    beside another engineer's libaio fio counted them as requests before the incident's start."""
    io = raw_io([300, 400], [10, 10], ["read", "read"])
    sync = raw_sync([0, 0, 350, 100], [0, 0, 5, 5])
    sync["call"] = [NO_CALL, NO_CALL, DATA_CALL_BASE + DATA_CALLS.index("pread64"), 0]
    enc = encode_interval((io, sync, ({}, {}), InflightFixes()), 200, bits, {})
    assert enc.io.num_rows == 2 and enc.calls.num_rows == 1 and enc.sync is None
    assert enc.before_t0 == 1  # the fsync entered at 100, before the origin: the only one left out
