"""Capture: the eBPF program, its bcc loader and the Parquet writer.

Public API (bcc is imported only when a capture actually starts, so `import bpf` works without it):

    capture(CaptureOptions(output=Path("out"), devices=["loop3"], duration_s=10)) -> CaptureSummary
    with start_capture(opts) as bg: ...; summary = bg.stop()
"""

from bpf.capture import BackgroundCapture, CaptureOptions, CaptureSummary, capture, start_capture

__all__ = ["BackgroundCapture", "CaptureOptions", "CaptureSummary", "capture", "start_capture"]
