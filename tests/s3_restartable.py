"""moto's S3 server as a process that keeps what it acknowledged across a SIGKILL, as a real store
keeps it on disk: every request it takes is appended to $MOTO_RECORDER_FILEPATH (moto's recorder),
and a server started on an existing recording replays it into its state on a private port before it
opens the public one, so no client meets a store that is half restored.

A flaky store on demand: $IOFP_TEST_S3_FAIL_PUT="NEEDLE:N" answers the first N PUTs whose path
holds NEEDLE with a 500, as a store under strain does (the fleet test's retried task).

Usage: python s3_restartable.py PORT (run by tests/s3server.py).
"""

import io
import os
import socket
import sys
import threading
import time
from urllib.parse import unquote

from moto.moto_api import recorder
from moto.moto_api._internal.recorder import models as recorder_models
from moto.moto_server import threaded_moto_server
from moto.moto_server.threaded_moto_server import ThreadedMotoServer


class FailFirstPuts:
    """WSGI middleware: the first `times` PUTs whose path holds `needle` get a 500 (body drained)."""

    def __init__(self, app, needle: str, times: int) -> None:
        self.app, self.needle, self.left = app, needle, times

    def __call__(self, environ, start_response):
        if environ["REQUEST_METHOD"] == "PUT" and self.needle in unquote(environ.get("PATH_INFO", "")) \
                and self.left > 0:  # fmt: skip
            self.left -= 1
            environ["wsgi.input"].read(int(environ.get("CONTENT_LENGTH") or 0))
            start_response("500 Internal Server Error", [("Content-Type", "application/xml")])
            return [b"<Error><Code>InternalError</Code><Message>injected by the test</Message></Error>"]
        return self.app(environ, start_response)


def flaky(make_app):
    """moto's app factory, its app wrapped in FailFirstPuts when the environment asks for it."""
    spec = os.environ.get("IOFP_TEST_S3_FAIL_PUT")
    if not spec:
        return make_app
    needle, _, times = spec.rpartition(":")

    def make(*args, **kwargs):
        return FailFirstPuts(make_app(*args, **kwargs), needle, int(times))

    return make


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def whole_records(path: str) -> None:
    """Drop the record a kill cut short. moto logs a request (a PUT's body with it: 5.6 MB of JSON for
    4 MiB) before it answers it, so a SIGKILL while it writes that line leaves a line without its end,
    which its replay cannot parse (the restart failed: one run of the outage test in many). That
    request was never answered, so the store never took it; a real store's journal drops a torn tail
    the same way."""
    with open(path, "rb+") as f:
        data = f.read()
        whole = data.rfind(b"\n") + 1
        if whole < len(data):
            f.truncate(whole)


class WholeRecord(io.StringIO):
    """The file moto's recorder appends a request to, written in one piece when it is closed, one
    request at a time. moto writes the JSON and its newline in two writes, from each request's own
    thread and file object: two large PUTs at once wrote one's JSON, the other's, then both newlines
    (a line that is two records: the outage test read it back once in many runs, and a replay would
    fail on it)."""

    lock = threading.Lock()

    def __init__(self, path: str) -> None:
        super().__init__()
        self.path = path

    def close(self) -> None:
        if not self.closed:
            with WholeRecord.lock, open(self.path, "a") as f:
                f.write(self.getvalue())
        super().close()


def recorder_open(path, mode="r", *args, **kwargs):
    """`open` as moto's recorder module sees it: its appends are WholeRecords."""
    return WholeRecord(path) if mode == "a+" else open(path, mode, *args, **kwargs)


def main() -> None:
    recorder_models.open = recorder_open  # shadows the builtin in that module only
    port = int(sys.argv[1])
    rec = os.environ["MOTO_RECORDER_FILEPATH"]
    if os.path.exists(rec):
        whole_records(rec)
    if os.path.exists(rec) and os.path.getsize(rec):
        private = free_port()
        restore = ThreadedMotoServer("127.0.0.1", private, verbose=False)
        restore.start()
        recorder.replay_recording(target_host=f"http://127.0.0.1:{private}")  # state is per process
        restore.stop()
    # the public server only: the replay above restores what the store had, faults or not
    threaded_moto_server.DomainDispatcherApplication = flaky(threaded_moto_server.DomainDispatcherApplication)
    ThreadedMotoServer("127.0.0.1", port, verbose=False).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
