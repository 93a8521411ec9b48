"""`iofp record --dump DIR`: ask the recorder running into DIR to save an incident now (SIGUSR1)."""

from __future__ import annotations

import json
import os
import signal
import time
from pathlib import Path

from iofp.errors import BadInput, OutputFailed
from record.incident import INCIDENTS
from record.options import running

WAIT_S = 10.0


def dump(root: Path, wait_s: float = WAIT_S) -> Path:
    """The incident the running recorder opened (or extended) for this request."""
    root = Path(root)
    pid = running(root)
    if pid is None:
        raise BadInput(f"{root}: no recorder is running there; start one with iofp record -o {root}")
    asked = time.time_ns()
    os.kill(pid, signal.SIGUSR1)
    deadline = time.monotonic() + wait_s
    while time.monotonic() < deadline:
        time.sleep(0.1)
        try:
            status = json.loads((root / "status.json").read_text())
        except (OSError, ValueError):
            continue
        if status.get("at_ns", 0) <= asked:
            continue  # not yet a second since the request
        if opened := status["incidents"]["open"]:
            return Path(opened)
        raise OutputFailed(f"the recorder (pid {pid}) saved no incident: "
                           f"{'; '.join(status['incidents']['suppressed']) or 'see its log'}")  # fmt: skip
    raise OutputFailed(f"the recorder (pid {pid}) did not answer within {wait_s:g}s; see its log "
                       f"(journalctl -u iofp-recorder) and {root / INCIDENTS}")  # fmt: skip
