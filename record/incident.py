"""Incidents: the kept history before a trigger and `--after` after it, saved as an ordinary trace.

When a trigger fires (or SIGUSR1, `iofp record --dump`, an `--at` time), the ring's segments are
hard-linked into `incidents/<local time of the trigger>/.segments/` (instant, and no copy: the ring
may drop them on schedule), the segments that follow for `--after` join them, and an encoder in a
process of its own (record/encode.py, at nice 10: its own interpreter, so no lock it holds ever
delays the recorder's polling) turns them into the trace's Parquet files. A trigger that fires again
while an incident is open extends it; once one closes, `--cooldown` passes before the next, and
`--max-incidents` or a filesystem with less free space than `--keep` refuse new ones (counted).

`incident.json` says why and when: the trigger, the figures of the window that missed the SLO and
the failures, the window's end, when it fired, when the span ends; the encoder copies it into the
trace's metadata (`extra.incident`) with its own times (history encoded, complete).
"""

from __future__ import annotations

import contextlib
import json
import os
import shutil
import subprocess
import sys
import time
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from iofp.contract import atomic_write_bytes
from iofp.errors import warn
from record.ring import Ring, Segment

INCIDENTS = "incidents"
PENDING = ".segments"
CLOSED = "closed"
DOC = "incident.json"
ENCODER_NICE = 10


@dataclass
class IncidentDoc:
    """incident.json: what the encoder and a reader need to know about an incident."""

    name: str
    reason: str  # "trigger" | "SIGUSR1" | "dump" | "at HH:MM"
    trigger: str | None  # the SLO text
    window_end_ns: int  # wall clock: the end of the window that fired (or the request's time)
    fired_ns: int  # wall clock: when the recorder acted on it
    start_ns: int  # the incident's span: from the oldest history segment
    end_ns: int  # ... to the end of --after (extended by later triggers)
    failures: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)
    history_segments: int = 0  # segments linked when it opened (the history before the trigger)
    triggers: list[dict[str, Any]] = field(default_factory=list)  # later triggers that extended it
    cut: str | None = None  # why it closed before end_ns (SIGTERM, a restart)
    closed_ns: int | None = None

    @classmethod
    def read(cls, incident: Path) -> IncidentDoc:
        return cls(**json.loads((incident / DOC).read_text()))

    def write(self, incident: Path) -> None:
        atomic_write_bytes(incident / DOC, json.dumps(asdict(self), indent=1).encode())


@dataclass
class Fired:
    """Why an incident is wanted now: a trigger (its window ended at `at_ns`), or a request."""

    reason: str  # "trigger" | "SIGUSR1" | "at HH:MM"
    at_ns: int  # wall clock
    trigger: str | None = None
    failures: list[str] = field(default_factory=list)
    figures: list[dict[str, Any]] = field(default_factory=list)


@dataclass
class Open:
    path: Path
    doc: IncidentDoc
    encoder: subprocess.Popen[bytes]


class Incidents:
    def __init__(self, root: Path, ring: Ring, *, history_ns: int, after_ns: int, cooldown_ns: int,
                 max_incidents: int) -> None:  # fmt: skip
        self.dir = Path(root) / INCIDENTS
        self.ring = ring
        self.history_ns = history_ns
        self.after_ns = after_ns
        self.cooldown_ns = cooldown_ns
        self.max_incidents = max_incidents
        self.open: Open | None = None
        self.closing: list[Open] = []  # closed, their encoder still writing
        self.written: list[Path] = []
        self.suppressed: dict[str, int] = {}
        self.last_closed_ns = 0

    def count(self) -> int:
        return sum(1 for p in self.dir.iterdir() if p.is_dir()) if self.dir.is_dir() else 0

    def fire(self, f: Fired, now_ns: int) -> Path | None:
        """A trigger fired: open an incident, or extend the open one; None when a bound refused it
        (counted in `suppressed`)."""
        if self.open is not None:
            doc = self.open.doc
            doc.end_ns = max(doc.end_ns, f.at_ns + self.after_ns)
            doc.triggers.append({"reason": f.reason, "window_end_ns": f.at_ns, "failures": f.failures})
            doc.write(self.open.path)
            return self.open.path
        why = self._refused(f.at_ns, manual=f.reason != "trigger")
        if why is not None:
            self.suppressed[why] = self.suppressed.get(why, 0) + 1
            warn(f"{f.reason} at {_clock(f.at_ns)} saved no incident: {why}")
            return None
        history = self.ring.between(f.at_ns - self.history_ns, f.at_ns + 1)
        name = self._name(f.at_ns)
        path = self.dir / name
        try:
            (path / PENDING).mkdir(parents=True)
            for seg in history:
                _link(seg, path)
        except OSError as e:  # a full disk: the recorder goes on; the incident is not saved, said so
            shutil.rmtree(path, ignore_errors=True)
            self.suppressed[e.strerror] = self.suppressed.get(e.strerror, 0) + 1
            warn(f"{f.reason} at {_clock(f.at_ns)} saved no incident: {path}: {e.strerror}")
            return None
        start = history[0].start_ns if history else f.at_ns
        doc = IncidentDoc(name, f.reason, f.trigger, f.at_ns, now_ns, start, f.at_ns + self.after_ns,
                          f.failures, f.figures, len(history))  # fmt: skip
        doc.write(path)
        self.open = Open(path, doc, start_encoder(path))
        what = "; ".join(f.failures[:3]) or f.reason
        print(f"iofp: incident {name}: {what}; saving {(f.at_ns - start) / 1e9:.0f} s of history and "
              f"{self.after_ns / 1e9:g} s after into {path}", file=sys.stderr, flush=True)  # fmt: skip
        return path

    def _refused(self, at_ns: int, manual: bool) -> str | None:
        if not manual and at_ns < self.last_closed_ns + self.cooldown_ns:
            return f"within --cooldown {self.cooldown_ns / 1e9:g}s of the last incident"
        if self.count() >= self.max_incidents:
            return f"--max-incidents {self.max_incidents} reached in {self.dir}; move some away"
        st = os.statvfs(self.dir.parent)
        if st.f_bavail * st.f_frsize < self.ring.keep:
            return f"less free space on {self.dir.parent} than --keep ({self.ring.keep >> 20} MiB)"
        return None

    def _name(self, at_ns: int) -> str:
        base = time.strftime("%Y-%m-%dT%H-%M-%S", time.localtime(at_ns / 1e9))
        name, n = base, 1
        while (self.dir / name).exists():
            n += 1
            name = f"{base}-{n}"
        return name

    def segment(self, seg: Segment, now_ns: int) -> None:
        """A new ring segment: into the open incident; close it once its span has passed. A segment
        that cannot be linked (a full disk) closes the incident where it stands, said so."""
        if self.open is None:
            return
        try:
            _link(seg, self.open.path)
        except OSError as e:
            warn(f"incident {self.open.doc.name}: cannot keep {seg.path.name} ({e.strerror}); closed here")
            self.close(now_ns, cut=f"a segment could not be kept: {e.strerror}")
            return
        if seg.end_ns >= self.open.doc.end_ns:
            self.close(now_ns)

    def close(self, now_ns: int, cut: str | None = None) -> None:
        if self.open is None:
            return
        o, self.open = self.open, None
        o.doc.cut, o.doc.closed_ns = cut, now_ns
        o.doc.write(o.path)
        (o.path / PENDING / CLOSED).write_text("")
        self.closing.append(o)
        self.last_closed_ns = now_ns

    def reap(self, *, wait: bool = False) -> None:
        """Collect the encoders that finished (all of them, hurried to normal priority, if `wait`)."""
        for o in list(self.closing):
            if wait and o.encoder.poll() is None:
                with contextlib.suppress(ProcessLookupError):
                    os.setpriority(os.PRIO_PROCESS, o.encoder.pid, 0)
                o.encoder.wait()
            if o.encoder.poll() is not None:
                self.closing.remove(o)
                if o.encoder.returncode == 0:
                    self.written.append(o.path)
                    print(f"iofp: incident {o.doc.name} saved. Next: iofp fingerprint {o.path}",
                          file=sys.stderr, flush=True)  # fmt: skip
                else:
                    code = o.encoder.returncode
                    warn(f"the encoder of {o.path} failed (exit {code}); its records are kept in "
                         f"{o.path / PENDING} and a restart of the recorder encodes them")  # fmt: skip

    def resume(self, now_ns: int) -> None:
        """Finish the incidents an earlier run left unfinished (killed, or stopped before its encoder
        ended): an open one is closed where it stopped, then encoded."""
        for path in sorted(self.dir.glob(f"*/{PENDING}")) if self.dir.is_dir() else []:
            inc = path.parent
            doc = IncidentDoc.read(inc)
            if not (path / CLOSED).exists():
                doc.cut = doc.cut or "the recorder stopped before --after ended; closed at its restart"
                doc.closed_ns = now_ns
                doc.write(inc)
                (path / CLOSED).write_text("")
            self.closing.append(Open(inc, doc, start_encoder(inc)))

    def status(self) -> dict[str, Any]:
        return {
            "open": str(self.open.path) if self.open else None,
            "encoding": [str(o.path) for o in self.closing],
            "written": [str(p) for p in self.written],
            "suppressed": dict(self.suppressed),
        }


def _link(seg: Segment, incident: Path) -> None:
    """Hard-link one ring segment (and its session's capture.json, once) into the incident."""
    sdir = incident / PENDING / seg.session.name / "spool"
    if not sdir.exists():
        sdir.mkdir(parents=True)
        os.link(seg.session.spool / "capture.json", sdir / "capture.json")
    if (sdir / seg.path.name).exists():
        return  # the trigger's own second: linked as history when the incident opened
    tmp = sdir / f".{seg.path.name}.tmp"
    tmp.mkdir()
    for f in seg.path.iterdir():
        os.link(f, tmp / f.name)
    os.rename(tmp, sdir / seg.path.name)


def start_encoder(incident: Path) -> subprocess.Popen[bytes]:
    """record/encode.py for `incident`, in a process of its own at nice ENCODER_NICE."""
    return subprocess.Popen([sys.executable, "-m", "record.encode", str(incident)],
                            preexec_fn=lambda: os.nice(ENCODER_NICE))  # fmt: skip


def _clock(ns: int) -> str:
    return time.strftime("%H:%M:%S", time.localtime(ns / 1e9))


def incidents(root: Path) -> list[dict[str, Any]]:
    """The incidents the recorder at `root` saved (or is saving), oldest first: name, reason, the
    failures, the window's end, the span, whether complete, why cut (iofp report draws them)."""
    out = []
    for inc in sorted((Path(root) / INCIDENTS).glob("*/")) if (Path(root) / INCIDENTS).is_dir() else []:
        try:
            d = IncidentDoc.read(inc)
        except (OSError, ValueError, TypeError):
            continue  # being made, or not one of ours
        complete = (inc / "trace.json").exists()
        end = d.closed_ns if d.cut and d.closed_ns else d.end_ns
        out.append({"name": d.name, "reason": d.reason, "failures": d.failures, "start_ns": d.start_ns,
                    "window_end_ns": d.window_end_ns, "end_ns": end, "complete": complete,
                    "cut": d.cut})  # fmt: skip
    return out
