"""Lends the capture's idle-priority writer thread normal priority while the capture loop is stalled.

Run by bpf/capture.py's _GilGuard as a child process, as a script (`python -I -S gil_guard.py FD S`):
it imports nothing of iofp, so it starts in tens of milliseconds and holds no GIL of the capture's.

Why a process: the writer encodes at SCHED_IDLE and holds the GIL while it runs Python. Preempted
while holding it beside busy CPUs, it was not scheduled again for up to 1.5 s, and the loop, waiting
for the GIL, did not drain the kernel's ring buffer (32 MiB, ~1.5 s of a loop device's full rate),
which overflowed. No thread of the capture can notice that (noticing needs the GIL); this process
can. The loop writes a beat to the pipe FD every iteration (<= 100 ms apart): the writer's thread id
(4 bytes, little-endian) and whether the loop hurried it (1 byte). Past S seconds without a beat,
the writer is set to SCHED_OTHER; at the next beat back to SCHED_IDLE unless it is hurried. The
process ends when the pipe closes: at the capture's end, or its death.
"""

import os
import select
import signal
import struct
import sys

BEAT = struct.Struct("<IB")  # the writer's thread id, whether the loop hurried it (capture.py writes it)


def guard(fd: int, every_s: float) -> None:
    tid, boosted = 0, 0
    while True:
        ready, _, _ = select.select([fd], [], [], every_s)
        if ready:
            beats = os.read(fd, 100 * BEAT.size)  # whole beats: each is one write of BEAT.size bytes
            if not beats:
                return  # the capture ended (or died)
            tid, hurried = BEAT.unpack(beats[-BEAT.size :])
            if boosted and not hurried:
                _set(boosted, os.SCHED_IDLE)
            boosted = 0
        elif tid and not boosted and _policy(tid) == os.SCHED_IDLE and _set(tid, os.SCHED_OTHER):
            boosted = tid


def _policy(tid: int) -> int | None:
    try:
        return os.sched_getscheduler(tid)
    except OSError:  # the writer has ended
        return None


def _set(tid: int, policy: int) -> bool:
    try:
        os.sched_setscheduler(tid, policy, os.sched_param(0))
    except OSError:
        return False
    return True


if __name__ == "__main__":
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a terminal's Ctrl-C is the capture's to handle
    guard(int(sys.argv[1]), float(sys.argv[2]))
