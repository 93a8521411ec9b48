"""The installed fio and its version, read once per process: the one `fio --version` call.

The doctor (bpf/doctor.py) reports it and replay (replay/fio/capabilities.py) records it and reads
its capabilities from it; both sit above the contracts, so the call lives here rather than in replay's
fio launcher (capture imports no replay). Every other fio run goes through replay/fio/launcher.py.
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

VERSION_TIMEOUT_S = 30


@dataclass(frozen=True)
class FioVersion:
    path: str  # the binary found on PATH
    text: str  # as fio prints it, e.g. "fio-3.33"; "" when it printed nothing
    numeric: tuple[int, int]  # (0, 0) when the text names no version


def parse_version(text: str) -> tuple[int, int]:
    m = re.search(r"fio-(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@cache
def fio_version(binary: str = "fio") -> FioVersion | None:
    """`binary --version`, or None when it is not on PATH; OSError/TimeoutExpired when it cannot run."""
    path = shutil.which(binary)
    if path is None:
        return None
    out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=VERSION_TIMEOUT_S)
    text = out.stdout.strip()
    return FioVersion(path=path, text=text, numeric=parse_version(text))
