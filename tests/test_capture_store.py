"""`iofp capture -o s3://LAKE`: a live capture on a lab loop device shipped into a real S3 server
process (moto's, on a loopback port) as each file completes, filed under host=/service=/date=."""

from __future__ import annotations

import json
import socket
import subprocess
import sys
import time

import pytest
from conftest import REPO, needs_fio, needs_root
from lab import start_fio
from s3server import BUCKET, s3_server

from iofp import objstore
from iofp.contract import MANIFEST, open_trace

IOFP = [sys.executable, "-m", "cli.app"]


@pytest.fixture(scope="module")
def s3(tmp_path_factory):
    with s3_server(tmp_path_factory.mktemp("s3")) as server:
        yield server


@needs_root
@needs_fio
def test_a_capture_to_a_store_ships_its_trace_into_the_lake(s3, tmp_path, loop_device, monkeypatch):
    monkeypatch.setenv("IOFP_SPOOL_DIR", str(tmp_path / "spool"))
    load = start_fio(
        "--name=bg", f"--filename={loop_device}", "--direct=1", "--rw=randrw", "--bs=4k", "--size=64m",
        "--thread", "--ioengine=libaio", "--iodepth=4", "--time_based", "--runtime=20",
        "--rate_iops=1000", "--fsync=50", "--output=/dev/null",
    )  # fmt: skip
    try:
        lake = f"s3://{BUCKET}/lake"
        r = subprocess.run(
            [*IOFP, "capture", "--device", loop_device.removeprefix("/dev/"), "--duration", "3s",
             "--rotate", "1s", "--label", "service=db", "-o", lake, "--json", str(tmp_path / "s.json")],
            capture_output=True, text=True, cwd=REPO, timeout=120,
        )  # fmt: skip
    finally:
        load.kill()
        load.wait()
    assert r.returncode == 0, r.stderr
    day = time.strftime("%Y-%m-%d", time.gmtime())
    place = objstore.url_of(f"{lake}/host={socket.gethostname()}/service=db/date={day}")
    assert "Shipped " in r.stdout and str(place) in r.stdout
    summary = json.loads((tmp_path / "s.json").read_text())
    keys = [k.rsplit("/", 2)[-2:] for k, _ in objstore.listing(place)]
    assert [MANIFEST] in [k[-1:] for k in keys] and sum(k[0] == "io" for k in keys) >= 3
    trace = open_trace(str(place))
    assert trace.num_rows() == summary["io_events"] > 1000
    assert not list((tmp_path / "spool" / "queue").glob("*.json"))  # every entry shipped
    assert not any((tmp_path / "spool" / "traces").rglob("*.parquet"))  # and its files gone
