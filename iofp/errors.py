"""One error hierarchy. The library raises these; only `cli.app.main` turns them into exit codes."""


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


class MissingCapability(IofpError):
    """The machine lacks something (root, tracefs, bcc, fio). Exit status 3; `iofp doctor` says how to fix."""

    exit_code = 3


class Refused(BadInput):
    """A safety check refused the operation (e.g. replay onto a mounted device)."""
