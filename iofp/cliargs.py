"""Parsing of the option values every stage's commands share: durations, sizes and key=value labels,
and the one rule for each shared option's limits (--between, --window)."""

from __future__ import annotations

import itertools
import math
import re
from collections.abc import Iterator

from iofp.errors import BadInput

_NS = {"ns": 1, "us": 1_000, "µs": 1_000, "ms": 1_000_000, "s": 10**9, "m": 60 * 10**9, "min": 60 * 10**9,
       "h": 3600 * 10**9}  # fmt: skip


def parse_duration_ns(text: str, flag: str) -> int:
    """'30s', '500ms', '250us', '5m', '1h', '0.5s' or a bare number of seconds -> nanoseconds."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*(ns|us|µs|ms|s|min|m|h)?\s*", text)
    if not m or float(m.group(1)) <= 0:
        raise BadInput(f"{flag} {text!r} is not a duration; use e.g. 30s, 100ms, 250us, 5m or 1h")
    return round(float(m.group(1)) * _NS[m.group(2) or "s"])


_BYTES = {
    "": 1,
    "b": 1,
    "k": 1 << 10,
    "kib": 1 << 10,
    "m": 1 << 20,
    "mib": 1 << 20,
    "g": 1 << 30,
    "gib": 1 << 30,
}


def parse_size_bytes(text: str, flag: str) -> int:
    """'64MiB', '64M', '512k', '1GiB' or a bare number of bytes -> bytes (binary units: storage
    people mean 2**20 by "M" for buffers)."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*([A-Za-z]*)\s*", text)
    unit = m.group(2).lower() if m else ""
    if not m or unit not in _BYTES or float(m.group(1)) <= 0:
        raise BadInput(f"{flag} {text!r} is not a size; use e.g. 64MiB, 512KiB or 1GiB")
    return round(float(m.group(1)) * _BYTES[unit])


def parse_labels(items: list[str], flag: str = "--label") -> dict[str, str]:
    """['service=orders', 'quarter=Q3'] -> {'service': 'orders', 'quarter': 'Q3'}."""
    labels = {}
    for item in items:
        key, sep, value = item.partition("=")
        if not sep or not key.strip():
            raise BadInput(f"{flag} {item!r} is not key=value; use e.g. {flag} service=order-router")
        labels[key.strip()] = value
    return labels


def check_between_s(t1: float, t2: float, flag: str = "--between") -> None:
    """The one rule for a span of seconds on a trace's clock (fingerprint and replay): 0 <= T1 < T2,
    both finite. A negative start is a typo, not an earlier part of the trace."""
    if not (math.isfinite(t1) and math.isfinite(t2) and 0 <= t1 < t2):
        raise BadInput(f"{flag} {t1:g} {t2:g}: need 0 <= T1 < T2 (seconds on the trace's clock)")


# The regime window (--window of iofp fingerprint, report, iolog and replay). Every window from the
# first arrival to the last is a row of the series and of the regime rule, empty or not: `--window
# 1us` over a 30 s trace is 30 M of them and minutes of CPU. Below 1 ms a window holds a handful of
# I/Os at most (noise, not a regime); 2 M windows take ~30 s (17 µs each). The default is the one
# every stage uses, so a fingerprint and a replay given no --window name the same windows.
DEFAULT_WINDOW_NS = 10**9
MIN_WINDOW_NS = 1_000_000
MAX_WINDOWS = 2_000_000


def duration_text(ns: int) -> str:
    """1_500_000 -> '1.5ms': a window as the user would type it."""
    for unit, size in (("s", 10**9), ("ms", 10**6), ("us", 10**3)):
        if ns >= size:
            return f"{ns / size:g}{unit}"
    return f"{ns}ns"


DEFAULT_WINDOW = duration_text(DEFAULT_WINDOW_NS)  # as the options' help shows it: "1s"


def _nice_windows() -> Iterator[int]:
    """1ms, 2ms, 5ms, 10ms, 20ms, ... in ns."""
    for exp in itertools.count(6):
        for m in (1, 2, 5):
            yield m * 10**exp


def check_window_ns(window_ns: int, span_ns: int | None = None, flag: str = "--window") -> None:
    """The one rule for a regime window, in every stage: at least MIN_WINDOW_NS, and, once the span
    from the first I/O to the last is known, at most MAX_WINDOWS windows over it (naming the
    narrowest window that fits)."""
    if window_ns < MIN_WINDOW_NS:
        raise BadInput(f"{flag} {duration_text(window_ns)}: the shortest window is 1ms; e.g. {flag} 100ms")
    if span_ns is None:
        return
    nwin = span_ns // window_ns + 1
    if nwin > MAX_WINDOWS:
        wide = next(w for w in _nice_windows() if span_ns // w + 1 <= MAX_WINDOWS)
        raise BadInput(
            f"{flag} {duration_text(window_ns)}: {nwin:,} windows over this trace's {span_ns / 1e9:,.3f} s, "
            f"more than {MAX_WINDOWS:,}; use {flag} {duration_text(wide)} or wider"
        )


def parse_window_ns(text: str, flag: str = "--window") -> int:
    """A --window value ('1s', '250ms', ...) -> nanoseconds, refused below the shortest window here,
    before any trace is read (the window count is checked once the trace's span is known)."""
    window_ns = parse_duration_ns(text, flag)
    check_window_ns(window_ns, flag=flag)
    return window_ns
