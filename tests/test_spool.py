"""The capture's spool (bpf/spool.py): intervals that end while the writer is busy wait on disk, raw,
and are encoded when the CPU is free; every request still lands in the trace exactly once, and what
a capture killed with -9 had spooled, `iofp recover` adds.

The writer runs at SCHED_IDLE, so a busy loop on every CPU starves it: with fio at full rate beside
them, every interval after the first (which the idle writer takes in memory) must go to the spool."""

from __future__ import annotations

import json
import signal
import subprocess
import time
from pathlib import Path

import pyarrow.parquet as pq
import pytest
from conftest import REPO, assert_tracer_lost_nothing, needs_fio, needs_root
from helpers import IOFP, cpu_hogs, run_iofp
from lab import start_fio

from bpf import witness
from bpf.record import IO_DTYPE
from bpf.spool import CAPTURE, segments
from iofp.contract import MANIFEST, SPOOL, footer_meta, open_trace


def reads_done(dev: str) -> int:
    return int(Path(f"/sys/block/{dev.removeprefix('/dev/')}/stat").read_text().split()[0])


def full_rate_reads(dev: str, seconds: int) -> subprocess.Popen[str]:
    return start_fio("--name=peak", f"--filename={dev}", "--direct=1", "--rw=randread", "--bs=4k",
                     "--ioengine=libaio", "--iodepth=32", "--time_based", f"--runtime={seconds}",
                     "--norandommap", "--randrepeat=0", "--output=/dev/null",
                     stdout=None, stderr=None)  # fmt: skip


def start_capture(dev: str, out: Path, *extra: str) -> subprocess.Popen[str]:
    cap = subprocess.Popen(
        [*IOFP, "capture", "--device", dev.removeprefix("/dev/"), "-o", str(out), "--rotate", "0.5s",
         "--json", "-", *extra],
        stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True, cwd=REPO,
    )  # fmt: skip
    assert cap.stderr is not None
    line = cap.stderr.readline()  # "iofp: recording ..." once the probes are attached
    assert line.startswith("iofp: recording"), line
    return cap


def watch_spool(out: Path, load: subprocess.Popen[str], after: float = 0.5) -> int:
    """The most segments seen in the spool at once while `load` runs and `after` seconds beyond: not
    a fixed time from its launch, which a fio slow to start under the hogs could outlast (a CI run
    saw no segment at all; 4-5 at once in every run here)."""
    most, end = 0, None
    while end is None or time.monotonic() < end:
        most = max(most, len(segments(out)))
        if end is None and load.poll() is not None:
            end = time.monotonic() + after
        time.sleep(0.05)
    return most


def file_rows(out: Path) -> int:
    return sum(pq.read_metadata(p).num_rows for p in (out / "io").glob("part-*.parquet"))


@needs_root
@needs_fio
def test_a_starved_writer_spools_and_every_request_lands_once(tmp_path: Path, loop_device: str) -> None:
    out = tmp_path / "t"
    with cpu_hogs():
        cap = start_capture(loop_device, out)
        before = reads_done(loop_device)
        fio = full_rate_reads(loop_device, 3)
        most = watch_spool(out, fio)
        fio.wait()
        done = reads_done(loop_device) - before
        # ended once fio has, not after a fixed time (was 6 s), which a fio slow to start beside the
        # hogs could outlast: its later reads would (rightly) not be in the trace
        cap.send_signal(signal.SIGINT)
        stdout, stderr = cap.communicate(timeout=120)
    assert cap.returncode == 0, stderr
    summary = json.loads(stdout)
    # at least one interval waited on disk: how many at once depends on how much CPU the hogs left
    # the idle-priority writer (2-5 here; 1 once, on a run where fio itself got 40% fewer reads done)
    assert most >= 1, f"the writer was starved, yet no interval was spooled ({done} reads)"
    assert_tracer_lost_nothing(summary["loss"], summary["io_events"])
    # every request fio completed, once; the spool encoded and removed when the capture ended
    assert summary["io_events"] == file_rows(out) == done > 0
    assert not (out / SPOOL).exists()
    assert (out / MANIFEST).exists()
    assert_tracer_lost_nothing(open_trace(out).meta.loss, summary["io_events"])


@needs_root
@needs_fio
def test_recover_adds_what_a_killed_capture_had_spooled(tmp_path: Path, loop_device: str) -> None:
    out = tmp_path / "t"
    with cpu_hogs():
        cap = start_capture(loop_device, out)
        fio = full_rate_reads(loop_device, 30)
        try:
            deadline = time.monotonic() + 30
            while len(segments(out)) < 3 and time.monotonic() < deadline:
                time.sleep(0.05)
            cap.send_signal(signal.SIGKILL)
            cap.wait()
        finally:
            fio.kill()
            fio.wait()
    witness.remove_orphans()  # kill -9 left the capture's witness behind (see test_capture_cli)
    spooled = segments(out)
    assert len(spooled) >= 3
    # a segment whose file the writer had written when the kill came (before it removed the segment)
    # is in the trace already: its footer says so, and recover must not add it again
    encoded = {footer_meta(p).extra.get("spool_segment") for p in (out / "io").glob("part-*.parquet")}
    left = [s for s in spooled if int(s.name) not in encoded]
    records = sum((s / "io.bin").stat().st_size for s in left) // IO_DTYPE.itemsize
    rows_before = file_rows(out)

    code, stdout, stderr = run_iofp("recover", str(out), "--json", "-")
    assert code == 0, stderr
    summary = json.loads(stdout)
    assert summary["io_events"] == records > 0
    assert file_rows(out) == rows_before + records
    assert not (out / SPOOL).exists()
    assert not (out / MANIFEST).exists()  # the interval the capture held in memory is lost: incomplete
    trace = open_trace(out)
    assert "did not finish" in trace.meta.extra["incomplete"]
    assert trace.num_rows("io") == rows_before + records
    io = pq.read_table(out / "io", columns=["ts_ns", "offset"])
    assert io.group_by(["ts_ns", "offset"]).aggregate([]).num_rows == io.num_rows  # each request once
    # a second recover finds nothing left: one line, exit 2
    code, _, stderr = run_iofp("recover", str(out))
    assert code == 2
    assert stderr.strip() == f"iofp: {out}: nothing to recover (no spooled records in {out / SPOOL})"


def test_recover_refuses_a_damaged_spool_and_a_running_capture_in_one_line(tmp_path: Path) -> None:
    out = tmp_path / "t"
    seg = out / SPOOL / "000001"
    seg.mkdir(parents=True)
    (seg / "io.bin").write_bytes(b"")
    code, _, stderr = run_iofp("recover", str(out))
    assert code == 2
    why = "capture.json is unreadable (No such file or directory); cannot encode it"
    assert stderr == f"iofp: {out / SPOOL}: {why}\n"
    assert "Traceback" not in stderr
    # spooled by a capture that is still running (an iofp process): it encodes its own spool
    running = subprocess.Popen(["bash", "-c", "exec -a iofp-capture sleep 30"])
    try:
        # Popen returns once bash runs; its exec of sleep may still be under way (the cmdline empty),
        # which a busy CI machine once caught: recover took the pid for gone
        cmdline = Path(f"/proc/{running.pid}/cmdline")
        deadline = time.monotonic() + 10
        while not cmdline.read_bytes().startswith(b"iofp-capture") and time.monotonic() < deadline:
            time.sleep(0.01)
        doc = {"pid": running.pid, "t0_ns": 0, "bits": {}, "names": {}, "meta": {}}
        (out / SPOOL / CAPTURE).write_text(json.dumps(doc))
        code, _, stderr = run_iofp("recover", str(out))
    finally:
        running.kill()
        running.wait()
    assert code == 2
    why = f"{out} is being captured (pid {running.pid}); it encodes its spool when it ends"
    assert stderr.strip() == f"iofp: {why}"


@pytest.mark.parametrize("value", ["-1", "lots", "0.5x"])
def test_a_bad_spool_size_is_one_line(tmp_path: Path, value: str) -> None:
    code, _, stderr = run_iofp("capture", "-o", str(tmp_path / "t"), "--spool", value)
    assert code == 2
    assert stderr.strip() == f"iofp: --spool {value!r} is not a size; use e.g. 2GiB, 500MiB or 0"


def test_a_bad_witness_mode_is_one_line(tmp_path: Path) -> None:
    code, _, stderr = run_iofp("capture", "-o", str(tmp_path / "t"), "--witness", "some")
    assert code == 2
    assert stderr.strip() == "iofp: --witness 'some': use one of agent, all, off"
    assert not (tmp_path / "t").exists()


@pytest.mark.parametrize("dtype", ["io", "sync"])
def test_a_compressed_segment_is_its_records_byte_major(dtype: str, tmp_path: Path) -> None:
    """The packed bytes are the records' byte-major transpose, zstd'ed: the format the rings and spools
    already on disk hold (read back by the same _unpack), however _pack computes it."""
    import numpy as np
    import pyarrow as pa

    from bpf.record import SYNC_DTYPE
    from bpf.spool import _pack, _unpack

    dt = IO_DTYPE if dtype == "io" else SYNC_DTYPE
    rng = np.random.default_rng(7)
    recs = rng.integers(0, 256, 1_037 * dt.itemsize, dtype=np.uint8).view(dt)  # not a multiple of 512
    packed = _pack(recs)
    raw = pa.Codec("zstd").decompress(packed, decompressed_size=recs.nbytes, asbytes=True)
    assert raw == recs.view(np.uint8).reshape(len(recs), dt.itemsize).T.tobytes()
    (tmp_path / "io.zst").write_bytes(packed)
    assert _unpack(tmp_path / "io.zst", recs.nbytes, dt).tobytes() == recs.tobytes()
