"""Signals that ask a command to stop, turned into a flag the work checks at safe points.

SIGINT (Ctrl-C), SIGTERM (kill, systemd) and SIGHUP (the terminal went away) do not end iofp
wherever it happens to be: they set a flag, and the command stops where what it has written is
whole, putting back anything it set aside. That is what lets `--force` promise that the trace it
replaces is either still there or replaced by a complete one, whatever the moment of the signal.
"""

from __future__ import annotations

import signal
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from iofp.errors import Interrupted

STOP_SIGNALS = (signal.SIGINT, signal.SIGTERM, signal.SIGHUP)


class StopRequest:
    """Set by a stop signal (or by the caller's own event); `signum` says which signal, if any."""

    def __init__(self, event: threading.Event | None = None) -> None:
        self.event = event or threading.Event()
        self.signum: int | None = None

    def is_set(self) -> bool:
        return self.event.is_set()

    def interrupted(self, what: str) -> Interrupted:
        """The error for stopping here: `what` says what was kept ("nothing was written")."""
        by = f" by {signal.Signals(self.signum).name}" if self.signum else ""  # else: by the caller's event
        return Interrupted(self.signum or signal.SIGINT, f"stopped{by}: {what}")

    def check(self, what: str) -> None:
        if self.event.is_set():
            raise self.interrupted(what)


@contextmanager
def stop_on_signals(event: threading.Event | None = None) -> Iterator[StopRequest]:
    """Within the block, SIGINT, SIGTERM and SIGHUP set the returned request instead of ending the
    process; the previous handlers are back when it ends (so install it before anything is set
    aside, and leave it after the last file is in place). Nested in another (a command that holds
    them until it has printed its output), it shares the outer request. Outside the main thread
    signals cannot be handled: the request is then set only through `event`. A SIGHUP ignored on
    entry (nohup) stays ignored: the user asked the command to outlive its terminal."""
    global _active
    if threading.current_thread() is not threading.main_thread():
        yield StopRequest(event)
        return
    if _active is not None and event in (None, _active.event):
        yield _active  # a command already holds them (until its output is printed): share its flag
        return
    stop = StopRequest(event)

    def handler(signum: int, _frame: Any) -> None:
        stop.signum = signum
        stop.event.set()

    previous = {}
    for s in STOP_SIGNALS:
        before = signal.getsignal(s)
        if s == signal.SIGHUP and before == signal.SIG_IGN:
            continue
        previous[s] = before
        signal.signal(s, handler)
    outer, _active = _active, stop
    try:
        yield stop
    finally:
        _active = outer
        for s, h in previous.items():
            signal.signal(s, h)


_active: StopRequest | None = None  # the innermost request whose handlers are installed


_received: int | None = None  # the stop signal that ended the command (ending_on_signals)


@contextmanager
def ending_on_signals() -> Iterator[None]:
    """Around a whole command: SIGINT, SIGTERM and SIGHUP raise Interrupted where the command is,
    instead of ending the process at once (SIGTERM's default), so that every `finally` runs and the
    scratch directory (iofp/scratch.py: a DuckDB spill can be GBs) is removed on the way out. A
    command's own stop_on_signals, inside, takes them over while it holds them. Only in the main
    thread; a SIGHUP ignored on entry (nohup) stays ignored."""
    global _received
    _received = None
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum: int, _frame: Any) -> None:
        global _received
        _received = signum
        raise ended_by(signum)

    previous = {}
    for s in STOP_SIGNALS:
        before = signal.getsignal(s)
        if s == signal.SIGHUP and before == signal.SIG_IGN:
            continue
        previous[s] = before
        signal.signal(s, handler)
    try:
        yield
    finally:
        for s, h in previous.items():
            signal.signal(s, h)


def ended_by(signum: int) -> Interrupted:
    return Interrupted(signum, f"stopped by {signal.Signals(signum).name}; what was written before is whole")


def received() -> int | None:
    """The stop signal that ended the command, if one did (for an error a library made of it: DuckDB
    turns an exception raised in a query into its own "Query interrupted")."""
    return _received
