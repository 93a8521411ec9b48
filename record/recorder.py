"""`iofp record`: the flight recorder. Always on, bounded, triggered by the I/O itself.

The capture (bpf, through its public API) hands this recorder's sink each second's raw records in
its polling thread. The sink, in that thread and at normal priority, (1) writes them to the ring as
one compressed segment (record/ring.py), (2) adds them to the per-second summary (record/seconds.py,
record/summary.py), (3) judges each completed window against the trigger (record/trigger.py) and
(4) opens, extends and closes incidents (record/incident.py), whose encoding runs in processes of
their own. Nothing in this process runs at idle priority or encodes Parquet, so no thread starved by
the machine's load can hold the interpreter's lock while the ring buffer waits to be drained (the
capture's idle-priority writer thread could: a GIL priority inversion, see BENCHMARKS.md).

SIGTERM, SIGINT, SIGHUP end it cleanly: the last second is summarised, an open incident is closed
where it stands (its trace.json says so) and encoded before the process exits. SIGUSR1 (or `iofp
record --dump DIR`) saves an incident now. `status.json` is rewritten every second: the ring's use,
what it dropped, the incidents, what was lost.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import sys
import threading
import time
from collections.abc import Iterator
from dataclasses import asdict, dataclass, field
from datetime import datetime, timedelta
from pathlib import Path
from typing import Any

from bpf import CaptureOptions, Interval, ReqBits, capture
from bpf.record import split_calls
from bpf.schedule import next_occurrence
from iofp.contract import TraceMeta, atomic_write_bytes
from iofp.errors import warn
from iofp.signals import stop_on_signals
from record.incident import Fired, Incidents
from record.options import STATE, RecordOptions, lock, validate
from record.ring import Ring, Segment, session_name
from record.seconds import LOST, NS, Second, Seconds, Windows
from record.summary import SummaryLog, compact_left
from record.trigger import Trigger

STATUS = "status.json"


@dataclass
class RecordSummary:
    output: Path
    duration_s: float = 0.0
    io_events: int = 0
    sync_events: int = 0
    lost_events: int = 0
    segments: int = 0
    seconds: int = 0
    late: int = 0  # records counted in a later second than the one they completed in
    ring: dict[str, Any] = field(default_factory=dict)
    incidents: list[str] = field(default_factory=list)
    suppressed: dict[str, int] = field(default_factory=dict)
    stopped_by: str = ""
    loss: dict[str, int] = field(default_factory=dict)

    def to_dict(self) -> dict[str, Any]:
        return asdict(self) | {"output": str(self.output)}


class Recorder:
    """The capture's sink (bpf.IntervalSink)."""

    def __init__(self, opts: RecordOptions, ring: Ring, incidents: Incidents) -> None:
        self.opts = opts
        self.root = Path(opts.output)
        self.ring = ring
        self.incidents = incidents
        self.trigger = Trigger(opts.trigger, opts.hold, opts.history_ns // NS) if opts.trigger else None
        self.windows = Windows(opts.window_s)
        self.dump_asked = threading.Event()
        self.summary = RecordSummary(self.root)
        self._prev: dict[str, dict[str, int]] = {"loss": {}, "counts": {}}
        self._at = [next_occurrence(a, datetime.now()) for a in opts.at]
        self._warned_ns = 0

    def start(self, t0_ns: int, bits: ReqBits, names: dict[int, str], meta: TraceMeta) -> None:
        wall0 = meta.capture_start_ns or time.time_ns()
        self.bits, self.offset = bits, wall0 - t0_ns
        meta.labels = {**meta.labels, **self.opts.labels}
        session = self.ring.begin(session_name(wall0), t0_ns, bits, names, meta)
        self.log = SummaryLog(self.root, session.name)
        one = self.opts.devices[0] if len(self.opts.devices) == 1 else None
        self.seconds = Seconds(names, one, wall0)
        if self.trigger is not None:  # judged idle or not: the devices asked for (names holds every one)
            self.trigger.devices = tuple(sorted(self.opts.devices))
        self.prev_end = wall0

    def put(self, item: Interval, upto_ns: int, *, last: bool = False) -> None:
        io, sync, (loss, counts), _ = item
        end = upto_ns + self.offset
        dloss, dcounts = self._delta("loss", loss), self._delta("counts", counts)
        seg = self._keep(item, end, {"loss": dloss, "counts": dcounts})
        self.prev_end = end
        self.seconds.add_io(io, self.bits, self.offset)
        commits, _ = split_calls(sync)  # the data calls ride with them; kept in the ring, not commits
        self.seconds.add_sync(commits, self.offset)
        self.seconds.add_counted(LOST, sum(dloss.values()), end)
        # empty flush barriers, completed without being issued: /sys/block counts each as a write
        self.seconds.add_counted("write", dcounts.get("completed_unissued", 0), end)
        final = self.seconds.close_all() if last else self.seconds.close(end)
        self.log.write(final)
        now = time.time_ns()
        for s in final:
            self._judge(s, now)
        self._requests(end, now)
        if seg is not None:
            self.incidents.segment(seg, now)
        self.incidents.reap()
        s = self.summary
        s.io_events += len(io)
        s.sync_events += len(commits)
        s.segments += 1
        s.seconds += len(final)
        s.lost_events, s.loss, s.late = sum(loss.values()), dict(loss), self.seconds.late
        self._status(now)

    def _keep(self, item: Interval, end: int, extra: dict[str, Any]) -> Segment | None:
        """The interval into the ring; if the disk refuses it (full), its records are counted as
        dropped, said once a minute, and the recording goes on (the summary is still kept)."""
        try:
            return self.ring.add(item, self.prev_end, end, extra)
        except OSError as e:
            self.ring.dropped_segments += 1
            self.ring.dropped_records += len(item[0]) + len(item[1])
            if end - self._warned_ns > 60 * 10**9:
                self._warned_ns = end
                warn(f"the ring in {self.ring.dir} cannot take a segment ({e.strerror}); its records are "
                     f"dropped, counted ({self.ring.dropped_records:,} so far)")  # fmt: skip
            return None

    def _delta(self, kind: str, now: dict[str, int]) -> dict[str, int]:
        """What the capture counted during this interval (its counters are totals since its start)."""
        prev = self._prev[kind]
        self._prev[kind] = dict(now)
        return {k: v - prev.get(k, 0) for k, v in now.items()}

    def _judge(self, s: Second, now: int) -> None:
        if not self.windows.push(s) or self.trigger is None:
            return
        miss = self.trigger.judge(list(self.windows.recent))
        if miss is not None:
            fired = Fired("trigger", miss.end_ns, self.trigger.slo.text, miss.failures, miss.figures)
            self.incidents.fire(fired, now)

    def _requests(self, end: int, now: int) -> None:
        """SIGUSR1 / --dump, and --at times that have come."""
        if self.dump_asked.is_set():
            self.dump_asked.clear()
            self.incidents.fire(Fired("SIGUSR1", end), now)
        for i, when in enumerate(self._at):
            if when.timestamp() * 1e9 <= end:
                self.incidents.fire(Fired(f"at {when:%H:%M:%S}", end), now)
                self._at[i] = when + timedelta(days=1)

    def finish(self, stopped_by: str) -> RecordSummary:
        """After the capture ended: the open incident closed where it stands, every encoder done."""
        cut = f"stopped by {stopped_by} before --after ended" if stopped_by else \
            "the recording ended (--duration) before --after ended"  # fmt: skip
        self.incidents.close(time.time_ns(), cut=cut)
        self.incidents.reap(wait=True)
        self.log.close()
        self.summary.stopped_by = stopped_by
        self.summary.ring = self.ring.status()
        self.summary.incidents = [str(p) for p in self.incidents.written]
        self.summary.suppressed = dict(self.incidents.suppressed)
        self._status(time.time_ns())
        return self.summary

    def _status(self, now: int) -> None:
        s = self.summary
        doc = {"pid": os.getpid(), "at_ns": now, "ring": self.ring.status(),
               "incidents": self.incidents.status(), "seconds": s.seconds, "io_events": s.io_events,
               "lost_events": s.lost_events, "loss": s.loss, "late": s.late}  # fmt: skip
        _rewrite(self.root / STATUS, json.dumps(doc, indent=1).encode())


def _rewrite(path: Path, data: bytes) -> None:
    """A file rewritten every second in place: a rename over it (or a truncation to zero) would make
    ext4 force its blocks to the disk each time (auto_da_alloc), I/O the recorder would then record.
    A reader may meet a torn copy: iofp record --dump reads it again."""
    with open(path, "r+b" if path.exists() else "wb") as f:
        f.write(data)
        f.truncate(len(data))


def record(opts: RecordOptions, stop: threading.Event | None = None, *,
           ready: threading.Event | None = None) -> RecordSummary:  # fmt: skip
    """Record until `opts.duration_s`, `stop.set()`, SIGINT, SIGTERM or SIGHUP; BadInput (before
    anything is attached) for options that cannot work."""
    validate(opts)
    with stop_on_signals(stop) as request:
        held = lock(Path(opts.output))
        try:
            rec = _prepare(opts)
            started = time.monotonic()
            ready = ready or threading.Event()
            threading.Thread(target=_announce, args=(ready, opts), daemon=True).start()
            with _dump_on_sigusr1(rec):
                capture(_capture_options(opts, rec), request.event, ready=ready)
            summary = rec.finish(_stopped_by(request))
            summary.duration_s = time.monotonic() - started
            return summary
        finally:
            held.close()


def _announce(ready: threading.Event, opts: RecordOptions) -> None:
    """One line on stderr once the probes are attached (scripts wait for it to start a load)."""
    if ready.wait(600):
        what = ", ".join(opts.devices) or "all devices"
        keep = f"{opts.history_ns / 1e9:g}s, at most {opts.keep_bytes / 2**20:g} MiB"
        print(f"iofp: recording {what} into {opts.output} (history {keep}; SIGTERM to stop)",
              file=sys.stderr, flush=True)  # fmt: skip


def _stopped_by(request: Any) -> str:
    """What ended the run: a signal's name, "stop" (the caller's event), "" (--duration)."""
    if request.signum:
        return signal.Signals(request.signum).name
    return "stop" if request.is_set() else ""


def _prepare(opts: RecordOptions) -> Recorder:
    """The ring and incidents a previous run left, taken over; this run's state announced."""
    root = Path(opts.output)
    ring = Ring(root, opts.keep_bytes, opts.history_ns)
    ring.load()
    ring.evict(time.time_ns())
    compact_left(root, "")
    incidents = Incidents(root, ring, history_ns=opts.history_ns, after_ns=opts.after_ns,
                          cooldown_ns=opts.cooldown_ns, max_incidents=opts.max_incidents)  # fmt: skip
    incidents.resume(time.time_ns())
    state = {"pid": os.getpid(), "started_ns": time.time_ns(), "devices": opts.devices,
             "trigger": opts.trigger.text if opts.trigger else None, "history_ns": opts.history_ns,
             "keep_bytes": opts.keep_bytes, "after_ns": opts.after_ns}  # fmt: skip
    atomic_write_bytes(root / STATE, json.dumps(state, indent=1).encode())
    return Recorder(opts, ring, incidents)


def _capture_options(opts: RecordOptions, rec: Recorder) -> CaptureOptions:
    return CaptureOptions(output=opts.output, devices=list(opts.devices), duration_s=opts.duration_s,
                          labels=dict(opts.labels), rotate_s=1.0, syscalls=opts.syscalls,
                          data_calls=opts.data_calls, dsync_writes=opts.dsync_writes,
                          witness=opts.witness, sink=rec)  # fmt: skip


@contextlib.contextmanager
def _dump_on_sigusr1(rec: Recorder) -> Iterator[None]:
    if threading.current_thread() is not threading.main_thread():
        yield
        return
    before = signal.signal(signal.SIGUSR1, lambda *_: rec.dump_asked.set())
    try:
        yield
    finally:
        signal.signal(signal.SIGUSR1, before)


def render_summary(s: RecordSummary) -> list[str]:
    r = s.ring
    lines = [
        f"Recorded {s.io_events:,} block requests and {s.sync_events:,} sync calls in {s.duration_s:.1f}s "
        f"into {s.output}" + (f" (stopped by {s.stopped_by})." if s.stopped_by else "."),
        f"Ring: {r.get('segments', 0):,} segments, {r.get('bytes', 0) / 2**20:,.1f} MiB of "
        f"{r.get('keep_bytes', 0) / 2**20:,.0f} MiB; dropped {r.get('dropped_segments', 0):,} segments "
        f"({r.get('dropped_records', 0):,} records) as --history and --keep bound it.",
    ]
    if s.lost_events:
        lines.append(f"WARNING: the capture LOST {s.lost_events} events: "
                     + ", ".join(f"{k}={v}" for k, v in s.loss.items() if v))  # fmt: skip
    for path in s.incidents:
        lines.append(f"Incident saved: {path}. Next: iofp fingerprint {path}")
    for why, n in s.suppressed.items():
        lines.append(f"{n} trigger{'s' if n > 1 else ''} saved nothing: {why}")
    lines.append(f"Per-second summary: {s.seconds:,} seconds. Next: iofp iostat {s.output}")
    return lines
