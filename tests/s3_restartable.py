"""moto's S3 server as a process that keeps what it acknowledged across a SIGKILL, as a real store
keeps it on disk: every request it takes is appended to $MOTO_RECORDER_FILEPATH (moto's recorder),
and a server started on an existing recording replays it into its state on a private port before it
opens the public one, so no client meets a store that is half restored.

Usage: python s3_restartable.py PORT (run by tests/s3server.py).
"""

import os
import socket
import sys
import time

from moto.moto_api import recorder
from moto.moto_server.threaded_moto_server import ThreadedMotoServer


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def main() -> None:
    port = int(sys.argv[1])
    rec = os.environ["MOTO_RECORDER_FILEPATH"]
    if os.path.exists(rec) and os.path.getsize(rec):
        private = free_port()
        restore = ThreadedMotoServer("127.0.0.1", private, verbose=False)
        restore.start()
        recorder.replay_recording(target_host=f"http://127.0.0.1:{private}")  # state is per process
        restore.stop()
    ThreadedMotoServer("127.0.0.1", port, verbose=False).start()
    print("ready", flush=True)
    while True:
        time.sleep(3600)


if __name__ == "__main__":
    main()
