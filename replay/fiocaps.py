"""What the installed fio can do, probed by running it (never assumed from a distro release).

Only the capabilities the converter and runner depend on: the version (for provenance) and
whether `read_iolog` accepts `trim` lines (fio >= 3.34, commit dd6500e9; 3.33 prints
`bad ddir: 2` and drops the trim, swallowing its time gap).
"""

from __future__ import annotations

import re
import shutil
import subprocess
from dataclasses import dataclass
from functools import cache

from iofp.errors import MissingCapability

TRIM_IN_IOLOG = (3, 34)  # read_iolog accepts `trim` from fio-3.34 (dd6500e9, issue #769)


@dataclass(frozen=True)
class FioCaps:
    path: str
    version: str  # as fio prints it, e.g. "fio-3.33"
    numeric: tuple[int, int]

    @property
    def iolog_trim(self) -> bool:
        return self.numeric >= TRIM_IN_IOLOG


def parse_version(text: str) -> tuple[int, int]:
    m = re.search(r"fio-(\d+)\.(\d+)", text)
    return (int(m.group(1)), int(m.group(2))) if m else (0, 0)


@cache
def probe(binary: str = "fio") -> FioCaps:
    """Run `fio --version`; raise MissingCapability when there is no usable fio."""
    path = shutil.which(binary)
    if path is None:
        raise MissingCapability(f"{binary} not found; install it (apt install fio) or run scripts/setup.sh")
    try:
        out = subprocess.run([path, "--version"], capture_output=True, text=True, timeout=30).stdout.strip()
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MissingCapability(f"{path} --version failed ({e}); reinstall fio") from None
    return FioCaps(path=path, version=out, numeric=parse_version(out))
