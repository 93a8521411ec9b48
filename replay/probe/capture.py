"""iofp's own measurement of the commit cells: a capture of the target while they run.

One capture (the capture stage's public `bpf.start_capture`) spans the commit runs, started before
the first and stopped after the last: a capture takes ~3 s to start and ~2 s to stop here, and the
runs are back to back. Each run's figures are the calls and flushes inside its own span (its wall
clock start and end, on the capture's clock through the trace's `capture_start_ns`; the runs never
overlap). The data cells are not captured: tracing costs ~20-30% of a RAM loop's IOPS on this VM
(BENCHMARKS.md), and their figures are fio's anyway.

A regular-file target has no device of its own to capture, and a machine without the capability
(root, bcc) cannot capture: the commit cells then run, and say why their commit figures are null.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from iofp import duck
from iofp.contract import SYNC_TABLE, open_trace
from iofp.errors import IofpError, MissingCapability
from iofp.probe_result import CaptureFigures, Run
from replay.fio import Target

SQL = "replay.probe.sql"


class CommitCapture:
    def __init__(self, root: Path, target: Target, labels: dict[str, str]) -> None:
        self.root = root
        self.target = target
        self.labels = labels
        self.status: dict[str, Any] = {"status": "not started"}
        self._bg: Any = None

    def start(self) -> None:
        if not self.target.is_block:
            self.status = {
                "status": "not measured",
                "reason": "a regular-file target has no device to capture",
            }
            return
        import bpf

        opts = bpf.CaptureOptions(
            output=self.root, devices=[str(self.target.name)], labels=dict(self.labels), force=True
        )
        try:
            self._bg = bpf.start_capture(opts)
        except MissingCapability as e:
            self.status = {"status": "not measured", "reason": f"capture unavailable: {e}"}
            return
        self.status = {"status": "capturing"}

    def stop(self) -> None:
        if self._bg is None:
            return
        bg, self._bg = self._bg, None
        summary = bg.stop()
        self.status = {"status": "measured", "summary": summary.to_dict()}

    def fill(self, runs: list[Run]) -> None:
        """Set the capture figures of every commit run the capture covered."""
        if self.status.get("status") != "measured":
            return
        try:
            trace = open_trace(self.root)
        except IofpError as e:
            self.status = {"status": "failed", "reason": str(e), "summary": self.status.get("summary")}
            return
        zero = trace.meta.capture_start_ns or 0
        con = duck.connect()
        try:
            trace.relation(con).create_view("io")
            trace.relation(con, SYNC_TABLE).create_view("sync")
            for run in runs:
                if run.kind == "commit":
                    run.capture = _figures(con, run.started_ns - zero, run.ended_ns - zero)
        finally:
            con.close()


def _figures(con: Any, lo_ns: int, hi_ns: int) -> CaptureFigures:
    span = {"lo_ns": lo_ns, "hi_ns": hi_ns}
    [c] = duck.query(con, SQL, "commits", span)
    [f] = duck.query(con, SQL, "flushes", span)
    us = lambda ns: None if ns is None else ns / 1e3  # noqa: E731
    return CaptureFigures(
        commits=int(c["calls"]),
        commits_per_s=c["calls"] / (c["span_ns"] / 1e9) if c["span_ns"] else None,
        fsync_p50_us=us(c["p50_ns"]),
        fsync_p99_us=us(c["p99_ns"]),
        fsync_p99_9_us=us(c["p999_ns"]),
        flushes=int(f["flushes"]),
        flush_p50_us=us(f["p50_ns"]),
        flush_p99_us=us(f["p99_ns"]),
    )
