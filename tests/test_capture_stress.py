"""Every request exactly once, with its latency, at the device's full rate and with both CPUs busy.

4k random reads at QD32 and 4k random writes with fsync=1 run together on a RAM loop device for a
few seconds (~1 M requests/10 s here) next to a CPU hog on every CPU, while a private tracefs
instance records block_rq_complete for the same device. The trace must hold every completed request
the instance saw (op, sector, size), except the empty PREFLUSH requests that complete without ever
being issued (counted, by design), and the counts must agree with /sys/block/NAME/stat.

On the lab VM the kernel runs no BPF program while the VM agent's threads are current, not even in
a softirq that interrupts them, so iofp's program misses every completion processed there
(bench/completion_skips.py): 1 in ~4,000-90,000 here. Each such request is still recorded, and its
completion time comes from iofp's tracefs witness (bpf/witness.py): every row has a latency. The
witness's own path is also driven on purpose, with a program told to ignore some or all completions.
"""

from __future__ import annotations

import re
import shutil
import statistics
import time
import uuid
from collections import Counter
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest
from conftest import is_root
from helpers import cpu_hogs
from lab import destroy_loop, fio, fio_running, make_loop

from iofp.contract import open_trace

pytestmark = [
    pytest.mark.skipif(not is_root(), reason="needs root (eBPF capture, loop devices)"),
    pytest.mark.skipif(shutil.which("fio") is None, reason="needs fio (apt install fio)"),
]

TRACEFS = Path("/sys/kernel/tracing")
SECONDS = 6
COMPLETE = re.compile(r"\s([\d.]+): block_rq_complete: \d+,\d+ (\S+) \(.*?\) (\d+) \+ (\d+)")
Key = tuple[str, int, int]


def _key(rwbs: str, sector: int, size: int) -> Key:
    """(op letter, sector, bytes); flushes (F, FF) have no position."""
    op = rwbs.replace("F", "")[:1] or "F"
    return (op, 0 if op == "F" else sector, size)


@contextmanager
def tracefs_oracle(dev: str) -> Iterator[list[tuple[Key, int]]]:
    """A private tracefs instance recording the device's completions (trace_clock mono); the list
    it yields is filled with (request, completion time in µs-precise ns) once the block exits."""
    if not (TRACEFS / "instances").is_dir():
        pytest.skip(f"needs tracefs mounted at {TRACEFS} (iofp doctor mounts it)")
    sysfs = Path("/sys/block") / dev.removeprefix("/dev/") / "dev"
    major, minor = (int(x) for x in sysfs.read_text().split(":"))
    inst = TRACEFS / "instances" / f"iofp-stress-{uuid.uuid4().hex[:8]}"
    inst.mkdir()
    ev = inst / "events" / "block" / "block_rq_complete"
    seen: list[tuple[Key, int]] = []
    try:
        (inst / "buffer_size_kb").write_text("131072")  # per CPU; ~60 B/event, no overwrite
        (inst / "trace_clock").write_text("mono")
        (ev / "filter").write_text(f"dev == {(major << 20) | minor}")
        (ev / "enable").write_text("1")
        yield seen
        (inst / "tracing_on").write_text("0")
        with open(inst / "trace") as f:
            for line in f:
                if m := COMPLETE.search(line):
                    key = _key(m[2], int(m[3]), int(m[4]) * 512)
                    seen.append((key, round(float(m[1]) * 1e6) * 1000))
    finally:
        ev.joinpath("enable").write_text("0")
        inst.rmdir()


def rows(out: Path, columns: list[str]) -> pa.Table:
    return pa.concat_tables(pq.read_table(p, columns=columns) for p in open_trace(out).files["io"])


def row_keys(io: pa.Table) -> list[Key]:
    cols = (io[c].to_pylist() for c in ("rwbs", "offset", "size"))
    return [_key(r, o // 512, s) for r, o, s in zip(*cols, strict=True)]


def test_full_rate_mixed_load_under_a_cpu_hog_matches_tracefs_request_for_request(tmp_path: Path) -> None:
    from bpf import CaptureOptions, start_capture

    dev, backing = make_loop(512)
    name = dev.removeprefix("/dev/")
    try:
        with tracefs_oracle(dev) as oracle_events, cpu_hogs():
            stat0 = [int(x) for x in Path(f"/sys/block/{name}/stat").read_text().split()]
            common = ["--direct=1", "--ioengine=libaio", "--time_based", f"--runtime={SECONDS}",
                      f"--filename={dev}", "--output=/dev/null"]  # fmt: skip
            opts = CaptureOptions(output=tmp_path / "t", devices=[name], rotate_s=1.0)
            with start_capture(opts) as bg:
                with (fio_running("--name=rr", "--rw=randread", "--bs=4k", "--iodepth=32", "--size=256m",
                                  *common) as rr,
                      fio_running("--name=ws", "--rw=randwrite", "--bs=4k", "--iodepth=1", "--fsync=1",
                                  "--offset=256m", "--size=128m", *common) as ws):  # fmt: skip
                    assert [j.wait(timeout=120) for j in (rr, ws)] == [0, 0]
                summary = bg.stop()
            stat1 = [int(x) for x in Path(f"/sys/block/{name}/stat").read_text().split()]
    finally:
        destroy_loop(dev, backing)

    # The oracle itself is exact: every completion the block layer accounted, nothing else
    oracle = Counter(k for k, _ in oracle_events)
    reads, writes, flushes = stat1[0] - stat0[0], stat1[4] - stat0[4], stat1[15] - stat0[15]
    assert sum(oracle.values()) == reads + writes + flushes
    assert reads > 50_000, "the load did not run at full rate"

    io = rows(tmp_path / "t", ["rwbs", "offset", "size", "lat_ns"])
    got = Counter(row_keys(io))
    unissued = summary.counts["completed_unissued"]  # empty PREFLUSH requests: never issued, not rows
    expected = oracle.copy()
    expected[("W", 0, 0)] -= unissued
    assert +expected == got, (
        f"missing {sum((expected - got).values())}, extra {sum((got - expected).values())}; "
        f"loss {summary.loss}; counts {summary.counts}"  # a loss the capture counted, or rows it dropped
    )
    assert summary.io_events == io.num_rows == reads + writes + flushes - unissued
    # Completions the program never saw got their time from the witness: every row has a latency
    assert io["lat_ns"].null_count == summary.loss["lost_completions"] == 0, summary.counts
    assert summary.counts["recovered_completions"] == summary.counts["unseen_completions"]
    assert summary.lost_events == 0, summary.loss
    c = summary.counts
    print(f"stress: {io.num_rows} rows, {c['unseen_completions']} unseen by the program, "
          f"{c['recovered_completions']} timed by the witness")  # fmt: skip


def completion_offsets(io: pa.Table, oracle_events: list[tuple[Key, int]]) -> list[int]:
    """Per row, its completion time (ts_ns + lat_ns) minus the oracle's for the same request, less
    the median of that difference (the capture's clock origin); rows in issue order meet the
    oracle's events for the same request in completion order, which at QD1 is the same."""
    pending: dict[Key, list[int]] = {}
    for key, ts in oracle_events:
        pending.setdefault(key, []).append(ts)
    diffs = []
    for key, ts, lat in zip(row_keys(io), io["ts_ns"].to_pylist(), io["lat_ns"].to_pylist(), strict=True):
        diffs.append(ts + lat - pending[key].pop(0))
    origin = statistics.median(diffs)
    return [d - origin for d in diffs]


@pytest.mark.parametrize("every", [25, 1], ids=["every-25th", "all"])
def test_completions_the_program_never_sees_get_the_witness_time(tmp_path: Path, every: int) -> None:
    """The program is told to ignore every Nth completion (fault injection; N=1: every one, so that the
    requests still in flight at the end are found there, not by a later request); the witness
    records every task's completions. At 1,000 IOPS and QD1 a request's pointer comes back ~1 ms
    later, so a latency taken from that instead of the witness would be off by ~1 ms."""
    from bpf import CaptureOptions, start_capture
    from bpf.loader import KernelOptions

    dev, backing = make_loop(256)
    try:
        with tracefs_oracle(dev) as oracle_events:
            opts = CaptureOptions(output=tmp_path / "t", devices=[dev.removeprefix("/dev/")], rotate_s=1.0)
            with start_capture(opts, kernel=KernelOptions(witness="all", unseen_every=every)) as bg:
                fio("--name=q", f"--filename={dev}", "--direct=1", "--rw=randrw", "--bs=4k",
                    "--ioengine=psync", "--rate_iops=1000", "--number_ios=3000", "--size=128m",
                    "--output=/dev/null", timeout=60)  # fmt: skip
                summary = bg.stop()
    finally:
        destroy_loop(dev, backing)
    io = rows(tmp_path / "t", ["ts_ns", "lat_ns", "rwbs", "offset", "size", "inflight"])
    assert Counter(row_keys(io)) == Counter(k for k, _ in oracle_events)
    assert io["lat_ns"].null_count == summary.loss["lost_completions"] == 0
    unseen = summary.counts["unseen_completions"]
    assert summary.counts["recovered_completions"] == unseen >= io.num_rows // every - 10
    off = completion_offsets(io, oracle_events)
    # A row timed from anything but the completion (the next request, ~1 ms later at QD1) is off by
    # ~1 ms: 1 row in 25 here, every row at N=1. Two probes of one tracepoint can also differ when the
    # vCPU is taken between them: 0-2 rows of 3,000 beyond 200 us in earlier runs, 3 (200-565 us) in a
    # fresh-clone CI run beside a CPU hog. 1% of the rows is far from both.
    assert sum(abs(d) > 200_000 for d in off) <= len(off) // 100, sorted(off, key=abs)[-5:]
    # the kernel counted each missed request in flight until it was found out; the rows say QD1
    assert set(io["inflight"].to_pylist()) == {1}, Counter(io["inflight"].to_pylist())
    assert open_trace(tmp_path / "t").meta.extra["inflight_at_end"] == 0


def test_a_slow_stop_finds_no_completion_missed(tmp_path: Path) -> None:
    """A capture stopped while requests keep completing, each block probe's detach followed by 50 ms
    (beside a CI run and two CPU hogs the stop stretched past a request's life), with the default
    witness (the VM agent's threads only). A request is tracked only while the program that ends it
    is attached (bpf/loader.py block_probes), so none is found out as a completion it missed. With
    block_rq_complete detached first, every request whose pointer a new one took before
    block_io_start was detached was sent as missed, and the witness had no time for it: 140-145
    lost_completions a run here at 2,000 IOPS (1-159 in the signal test of `iofp capture` beside
    that load, without the pause)."""
    from bpf import CaptureOptions, start_capture
    from bpf.loader import KernelOptions

    dev, backing = make_loop(256)
    try:
        opts = CaptureOptions(output=tmp_path / "t", devices=[dev.removeprefix("/dev/")], rotate_s=1.0)
        load = ["--name=bg", f"--filename={dev}", "--direct=1", "--rw=randrw", "--bs=4k", "--size=64m",
                "--ioengine=libaio", "--iodepth=4", "--time_based", "--runtime=60", "--rate_iops=2000",
                "--output=/dev/null"]  # fmt: skip
        with fio_running(*load), start_capture(opts, kernel=KernelOptions(stop_pause_s=0.05)) as bg:
            time.sleep(1.0)
            summary = bg.stop()  # fio still running: requests complete all through the stop
    finally:
        destroy_loop(dev, backing)
    io = rows(tmp_path / "t", ["lat_ns"])
    assert io.num_rows == summary.io_events > 1000, "the load did not run"
    assert summary.loss["lost_completions"] == io["lat_ns"].null_count == 0, summary.counts
    assert summary.counts["recovered_completions"] == summary.counts["unseen_completions"]
    assert summary.lost_events == 0, summary.loss
