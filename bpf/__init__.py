"""Capture: the eBPF program, its bcc loader and the Parquet writer.

Public API (bcc is imported only when a capture actually starts, so `import bpf` works without it):

    capture(CaptureOptions(output=Path("out"), devices=["loop3"], duration_s=10)) -> CaptureSummary
    with start_capture(opts) as bg: ...; summary = bg.stop()

For a recorder that keeps intervals rather than a trace (`iofp record`): `CaptureOptions(sink=...)`
hands each interval's raw records to an IntervalSink; `completions` reads their ops and latencies
without a trace; a (compressed) Spool keeps them on disk as segments, and `encode_interval` turns one
into the trace's tables (written with PARQUET_OPTIONS).
"""

from bpf.capture import (
    PARQUET_OPTIONS,
    BackgroundCapture,
    CaptureOptions,
    CaptureSummary,
    Encoded,
    IntervalSink,
    capture,
    encode_interval,
    start_capture,
    validate,
)
from bpf.record import Completions, ReqBits, completions
from bpf.spool import (
    Interval,
    Spool,
    read_capture,
    remove_leftovers,
    remove_segment,
    segment_bytes,
    segment_extra,
    segments,
)

__all__ = [
    "PARQUET_OPTIONS",
    "BackgroundCapture",
    "CaptureOptions",
    "CaptureSummary",
    "Completions",
    "Encoded",
    "Interval",
    "IntervalSink",
    "ReqBits",
    "Spool",
    "capture",
    "completions",
    "encode_interval",
    "read_capture",
    "remove_leftovers",
    "remove_segment",
    "segment_bytes",
    "segment_extra",
    "segments",
    "start_capture",
    "validate",
]
