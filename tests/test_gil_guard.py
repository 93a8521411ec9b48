"""bpf/gil_guard.py, the capture's watch on its own loop (see bpf/capture.py _GilGuard): a thread at
SCHED_IDLE gets normal priority once the beats stop, idle priority back at the next beat, and the
guard ends when the pipe closes."""

from __future__ import annotations

import os
import threading
import time

from bpf.capture import GIL_GUARD_S, _GilGuard


class _Idle(threading.Thread):
    """A thread that sets itself to SCHED_IDLE and waits, as the capture's writer does off the peak."""

    def __init__(self) -> None:
        super().__init__(daemon=True)
        self.tid, self.hurried = 0, False
        self.ready, self.done = threading.Event(), threading.Event()

    def run(self) -> None:
        self.tid = threading.get_native_id()
        os.sched_setscheduler(0, os.SCHED_IDLE, os.sched_param(0))
        self.ready.set()
        self.done.wait()


def _policy_becomes(tid: int, policy: int, within_s: float) -> bool:
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        if os.sched_getscheduler(tid) == policy:
            return True
        time.sleep(0.01)
    return os.sched_getscheduler(tid) == policy


def test_a_stalled_loop_lends_the_idle_writer_normal_priority_until_it_beats_again() -> None:
    writer = _Idle()
    writer.start()
    writer.ready.wait(5)
    guard = _GilGuard()
    try:
        guard.beat(writer)  # type: ignore[arg-type]  # what the guard reads of a writer: tid, hurried
        # then no beat: normal priority (generously within: the child is a process the CPU may be busy with)
        assert _policy_becomes(writer.tid, os.SCHED_OTHER, 20 * GIL_GUARD_S)
        guard.beat(writer)  # type: ignore[arg-type]
        assert _policy_becomes(writer.tid, os.SCHED_IDLE, 20 * GIL_GUARD_S)
        # hurried by the loop: a beat does not put it back
        guard.beat(writer)  # type: ignore[arg-type]
        assert _policy_becomes(writer.tid, os.SCHED_OTHER, 20 * GIL_GUARD_S)
        writer.hurried = True
        guard.beat(writer)  # type: ignore[arg-type]
        time.sleep(2 * GIL_GUARD_S)
        assert os.sched_getscheduler(writer.tid) == os.SCHED_OTHER
    finally:
        proc = guard._proc
        guard.close()
        writer.done.set()
    assert proc.returncode == 0  # it ended when the pipe closed, not killed
