"""What the installed fio can do, read from the fio that runs (never assumed from a distro release).

Only the capabilities the converter and runner depend on: the version (for provenance) and
whether `read_iolog` accepts `trim` lines (fio >= 3.34, commit dd6500e9; 3.33 prints
`bad ddir: 2` and drops the trim, swallowing its time gap). The version is read once per process
(iofp/fioversion.py: the doctor reads the same).
"""

from __future__ import annotations

import subprocess
from dataclasses import dataclass

from iofp.errors import MissingCapability
from iofp.fioversion import fio_version

TRIM_IN_IOLOG = (3, 34)  # read_iolog accepts `trim` from fio-3.34 (dd6500e9, issue #769)

@dataclass(frozen=True)
class FioCaps:
    path: str
    version: str  # as fio prints it, e.g. "fio-3.33"
    numeric: tuple[int, int]

    @property
    def iolog_trim(self) -> bool:
        return self.numeric >= TRIM_IN_IOLOG


def installed(binary: str = "fio") -> FioCaps:
    """The installed fio's capabilities; MissingCapability when there is no usable fio."""
    try:
        v = fio_version(binary)
    except (OSError, subprocess.TimeoutExpired) as e:
        raise MissingCapability(f"{binary} --version failed ({e}); reinstall fio") from None
    if v is None:
        raise MissingCapability(f"{binary} not found; install it (apt install fio) or run scripts/setup.sh")
    return FioCaps(path=v.path, version=v.text, numeric=v.numeric)
