"""A real S3 server process for the tests: moto's standalone server (`moto_server`, as s3fs's own
tests use it) on a free loopback port, its endpoint handed to iofp through AWS_ENDPOINT_URL.

moto keeps objects in memory; to survive being killed (the outage tests), the server process
(tests/s3_restartable.py: moto's own threaded server) records every request it accepted to a file
(moto's recorder) and a restarted one replays that file before it opens its port, so what the store
acknowledged before the kill is there after it, as on a real store's disk.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.request
from collections.abc import Iterator
from pathlib import Path

import pytest

from iofp import objstore

BUCKET = "iofp-fleet"
MOTO = Path(sys.executable).with_name("moto_server")  # installed with moto[server]
RESTARTABLE = Path(__file__).with_name("s3_restartable.py")


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class S3Server:
    def __init__(self, workdir: Path) -> None:
        if not MOTO.exists() and shutil.which("moto_server") is None:
            pytest.skip("needs moto_server (pip install 'moto[server]'; scripts/setup.sh installs it)")
        self.port = _free_port()
        self.url = f"http://127.0.0.1:{self.port}"
        self.recording = workdir / "moto-recording.jsonl"
        self.log = workdir / "moto.log"
        self.proc: subprocess.Popen[bytes] | None = None

    def start(self) -> None:
        env = {**os.environ, "MOTO_ENABLE_RECORDING": "1", "MOTO_RECORDER_FILEPATH": str(self.recording)}
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [sys.executable, str(RESTARTABLE), str(self.port)], stdout=log, stderr=log, env=env
            )
        deadline = time.monotonic() + 30
        while time.monotonic() < deadline:
            with contextlib.suppress(OSError):
                urllib.request.urlopen(f"{self.url}/moto-api/", timeout=1).read()
                break
            time.sleep(0.1)
        else:
            raise RuntimeError(f"moto's server did not start on {self.url}; see {self.log}")

    def kill(self) -> None:
        """SIGKILL: the store goes away mid-request, as a crashed or partitioned one does."""
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGKILL)
            self.proc.wait()
        self.proc = None

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.terminate()
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()
        self.proc = None


@contextlib.contextmanager
def s3_server(workdir: Path, bucket: str = BUCKET) -> Iterator[S3Server]:
    """A started server with `bucket` made, and the environment pointing iofp at it (restored after)."""
    server = S3Server(workdir)
    # No instance-metadata lookup (botocore would ask 169.254.169.254 for credentials), no ~/.aws.
    keys = ("AWS_ENDPOINT_URL", "AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY", "AWS_DEFAULT_REGION",
            "AWS_EC2_METADATA_DISABLED", "AWS_CONFIG_FILE", "AWS_SHARED_CREDENTIALS_FILE")  # fmt: skip
    values = (server.url, "testing", "testing", "us-east-1", "true", "/nonexistent", "/nonexistent")
    saved = {k: os.environ.get(k) for k in (*keys, "AWS_ENDPOINT_URL_S3", "AWS_PROFILE")}
    os.environ.update(dict(zip(keys, values, strict=True)))
    for k in ("AWS_ENDPOINT_URL_S3", "AWS_PROFILE"):
        os.environ.pop(k, None)
    objstore.reset_client()
    server.start()
    try:
        objstore.client().create_bucket(Bucket=bucket)
        yield server
    finally:
        server.stop()
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v
        objstore.reset_client()
