"""A cap is not demand (fingerprint/latency.py, classify.py): a 4 KiB random read capped at 3,000 IOPS
by blk-throttle and one that asks for 3,000 IOPS of an uncapped device get different bound verdicts,
and the capped one shows what the application waited (fio's clat p99, within 10%), which no block
request's time shows: blk-throttle holds a bio before the block layer's first tracepoint."""

from __future__ import annotations

import signal
import time
from pathlib import Path

import lab
import pytest
from conftest import THROTTLE_IOPS, needs_fio, needs_root
from helpers import MEASURE_NICE

from fingerprint.api import fingerprint_trace
from fingerprint.frame import Options
from iofp.fingerprint_doc import Fingerprint
from replay.fio.launcher import fio_json

SECOND = 1_000_000_000


def captured_read(dev: str, tmp: Path, name: str, group: Path | None, *opts: str) -> tuple[Fingerprint, dict]:
    """4 KiB random reads at QD32 on `dev` (in the blkio group `group`, if given; with fio `opts`),
    captured for 4 s from 2 s in, and ended (SIGINT: fio reports what it did) once the capture is: the
    whole trace is the run's steady middle, however long the probes take to load. The fingerprint and
    fio's JSON."""
    from bpf import CaptureOptions, start_capture

    out = tmp / f"{name}.fio.json"
    # at MEASURE_NICE: the demand is the job's, not a busy machine's
    args = [f"--name={name}", f"--filename={dev}", "--rw=randread", "--bs=4k", "--direct=1",
            "--ioengine=libaio", "--iodepth=32", "--time_based", "--runtime=120", "--randrepeat=1",
            "--percentile_list=50:99", "--output-format=json", f"--output={out}", *opts]  # fmt: skip
    with lab.fio_running(*args, preexec_fn=lab.join(group, MEASURE_NICE)) as fio:
        time.sleep(2)
        with start_capture(CaptureOptions(output=tmp / name, devices=[dev.removeprefix("/dev/")])) as bg:
            time.sleep(4)
            bg.stop()
        fio.send_signal(signal.SIGINT)
        assert fio.wait(timeout=60) in (0, 128)  # 128: fio's exit on a SIGINT, its report written
    report = fio_json(out.read_text())  # after its "fio: terminating on signal 2" line
    assert report is not None, out.read_text()
    return fingerprint_trace(tmp / name, Options(window_ns=SECOND)), report


@needs_root
@needs_fio
def test_a_capped_read_is_a_cap_and_a_paced_one_is_demand(throttled, loop_device, tmp_path):
    dev, group = throttled
    capped, fio_capped = captured_read(dev, tmp_path, "capped", group)
    paced, _ = captured_read(loop_device, tmp_path, "paced", None, f"--rate_iops={THROTTLE_IOPS}")
    for fp in (capped, paced):  # the same demand, as a trace of the device sees it
        assert fp.whole.shape.name == "OLTP point-read"
        assert fp.whole.intensity.iops == pytest.approx(THROTTLE_IOPS, rel=0.05)
    c, p = capped.whole.bound, paced.whole.bound
    print(c.why, p.why, sep="\n")
    assert (c.verdict, p.verdict) == ("capped", "IOPS-bound")
    # QD32 held at the cap: some 30 reads waiting above the device, by Little's law
    assert c.numbers["waiting_requests"] > 20
    assert c.why.startswith(f"held at {capped.whole.intensity.iops:,.0f} IOPS with ")
    assert "a cap, not your demand" in c.why
    # the paced run's calls wait a little for their reaping (0.08 requests quiet, 1.1 beside two CPU
    # hogs), far less than the capped run's. Their share of the calls' time is no figure to hold: a RAM
    # loop answers in microseconds, so the reaping alone made 65% of it in a quiet run (under WAIT_MIN
    # requests, not capped)
    assert "the device keeps up" in p.why
    assert p.numbers["waiting_requests"] < c.numbers["waiting_requests"] / 10
    # what the application waited: fio's own clat p99 (~100 ms: the throttle's slices), not the
    # device's ~0.5 ms, which is all a block request's time (or its queue time) can show
    clat_p99_us = fio_capped["jobs"][0]["read"]["clat_ns"]["percentile"]["99.000000"] / 1e3
    app, device = capped.whole.app_latency["all"], capped.whole.latency["all"]
    assert app.p99_us == pytest.approx(clat_p99_us, rel=0.10)
    assert device.p99_us < clat_p99_us / 20 and capped.whole.queue_latency["all"].p99_us < clat_p99_us / 20
