"""One error hierarchy. The library raises these; only `cli.app.main` turns them into exit codes."""

from __future__ import annotations

import signal
import sys


class IofpError(Exception):
    """Base of every error iofp reports to the user as one line."""

    exit_code = 1


class BadInput(IofpError):
    """The user gave something unusable: a bad flag, file, trace or device. Exit status 2."""

    exit_code = 2


class SchemaMismatch(BadInput):
    """An artifact was written by an iofp whose schema this one cannot read."""


class OutputFailed(IofpError):
    """Writing an artifact failed midway (disk full, I/O error): exit status 1. What was written
    whole before stays valid."""


class Busy(IofpError):
    """A shared resource (the catalog) stayed in use by another process for longer than iofp waits:
    exit status 1; nothing was changed, and the same command run later can succeed."""


class MissingCapability(IofpError):
    """The machine lacks something (root, tracefs, bcc, fio). Exit status 3; `iofp doctor` says how to fix."""

    exit_code = 3


class Refused(BadInput):
    """A safety check refused the operation (e.g. replay onto a mounted device)."""


class Interrupted(IofpError):
    """The user stopped a command with a signal before it finished; the message says what was kept.
    Exit status 128 + the signal's number, as a shell reports a process the signal ended."""

    def __init__(self, signum: int, message: str) -> None:
        super().__init__(message)
        self.signum = signum
        self.exit_code = 128 + signum

    @property
    def signal_name(self) -> str:
        return signal.Signals(self.signum).name


def warn(message: str) -> None:
    """One line on stderr about something the user must know but that does not stop the command
    (a trace that may be incomplete). Errors are raised instead, never printed here."""
    print(f"iofp: warning: {message}", file=sys.stderr, flush=True)
